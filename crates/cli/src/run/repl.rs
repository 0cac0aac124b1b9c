//! The interactive prompt: `127.0.0.1:6379> `, `[n]` after `SELECT n`,
//! `(TX)` inside MULTI, `not connected> ` while the server is away.
//!
//! Lines are split with Redis's inline quoting rules (`set k "a b"`); a
//! leading number repeats the command (`3 incr n`, paced by `-i`); `help <command>` prints
//! the command's usage from the command table; `quit` / `exit` leave.
//!
//! At a terminal, line editing, history (in `~/.kvikcli_history`, at most
//! [`HISTORY_MAX`] lines, never holding a password) and argument hints come
//! from rustyline. When stdin is not a terminal, lines are read plainly and no
//! prompt is shown, so `kvik-cli < commands.txt` works as a script.

use std::borrow::Cow;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use kvik_client::{Connection, Value};
use kvik_protocol::resp::inline::split_inline;
use kvik_protocol::CommandArgs;
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use super::{connect, connect_with, hints, print, reason, server_name, style};
use crate::format::{format_reply, Style};
use crate::options::Config;

/// Most lines kept in the history file.
pub const HISTORY_MAX: usize = 1000;

/// Longest line read from a non-terminal stdin (Redis's inline limit).
const MAX_LINE: u64 = 64 * 1024 * 1024;

/// Hints and completion from the command table.
struct CommandHelper;

impl Completer for CommandHelper {
    type Candidate = String;
    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<String>)> {
        let head = &line[..pos];
        if head.contains(char::is_whitespace) {
            return Ok((pos, Vec::new()));
        }
        Ok((0, hints::complete(head)))
    }
}

impl Hinter for CommandHelper {
    type Hint = String;
    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<String> {
        (pos == line.len()).then(|| hints::hint(line)).flatten()
    }
}

impl Highlighter for CommandHelper {
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(format!("\x1b[90m{hint}\x1b[0m"))
    }
}

impl Validator for CommandHelper {}
impl Helper for CommandHelper {}

/// Where history is kept: `KVIKCLI_HISTFILE`, or `~/.kvikcli_history`;
/// `None` for `/dev/null` or no home directory.
fn history_path() -> Option<PathBuf> {
    let path = match std::env::var_os("KVIKCLI_HISTFILE") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".kvikcli_history"),
    };
    (path != std::path::Path::new("/dev/null")).then_some(path)
}

/// Lines that carry a secret and must not reach the history file.
pub fn is_sensitive(words: &[Vec<u8>]) -> bool {
    let lower: Vec<Vec<u8>> = words.iter().take(3).map(|w| w.to_ascii_lowercase()).collect();
    let w = |i: usize| lower.get(i).map(Vec::as_slice).unwrap_or_default();
    match w(0) {
        b"auth" => true,
        b"hello" => words.iter().any(|a| a.eq_ignore_ascii_case(b"auth")),
        b"acl" => w(1) == b"setuser",
        b"migrate" => words.iter().any(|a| a.eq_ignore_ascii_case(b"auth") || a.eq_ignore_ascii_case(b"auth2")),
        b"config" => {
            w(1) == b"set"
                && words.iter().skip(2).any(|a| {
                    let a = a.to_ascii_lowercase();
                    a == b"masterauth" || a == b"requirepass" || a == b"masteruser"
                })
        }
        _ => false,
    }
}

/// The prompt for the current state.
pub fn prompt(cfg: &Config, db: u32, in_multi: bool, connected: bool) -> String {
    if !connected {
        return "not connected> ".into();
    }
    let mut p = match &cfg.socket {
        Some(path) => format!("kvik {}", path.display()),
        None => server_name(cfg),
    };
    if db != 0 {
        p.push_str(&format!("[{db}]"));
    }
    if in_multi {
        p.push_str("(TX)");
    }
    p.push_str("> ");
    p
}

/// What the session knows about its connection.
struct Session<'a> {
    cfg: &'a Config,
    conn: Option<Connection>,
    db: u32,
    in_multi: bool,
    style: Style,
}

pub(super) async fn run(cfg: &Config) -> i32 {
    let (conn, db) = match connect_with(cfg).await {
        Some((conn, opts)) => (Some(conn), opts.db.unwrap_or(0)),
        None => (None, 0),
    };
    let mut s = Session { cfg, conn, db, in_multi: false, style: style(cfg) };
    if !std::io::stdin().is_terminal() {
        return s.plain_lines().await;
    }
    let config = rustyline::Config::builder().auto_add_history(false).max_history_size(HISTORY_MAX);
    let mut editor = match config.map(|c| Editor::<CommandHelper, DefaultHistory>::with_config(c.build())) {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => return editor_failed(&e),
        Err(e) => return editor_failed(&e),
    };
    editor.set_helper(Some(CommandHelper));
    let history = history_path();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    loop {
        let prompt = prompt(cfg, s.db, s.in_multi, s.conn.is_some());
        let line = match editor.readline(&prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => break,
            Err(e) => return editor_failed(&e),
        };
        match s.line(line.as_bytes()).await {
            Step::Quit => break,
            Step::Continue { remember } => {
                if remember {
                    let _ = editor.add_history_entry(line.as_str());
                    if let Some(h) = &history {
                        let _ = editor.save_history(h);
                    }
                }
            }
        }
    }
    0
}

fn editor_failed(e: &ReadlineError) -> i32 {
    eprintln!("Error: line editor: {e}");
    1
}

enum Step {
    Continue { remember: bool },
    Quit,
}

impl Session<'_> {
    async fn plain_lines(&mut self) -> i32 {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            match std::io::Read::take(&mut input, MAX_LINE).read_until(b'\n', &mut line) {
                Ok(0) => return 0,
                Ok(_) => {}
                Err(e) => {
                    eprintln!("Error reading from stdin: {e}");
                    return 1;
                }
            }
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            if let Step::Quit = self.line(&line).await {
                return 0;
            }
        }
    }

    /// Run one typed line.
    async fn line(&mut self, line: &[u8]) -> Step {
        let mut parsed = CommandArgs::new();
        if split_inline(line, 0, &mut parsed).is_err() {
            println!("Invalid argument(s)");
            return Step::Continue { remember: true };
        }
        let mut words = parsed.to_vec(line);
        if words.is_empty() {
            return Step::Continue { remember: false };
        }
        let remember = !is_sensitive(&words);
        let first = words[0].to_ascii_lowercase();
        if first == b"quit" || first == b"exit" {
            return Step::Quit;
        }
        if first == b"help" || first == b"?" {
            let rest: Vec<String> = words[1..].iter().map(|w| String::from_utf8_lossy(w).into_owned()).collect();
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            print(hints::help(&rest).as_bytes());
            return Step::Continue { remember };
        }
        let mut times = 1u64;
        if words.len() > 1 {
            if let Some(n) = std::str::from_utf8(&words[0]).ok().and_then(|t| t.parse::<u64>().ok()) {
                times = n;
                words.remove(0);
            }
        }
        for _ in 0..times {
            if !self.send(&words).await {
                break;
            }
            if let Some(pause) = self.cfg.interval {
                tokio::time::sleep(pause).await;
            }
        }
        Step::Continue { remember }
    }

    /// Send one command and print its reply; false when it could not be sent.
    async fn send(&mut self, words: &[Vec<u8>]) -> bool {
        if self.conn.is_none() {
            self.conn = connect(self.cfg).await;
        }
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        let reply = match conn.command(words).await {
            Ok(r) => r,
            Err(e) => {
                if !(e.is_connection_error() && super::command::is_shutdown(words)) {
                    eprintln!("Error: {}", reason(&e));
                }
                self.conn = None;
                return false;
            }
        };
        print(&format_reply(&reply, self.style));
        self.track(words, &reply);
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        while conn.pending_pushes() > 0 {
            match conn.read_reply().await {
                Ok(push) => print(&format_reply(&push, self.style)),
                Err(_) => break,
            }
        }
        let name = words[0].to_ascii_lowercase();
        if matches!(name.as_slice(), b"subscribe" | b"psubscribe" | b"ssubscribe" | b"monitor") && !reply.is_error() {
            while let Ok(next) = conn.read_reply().await {
                print(&format_reply(&next, self.style));
            }
            self.conn = None;
        }
        true
    }

    /// Follow SELECT, MULTI, EXEC and DISCARD for the prompt.
    fn track(&mut self, words: &[Vec<u8>], reply: &Value) {
        let name = words[0].to_ascii_lowercase();
        let ok = !reply.is_error();
        match name.as_slice() {
            b"select" if ok => {
                if let Some(db) = words.get(1).and_then(|d| std::str::from_utf8(d).ok()?.parse().ok()) {
                    self.db = db;
                }
            }
            b"multi" if ok => self.in_multi = true,
            b"exec" | b"discard" => self.in_multi = false,
            b"reset" if ok => {
                self.db = 0;
                self.in_multi = false;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<u8>> {
        line.split_whitespace().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn prompts() {
        let cfg = Config::default();
        assert_eq!(prompt(&cfg, 0, false, true), "127.0.0.1:6379> ");
        assert_eq!(prompt(&cfg, 3, false, true), "127.0.0.1:6379[3]> ");
        assert_eq!(prompt(&cfg, 3, true, true), "127.0.0.1:6379[3](TX)> ");
        assert_eq!(prompt(&cfg, 0, false, false), "not connected> ");
        let v6 = Config { host: "::1".into(), port: 7000, ..Config::default() };
        assert_eq!(prompt(&v6, 0, false, true), "[::1]:7000> ");
    }

    #[test]
    fn secrets_stay_out_of_history() {
        assert!(is_sensitive(&words("AUTH pw")));
        assert!(is_sensitive(&words("hello 3 auth default pw")));
        assert!(is_sensitive(&words("acl setuser bob on >pw")));
        assert!(is_sensitive(&words("config set requirepass x")));
        assert!(!is_sensitive(&words("config set maxmemory 1")));
        assert!(!is_sensitive(&words("get auth")));
        assert!(!is_sensitive(&words("hello 3")));
    }
}
