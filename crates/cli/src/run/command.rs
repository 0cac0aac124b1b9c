//! One-shot commands: `kvik-cli [opts] cmd args...`, repeated with `-r`,
//! paced with `-i`, with the last argument read from stdin with `-x`.
//!
//! As in redis-cli, an error reply is printed like any reply and the exit
//! status stays 0 unless `-e` is given (then it goes to stderr and ends the
//! run with status 1); a subscribe command or `MONITOR`
//! keeps printing what arrives until the connection ends.

use std::io::Read;

use kvik_client::{Connection, Value};

use super::{connect, print, reason, style};
use crate::format::{format_reply, Style};
use crate::options::Config;

/// Largest stdin accepted by `-x` (Redis's largest string).
const MAX_STDIN_ARG: u64 = 512 * 1024 * 1024;

pub(super) async fn run(cfg: &Config) -> i32 {
    let mut args = cfg.args.clone();
    if cfg.stdin_last_arg {
        let mut buf = Vec::new();
        if let Err(e) = std::io::stdin().lock().take(MAX_STDIN_ARG + 1).read_to_end(&mut buf) {
            eprintln!("Error reading from stdin: {e}");
            return 1;
        }
        if buf.len() as u64 > MAX_STDIN_ARG {
            eprintln!("Error: stdin holds more than {MAX_STDIN_ARG} bytes");
            return 1;
        }
        args.push(buf);
    }
    if args.is_empty() {
        return 0;
    }
    let Some(mut conn) = connect(cfg).await else {
        return 1;
    };
    let style = style(cfg);
    let repeat = cfg.repeat.unwrap_or(1);
    let mut done = 0u64;
    while done < repeat {
        done += 1;
        if let Err(code) = send(&mut conn, &args, style, cfg.exit_on_error).await {
            return code;
        }
        if let Some(pause) = cfg.interval {
            tokio::time::sleep(pause).await;
        }
    }
    0
}

/// Send one command and print its reply (and, for subscriptions and
/// MONITOR, everything after it). With `-e` an error reply goes to stderr
/// and ends the run with status 1, as in redis-cli.
async fn send(conn: &mut Connection, args: &[Vec<u8>], style: Style, exit_on_error: bool) -> Result<(), i32> {
    let reply = match conn.command(args).await {
        Ok(reply) => reply,
        // SHUTDOWN succeeds by closing the connection: nothing to print.
        Err(e) if e.is_connection_error() && is_shutdown(args) => return Ok(()),
        Err(e) => return Err(lost(&e)),
    };
    if let (Value::Error(e), true) = (&reply, exit_on_error) {
        eprintln!("{}", String::from_utf8_lossy(e));
        return Err(1);
    }
    print(&format_reply(&reply, style));
    if follows_stream(args) && !reply.is_error() {
        loop {
            let next = conn.read_reply().await.map_err(|e| lost(&e))?;
            print(&format_reply(&next, style));
        }
    }
    Ok(())
}

fn lost(e: &kvik_client::Error) -> i32 {
    eprintln!("Error: {}", reason(e));
    1
}

/// Commands after which the server keeps sending.
fn follows_stream(args: &[Vec<u8>]) -> bool {
    let name = args.first().map(|n| n.to_ascii_lowercase()).unwrap_or_default();
    matches!(name.as_slice(), b"subscribe" | b"psubscribe" | b"ssubscribe" | b"monitor")
}

/// `SHUTDOWN`, whose success is the connection closing.
pub(super) fn is_shutdown(args: &[Vec<u8>]) -> bool {
    args.first().is_some_and(|n| n.eq_ignore_ascii_case(b"shutdown"))
}
