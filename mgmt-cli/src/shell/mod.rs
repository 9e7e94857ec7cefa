//! The interactive shell of `swcli`: [`grammar`] (the commands, shared by
//! parsing, completion and `?`), [`session`] (a session on one daemon:
//! mode, candidate, what each command does), [`repl`] (the terminal:
//! reedline with history, completion and `?`).

pub mod grammar;
pub mod repl;
pub mod session;
