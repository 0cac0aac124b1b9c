//! The interactive prompt on a real terminal: `script` runs kvik-cli on a
//! pseudo-terminal and types the lines, as a person would.
//!
//! Checks the prompt (with `[n]` after SELECT), the argument hints drawn
//! from the command table, replies in the human style, lines typed ahead
//! being kept, and the history file (which must not keep the AUTH line).

mod common;

use std::process::{Command, Stdio};

use common::{show, start_kvik};

fn have_script() -> bool {
    Command::new("script").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

#[test]
fn prompt_hints_and_history() {
    if !have_script() {
        assert!(std::env::var_os("CI").is_none(), "script (util-linux) is required under CI");
        return;
    }
    let kvik = start_kvik(&[]);
    let history = std::env::temp_dir().join(format!("kvik-cli-history-{}", std::process::id()));
    let _ = std::fs::remove_file(&history);
    let cli = format!("{} -p {}", env!("CARGO_BIN_EXE_kvik-cli"), kvik.port);
    let mut child = Command::new("script")
        .args(["-qec", &cli, "/dev/null"])
        .env("KVIKCLI_HISTFILE", &history)
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        // All lines at once: the ones typed ahead must not be lost.
        stdin.write_all(b"set k v\rselect 2\rauth secret\rget k\rquit\r").expect("typing");
    }
    let out = child.wait_with_output().expect("script output");
    let screen = show(&out.stdout);
    let prompt = format!("127.0.0.1:{}> ", kvik.port);
    assert!(screen.contains(&prompt), "{screen}");
    assert!(screen.contains(&format!("127.0.0.1:{}[2]> ", kvik.port)), "no [2] after SELECT 2: {screen}");
    assert!(screen.contains("\x1b[90m key value [NX|XX] [GET]"), "no hint after 'set': {screen}");
    assert!(screen.contains("OK\r\n"), "{screen}");
    assert!(screen.contains("(error) ERR AUTH"), "{screen}");
    assert!(screen.contains("(nil)\r\n"), "get k in db 2: {screen}");
    assert_eq!(out.status.code(), Some(0));
    let saved = std::fs::read_to_string(&history).expect("history file");
    let lines: Vec<&str> = saved.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines, ["set k v", "select 2", "get k"]);
    let _ = std::fs::remove_file(&history);
}
