//! `kvik-cli convert`: a real append-only file written by redis-server,
//! converted to RESPB and back, must rebuild the same dataset.
//!
//! The AOF is produced by a redis-server with `appendonly yes` fed through
//! redis-cli --pipe; the file that comes back from RESP → RESPB → RESP is
//! loaded into a second redis-server, and both datasets must have the same
//! `DEBUG DIGEST`. Converting the result again must give the very same RESPB
//! bytes (the conversion is stable).

mod common;

use std::path::PathBuf;

use common::{have_redis, kvik_cli_plain, redis_cli, show, start_kvik, start_redis};
use kvik_protocol::resp::command::write_command;

fn workload(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let cmd: Vec<String> = match i % 8 {
            0 => vec!["SET".into(), format!("k{i}"), format!("v{i}"), "EX".into(), "100000".into()],
            1 => vec!["RPUSH".into(), format!("l{}", i % 13), i.to_string(), "x y".into()],
            2 => vec!["HSET".into(), format!("h{}", i % 5), format!("f{i}"), "\r\n\0bin".into()],
            3 => vec!["ZADD".into(), "z".into(), format!("{}.25", i % 50), format!("m{i}")],
            4 => vec!["SADD".into(), "s".into(), format!("{}", i % 300)],
            5 => vec!["INCRBYFLOAT".into(), "f".into(), "0.1".into()],
            6 => vec!["XADD".into(), "st".into(), "*".into(), "a".into(), i.to_string()],
            _ => vec!["DEL".into(), format!("k{}", i - 7)],
        };
        write_command(&cmd, &mut out);
    }
    out
}

/// The append-only file the server wrote (the incremental part of
/// Redis 7's multi-part AOF).
fn aof_bytes(dir: &std::path::Path) -> Vec<u8> {
    let aof_dir = dir.join("appendonlydir");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&aof_dir)
        .expect("appendonlydir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .collect();
    files.sort();
    files.iter().flat_map(|f| std::fs::read(f).expect("aof")).collect()
}

fn digest(server: &common::Server) -> String {
    show(&redis_cli(server, &[b"debug", b"digest"], b"").stdout)
}

#[test]
fn append_only_file_round_trips_through_respb() {
    if !have_redis() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("kvik-cli-convert-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let dir_arg = dir.to_string_lossy().into_owned();
    let Some(source) = start_redis(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        &dir_arg,
        "--enable-debug-command",
        "yes",
    ]) else {
        return;
    };
    let fed = redis_cli(&source, &[b"--pipe"], &workload(6_000));
    assert!(fed.status.success(), "{}", show(&fed.stderr));
    let aof = aof_bytes(&dir);
    assert!(aof.len() > 100_000, "AOF of {} bytes", aof.len());

    let to_respb = kvik_cli_plain(&[b"convert", b"respb"], &aof);
    assert!(to_respb.status.success(), "{}", show(&to_respb.stderr));
    let report = show(&to_respb.stderr);
    assert!(report.starts_with("converted "), "{report}");
    assert!(report.contains("from RESP to RESPB"), "{report}");
    assert!(to_respb.stdout.len() < aof.len(), "RESPB is not smaller: {report}");

    let back = kvik_cli_plain(&[b"--convert-to", b"resp"], &to_respb.stdout);
    assert!(back.status.success(), "{}", show(&back.stderr));
    let again = kvik_cli_plain(&[b"convert", b"respb"], &back.stdout);
    assert!(again.stdout == to_respb.stdout, "the second conversion gave other frames");

    let Some(copy) = start_redis(&["--enable-debug-command", "yes"]) else { return };
    let loaded = redis_cli(&copy, &[b"--pipe"], &back.stdout);
    assert!(loaded.status.success(), "{}{}", show(&loaded.stdout), show(&loaded.stderr));
    assert_eq!(digest(&copy), digest(&source), "the round-tripped AOF rebuilt another dataset");
    let _ = std::fs::remove_dir_all(&dir);
}

/// kvik-server with `aof-format respb` writes its incremental file as
/// RESPB frames; it replays them, and `kvik-cli convert resp` turns the
/// file into one redis-server loads, to the same dataset.
#[test]
fn kviks_respb_append_only_file_replays_and_converts_for_redis() {
    if !have_redis() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("kvik-cli-respb-aof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let d = dir.to_string_lossy().into_owned();
    let aof = ["--dir", d.as_str(), "--appendonly", "yes", "--appendfsync", "always", "--aof-format", "respb"];
    let kvik = start_kvik(&aof);
    let fed = redis_cli(&kvik, &[b"--pipe"], &workload(6_000));
    assert!(fed.status.success(), "{}", show(&fed.stderr));
    drop(kvik);
    let aof_dir = dir.join("appendonlydir");
    let manifest = std::fs::read_to_string(aof_dir.join("appendonly.aof.manifest")).expect("manifest");
    assert!(manifest.contains("file appendonly.aof.1.incr.respb seq 1 type i"), "{manifest}");
    let respb = std::fs::read(aof_dir.join("appendonly.aof.1.incr.respb")).expect("respb file");

    // kvik replays it: its snapshot is the dataset, as redis-server reads it.
    let kvik = start_kvik(&aof);
    assert_eq!(show(&redis_cli(&kvik, &[b"save"], b"").stdout), "OK\n");
    drop(kvik);
    let d_rdb = d.clone();
    let Some(from_rdb) = start_redis(&["--dir", &d_rdb, "--enable-debug-command", "yes"]) else { return };
    let want = digest(&from_rdb);
    drop(from_rdb);

    // Converted to RESP under its RESP name, the directory loads in redis-server.
    let to_resp = kvik_cli_plain(&[b"--convert-to", b"resp"], &respb);
    assert!(to_resp.status.success(), "{}", show(&to_resp.stderr));
    assert!(respb.len() < to_resp.stdout.len(), "RESPB {} bytes, RESP {}", respb.len(), to_resp.stdout.len());
    std::fs::remove_file(aof_dir.join("appendonly.aof.1.incr.respb")).expect("remove");
    std::fs::write(aof_dir.join("appendonly.aof.1.incr.aof"), &to_resp.stdout).expect("write");
    std::fs::write(aof_dir.join("appendonly.aof.manifest"), manifest.replace(".incr.respb", ".incr.aof"))
        .expect("manifest");
    let Some(from_aof) = start_redis(&["--dir", &d, "--appendonly", "yes", "--enable-debug-command", "yes"]) else {
        return;
    };
    assert_eq!(digest(&from_aof), want, "redis-server replaying kvik's converted file");
    drop(from_aof);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn broken_input_fails_with_a_message() {
    let out = kvik_cli_plain(&[b"convert", b"respb"], b"*2\r\n$3\r\nGET\r\n$1\r\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(show(&out.stderr).contains("input ends inside a command"), "{}", show(&out.stderr));
    let out = kvik_cli_plain(&[b"--convert-to", b"resp"], &[0x7F, 0x7F, 0, 0]);
    assert_eq!(out.status.code(), Some(1));
    assert!(show(&out.stderr).contains("unknown opcode"), "{}", show(&out.stderr));
}

#[test]
fn help_and_version() {
    let out = kvik_cli_plain(&[b"--version"], b"");
    assert_eq!(show(&out.stdout), format!("kvik-cli {}\n", env!("CARGO_PKG_VERSION")));
    let out = kvik_cli_plain(&[b"--help"], b"");
    let help = show(&out.stdout);
    for option in ["--respb", "--pipe", "--scan", "--stat", "--convert-to", "-x", "-r <repeat>"] {
        assert!(help.contains(option), "help lacks {option}");
    }
}
