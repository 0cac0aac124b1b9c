//! The change counter (`rdb_changes_since_last_save`) against a real
//! redis-server: each command below runs on both servers, in order, and
//! the counter must move by the same amount on each. Save points will
//! fire on this counter, so it must count changes (elements pushed, keys
//! deleted, fields set) as Redis does, not write commands.

mod common;

use common::{call_text, connect, info_value, start_kvik, start_redis_or_skip};

/// Commands in the order they run; the setup of each is the ones before.
const COMMANDS: &[&str] = &[
    "SET a 1",
    "SET a 1 NX",
    "SET t v EX 100",
    "SETEX t 100 v",
    "PSETEX t 100000 v",
    "SET t v KEEPTTL",
    "SETNX a 2",
    "MSET b 1 c 2 d 3",
    "MSETNX e 1 f 2",
    "MSETNX e 1 g 2",
    "APPEND a xyz",
    "SETRANGE a 0 q",
    "SETRANGE a 0 \"\"",
    "INCR n",
    "INCRBYFLOAT n 1.5",
    "GETSET a 2",
    "GETDEL a",
    "GETDEL a",
    "GETEX b PX 100000",
    "GETEX b",
    "SETBIT bits 7 1",
    "SETBIT bits 7 1",
    "SETBIT bits 7 0",
    "SETBIT bits 100 0",
    "BITFIELD bf SET u8 0 255",
    "BITFIELD bf SET u8 0 255",
    "BITFIELD bf GET u8 0",
    "BITFIELD bf INCRBY u8 0 1",
    "BITOP OR dest bits bf",
    "DEL b c missing",
    "UNLINK d e missing",
    "EXPIRE f 100",
    "EXPIRE missing 100",
    "PERSIST f",
    "PERSIST f",
    "RENAME f f2",
    "COPY f2 f3",
    "MOVE f3 1",
    "LPUSH l a b c",
    "RPUSH l d",
    "LPUSHX nolist a b",
    "LINSERT l BEFORE a x",
    "LSET l 0 y",
    "LPOP l",
    "RPOP l 2",
    "LREM l 0 nosuch",
    "RPUSH l2 a a b a",
    "LREM l2 0 a",
    "RPUSH l3 1 2 3 4 5 6",
    "LTRIM l3 1 -2",
    "LTRIM l3 0 -1",
    "LMOVE l3 l4 LEFT RIGHT",
    "RPOPLPUSH l3 l4",
    "LMPOP 2 l3 l4 LEFT COUNT 3",
    "SADD s a b c",
    "SADD s a d",
    "SREM s a z",
    "SMOVE s s2 b",
    "SADD s2 c",
    "SMOVE s s2 c",
    "SPOP s2",
    "SADD s5 1 2 3 4",
    "SPOP s5 3",
    "SINTERSTORE si s5 s5",
    "SUNIONSTORE su s s2",
    "SDIFFSTORE sd s s2",
    "HSET h f 1 g 2",
    "HSET h f 1 k 3",
    "HSETNX h f 9",
    "HSETNX h z 9",
    "HDEL h f g missing",
    "HINCRBY h n 1",
    "HINCRBYFLOAT h n 1.5",
    "HMSET h a 1 b 2",
    "ZADD z 1 a 2 b",
    "ZADD z 1 a 3 b",
    "ZADD z XX CH 5 a 6 c",
    "ZADD z NX 7 a",
    "ZINCRBY z 1 a",
    "ZREM z a missing",
    "ZADD z2 1 a 2 b 3 c 4 d",
    "ZREMRANGEBYSCORE z2 1 2",
    "ZREMRANGEBYRANK z2 0 0",
    "ZREMRANGEBYLEX z2 - +",
    "ZADD z3 1 a 2 b 3 c",
    "ZPOPMIN z3 2",
    "ZPOPMAX z3",
    "ZUNIONSTORE zu 2 z z3",
    "ZRANGESTORE zr z 0 -1",
    "XADD x 1-1 f v",
    "XADD x 1-2 f v",
    "XDEL x 1-1 9-9",
    "XADD x 2-1 f v",
    "XTRIM x MAXLEN 1",
    "XADD x 2-2 f v",
    "XADD x 2-3 f v",
    "XADD x 2-4 f v",
    "XDEL x 2-2 2-3",
    "XADD x 2-5 f v",
    "XADD x 2-6 f v",
    "XTRIM x MAXLEN 1",
    "XADD x MAXLEN 1 2-7 f v",
    "XADD x 2-8 f v",
    "XADD x MAXLEN 1 2-9 f v",
    "XGROUP CREATE x g 0",
    "XREADGROUP GROUP g c COUNT 10 STREAMS x >",
    "XACK x g 2-1 9-9",
    "XGROUP CREATECONSUMER x g c2",
    "XGROUP DELCONSUMER x g c2",
    "XADD x 3-1 f v",
    "XADD x 3-2 f v",
    "XREADGROUP GROUP g c COUNT 10 STREAMS x >",
    "XREADGROUP GROUP g c COUNT 10 STREAMS x 0",
    "XREADGROUP GROUP g c COUNT 10 STREAMS x >",
    "XCLAIM x g c3 0 3-1 3-2",
    "XAUTOCLAIM x g c4 0 0",
    "XACK x g 3-1 3-2",
    "XGROUP SETID x g 0",
    "XSETID x 5-0",
    "XGROUP DESTROY x g",
    "PFADD hll a b",
    "PFADD hll a",
    "PFCOUNT hll",
    "PFCOUNT hll",
    "PFADD hll c d e",
    "PFMERGE hll2 hll",
    "GEOADD geo 13.36 38.11 p1 15.08 37.50 p2",
    "SORT l4 STORE sorted",
    "SORT nosuch STORE sorted",
    "GEOSEARCHSTORE gs geo FROMLONLAT 15 37 BYRADIUS 200 km",
    "GEOSEARCHSTORE gs geo FROMLONLAT 0 0 BYRADIUS 1 km",
    "ZINTERSTORE zi 2 z z3",
    "RESTORE r 0 \"\"",
    "GET a",
    "FLUSHDB",
    "SET a 1",
    "SWAPDB 0 1",
    "FLUSHALL",
];

#[test]
fn the_change_counter_moves_as_redis_does() {
    let Some(redis) = start_redis_or_skip("the_change_counter_moves_as_redis_does") else { return };
    let kvik = start_kvik();
    let mut r = connect(redis.port);
    let mut k = connect(kvik.port);
    let mut mismatches = Vec::new();
    let (mut before_r, mut before_k) = (changes(&mut r), changes(&mut k));
    for command in COMMANDS {
        let args = words(command);
        let reply_r = call_text(&mut r, &args);
        let reply_k = call_text(&mut k, &args);
        let (after_r, after_k) = (changes(&mut r), changes(&mut k));
        let (moved_r, moved_k) = (after_r - before_r, after_k - before_k);
        if moved_r != moved_k {
            mismatches.push(format!(
                "{command}: redis +{moved_r}, kvik +{moved_k} (replies {:?} / {:?})",
                String::from_utf8_lossy(&reply_r),
                String::from_utf8_lossy(&reply_k)
            ));
        }
        (before_r, before_k) = (after_r, after_k);
    }
    assert!(mismatches.is_empty(), "the change counter differs:\n{}", mismatches.join("\n"));
}

/// The arguments of `command`: words split at spaces, `""` for an empty one.
fn words(command: &str) -> Vec<&str> {
    command.split(' ').map(|w| if w == "\"\"" { "" } else { w }).collect()
}

/// `rdb_changes_since_last_save` of the server on `stream`.
fn changes(stream: &mut std::net::TcpStream) -> i64 {
    let info = String::from_utf8_lossy(&call_text(stream, &["INFO", "persistence"])).into_owned();
    info_value(&info, "rdb_changes_since_last_save").trim().parse().expect("a number")
}
