//! Plots with `plotters`, each as PNG and SVG: queue depth over time of the
//! deepest watched ports, the PFC pause heat map across the fabric (switch
//! by port, share of the run paused), and CDFs of FCT slowdown and of JCT
//! comparing runs.
//!
//! Text is drawn with DejaVu Sans from the system (Debian's
//! `fonts-dejavu-core`), registered once for `plotters`' `ab_glyph` backend.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

/// What the plots need of a run.
#[derive(Debug, Clone, Default)]
pub struct PlotData {
    pub name: String,
    /// Watched ports: names, and (time ns, bytes per port) rows.
    pub series_names: Vec<String>,
    pub series: Vec<(u64, Vec<u32>)>,
    /// Switch names, and per switch the share of the run each port was paused.
    pub switch_names: Vec<String>,
    pub paused_share: Vec<Vec<f64>>,
    /// What the heat map shows; `None`: PFC pause time.
    pub pause_caption: Option<String>,
    /// Sorted FCT slowdowns and JCTs (ns).
    pub slowdowns: Vec<f64>,
    pub jcts: Vec<f64>,
}

/// Where the font is found.
pub const FONT_PATHS: [&str; 2] =
    ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf"];

fn register_font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let bytes = FONT_PATHS.iter().find_map(|path| std::fs::read(path).ok()).ok_or_else(|| {
                format!("plots need DejaVu Sans (Debian package fonts-dejavu-core) at {}", FONT_PATHS[0])
            })?;
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| "DejaVu Sans did not load as a font".to_owned())
        })
        .clone()
}

fn fail<E: std::fmt::Display>(e: E) -> String {
    format!("plot: {e}")
}

/// Draws with `$f` into `$stem.png` and `$stem.svg`.
macro_rules! render {
    ($dir:expr, $stem:expr, $size:expr, $f:ident, $($arg:expr),*) => {{
        let png = $dir.join(format!("{}.png", $stem));
        $f(BitMapBackend::new(&png, $size).into_drawing_area(), $($arg),*)?;
        let svg = $dir.join(format!("{}.svg", $stem));
        $f(SVGBackend::new(&svg, $size).into_drawing_area(), $($arg),*)?;
    }};
}

/// Writes a run's plots into `dir`: `queues`, `pauses`, `fct-cdf`.
pub fn write_run(data: &PlotData, dir: &Path) -> Result<(), String> {
    register_font()?;
    if !data.series.is_empty() {
        render!(dir, "queues", (1000, 600), queue_depth, data);
    }
    if !data.switch_names.is_empty() {
        let height = (data.switch_names.len() as u32 * 14 + 120).clamp(300, 4000);
        render!(dir, "pauses", (1000, height), pause_map, data);
    }
    if !data.slowdowns.is_empty() {
        render!(dir, "fct-cdf", (900, 600), cdf, &[data], false);
    }
    Ok(())
}

/// Writes the comparison plots into `dir`: `compare-fct-cdf`, `compare-jct-cdf`.
pub fn write_compare(runs: &[&PlotData], dir: &Path) -> Result<(), String> {
    register_font()?;
    render!(dir, "compare-fct-cdf", (900, 600), cdf, runs, false);
    render!(dir, "compare-jct-cdf", (900, 600), cdf, runs, true);
    Ok(())
}

/// The watched ports' depth over time; the eight deepest.
fn queue_depth<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, data: &PlotData) -> Result<(), String> {
    root.fill(&WHITE).map_err(fail)?;
    let mut deepest: Vec<(usize, u32)> = (0..data.series_names.len())
        .map(|i| (i, data.series.iter().map(|(_, row)| row[i]).max().unwrap_or(0)))
        .collect();
    deepest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    deepest.truncate(8);
    let t_max = data.series.last().map_or(1.0, |(t, _)| *t as f64 / 1000.0).max(1.0);
    let y_max = (deepest.first().map_or(0, |d| d.1) as f64 / 1024.0).max(1.0) * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: queue depth of the deepest ports", data.name), ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..t_max, 0f64..y_max)
        .map_err(fail)?;
    chart.configure_mesh().x_desc("time (us)").y_desc("queue (KiB)").draw().map_err(fail)?;
    for (n, &(i, _)) in deepest.iter().enumerate() {
        let color = Palette99::pick(n).to_rgba();
        let points = data.series.iter().map(move |(t, row)| (*t as f64 / 1000.0, f64::from(row[i]) / 1024.0));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(fail)?
            .label(data.series_names[i].clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(fail)?;
    root.present().map_err(fail)
}

/// Switch by port, coloured by the share of the run the port was paused.
fn pause_map<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, data: &PlotData) -> Result<(), String> {
    root.fill(&WHITE).map_err(fail)?;
    let ports = data.paused_share.iter().map(Vec::len).max().unwrap_or(1).max(1) as i32;
    let switches = data.switch_names.len().max(1) as i32;
    let max = data.paused_share.iter().flatten().copied().fold(0f64, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: {} (max {:.1}% of the run)",
                data.name,
                data.pause_caption.as_deref().unwrap_or("PFC pause time"),
                max * 100.0
            ),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(110)
        .build_cartesian_2d((0..ports).into_segmented(), (0..switches).into_segmented())
        .map_err(fail)?;
    let names = &data.switch_names;
    let centre = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(v) | SegmentValue::Exact(v) => Some(*v),
        SegmentValue::Last => None,
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("port (ethN)")
        .x_labels(ports as usize)
        .x_label_formatter(&|p| centre(p).map_or(String::new(), |p| format!("{}", p + 1)))
        .y_labels(names.len().min(60))
        .y_label_formatter(&|s| centre(s).and_then(|s| names.get(s as usize).cloned()).unwrap_or_default())
        .draw()
        .map_err(fail)?;
    let cells = data.paused_share.iter().enumerate().flat_map(|(s, row)| {
        row.iter().enumerate().map(move |(p, &share)| {
            let scaled = if max > 0.0 { share / max } else { 0.0 };
            // White when never paused, to deep red at the most paused port.
            let color = if share <= 0.0 {
                RGBColor(245, 245, 245)
            } else {
                RGBColor(255, (220.0 * (1.0 - scaled)) as u8, (160.0 * (1.0 - scaled)) as u8)
            };
            let (p, s) = (p as i32, s as i32);
            Rectangle::new(
                [
                    (SegmentValue::Exact(p), SegmentValue::Exact(s)),
                    (SegmentValue::Exact(p + 1), SegmentValue::Exact(s + 1)),
                ],
                color.filled(),
            )
        })
    });
    chart.draw_series(cells).map_err(fail)?;
    root.present().map_err(fail)
}

/// CDFs of FCT slowdown (or of JCT), one line per run.
fn cdf<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, runs: &[&PlotData], jct: bool) -> Result<(), String> {
    root.fill(&WHITE).map_err(fail)?;
    let values = |run: &PlotData| -> Vec<f64> {
        if jct { run.jcts.iter().map(|j| j / 1e6).collect() } else { run.slowdowns.clone() }
    };
    let x_max = runs.iter().flat_map(|r| values(r)).fold(0f64, f64::max).max(1e-9) * 1.05;
    let x_min = if jct { 0.0 } else { 1.0f64.min(x_max) * 0.95 };
    let (title, x_desc) = if jct { ("JCT", "JCT (ms)") } else { ("FCT slowdown", "FCT / FCT alone on an idle fabric") };
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{title} CDF"), ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x_min..x_max, 0f64..1.0)
        .map_err(fail)?;
    chart.configure_mesh().x_desc(x_desc).y_desc("fraction").draw().map_err(fail)?;
    for (n, run) in runs.iter().enumerate() {
        let mut sorted = values(run);
        sorted.sort_by(f64::total_cmp);
        let count = sorted.len().max(1) as f64;
        let color = Palette99::pick(n).to_rgba();
        // A step per value: (x, i/n) then (x, (i+1)/n).
        let points: Vec<(f64, f64)> = sorted
            .iter()
            .enumerate()
            .flat_map(|(i, &x)| [(x, i as f64 / count), (x, (i + 1) as f64 / count)])
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(fail)?
            .label(run.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(fail)?;
    root.present().map_err(fail)
}
