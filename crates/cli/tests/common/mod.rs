//! Programs for kvik-cli's integration tests: kvik-cli and redis-cli run as
//! child processes against servers from the workspace's shared test kit.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::Duration;

#[allow(unused_imports)]
pub use kvik_testkit::{free_port, have_redis, start_kvik, start_redis, Server};

/// Run `program` with `args`, feeding `stdin`, and return what it printed.
fn run(program: &str, args: &[&[u8]], stdin: &[u8]) -> Output {
    use std::os::unix::ffi::OsStrExt;
    let mut child = Command::new(program)
        .args(args.iter().map(|a| std::ffi::OsStr::from_bytes(a)))
        .env_remove("REDISCLI_AUTH")
        .env_remove("KVIKCLI_AUTH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let feeder = thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = wait_bounded(child, program);
    let _ = feeder.join();
    out
}

/// Wait for a child at most a minute, so a hung run fails the test.
fn wait_bounded(child: Child, program: &str) -> Output {
    let (tx, rx) = std::sync::mpsc::channel();
    let id = child.id();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.expect("child output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("{program} did not finish within a minute");
        }
    }
}

/// Run kvik-cli against `server` with `args` (options and command).
pub fn kvik_cli(server: &Server, args: &[&[u8]], stdin: &[u8]) -> Output {
    let port = server.port.to_string();
    let mut all: Vec<&[u8]> = vec![b"-p", port.as_bytes()];
    all.extend_from_slice(args);
    run(env!("CARGO_BIN_EXE_kvik-cli"), &all, stdin)
}

/// Run kvik-cli with `args` alone (no server options).
pub fn kvik_cli_plain(args: &[&[u8]], stdin: &[u8]) -> Output {
    run(env!("CARGO_BIN_EXE_kvik-cli"), args, stdin)
}

/// Run redis-cli against `server` with `args`.
pub fn redis_cli(server: &Server, args: &[&[u8]], stdin: &[u8]) -> Output {
    let port = server.port.to_string();
    let mut all: Vec<&[u8]> = vec![b"-p", port.as_bytes()];
    all.extend_from_slice(args);
    run("redis-cli", &all, stdin)
}

/// Bytes for messages.
pub fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run redis-cli with `args` alone.
pub fn run_redis_cli_plain(args: &[&[u8]]) -> Output {
    run("redis-cli", args, b"")
}
