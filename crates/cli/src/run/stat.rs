//! `--stat`: one line of server statistics per interval, from INFO, in
//! redis-cli's columns (keys, memory, clients, blocked clients, requests with
//! the change since the previous line, connections received, and a child
//! process doing a save, a rewrite or a load), with the header repeated every
//! 20 lines. `-r N` stops after N lines.

use std::time::Duration;

use kvik_client::Value;

use super::{connect, print, reason};
use crate::options::Config;

const HEADER: &str = "------- data ------ --------------------- load -------------------- - child -\n\
keys       mem      clients blocked requests            connections          \n";

pub(super) async fn run(cfg: &Config) -> i32 {
    let Some(mut conn) = connect(cfg).await else {
        return 1;
    };
    let pause = cfg.interval.filter(|d| !d.is_zero()).unwrap_or(Duration::from_secs(1));
    let lines = cfg.repeat.unwrap_or(u64::MAX);
    let mut previous: Option<i64> = None;
    for i in 0..lines {
        let info = match conn.command(&["INFO"]).await {
            Ok(Value::Bulk(b)) | Ok(Value::Verbatim { text: b, .. }) => String::from_utf8_lossy(&b).into_owned(),
            Ok(Value::Error(e)) => {
                eprintln!("ERROR: {}", String::from_utf8_lossy(&e));
                return 1;
            }
            Ok(_) => {
                eprintln!("ERROR: unexpected INFO reply");
                return 1;
            }
            Err(e) => {
                eprintln!("Error: {}", reason(&e));
                return 1;
            }
        };
        let mut out = String::new();
        if i % 20 == 0 {
            out.push_str(HEADER);
        }
        out.push_str(&stat_line(&info, &mut previous));
        print(out.as_bytes());
        if i + 1 < lines {
            tokio::time::sleep(pause).await;
        }
    }
    0
}

/// A numeric field of INFO text (`name:value` lines).
fn field(info: &str, name: &str) -> Option<i64> {
    info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
}

/// Keys over all databases (`db0:keys=3,expires=0,...`).
fn total_keys(info: &str) -> i64 {
    info.lines()
        .filter(|l| l.starts_with("db"))
        .filter_map(|l| l.split_once(":keys=")?.1.split(',').next()?.parse::<i64>().ok())
        .sum()
}

/// Bytes as redis-cli shows them: `512B`, `1.18M`, `2.00G`.
pub fn human_bytes(n: i64) -> String {
    let (sign, n) = if n < 0 { ("-", n.unsigned_abs()) } else { ("", n as u64) };
    let units = [(1u64 << 50, 'P'), (1 << 40, 'T'), (1 << 30, 'G'), (1 << 20, 'M'), (1 << 10, 'K')];
    for (size, unit) in units {
        if n >= size {
            return format!("{sign}{:.2}{unit}", n as f64 / size as f64);
        }
    }
    format!("{sign}{n}B")
}

fn stat_line(info: &str, previous: &mut Option<i64>) -> String {
    let requests = field(info, "total_commands_processed").unwrap_or(0);
    let delta = previous.map_or(0, |p| requests - p);
    *previous = Some(requests);
    let child = field(info, "bgsave_in_progress").unwrap_or(0)
        | field(info, "aof_rewrite_in_progress").unwrap_or(0) << 1
        | field(info, "loading").unwrap_or(0) << 2;
    let child = match child {
        0 => "",
        1 => "SAVE",
        2 => "AOF",
        3 => "SAVE+AOF",
        _ => "LOAD",
    };
    format!(
        "{:<11}{:<8} {:<8}{:<8}{:<19} {:<12}{child}\n",
        total_keys(info),
        human_bytes(field(info, "used_memory").unwrap_or(0)),
        field(info, "connected_clients").unwrap_or(0),
        field(info, "blocked_clients").unwrap_or(0),
        format!("{requests} (+{delta})"),
        field(info, "total_connections_received").unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Server\r\nredis_version:7.0.15\r\n# Clients\r\nconnected_clients:1\r\nblocked_clients:0\r\n\
        # Memory\r\nused_memory:1237352\r\n# Persistence\r\nloading:0\r\nbgsave_in_progress:0\r\n\
        aof_rewrite_in_progress:0\r\n# Stats\r\ntotal_connections_received:75\r\ntotal_commands_processed:121\r\n\
        # Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\ndb2:keys=4,expires=1,avg_ttl=5\r\n";

    #[test]
    fn lines_match_redis_cli_columns() {
        let mut prev = None;
        // As redis-cli 7.0 printed for the same INFO figures (3 keys there).
        let first = stat_line(INFO, &mut prev);
        assert_eq!(first, "7          1.18M    1       0       121 (+0)            75          \n");
        let again = stat_line(&INFO.replace(":121", ":124"), &mut prev);
        assert!(again.contains("124 (+3)   "), "{again}");
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(human_bytes(512), "512B");
        assert_eq!(human_bytes(1024), "1.00K");
        assert_eq!(human_bytes(1_237_352), "1.18M");
        assert_eq!(human_bytes(3 << 30), "3.00G");
        assert_eq!(human_bytes(-2048), "-2.00K");
    }

    #[test]
    fn child_processes_are_named() {
        let busy = INFO.replace("bgsave_in_progress:0", "bgsave_in_progress:1");
        assert!(stat_line(&busy, &mut None).ends_with("SAVE\n"));
    }
}
