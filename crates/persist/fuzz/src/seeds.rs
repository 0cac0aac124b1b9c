//! Valid inputs for each target, built with kvik's own writer from values of
//! every type and encoding, so a fuzzer starts from inputs that reach deep
//! into the decoders. Files and payloads written by redis-server itself are
//! kept under `regressions/` and replayed too.

use kvik_persist::payload::dump;
use kvik_persist::rdb::file::{Access, FileWriter, SaveInfo};
use kvik_store::types::compact::CompactBytes;
use kvik_store::types::hash::{HashLimits, HashValue};
use kvik_store::types::list::ListValue;
use kvik_store::types::member_table::MemberTable;
use kvik_store::types::set::SetValue;
use kvik_store::types::stream::{Consumer, Group, NodeLimits, Pending, StreamId, StreamValue};
use kvik_store::types::string::StrValue;
use kvik_store::types::zset::ZSetValue;
use kvik_store::types::Value;

/// One value of each type and encoding.
pub fn values() -> Vec<Value> {
    let mut out = vec![
        Value::Str(StrValue::from_bytes(b"hello")),
        Value::Str(StrValue::from_bytes(b"-123456")),
        Value::Str(StrValue::from_bytes(&b"abcabcabc".repeat(20))),
    ];
    let mut list = ListValue::new();
    for i in 0..300 {
        list.push(false, format!("item-{i}").as_bytes());
    }
    out.push(Value::List(Box::new(list)));
    for n in [3usize, 700] {
        let mut hash = HashValue::new();
        hash.grow_if_needed(0, 0, 1);
        for i in 0..n {
            hash.insert(format!("f{i}").as_bytes(), format!("{}", i * 7).as_bytes());
        }
        hash.conform(HashLimits::default());
        out.push(Value::Hash(Box::new(hash)));
    }
    out.push(Value::Set(Box::new(SetValue::Ints(vec![-5, 1, 70_000, 1 << 40]))));
    let mut members = MemberTable::with_capacity(3);
    for m in [&b"a"[..], b"bb", b"\x00c"] {
        members.insert(m, ());
    }
    out.push(Value::Set(Box::new(SetValue::table(members))));
    for large in [false, true] {
        let mut z = if large { ZSetValue::new_large() } else { ZSetValue::new() };
        for (i, score) in [1.0, 2.5, -0.0, f64::INFINITY, 1e300].iter().enumerate() {
            z.insert(format!("m{i}").as_bytes(), *score);
        }
        out.push(Value::ZSet(Box::new(z)));
    }
    let mut s = StreamValue::new();
    let limits = NodeLimits { max_entries: 100, max_bytes: 4096 };
    for i in 1..=5u64 {
        let fields: Vec<&[u8]> = if i % 2 == 0 { vec![b"a", b"1"] } else { vec![b"b", b"2", b"c", b"3"] };
        s.append(StreamId { ms: i, seq: 0 }, &fields, limits);
    }
    s.last_id = StreamId { ms: 5, seq: 0 };
    s.entries_added = 5;
    let mut g = Group { last_id: StreamId { ms: 3, seq: 0 }, entries_read: Some(3), ..Group::default() };
    let worker = CompactBytes::new(b"worker");
    let mut c = Consumer { seen_ms: 1_700_000_000_000, ..Consumer::default() };
    for ms in [2u64, 3] {
        let id = StreamId { ms, seq: 0 };
        c.pending.insert(id);
        g.pending.insert(id, Pending { consumer: worker.clone(), delivered_ms: 1_700_000_000_000, deliveries: 1 });
    }
    g.consumers.insert(worker, c);
    s.groups.insert(CompactBytes::new(b"group"), g);
    out.push(Value::Stream(Box::new(s)));
    out
}

/// Seeds of target `name` (empty for an unknown one).
pub fn for_target(name: &str) -> Vec<Vec<u8>> {
    match name {
        // Payloads without their footer (see `payload::check`).
        "payload" => {
            let library: &[u8] =
                b"#!lua name=lib\nredis.register_function('f', function() return 'a long enough body' end)";
            values()
                .iter()
                .flat_map(|v| [dump(v.view(), true), dump(v.view(), false)])
                .chain(
                    [true, false].map(|compress| kvik_persist::payload::dump_functions([library, library], compress)),
                )
                .map(|p| p[..p.len() - 10].to_vec())
                .collect()
        }
        "rdb_file" => vec![file(true), file(false)],
        "aof_commands" => vec![aof_commands()],
        "aof_manifest" => vec![
            b"file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n".to_vec(),
            b"# kept\nfile \"a b\\x41.aof\" seq 3 type h\nfile x seq 4 type i startoffset 0\n".to_vec(),
        ],
        _ => Vec::new(),
    }
}

/// Commands as Redis writes them, with a timestamp annotation.
fn aof_commands() -> Vec<u8> {
    let mut out = Vec::new();
    kvik_persist::aof::commands::put(&mut out, &[b"SELECT", b"0"]);
    out.extend_from_slice(b"#TS:1700000000\r\n");
    kvik_persist::aof::commands::put(&mut out, &[b"SET", b"key", b"a\r\nb"]);
    kvik_persist::aof::commands::put(&mut out, &[b"MULTI"]);
    kvik_persist::aof::commands::put(&mut out, &[b"RPUSH", b"list", b"", b"x"]);
    kvik_persist::aof::commands::put(&mut out, &[b"EXEC"]);
    out
}

/// A file holding every seed value, in two databases.
fn file(compress: bool) -> Vec<u8> {
    let info = SaveInfo { redis_version: "7.0.15".into(), ctime_s: 1_700_000_000, used_mem: 1 << 20, aof_base: false };
    let mut w = FileWriter::start(Vec::new(), &info, compress, true).expect("writing to memory");
    let values = values();
    for (db, half) in values.chunks(values.len() / 2 + 1).enumerate() {
        w.select_db(db * 3, half.len(), 1).expect("writing to memory");
        for (i, v) in half.iter().enumerate() {
            let deadline = (i == 0).then_some(4_102_444_800_000);
            let access = if i % 2 == 0 { Access::IdleSeconds(i as u64) } else { Access::Frequency(i as u8) };
            w.entry(format!("key:{i}").as_bytes(), v.view(), deadline, access).expect("writing to memory");
        }
    }
    w.finish().expect("writing to memory")
}
