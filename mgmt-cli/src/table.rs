//! A minimal aligned-table renderer: a header row, a rule, and rows whose
//! columns are padded to the widest cell. Plain text, no colour, so the
//! output is stable for scripts that grep it and for tests.

use std::fmt::Write as _;

#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// Two spaces between columns.
const GAP: &str = "  ";

impl Table {
    pub fn new<I, S>(header: I) -> Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Table { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Adds a row; missing cells render empty, extra cells are kept and
    /// widen the table.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).chain([self.header.len()]).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            let mut text = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = cells.get(i).map(String::as_str).unwrap_or("");
                if i > 0 {
                    text.push_str(GAP);
                }
                let _ = write!(text, "{cell:<width$}");
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&mut out, &self.header);
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        line(&mut out, &rule);
        for row in &self.rows {
            line(&mut out, row);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell() {
        let mut table = Table::new(["PORT", "MAC"]);
        table.row(["eth1", "02:00:00:00:00:01"]).row(["eth10", "-"]);
        assert_eq!(
            table.render(),
            "PORT   MAC\n\
             -----  -----------------\n\
             eth1   02:00:00:00:00:01\n\
             eth10  -\n"
        );
    }

    #[test]
    fn short_rows_pad_and_long_rows_widen() {
        let mut table = Table::new(["A", "B"]);
        table.row(["x"]).row(["y", "z", "extra"]);
        let text = table.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "A  B");
        assert_eq!(lines[2], "x");
        assert_eq!(lines[3], "y  z  extra");
    }
}
