//! The server log, in Redis's line format, levels and destinations.
//!
//! Operators read Redis logs with tools that expect its lines, so kvik
//! writes them the same way:
//!
//! ```text
//! 4711:M 01 Dec 2026 19:59:28.123 * Ready to accept connections tcp
//! ```
//!
//! the process id, the role (`M` master, `S` replica), the local time
//! to the millisecond, the level's mark (`.` debug, `-` verbose, `*`
//! notice, `#` warning) and the message. `loglevel` drops what is below it;
//! `logfile` names a file to append to (empty: standard output, which
//! `daemonize yes` sends to `/dev/null`, as Redis does); `syslog-enabled`
//! sends each message to the system log too, under `syslog-ident` and
//! `syslog-facility`.
//!
//! A message is formatted only once the level test has passed, and the
//! level is one relaxed load, so a disabled `debug!` costs next to
//! nothing. Messages that a client can make the server repeat (refused
//! connections, refused commands) go through a [`RateLimit`] so that a
//! misbehaving client cannot fill the disk.

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicI64, AtomicU8, Ordering};
use std::sync::Mutex;

use crate::config::Config;

/// How important a message is; `loglevel` names the lowest one written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    /// `debug`: everything.
    Debug = 0,
    /// `verbose`: details an operator rarely needs.
    Verbose = 1,
    /// `notice`: what happened (the default level).
    Notice = 2,
    /// `warning`: what needs attention.
    Warning = 3,
}

impl Level {
    /// The level `loglevel` names (`notice` for anything else).
    pub fn named(word: &str) -> Level {
        match word {
            "debug" => Level::Debug,
            "verbose" => Level::Verbose,
            "warning" => Level::Warning,
            _ => Level::Notice,
        }
    }

    /// The mark a log line shows for the level.
    fn mark(self) -> char {
        match self {
            Level::Debug => '.',
            Level::Verbose => '-',
            Level::Notice => '*',
            Level::Warning => '#',
        }
    }

    /// The syslog severity Redis maps the level to.
    fn severity(self) -> u8 {
        match self {
            Level::Debug => 7,
            Level::Verbose => 6,
            Level::Notice => 5,
            Level::Warning => 4,
        }
    }
}

/// The lowest level written, as a `Level` discriminant.
static LEVEL: AtomicU8 = AtomicU8::new(Level::Notice as u8);

/// Where lines go once [`open`] has run; standard output before.
static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// The destinations `logfile` and `syslog-enabled` chose.
struct Sink {
    /// The `logfile`, or `None` for standard output.
    file: Option<File>,
    /// The system log, when `syslog-enabled` asks for it.
    syslog: Option<Syslog>,
}

/// A connection to the system log's socket.
struct Syslog {
    socket: UnixDatagram,
    ident: String,
    facility: u8,
}

/// The facilities `syslog-facility` accepts, with their numbers.
pub const SYSLOG_FACILITIES: &[(&str, u8)] = &[
    ("user", 1),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
];

/// Open the destinations `config` names and take its level. An unusable
/// `logfile` stops startup, as it stops Redis.
pub fn open(config: &Config) -> Result<(), String> {
    let file = match config.get("logfile") {
        "" => None,
        path => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("Can't open the log file: {e}"))?,
        ),
    };
    let syslog = config.flag("syslog-enabled").then(|| connect_syslog(config)).flatten();
    *SINK.lock().unwrap_or_else(|e| e.into_inner()) = Some(Sink { file, syslog });
    apply_level(config);
    Ok(())
}

/// The system log's socket, if there is one to connect to: like the C
/// library's `openlog`, a missing syslog daemon is not an error.
fn connect_syslog(config: &Config) -> Option<Syslog> {
    let socket = UnixDatagram::unbound().ok()?;
    socket.connect("/dev/log").ok()?;
    let facility = SYSLOG_FACILITIES.iter().find(|(n, _)| *n == config.get("syslog-facility")).map_or(16, |f| f.1);
    Some(Syslog { socket, ident: config.get("syslog-ident").to_string(), facility })
}

/// Take `loglevel` from `config` (at startup and after `CONFIG SET`).
pub fn apply_level(config: &Config) {
    LEVEL.store(Level::named(config.get("loglevel")) as u8, Ordering::Relaxed);
}

/// Whether a message of `level` would be written.
#[inline]
pub fn enabled(level: Level) -> bool {
    level as u8 >= LEVEL.load(Ordering::Relaxed)
}

/// Write one message of `level` (see the [`crate::log!`] macro, which tests
/// the level first).
#[cold]
pub fn write(level: Level, message: fmt::Arguments<'_>) {
    let now_ms = crate::keyspace::now_ms();
    let text = message.to_string();
    let role = if AS_REPLICA.load(std::sync::atomic::Ordering::Relaxed) { 'S' } else { 'M' };
    let line = format!("{}:{role} {} {} {}\n", std::process::id(), timestamp(now_ms), level.mark(), text);
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    match sink.as_mut().and_then(|s| s.file.as_mut()) {
        Some(file) => {
            let _ = file.write_all(line.as_bytes());
        }
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
    }
    if let Some(syslog) = sink.as_ref().and_then(|s| s.syslog.as_ref()) {
        let priority = syslog.facility * 8 + level.severity();
        let datagram = format!("<{priority}>{} {}[{}]: {text}", syslog_time(now_ms), syslog.ident, std::process::id());
        let _ = syslog.socket.send(datagram.as_bytes());
    }
}

/// Log a message at a level: `log!(Warning, "client {id} closed")`.
#[macro_export]
macro_rules! log {
    ($level:ident, $($arg:tt)*) => {
        if $crate::log::enabled($crate::log::Level::$level) {
            $crate::log::write($crate::log::Level::$level, format_args!($($arg)*));
        }
    };
}

/// At most one message per interval from one place in the code.
pub struct RateLimit {
    last_ms: AtomicI64,
    interval_ms: i64,
}

impl RateLimit {
    /// A limit of one message per `interval_ms`.
    pub const fn per(interval_ms: i64) -> RateLimit {
        RateLimit { last_ms: AtomicI64::new(i64::MIN), interval_ms }
    }

    /// Whether a message may be written now; true at most once an interval,
    /// across every thread.
    pub fn allow(&self) -> bool {
        let now = crate::keyspace::now_ms();
        let last = self.last_ms.load(Ordering::Relaxed);
        now.saturating_sub(last) >= self.interval_ms
            && self.last_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// The broken-down local time of `unix_ms`: (year, month 1..=12, day,
/// hour, minute, second, millisecond).
fn local_time(unix_ms: i64) -> (i64, usize, i64, i64, i64, i64, i64) {
    let secs = unix_ms.div_euclid(1000);
    let local = secs + kvik_process::utc_offset_secs(secs);
    let (days, of_day) = (local.div_euclid(86_400), local.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    (year, month, day, of_day / 3600, of_day / 60 % 60, of_day % 60, unix_ms.rem_euclid(1000))
}

/// `01 Dec 2026 19:59:28.123`, Redis's log time.
fn timestamp(unix_ms: i64) -> String {
    let (year, month, day, h, m, s, ms) = local_time(unix_ms);
    format!("{day:02} {} {year} {h:02}:{m:02}:{s:02}.{ms:03}", MONTHS[month - 1])
}

/// ` Dec  1 19:59:28`, the time of a syslog datagram (RFC 3164).
fn syslog_time(unix_ms: i64) -> String {
    let (_, month, day, h, m, s, _) = local_time(unix_ms);
    format!("{} {day:>2} {h:02}:{m:02}:{s:02}", MONTHS[month - 1])
}

/// The proleptic Gregorian date of a count of days since 1970-01-01:
/// (year, month 1..=12, day 1..=31). Eras of 400 years repeat exactly, so
/// the day is placed within its era, then within a March-based year (which
/// puts the leap day last).
fn civil_from_days(days: i64) -> (i64, usize, i64) {
    let shifted = days + 719_468; // days from 0000-03-01
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month as usize, day)
}

/// Whether lines say `S`: the server is a replica.
static AS_REPLICA: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The role the lines name from now on (`REPLICAOF`, a promotion).
pub fn set_replica(replica: bool) {
    AS_REPLICA.store(replica, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_788), (2026, 12, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn levels_order_and_mark_as_redis() {
        assert!(Level::Debug < Level::Warning);
        assert_eq!(Level::named("verbose"), Level::Verbose);
        assert_eq!(
            [Level::Debug, Level::Verbose, Level::Notice, Level::Warning].map(Level::mark),
            ['.', '-', '*', '#']
        );
    }

    #[test]
    fn a_rate_limit_lets_one_through() {
        let limit = RateLimit::per(60_000);
        assert!(limit.allow());
        assert!(!limit.allow());
    }
}
