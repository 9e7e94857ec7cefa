//! The terminal side of the shell: reedline with a history file, Tab
//! completion and `?` help from the [`Session`], Ctrl-C to cancel a line,
//! Ctrl-D or `exit` to leave.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

use reedline::{
    ColumnarMenu, Completer, DefaultHinter, EditCommand, Emacs, FileBackedHistory, KeyCode, KeyModifiers, MenuBuilder,
    Prompt, PromptEditMode, PromptHistorySearch, Reedline, ReedlineEvent, ReedlineMenu, Signal, Span, Suggestion,
    default_emacs_keybindings,
};

use super::session::{Session, Status};

/// What reedline hands back when `?` is pressed (a host command, so the
/// line being typed stays in the buffer).
const HELP_KEY: &str = "\u{1}swcli-help";
const HISTORY_ENTRIES: usize = 1000;

fn lock(session: &Mutex<Session>) -> MutexGuard<'_, Session> {
    session.lock().unwrap_or_else(|e| e.into_inner())
}

struct SessionCompleter(Arc<Mutex<Session>>);

impl Completer for SessionCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        let line = &line[..pos];
        let start = line.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        lock(&self.0)
            .complete(line)
            .into_iter()
            .map(|c| Suggestion {
                value: c.value,
                description: Some(c.help),
                span: Span::new(start, pos),
                append_whitespace: true,
                ..Suggestion::default()
            })
            .collect()
    }
}

struct SessionPrompt(String);

impl Prompt for SessionPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.0)
    }
    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn render_prompt_indicator(&self, _: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("> ")
    }
    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", search.term))
    }
}

fn history_file() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".swcli_history"))
}

/// Runs the shell until `exit` or Ctrl-D.
pub fn run(mut session: Session) -> std::io::Result<()> {
    if let Err(error) = session.fetch_name() {
        eprintln!("swcli: {error}");
    }
    let session = Arc::new(Mutex::new(session));
    let mut keybindings = default_emacs_keybindings();
    keybindings.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![ReedlineEvent::Menu("completion_menu".into()), ReedlineEvent::MenuNext]),
    );
    keybindings.add_binding(KeyModifiers::NONE, KeyCode::Char('?'), ReedlineEvent::ExecuteHostCommand(HELP_KEY.into()));
    keybindings.add_binding(
        KeyModifiers::SHIFT,
        KeyCode::Char('?'),
        ReedlineEvent::ExecuteHostCommand(HELP_KEY.into()),
    );
    let menu = ColumnarMenu::default().with_name("completion_menu");
    let mut editor = Reedline::create()
        .with_completer(Box::new(SessionCompleter(session.clone())))
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
        .with_quick_completions(true)
        .with_partial_completions(true)
        .with_hinter(Box::new(DefaultHinter::default()))
        .with_edit_mode(Box::new(Emacs::new(keybindings)));
    if let Some(path) = history_file()
        && let Ok(history) = FileBackedHistory::with_file(HISTORY_ENTRIES, path)
    {
        editor = editor.with_history(Box::new(history));
    }
    let mut pending_line: Option<String> = None;
    loop {
        if let Some(line) = pending_line.take() {
            editor.run_edit_commands(&[EditCommand::Clear, EditCommand::InsertString(line)]);
        }
        let prompt = SessionPrompt(lock(&session).prompt());
        match editor.read_line(&prompt)? {
            Signal::Success(command) if command == HELP_KEY => {
                let line = editor.current_buffer_contents().to_owned();
                let help = lock(&session).help_at(&line);
                println!("?");
                print!("{help}");
                pending_line = Some(line);
            }
            Signal::Success(line) => {
                let output = lock(&session).execute_to(&line, &mut std::io::stdout().lock());
                print!("{}", output.text);
                if output.status == Status::Exit {
                    return Ok(());
                }
            }
            Signal::CtrlC => continue,
            Signal::CtrlD => return Ok(()),
        }
    }
}
