//! The modes of a run, on `kvik-client` connections.
//!
//! [`main`] parses the command line and hands over to one mode:
//! [`command`] (one-shot, with `-r`/`-i`/`-x`), [`repl`] (interactive),
//! [`pipe`] (`--pipe`), [`scan`] (`--scan`), [`stat`] (`--stat`), or the
//! converter (no server). Messages for people go to stderr with redis-cli's
//! wording where scripts may look for it; replies go to stdout.

mod command;
pub mod hints;
mod pipe;
mod repl;
mod scan;
mod stat;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};

use kvik_client::{ClientTls, Connection, Error, Options};

use crate::convert::convert_stream;
use crate::format::Style;
use crate::options::{self, Config, Mode, Output};

/// Run kvik-cli with `argv` (program name excluded); returns the exit status.
pub fn main(argv: Vec<OsString>) -> i32 {
    use std::os::unix::ffi::OsStringExt;
    let env_password =
        std::env::var_os("KVIKCLI_AUTH").or_else(|| std::env::var_os("REDISCLI_AUTH")).map(OsString::into_vec);
    let cfg = match options::parse(argv, env_password) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    if cfg.password_on_command_line && !cfg.no_auth_warning {
        eprintln!("Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.");
    }
    match cfg.mode {
        Mode::Help => {
            print!("{}", options::HELP.replace("VERSION", env!("CARGO_PKG_VERSION")));
            0
        }
        Mode::Version => {
            println!("kvik-cli {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Mode::Convert(target) => match convert_stream(target, std::io::stdin().lock(), std::io::stdout().lock()) {
            Ok(stats) => {
                eprintln!("{}", stats.report(target));
                0
            }
            Err(e) => {
                eprintln!("Error: {e}");
                1
            }
        },
        _ => match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => {
                let code = rt.block_on(serve(cfg));
                // A read of stdin may still be blocked in the pool: do not wait for it.
                rt.shutdown_background();
                code
            }
            Err(e) => {
                eprintln!("Error: cannot start the runtime: {e}");
                1
            }
        },
    }
}

async fn serve(cfg: Config) -> i32 {
    if cfg.cluster {
        eprintln!("Warning: -c is accepted but cluster redirections are not followed by kvik-cli.");
    }
    match cfg.mode {
        Mode::Pipe => pipe::run(&cfg).await,
        Mode::Scan => scan::run(&cfg).await,
        Mode::Stat => stat::run(&cfg).await,
        _ if cfg.args.is_empty() && !cfg.stdin_last_arg => repl::run(&cfg).await,
        _ => command::run(&cfg).await,
    }
}

/// The style replies are printed in, from `--raw`/`--no-raw` and whether
/// stdout is a terminal.
pub(crate) fn style(cfg: &Config) -> Style {
    match cfg.output {
        Output::Raw => Style::Raw,
        Output::Human => Style::Human,
        Output::Auto if std::io::stdout().is_terminal() => Style::Human,
        Output::Auto => Style::Raw,
    }
}

/// `host:port` or the socket path, as messages name the server.
pub(crate) fn server_name(cfg: &Config) -> String {
    match &cfg.socket {
        Some(p) => p.display().to_string(),
        None if cfg.host.contains(':') => format!("[{}]:{}", cfg.host, cfg.port),
        None => format!("{}:{}", cfg.host, cfg.port),
    }
}

/// Connection options for `cfg`; the error says why the TLS settings
/// (certificate files, cipher names) cannot be used.
pub(crate) fn client_options(cfg: &Config) -> Result<Options, String> {
    let mut o = match &cfg.socket {
        Some(p) => Options::unix(p.clone()),
        None => Options::tcp(server_name(cfg)),
    };
    o.protocol = cfg.protocol;
    o.username = cfg.user.clone();
    o.password = cfg.password.clone();
    o.db = cfg.db;
    if cfg.tls {
        let tls = ClientTls::new(&cfg.tls_options).map_err(|e| format!("Could not create a TLS context: {e}"))?;
        o = o.with_tls(tls);
    }
    Ok(o)
}

/// The reason in an error, without Rust's ` (os error N)` suffix, as the C
/// library's `strerror` would say it.
pub(crate) fn reason(e: &Error) -> String {
    match e {
        Error::Io(io) => {
            let s = io.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
        other => other.to_string(),
    }
}

/// Connect, printing redis-cli's message on failure.
pub(crate) async fn connect(cfg: &Config) -> Option<Connection> {
    connect_with(cfg).await.map(|(conn, _)| conn)
}

/// Connect; a setup step the server refuses (a wrong password, a database
/// out of range) is reported on stderr and left out, and the connection is
/// used anyway, as redis-cli does. Also returns the options that worked.
pub(crate) async fn connect_with(cfg: &Config) -> Option<(Connection, Options)> {
    let mut opts = match client_options(cfg) {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("{e}");
            return None;
        }
    };
    // Each retry drops one setup step, so this ends within four rounds.
    for _ in 0..4 {
        match Connection::connect(&opts).await {
            Ok(c) => return Some((c, opts)),
            Err(Error::Setup { step, message }) => {
                if step == "HELLO" && opts.password.is_some() {
                    // redis-cli authenticates apart from HELLO, so it names AUTH.
                    eprintln!("AUTH failed: {message}");
                    opts.password = None;
                } else if step == "HELLO" {
                    opts.protocol = kvik_client::Protocol::Resp2;
                } else if step == "AUTH" {
                    eprintln!("AUTH failed: {message}");
                    opts.password = None;
                } else {
                    eprintln!("{step} {} failed: {message}", opts.db.unwrap_or(0));
                    opts.db = None;
                }
            }
            Err(e) => {
                eprintln!("Could not connect to Redis at {}: {}", server_name(cfg), reason(&e));
                return None;
            }
        }
    }
    None
}

/// Write `bytes` to stdout and flush, ignoring a closed pipe.
pub(crate) fn print(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}
