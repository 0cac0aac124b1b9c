//! `kvik-server`: parse the options, bind, serve until the process is stopped.

use std::process::ExitCode;

use kvik_server::config::Config;
use kvik_server::listener::Server;
use kvik_server::{KVIK_VERSION, REDIS_VERSION};

fn main() -> ExitCode {
    let config = match Config::from_args(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("kvik-server: {e}");
            return ExitCode::from(1);
        }
    };
    let server = match Server::bind(&config) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("kvik-server: cannot listen on {}:{}: {e}", config.bind, config.port);
            return ExitCode::from(1);
        }
    };
    let port = server.local_addr().map(|a| a.port()).unwrap_or(config.port);
    eprintln!(
        "kvik-server {KVIK_VERSION} (Redis {REDIS_VERSION} compatible) listening on {}:{port}, threads={}, pid={}",
        config.bind,
        config.threads,
        std::process::id()
    );
    match server.serve() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kvik-server: {e}");
            ExitCode::from(1)
        }
    }
}
