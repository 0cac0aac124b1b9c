//! Small lists and hashes are stored packed (one allocation per key, see
//! `keyspace/entry.rs`): checked from outside through `MEMORY USAGE`, which
//! charges a packed key its one allocation and a boxed key its node, value
//! box and element storage, several times as much for the same data.

mod common;

use std::net::TcpStream;

use common::{call, call_text, start_kvik};

/// `MEMORY USAGE key`.
fn usage(stream: &mut TcpStream, key: &str) -> usize {
    let reply = call_text(stream, &["MEMORY", "USAGE", key]);
    let text = String::from_utf8_lossy(&reply);
    text.trim_start_matches(':').trim_end().parse().unwrap_or_else(|_| panic!("MEMORY USAGE {key}: {text:?}"))
}

/// The most a packed key with these bytes of name and encoded value is
/// charged: the table's share, the entry header, the name and the value.
fn packed_at_most(key: &str, value_bytes: usize) -> usize {
    32 + 8 + 1 + key.len() + value_bytes
}

fn ok(stream: &mut TcpStream, args: &[&str], want: &[u8]) {
    assert_eq!(call_text(stream, args), want, "{args:?}");
}

#[test]
fn small_lists_stay_packed_through_writes_and_key_commands() {
    let server = start_kvik();
    let mut s = common::connect(server.port);
    // count byte, length byte, "element"
    let one = packed_at_most("list:1", 1 + 1 + 7);
    ok(&mut s, &["RPUSH", "list:1", "element"], b":1\r\n");
    assert!(usage(&mut s, "list:1") <= one, "one-element list: {}", usage(&mut s, "list:1"));
    ok(&mut s, &["OBJECT", "ENCODING", "list:1"], b"$9\r\nquicklist\r\n");

    // Small writes keep it packed.
    ok(&mut s, &["LPUSH", "list:1", "a", "b"], b":3\r\n");
    ok(&mut s, &["LSET", "list:1", "0", "c"], b"+OK\r\n");
    ok(&mut s, &["LPOP", "list:1", "2"], b"*2\r\n$1\r\nc\r\n$1\r\na\r\n");
    assert!(usage(&mut s, "list:1") <= one);
    ok(&mut s, &["LRANGE", "list:1", "0", "-1"], b"*1\r\n$7\r\nelement\r\n");

    // Grown past the packed bound it is boxed; trimmed back it packs again.
    let many: Vec<String> = (0..200).map(|i| format!("e{i}")).collect();
    let mut args: Vec<&str> = vec!["RPUSH", "list:1"];
    args.extend(many.iter().map(String::as_str));
    ok(&mut s, &args, b":201\r\n");
    let boxed = usage(&mut s, "list:1");
    ok(&mut s, &["LTRIM", "list:1", "0", "0"], b"+OK\r\n");
    assert!(usage(&mut s, "list:1") <= one, "trimmed back: {} (boxed {boxed})", usage(&mut s, "list:1"));

    // Deadlines, renames, copies and restores keep it packed.
    ok(&mut s, &["EXPIRE", "list:1", "1000"], b":1\r\n");
    assert!(usage(&mut s, "list:1") <= one + 8 + 48 + "list:1".len());
    ok(&mut s, &["PERSIST", "list:1"], b":1\r\n");
    ok(&mut s, &["RENAME", "list:1", "list:2"], b"+OK\r\n");
    assert!(usage(&mut s, "list:2") <= one);
    ok(&mut s, &["COPY", "list:2", "list:3"], b":1\r\n");
    assert!(usage(&mut s, "list:3") <= one);
    let dump = call_text(&mut s, &["DUMP", "list:2"]);
    let payload = &dump[dump.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1)..dump.len() - 2];
    assert_eq!(call(&mut s, &[b"RESTORE", b"list:4", b"0", payload]), b"+OK\r\n");
    assert!(usage(&mut s, "list:4") <= one, "restored: {}", usage(&mut s, "list:4"));
    ok(&mut s, &["LINDEX", "list:4", "-1"], b"$7\r\nelement\r\n");

    // A packed key with a deadline expires like any other.
    ok(&mut s, &["PEXPIRE", "list:4", "30"], b":1\r\n");
    ok(&mut s, &["RPUSH", "list:4", "more"], b":2\r\n");
    std::thread::sleep(std::time::Duration::from_millis(60));
    ok(&mut s, &["EXISTS", "list:4"], b":0\r\n");
}

#[test]
fn small_hashes_stay_packed_and_big_ones_do_not() {
    let server = start_kvik();
    let mut s = common::connect(server.port);
    ok(&mut s, &["HSET", "hash:7", "name", "kvik", "age", "7", "city", "Oslo"], b":3\r\n");
    // count byte, then a length byte and the bytes of each field and value
    let three = packed_at_most("hash:7", 1 + 6 + 4 + 4 + 3 + 1 + 4 + 4);
    assert!(usage(&mut s, "hash:7") <= three, "three-field hash: {}", usage(&mut s, "hash:7"));
    ok(&mut s, &["OBJECT", "ENCODING", "hash:7"], b"$8\r\nlistpack\r\n");
    ok(&mut s, &["HINCRBY", "hash:7", "age", "1"], b":8\r\n");
    ok(&mut s, &["HDEL", "hash:7", "city"], b":1\r\n");
    ok(&mut s, &["HSET", "hash:7", "city", "Oslo"], b":1\r\n");
    assert!(usage(&mut s, "hash:7") <= three);
    ok(
        &mut s,
        &["HGETALL", "hash:7"],
        b"*6\r\n$4\r\nname\r\n$4\r\nkvik\r\n$3\r\nage\r\n$1\r\n8\r\n$4\r\ncity\r\n$4\r\nOslo\r\n",
    );
    ok(&mut s, &["MOVE", "hash:7", "1"], b":1\r\n");
    ok(&mut s, &["SELECT", "1"], b"+OK\r\n");
    assert!(usage(&mut s, "hash:7") <= three);

    // A value past hash-max-listpack-value makes a table, which is never packed.
    let long = "v".repeat(100);
    ok(&mut s, &["HSET", "hash:7", "long", &long], b":1\r\n");
    ok(&mut s, &["OBJECT", "ENCODING", "hash:7"], b"$9\r\nhashtable\r\n");
    ok(&mut s, &["HDEL", "hash:7", "long"], b":1\r\n");
    assert!(usage(&mut s, "hash:7") > three, "a table stays a table: {}", usage(&mut s, "hash:7"));
}
