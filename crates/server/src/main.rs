//! `kvik-server [config-file] [--name value ...]`: load the configuration,
//! bind, serve until SIGTERM, SIGINT or `SHUTDOWN`, then exit 0.

use std::process::ExitCode;
use std::sync::Arc;

use kvik_server::config::Config;
use kvik_server::state::ServerState;
use kvik_server::Server;
use kvik_server::{log, supervision};
use kvik_server::{KVIK_VERSION, REDIS_VERSION};

/// What `--help` prints.
const USAGE: &str = "Usage: kvik-server [/path/to/kvik.conf] [--option value ...]
       kvik-server -v | --version
       kvik-server -h | --help

Options are those of redis.conf (port, bind, unixsocket, threads, maxclients,
timeout, maxmemory, ...); flags given after the file override it.

Examples:
       kvik-server --port 7000 --threads 4
       kvik-server /etc/kvik/kvik.conf --loglevel verbose
";

fn main() -> ExitCode {
    let first = std::env::args().nth(1);
    match first.as_deref() {
        Some("-v" | "--version") => {
            println!("kvik-server v={KVIK_VERSION} redis={REDIS_VERSION}");
            return ExitCode::SUCCESS;
        }
        Some("-h" | "--help") => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let (mut config, file) = match Config::from_args(std::env::args().skip(1)) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("kvik-server: {e}");
            return ExitCode::from(1);
        }
    };
    // Made absolute before `dir` becomes the working directory, so that
    // CONFIG REWRITE finds the file a relative path named.
    let file = file.map(|f| std::path::absolute(&f).unwrap_or(f));
    if let Err(e) = config.enter_dir() {
        eprintln!("kvik-server: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = kvik_server::install_renames(config.renames()) {
        eprintln!("kvik-server: {e}");
        return ExitCode::from(1);
    }
    // Before any thread exists: only the forking thread lives on in the child.
    if let Err(e) = supervision::daemonize_if_asked(&config) {
        eprintln!("kvik-server: cannot daemonize: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = log::open(&config) {
        eprintln!("kvik-server: {e}");
        return ExitCode::from(1);
    }
    kvik_server::log!(Notice, "kvik is starting");
    kvik_server::log!(
        Notice,
        "kvik version={KVIK_VERSION} (Redis {REDIS_VERSION} compatible), bits=64, pid={}, just started",
        std::process::id()
    );
    match &file {
        Some(path) => kvik_server::log!(Notice, "Configuration loaded from {}", path.display()),
        None => kvik_server::log!(Notice, "No config file specified, using the default config."),
    }
    for name in config.set_knobs() {
        kvik_server::log!(Notice, "Option '{name}' is kept but has no effect in kvik");
    }
    if let Err(e) = supervision::fit_maxclients(&mut config) {
        kvik_server::log!(Warning, "{e}");
        eprintln!("kvik-server: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = supervision::apply_oom_score(&config) {
        kvik_server::log!(Warning, "{e}");
    }
    supervision::write_pidfile(&config);
    let threads = config.threads();
    let state = Arc::new(ServerState::new(config, file));
    state.remember_self();
    if let Err(e) = kvik_server::load_users(&state) {
        kvik_server::log!(Warning, "{e}");
        eprintln!("kvik-server: {e}");
        supervision::remove_pidfile(&state.config());
        return ExitCode::from(1);
    }
    if let Err(e) = kvik_server::load_at_start(&state) {
        kvik_server::log!(Warning, "{e}");
        eprintln!("kvik-server: {e}");
        supervision::remove_pidfile(&state.config());
        return ExitCode::from(1);
    }
    let server = match Server::bind(Arc::clone(&state)) {
        Ok(server) => server,
        Err(e) => {
            kvik_server::log!(Warning, "{e}");
            eprintln!("kvik-server: {e}");
            supervision::remove_pidfile(&state.config());
            return ExitCode::from(1);
        }
    };
    if let Err(e) = kvik_server::start_replication(&state) {
        kvik_server::log!(Warning, "The link to the master could not start: {e}");
        eprintln!("kvik-server: the link to the master could not start: {e}");
        supervision::remove_pidfile(&state.config());
        return ExitCode::from(1);
    }
    let mut listening: Vec<String> = server.local_addrs().iter().map(ToString::to_string).collect();
    listening.extend(server.tls_local_addrs().iter().map(|a| format!("{a} (TLS)")));
    if let Some(path) = state.config().unixsocket() {
        listening.push(path.to_string());
    }
    kvik_server::log!(Notice, "Running mode=standalone, threads={threads}, listening on {}", listening.join(" "));
    // "Ready to accept connections" comes from the acceptor once its
    // signal handlers are in place, so a SIGTERM after it is a clean stop.
    let outcome = server.serve();
    kvik_server::persistence::aof::stop(&state);
    supervision::notify_stopping(&state.config());
    supervision::remove_pidfile(&state.config());
    match outcome {
        Ok(reason) => {
            kvik_server::log!(Notice, "{}, shut down, bye", reason.describe());
            ExitCode::SUCCESS
        }
        Err(e) => {
            kvik_server::log!(Warning, "{e}");
            ExitCode::from(1)
        }
    }
}
