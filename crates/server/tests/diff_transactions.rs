//! Differential tests of transactions (MULTI, EXEC, DISCARD, WATCH,
//! UNWATCH): hand-written cases sent to kvik-server and to a real
//! redis-server, replies compared byte for byte. Cases on one connection
//! are pipelined; cases where another client changes watched keys, or where
//! deadlines must pass, are scripts over two connections.

mod common;

use common::diff::*;

fn queueing_cases() -> Vec<Case> {
    vec![
        lines("queue and exec", &["MULTI", "SET a 1", "INCR a", "GET a", "EXEC", "GET a"]),
        lines("empty exec", &["MULTI", "EXEC"]),
        lines("exec and discard without multi", &["EXEC", "DISCARD", "MULTI", "DISCARD", "DISCARD", "EXEC"]),
        lines("nested multi is refused but not fatal", &["MULTI", "SET a 1", "MULTI", "GET a", "EXEC"]),
        lines("discard drops the queue", &["MULTI", "SET a 1", "DISCARD", "GET a", "MULTI", "GET a", "EXEC"]),
        lines("unknown command aborts", &["MULTI", "SET a 1", "NOSUCH x", "GET a", "EXEC", "GET a"]),
        lines("wrong arity aborts", &["MULTI", "SET a", "SET a 1", "EXEC", "EXISTS a"]),
        lines("unknown subcommand aborts", &["MULTI", "CLIENT NOSUCH", "PING", "EXEC"]),
        lines("discard with arguments aborts", &["MULTI", "SET a 1", "DISCARD x", "EXEC", "GET a"]),
        lines("exec with arguments aborts the transaction", &["MULTI", "SET a 1", "EXEC x", "EXEC", "GET a"]),
        lines("exec with arguments outside multi", &["EXEC x", "EXEC"]),
        lines("no-multi commands are refused", &["MULTI", "SHUTDOWN", "PING", "EXEC"]),
        lines("watch inside multi is refused but not fatal", &["MULTI", "SET a 1", "WATCH a", "EXEC", "GET a"]),
        lines("unwatch is queued", &["MULTI", "UNWATCH", "PING", "EXEC"]),
        lines("reset ends the transaction", &["MULTI", "SET a 1", "RESET", "EXEC", "GET a"]),
        lines("echo and ping queued", &["MULTI", "ECHO hello", "PING", "PING x", "EXEC"]),
    ]
}

fn runtime_error_cases() -> Vec<Case> {
    vec![
        lines(
            "runtime errors do not stop the rest",
            &["MULTI", "SET a 1", "LPUSH a x", "INCR a", "SET s abc", "INCR s", "GET s", "EXEC"],
        ),
        lines("syntax errors at run time", &["MULTI", "SET a 1 NX XX", "SET a 2", "GET a", "EXEC"]),
        lines(
            "every reply type",
            &["RPUSH l a b c", "MULTI", "LRANGE l 0 -1", "LLEN l", "GET missing", "LPOP l 0", "EXEC"],
        ),
        lines(
            "nested arrays in resp3",
            &["HELLO 3", "RPUSH l a b", "MULTI", "LRANGE l 0 -1", "GET missing", "HGETALL missing", "EXEC"],
        ),
        lines("hello inside multi switches for the rest", &["MULTI", "HELLO 3", "GET missing", "EXEC", "GET missing"]),
        lines("select inside multi", &["MULTI", "SELECT 1", "SET a 2", "EXEC", "GET a", "SELECT 0", "GET a"]),
        lines("select out of range inside multi", &["MULTI", "SELECT 99", "SET b 1", "EXEC", "GET b"]),
        lines("client reply skip inside multi", &["MULTI", "CLIENT REPLY SKIP", "PING", "PING", "EXEC", "PING"]),
        lines("subscribe inside multi", &["MULTI", "SUBSCRIBE ch", "PING", "EXEC", "UNSUBSCRIBE"]),
        lines(
            "keyspace-wide commands inside multi",
            &["MSET a 1 b 2 c 3", "MULTI", "DBSIZE", "KEYS a", "FLUSHALL", "DBSIZE", "SET d 4", "EXEC", "KEYS *"],
        ),
        lines(
            "sort by pattern inside multi",
            &["RPUSH l 2 1 3", "MSET w_1 30 w_2 20 w_3 10", "MULTI", "SORT l BY w_*", "SORT l GET w_*", "EXEC"],
        ),
        lines(
            "swapdb inside multi",
            &["SET a 0", "MULTI", "SWAPDB 0 1", "GET a", "SELECT 1", "GET a", "SWAPDB 0 1", "EXEC", "GET a"],
        ),
        lines(
            "multi-key commands across shards",
            &["MULTI", "MSET k1 1 k2 2 k3 3 k4 4", "RENAME k1 k5", "MGET k1 k2 k3 k4 k5", "DEL k2 k3", "EXEC"],
        ),
    ]
}

fn maxmemory_cases() -> Vec<Case> {
    vec![
        lines(
            "over maxmemory inside multi everything is refused",
            &[
                "SET a 1",
                "MULTI",
                "SET x 1",
                "CONFIG SET maxmemory 1",
                "EXEC",
                "MULTI",
                "GET a",
                "PING",
                "EXEC",
                "MULTI",
                "DISCARD",
                "CONFIG SET maxmemory 0",
            ],
        ),
        lines(
            "exec with a denyoom command over maxmemory",
            &[
                "SET a 1",
                "MULTI",
                "GET a",
                "SET b 1",
                "EXEC",
                "CONFIG SET maxmemory 1",
                "MULTI",
                "CONFIG SET maxmemory 0",
                "DISCARD",
                "CONFIG SET maxmemory 0",
            ],
        ),
    ]
}

fn watch_cases() -> Vec<Case> {
    vec![
        lines("own write fails exec", &["SET k 1", "WATCH k", "SET k 2", "MULTI", "GET k", "EXEC", "GET k"]),
        lines("own read does not", &["SET k 1", "WATCH k", "GET k", "MULTI", "GET k", "EXEC"]),
        lines("watch missing key then create", &["WATCH k", "INCR k", "MULTI", "PING", "EXEC"]),
        lines("delete of missing key is no change", &["WATCH k", "DEL k", "MULTI", "PING", "EXEC"]),
        lines(
            "expire and lpush are changes",
            &[
                "SET k 1",
                "WATCH k",
                "EXPIRE k 100",
                "MULTI",
                "PING",
                "EXEC",
                "WATCH l",
                "LPUSH l x",
                "MULTI",
                "PING",
                "EXEC",
            ],
        ),
        lines("unwatch forgets", &["SET k 1", "WATCH k", "UNWATCH", "SET k 2", "MULTI", "PING", "EXEC"]),
        lines("discard forgets", &["SET k 1", "WATCH k", "MULTI", "DISCARD", "SET k 2", "MULTI", "PING", "EXEC"]),
        lines("exec forgets", &["WATCH k", "MULTI", "PING", "EXEC", "SET k 2", "MULTI", "PING", "EXEC"]),
        lines(
            "failed exec forgets",
            &["WATCH k", "SET k 1", "MULTI", "PING", "EXEC", "SET k 2", "MULTI", "PING", "EXEC"],
        ),
        lines("watch several keys", &["WATCH a b c", "WATCH a", "SET c 1", "MULTI", "PING", "EXEC"]),
        lines(
            "watch in another db",
            &[
                "SELECT 1", "WATCH k", "SELECT 0", "SET k 1", "MULTI", "PING", "EXEC", "SELECT 1", "WATCH k",
                "SET k 1", "MULTI", "PING", "EXEC",
            ],
        ),
        lines("flushall touches existing watched keys", &["SET k 1", "WATCH k", "FLUSHALL", "MULTI", "PING", "EXEC"]),
        lines("flushall leaves missing watched keys", &["WATCH k", "FLUSHALL", "MULTI", "PING", "EXEC"]),
        lines("flushdb of another db", &["SET k 1", "WATCH k", "SELECT 1", "FLUSHDB", "MULTI", "PING", "EXEC"]),
        lines("flushdb of the watched db", &["SET k 1", "WATCH k", "FLUSHDB", "MULTI", "PING", "EXEC"]),
        lines(
            "swapdb with the key on either side",
            &[
                "SET k 1",
                "WATCH k",
                "SWAPDB 0 1",
                "MULTI",
                "PING",
                "EXEC",
                "SELECT 1",
                "SET j 1",
                "SELECT 0",
                "WATCH j",
                "SWAPDB 0 1",
                "MULTI",
                "PING",
                "EXEC",
            ],
        ),
        lines("swapdb of unrelated dbs", &["SET k 1", "WATCH k", "SWAPDB 1 2", "MULTI", "PING", "EXEC"]),
        lines("swapdb with the key nowhere", &["WATCH nothing", "SWAPDB 0 1", "MULTI", "PING", "EXEC"]),
        lines("failed watch in resp3", &["HELLO 3", "WATCH k", "SET k 1", "MULTI", "PING", "EXEC"]),
        lines("failed watch with aborted queue", &["WATCH k", "SET k 1", "MULTI", "NOSUCH", "EXEC"]),
        // Redis 7.0 counts none of these as a change of the stream: EXEC runs.
        lines(
            "consumer groups and xsetid leave a watch alone",
            &[
                "XADD x 5-1 f v",
                "XGROUP CREATE x g 0",
                "WATCH x",
                "XGROUP CREATE x g2 0",
                "XGROUP SETID x g 5-1",
                "XGROUP CREATECONSUMER x g c",
                "XREADGROUP GROUP g c2 STREAMS x >",
                "XREADGROUP GROUP g c3 STREAMS x 0",
                "XCLAIM x g c4 0 5-1 JUSTID",
                "XAUTOCLAIM x g c5 0 0 JUSTID",
                "XGROUP DELCONSUMER x g c",
                "XGROUP DESTROY x g2",
                "XSETID x 6-0",
                "MULTI",
                "PING",
                "EXEC",
            ],
        ),
        lines(
            "pfcount storing its count is a change",
            &[
                "PFADD p a b",
                "WATCH p",
                "PFCOUNT p",
                "MULTI",
                "PING",
                "EXEC",
                "WATCH p",
                "PFCOUNT p",
                "MULTI",
                "PING",
                "EXEC",
                "WATCH p",
                "PFADD p a",
                "PFCOUNT p p",
                "MULTI",
                "PING",
                "EXEC",
            ],
        ),
        lines(
            "xgroup create mkstream is a change",
            &["WATCH y", "XGROUP CREATE y g 0 MKSTREAM", "MULTI", "PING", "EXEC"],
        ),
    ]
}

fn scripts() -> Vec<Script> {
    vec![
        script(
            "another client's write fails exec",
            vec![a("SET k 1"), a("WATCH k"), b("SET k 2"), a("MULTI"), a("GET k"), a("EXEC"), a("GET k")],
        ),
        script(
            "discard without multi keeps the watches and their broken flag",
            vec![a("WATCH k"), b("SET k 1"), a("DISCARD"), a("MULTI"), a("PING"), a("EXEC")],
        ),
        script(
            "smove of a member the destination has does not touch it",
            vec![
                a("SADD src m"),
                a("SADD dst m"),
                a("WATCH dst"),
                b("SMOVE src dst m"),
                a("MULTI"),
                a("SMEMBERS dst"),
                a("EXEC"),
                a("WATCH dst"),
                b("SMOVE dst dst m"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
            ],
        ),
        script(
            "another client's read does not",
            vec![a("SET k 1"), a("WATCH k"), b("GET k"), b("SET other 1"), a("MULTI"), a("GET k"), a("EXEC")],
        ),
        script(
            "another client's change in another db does not",
            vec![a("WATCH k"), b("SELECT 1"), b("SET k 1"), a("MULTI"), a("PING"), a("EXEC")],
        ),
        script(
            "incr, expire, lpush and del by another client",
            vec![
                a("SET n 1"),
                a("WATCH n"),
                b("INCR n"),
                a("MULTI"),
                a("INCR n"),
                a("EXEC"),
                a("WATCH n"),
                b("EXPIRE n 100"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
                a("WATCH l"),
                b("LPUSH l x"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
                a("WATCH l"),
                b("DEL l"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
            ],
        ),
        script(
            "another client's flushall and swapdb",
            vec![
                a("SET k 1"),
                a("WATCH k missing"),
                b("FLUSHALL"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
                a("WATCH missing"),
                b("FLUSHALL"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
                b("SELECT 1"),
                b("SET j 1"),
                a("WATCH j"),
                b("SWAPDB 0 1"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
            ],
        ),
        script(
            "a watched key that expires fails exec",
            vec![a("SET e 1 PX 100"), a("WATCH e"), sleep(250), a("MULTI"), a("PING"), a("EXEC")],
        ),
        script(
            "a watched key that expires fails exec after a lazy expiry",
            vec![a("SET e 1 PX 100"), a("WATCH e"), sleep(250), b("GET e"), a("MULTI"), a("PING"), a("EXEC")],
        ),
        script(
            "a watched key that has not expired yet",
            vec![a("SET e 1 PX 5000"), a("WATCH e"), a("MULTI"), a("PING"), a("EXEC")],
        ),
        script(
            "watching an expired key",
            vec![
                a("SET e 1 PX 50"),
                sleep(150),
                a("WATCH e"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
                a("SET e 1 PX 50"),
                sleep(150),
                a("WATCH e"),
                b("GET e"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
                a("SET e 1 PX 50"),
                sleep(150),
                a("WATCH e"),
                b("SET e 5"),
                a("MULTI"),
                a("PING"),
                a("EXEC"),
            ],
        ),
        script(
            "resp3 null for a failed exec",
            vec![a("HELLO 3"), a("WATCH k"), b("SET k 9"), a("MULTI"), a("PING"), a("EXEC")],
        ),
        script(
            "exec sees writes made while queuing",
            vec![a("MULTI"), a("GET k"), b("SET k before"), a("EXEC"), b("GET k")],
        ),
        script(
            "another client's maxmemory change aborts exec",
            vec![
                a("SET a 1"),
                a("MULTI"),
                a("GET a"),
                a("SET b 1"),
                b("CONFIG SET maxmemory 1"),
                a("EXEC"),
                a("MULTI"),
                a("GET a"),
                a("DISCARD"),
                b("CONFIG SET maxmemory 0"),
                a("MULTI"),
                a("GET a"),
                b("CONFIG SET maxmemory 1"),
                a("DISCARD"),
                b("CONFIG SET maxmemory 0"),
            ],
        ),
    ]
}

#[test]
fn queueing_matches_redis() {
    compare_each("queueing_matches_redis", queueing_cases());
}

#[test]
fn runtime_errors_and_replies_match_redis() {
    compare_each("runtime_errors_and_replies_match_redis", runtime_error_cases());
}

#[test]
fn maxmemory_in_transactions_matches_redis() {
    compare_each("maxmemory_in_transactions_matches_redis", maxmemory_cases());
}

#[test]
fn watch_on_one_connection_matches_redis() {
    compare_each("watch_on_one_connection_matches_redis", watch_cases());
}

#[test]
fn watch_across_connections_matches_redis() {
    compare_scripts("watch_across_connections_matches_redis", &[], scripts());
}

#[test]
fn pipelined_transactions_match_redis() {
    let mut cases = queueing_cases();
    cases.extend(watch_cases());
    compare_pipelined("pipelined_transactions_match_redis", cases);
}
