//! The server process among the others on its machine: detaching as a
//! daemon, the pid file, telling a supervisor that it is ready, and the
//! kernel's out-of-memory score.
//!
//! These follow redis.conf's options, so that the service files and
//! configuration written for redis-server work for kvik:
//! - `daemonize yes` detaches from the terminal before any thread starts;
//! - `pidfile` holds the process id while the server runs (with
//!   `daemonize yes` and no `pidfile`, `/var/run/kvik.pid`);
//! - `supervised systemd` (or `auto` under systemd) sends `READY=1` to
//!   `$NOTIFY_SOCKET` once the server accepts connections and `STOPPING=1`
//!   when it shuts down; `supervised upstart` (or `auto` with `$UPSTART_JOB`)
//!   stops the process with SIGSTOP when it is ready, as upstart's
//!   `expect stop` waits for;
//! - `maxclients` gets the file descriptors it needs: the soft limit on
//!   open files is raised to `maxclients` + 32 (the server's own files)
//!   when the hard limit allows, and otherwise `maxclients` is lowered to
//!   fit, with Redis's log lines, so that no client is accepted only to find
//!   no descriptor for its socket;
//! - `oom-score-adj` raises or sets `/proc/self/oom_score_adj` from
//!   `oom-score-adj-values` (the first value, the one for a master), and
//!   puts back the score the process started with when set to `no`.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::config::Config;

/// The pid file of a daemon whose configuration names none.
pub const DEFAULT_PIDFILE: &str = "/var/run/kvik.pid";

/// The process's `oom_score_adj` when it started (`i64::MIN`: not read yet).
static BASE_OOM_SCORE: AtomicI64 = AtomicI64::new(i64::MIN);

/// The supervisor to tell about readiness, as `supervised` resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supervisor {
    /// Nobody to tell.
    None,
    /// systemd, through `$NOTIFY_SOCKET`.
    Systemd,
    /// upstart, which waits for the process to stop itself.
    Upstart,
}

/// Which supervisor `supervised` names, looking at the environment for `auto`.
pub fn supervisor(config: &Config) -> Supervisor {
    match config.get("supervised") {
        "systemd" => Supervisor::Systemd,
        "upstart" => Supervisor::Upstart,
        "auto" if std::env::var_os("NOTIFY_SOCKET").is_some() => Supervisor::Systemd,
        "auto" if std::env::var_os("UPSTART_JOB").is_some() => Supervisor::Upstart,
        _ => Supervisor::None,
    }
}

/// File descriptors kept for the server's own files besides its clients'
/// sockets, as Redis keeps (`CONFIG_MIN_RESERVED_FDS`).
pub const RESERVED_FDS: u64 = 32;

/// Make room for `maxclients` clients in the open-files limit, raising its
/// soft value if it is short. `Err` holds how many clients the limit allows
/// when it cannot be raised far enough.
pub fn fit_open_files(maxclients: u64) -> Result<(), u64> {
    let wanted = maxclients.saturating_add(RESERVED_FDS);
    let Ok((soft, _)) = kvik_process::open_files_limit() else { return Ok(()) };
    if soft >= wanted {
        return Ok(());
    }
    let raised = kvik_process::set_open_files_limit(wanted);
    let now = kvik_process::open_files_limit().map_or(soft, |(s, _)| s);
    if now >= wanted {
        crate::log!(Notice, "Increased maximum number of open files to {wanted} (it was originally set to {soft}).");
        return Ok(());
    }
    if let Err(e) = raised {
        crate::log!(Warning, "Server can't set maximum open files to {wanted} because of OS error: {e}.");
    }
    Err(now.saturating_sub(RESERVED_FDS))
}

/// At startup: lower `maxclients` in `config` to what the open-files limit
/// allows when it cannot be raised, saying so as Redis does. `Err` when
/// the limit leaves no room for any client.
pub fn fit_maxclients(config: &mut Config) -> Result<(), String> {
    let maxclients = config.usize("maxclients") as u64;
    let Err(possible) = fit_open_files(maxclients) else { return Ok(()) };
    let wanted = maxclients + RESERVED_FDS;
    if possible == 0 {
        return Err(format!(
            "Your current 'ulimit -n' is not enough for the server to start. Please increase your open file limit to at least {wanted}. Exiting."
        ));
    }
    crate::log!(Warning, "You requested maxclients of {maxclients} requiring at least {wanted} max file descriptors.");
    crate::log!(
        Warning,
        "Current maximum open files is {}. maxclients has been reduced to {possible} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.",
        possible + RESERVED_FDS
    );
    let value = possible.to_string();
    config.set_many(&[("maxclients", value.as_str())]).map_err(|e| e.reply_text())
}

/// Detach when `daemonize yes` asks for it. Call before any thread starts.
pub fn daemonize_if_asked(config: &Config) -> io::Result<()> {
    if config.flag("daemonize") {
        kvik_process::daemonize()?;
    }
    Ok(())
}

/// The pid file this server writes, if any.
pub fn pidfile(config: &Config) -> Option<PathBuf> {
    match config.get("pidfile") {
        "" if config.flag("daemonize") => Some(PathBuf::from(DEFAULT_PIDFILE)),
        "" => None,
        path => Some(PathBuf::from(path)),
    }
}

/// Write the process id into the pid file, if one is configured. A pid
/// file that cannot be written is logged, not fatal, as in Redis.
pub fn write_pidfile(config: &Config) {
    if let Some(path) = pidfile(config) {
        if let Err(e) = std::fs::write(&path, format!("{}\n", std::process::id())) {
            crate::log!(Warning, "Failed to write PID file {}: {e}", path.display());
        }
    }
}

/// Remove the pid file at shutdown.
pub fn remove_pidfile(config: &Config) {
    if let Some(path) = pidfile(config) {
        let _ = std::fs::remove_file(path);
    }
}

/// Tell the supervisor the server accepts connections.
pub fn notify_ready(config: &Config) {
    match supervisor(config) {
        Supervisor::Systemd => {
            crate::log!(Notice, "Server accepts connections: telling systemd (READY=1)");
            if let Err(e) = sd_notify("STATUS=Ready to accept connections\nREADY=1\n") {
                crate::log!(Warning, "systemd supervision error: {e}");
            }
        }
        Supervisor::Upstart => {
            crate::log!(Notice, "Server accepts connections: stopping for upstart (SIGSTOP)");
            kvik_process::stop_self();
        }
        Supervisor::None => {}
    }
}

/// Tell the supervisor the server is shutting down.
pub fn notify_stopping(config: &Config) {
    if supervisor(config) == Supervisor::Systemd {
        let _ = sd_notify("STOPPING=1\n");
    }
}

/// Send `message` to systemd's notification socket: a path, or an
/// abstract address when it starts with `@`.
fn sd_notify(message: &str) -> io::Result<()> {
    let path = std::env::var_os("NOTIFY_SOCKET")
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "NOTIFY_SOCKET is not set"))?;
    let socket = UnixDatagram::unbound()?;
    let bytes = path.as_encoded_bytes();
    if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
        socket.send_to_addr(message.as_bytes(), &addr)?;
    } else {
        socket.send_to(message.as_bytes(), &path)?;
    }
    Ok(())
}

/// The score `oom-score-adj` and `oom-score-adj-values` ask for, from the
/// score the process started with; `None` to leave it as it was.
fn wanted_oom_score(config: &Config, base: i64) -> Option<i64> {
    let master = config.get("oom-score-adj-values").split(' ').next().and_then(|w| w.parse::<i64>().ok())?;
    match config.get("oom-score-adj") {
        "yes" | "relative" => Some((base + master).clamp(-1000, 1000)),
        "absolute" => Some(master.clamp(-1000, 1000)),
        _ => None,
    }
}

/// Apply `oom-score-adj` (at startup and after `CONFIG SET`). Returns the
/// error text `CONFIG SET` answers with when the kernel refuses.
pub fn apply_oom_score(config: &Config) -> Result<(), String> {
    const PATH: &str = "/proc/self/oom_score_adj";
    let mut base = BASE_OOM_SCORE.load(Ordering::Relaxed);
    if base == i64::MIN {
        if config.get("oom-score-adj") == "no" {
            return Ok(());
        }
        let read = std::fs::read_to_string(PATH).map_err(|e| format!("Unable to read oom_score_adj: {e}"))?;
        base = read.trim().parse().map_err(|_| "Unable to read oom_score_adj".to_string())?;
        BASE_OOM_SCORE.store(base, Ordering::Relaxed);
    }
    let score = wanted_oom_score(config, base).unwrap_or(base);
    std::fs::write(PATH, format!("{score}\n")).map_err(|e| format!("Unable to write oom_score_adj: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Config {
        let mut c = Config::default();
        c.set_many(pairs).expect("valid settings");
        c
    }

    #[test]
    fn oom_scores_are_relative_or_absolute() {
        assert_eq!(wanted_oom_score(&config(&[("oom-score-adj", "no")]), 100), None);
        assert_eq!(
            wanted_oom_score(&config(&[("oom-score-adj", "yes"), ("oom-score-adj-values", "10 20 30")]), 100),
            Some(110)
        );
        assert_eq!(
            wanted_oom_score(&config(&[("oom-score-adj", "absolute"), ("oom-score-adj-values", "-50 20 30")]), 100),
            Some(-50)
        );
        assert_eq!(
            wanted_oom_score(&config(&[("oom-score-adj", "relative"), ("oom-score-adj-values", "2000 0 0")]), 100),
            Some(1000)
        );
    }

    #[test]
    fn a_daemon_without_a_pidfile_gets_the_default() {
        assert_eq!(pidfile(&Config::default()), None);
        let (c, _) = Config::from_args(["--daemonize", "yes"]).expect("valid");
        assert_eq!(pidfile(&c), Some(PathBuf::from(DEFAULT_PIDFILE)));
    }
}
