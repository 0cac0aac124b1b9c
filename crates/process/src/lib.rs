//! What kvik asks of the operating system about its own process.
//!
//! - [`daemonize`]: `daemonize yes` detaches the server from its terminal
//!   the way Redis does, with one `fork` and a `setsid`; the standard
//!   library has neither.
//! - [`open_files_limit`], [`set_open_files_limit`]: `maxclients` needs a
//!   file descriptor per client, as many as the soft limit allows.
//! - [`stop_self`]: `supervised upstart` stops the ready server with SIGSTOP.
//! - [`lower_thread_priority`]: the thread writing a background snapshot
//!   yields the cores to the event loops when both want one.
//! - [`utc_offset_secs`]: log lines carry local time, as Redis's do, and
//!   only the C library knows the time zone's rules.
//!
//! This crate exists so that the server crates can keep
//! `#![forbid(unsafe_code)]`: the foreign calls live here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

use std::io;

/// Detach from the terminal: the parent process exits 0 at once, the child
/// goes on in a new session with its standard input, output and error on
/// `/dev/null`.
///
/// Must be called before the process starts any thread: after a `fork`
/// only the calling thread exists in the child.
pub fn daemonize() -> io::Result<()> {
    detach()
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn detach() -> io::Result<()> {
    // SAFETY: fork takes no arguments; the caller guarantees a single
    // thread, so the child inherits no lock held by another thread.
    match unsafe { libc::fork() } {
        -1 => return Err(io::Error::last_os_error()),
        0 => {}
        // SAFETY: _exit ends the parent without running destructors or
        // flushing buffers the child also owns.
        _ => unsafe { libc::_exit(0) },
    }
    // SAFETY: setsid takes no arguments and only changes this process's
    // session; it fails only if the process leads a group, which a fresh
    // child never does.
    if unsafe { libc::setsid() } == -1 {
        return Err(io::Error::last_os_error());
    }
    let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null")?;
    use std::os::fd::AsRawFd;
    for fd in [libc::STDIN_FILENO, libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: both descriptors are open (null is owned above, the
        // standard ones exist in every process); dup2 replaces the second.
        if unsafe { libc::dup2(null.as_raw_fd(), fd) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn detach() -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "daemonize needs a Unix system"))
}

/// Give the calling thread (not the whole process) the scheduling
/// priority `nice` (0 is the default, 19 the lowest), on Linux; elsewhere,
/// an `Unsupported` error.
pub fn lower_thread_priority(nice: i32) -> io::Result<()> {
    thread_nice(nice)
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: gettid takes no arguments and cannot fail.
    let tid = unsafe { libc::gettid() };
    let Ok(who) = libc::id_t::try_from(tid) else {
        return Err(io::Error::other("a negative thread id"));
    };
    // SAFETY: setpriority reads its three integer arguments only; on Linux
    // PRIO_PROCESS with a thread id sets that thread's nice value.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, who, nice) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn thread_nice(_nice: i32) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "per-thread priorities need Linux"))
}

/// The soft and hard limits on this process's open files.
pub fn open_files_limit() -> io::Result<(u64, u64)> {
    nofile_get()
}

/// Raise the soft limit on open files to `soft`, and the hard limit with it
/// where the process may (as root); otherwise as far as the hard limit goes.
pub fn set_open_files_limit(soft: u64) -> io::Result<()> {
    nofile_set(soft)
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn nofile_get() -> io::Result<(u64, u64)> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // rlim_t is u64 on the targets kvik is built for.
    #[allow(clippy::unnecessary_cast)]
    Ok((limit.rlim_cur as u64, limit.rlim_max as u64))
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn nofile_set(soft: u64) -> io::Result<()> {
    let (_, hard) = nofile_get()?;
    #[allow(clippy::unnecessary_cast)]
    let set = |cur: u64, max: u64| {
        let limit = libc::rlimit { rlim_cur: cur as libc::rlim_t, rlim_max: max as libc::rlim_t };
        // SAFETY: setrlimit reads the struct it is given, which lives for the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    if soft > hard && set(soft, soft).is_ok() {
        return Ok(());
    }
    set(soft.min(hard), hard)
}

#[cfg(not(unix))]
fn nofile_get() -> io::Result<(u64, u64)> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no file limits here"))
}

#[cfg(not(unix))]
fn nofile_set(_soft: u64) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no file limits here"))
}

/// Stop this process with SIGSTOP, as upstart waits for a service to do
/// once it is ready; it goes on when the supervisor sends SIGCONT.
pub fn stop_self() {
    stop()
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn stop() {
    // SAFETY: raise takes a signal number and acts on this process only.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}

#[cfg(not(unix))]
fn stop() {}

/// How far the local time zone is ahead of UTC at `unix_secs`, in seconds
/// (0 when the C library cannot say).
pub fn utc_offset_secs(unix_secs: i64) -> i64 {
    offset(unix_secs)
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn offset(unix_secs: i64) -> i64 {
    let t: libc::time_t = unix_secs as libc::time_t;
    // SAFETY: tm is plain data (integers and a pointer that may be null), so
    // all zeroes is a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call, and localtime_r is the
    // thread-safe form, writing only into `tm`.
    let filled = unsafe { libc::localtime_r(&t, &mut tm) };
    if filled.is_null() {
        0
    } else {
        #[allow(clippy::useless_conversion)] // c_long is narrower on 32-bit targets
        i64::from(tm.tm_gmtoff)
    }
}

#[cfg(not(unix))]
fn offset(_unix_secs: i64) -> i64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_within_a_day() {
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        assert!(utc_offset_secs(now).abs() <= 14 * 3600);
    }
}
