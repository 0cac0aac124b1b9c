//! `--scan [--pattern p] [--count n]`: every key, one per line, from SCAN.
//!
//! Keys print raw, or quoted in the human style, as redis-cli prints them;
//! `-i` pauses between SCAN calls.

use kvik_client::Value;

use super::{connect, print, reason, style};
use crate::format::{quote, Style};
use crate::options::Config;

pub(super) async fn run(cfg: &Config) -> i32 {
    let Some(mut conn) = connect(cfg).await else {
        return 1;
    };
    let style = style(cfg);
    let mut cursor = b"0".to_vec();
    loop {
        let mut args = vec![b"SCAN".to_vec(), cursor.clone()];
        if let Some(p) = &cfg.pattern {
            args.extend([b"MATCH".to_vec(), p.clone()]);
        }
        if let Some(n) = cfg.count {
            args.extend([b"COUNT".to_vec(), n.to_string().into_bytes()]);
        }
        let reply = match conn.command(&args).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("Error: {}", reason(&e));
                return 1;
            }
        };
        let (next, keys) = match split_reply(reply) {
            Ok(parts) => parts,
            Err(msg) => {
                eprintln!("{msg}");
                return 1;
            }
        };
        let mut out = Vec::new();
        for key in keys {
            match style {
                Style::Human => quote(&key, &mut out),
                Style::Raw => out.extend_from_slice(&key),
            }
            out.push(b'\n');
        }
        print(&out);
        if next == b"0" {
            return 0;
        }
        cursor = next;
        if let Some(pause) = cfg.interval {
            tokio::time::sleep(pause).await;
        }
    }
}

/// The next cursor and the keys of one SCAN reply.
fn split_reply(reply: Value) -> Result<(Vec<u8>, Vec<Vec<u8>>), String> {
    match reply {
        Value::Error(e) => Err(format!("Error: {}", String::from_utf8_lossy(&e))),
        Value::Array(mut parts) if parts.len() == 2 => {
            let keys = parts.pop();
            let cursor = parts.pop();
            match (cursor, keys) {
                (Some(Value::Bulk(c)), Some(Value::Array(keys))) => Ok((
                    c,
                    keys.into_iter().filter_map(|k| if let Value::Bulk(b) = k { Some(b) } else { None }).collect(),
                )),
                _ => Err("Error: unexpected SCAN reply".into()),
            }
        }
        _ => Err("Error: unexpected SCAN reply".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_replies_split_into_cursor_and_keys() {
        let r = Value::Array(vec![Value::bulk("17"), Value::Array(vec![Value::bulk("a"), Value::bulk("b")])]);
        assert_eq!(split_reply(r).unwrap(), (b"17".to_vec(), vec![b"a".to_vec(), b"b".to_vec()]));
        assert_eq!(split_reply(Value::error("ERR x")).unwrap_err(), "Error: ERR x");
        assert!(split_reply(Value::Integer(1)).is_err());
    }
}
