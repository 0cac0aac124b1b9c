//! The append-only directory a real redis-server 7.0 writes, read with
//! kvik's readers: its manifest parses and renders back byte for byte, its
//! base file loads as an RDB file, its incremental file reads as the
//! commands sent (timestamp annotations included), and cut at any byte it
//! reads as whole up to the last complete command.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use kvik_persist::aof::commands::{self, Ending};
use kvik_persist::aof::manifest::{FileKind, Manifest};
use kvik_persist::rdb::file::load;
use kvik_persist::rdb::value::LoadLimits;

/// Send one command and read until a reply line ends.
fn call(conn: &mut TcpStream, args: &[&[u8]]) -> Vec<u8> {
    let mut request = Vec::new();
    commands::put(&mut request, args);
    conn.write_all(&request).expect("send");
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n") {
        conn.read_exact(&mut byte).expect("reply");
        reply.push(byte[0]);
    }
    reply
}

fn read_dir(dir: &Path) -> (Vec<u8>, Manifest) {
    let text = std::fs::read(dir.join("appendonly.aof.manifest")).expect("the manifest");
    let manifest = Manifest::parse(&text).expect("redis's manifest parses");
    (text, manifest)
}

#[test]
fn redis_append_only_directories_read_back() {
    let dir = kvik_testkit::ScratchDir::new("aof-redis");
    let d = dir.path().to_str().unwrap_or("");
    let Some(redis) = kvik_testkit::start_redis(&["--appendonly", "yes", "--dir", d, "--aof-timestamp-enabled", "yes"])
    else {
        return;
    };
    let mut r = TcpStream::connect(redis.addr()).expect("connect");
    // Before any write the base is the (empty) keyspace at start.
    let sent: Vec<Vec<&[u8]>> = vec![
        vec![b"SET", b"plain", b"value"],
        vec![b"RPUSH", b"list", b"a", b"b\r\nc"],
        vec![b"HSET", b"hash", b"f", b""],
        vec![b"INCR", b"counter"],
        vec![b"DEL", b"plain"],
    ];
    for args in &sent {
        assert!(!call(&mut r, args).starts_with(b"-"));
    }
    let (text, manifest) = read_dir(&dir.path().join("appendonlydir"));
    assert_eq!(manifest.render(), text, "rendered as redis wrote it");
    let base = manifest.base.clone().expect("a base file");
    assert_eq!((base.kind, base.name.as_str()), (FileKind::Base, "appendonly.aof.1.base.rdb"));
    let aof_dir = dir.path().join("appendonlydir");
    let base_bytes = std::fs::read(aof_dir.join(&base.name)).expect("the base file");
    let summary = load(&base_bytes, &LoadLimits::default(), |_| Ok(())).expect("an RDB file");
    assert_eq!(summary.keys, 0);
    let incr = &manifest.incr[0];
    let data = std::fs::read(aof_dir.join(&incr.name)).expect("the incremental file");
    let mut got: Vec<Vec<Vec<u8>>> = Vec::new();
    let ending = commands::read(&data, |c| {
        got.push(c.args.iter().map(|a| a.to_vec()).collect());
        Ok::<(), ()>(())
    });
    assert_eq!(ending, Ok(Ending::Whole));
    assert!(data.starts_with(b"#TS:"), "timestamps are annotations");
    // Redis puts a SELECT before the first command.
    assert_eq!(got[0], [b"SELECT".to_vec(), b"0".to_vec()]);
    let want: Vec<Vec<Vec<u8>>> = sent.iter().map(|a| a.iter().map(|w| w.to_vec()).collect()).collect();
    assert_eq!(got[1..], want[..]);

    // Cut anywhere, the file reads whole up to the last complete command.
    let mut ends = vec![0];
    commands::read(&data, |c| {
        ends.push(c.span.end);
        Ok::<(), ()>(())
    })
    .expect("reads");
    for cut in 0..data.len() {
        let mut count = 0;
        let ending = commands::read(&data[..cut], |_| {
            count += 1;
            Ok::<(), ()>(())
        })
        .expect("a cut file is not damaged");
        let whole = ends.iter().copied().filter(|&e| e <= cut).max().unwrap_or(0);
        match ending {
            Ending::Whole => assert!(ends.contains(&cut) || data[whole..cut].starts_with(b"#"), "cut {cut}"),
            Ending::Truncated { valid_up_to } => assert!(valid_up_to >= whole && valid_up_to < cut, "cut {cut}"),
        }
        assert_eq!(count, ends.iter().filter(|&&e| e > 0 && e <= cut).count(), "cut {cut}");
    }

    // A rewrite makes a new base (an RDB file holding the keys) and a new
    // incremental file; the old ones leave the manifest.
    assert!(call(&mut r, &[b"BGREWRITEAOF"]).starts_with(b"+"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, m) = read_dir(&aof_dir);
        if m.base.as_ref().is_some_and(|b| b.seq == 2) && m.history.is_empty() {
            let bytes = std::fs::read(aof_dir.join(&m.base.as_ref().expect("base").name)).expect("the new base");
            let summary = load(&bytes, &LoadLimits::default(), |_| Ok(())).expect("an RDB file");
            assert_eq!(summary.keys, 3, "list, hash, counter");
            assert_eq!(m.incr.last().map(|i| i.seq), Some(2));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the rewrite did not finish");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
