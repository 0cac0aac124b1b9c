//! Generic key commands and expiry: differential cases against a real
//! redis-server, plus kvik-only checks for what cannot be compared byte for
//! byte (SCAN's guarantee under changes, active expiry, DUMP payloads).
//!
//! Replies that depend on the clock are avoided in the differential cases:
//! TTLs are large and read back in whole seconds right after being set, and
//! absolute deadlines are read back with EXPIRETIME / PEXPIRETIME.

mod common;

use std::io::Write;
use std::thread;
use std::time::{Duration, Instant};

use common::diff::{compare_each, compare_pipelined, multibulk, open, Case};
use common::{clear_of_second_boundary, connect, read_until, start_kvik};

/// Each key alone in the database, then `KEYS pattern`: at most one key per
/// reply, so Redis's hash-table order cannot show.
fn glob_case(name: &'static str, pattern: &[u8], keys: &[&[u8]]) -> Case {
    let mut bytes = Vec::new();
    for key in keys {
        bytes.extend(multibulk(&[b"FLUSHALL"]));
        bytes.extend(multibulk(&[b"SET", key, b"v"]));
        bytes.extend(multibulk(&[b"KEYS", pattern]));
        bytes.extend(multibulk(&[b"SCAN", b"0", b"MATCH", pattern]));
    }
    open(name, bytes)
}

/// Patterns against the bytes they could plausibly match or not.
fn glob_cases() -> Vec<Case> {
    let probe: &[&[u8]] = &[
        b"a", b"b", b"z", b"]", b"[", b"-", b"^", b"_", b"\\", b"\\", b"*", b"?", b"hallo", b"hbllo", b"hxllo",
        b"hllo", b"ab", b"abc", b"A", b"\xff", b"\x80", b"\x00", b"0", b"",
    ];
    let patterns: &[(&'static str, &[u8])] = &[
        ("glob set", b"h[ae]llo"),
        ("glob negated set", b"h[^e]llo"),
        ("glob range", b"h[a-b]llo"),
        ("glob reversed range", b"h[x-w]llo"),
        ("glob empty set", b"h[]llo"),
        ("glob empty negated set", b"h[^]llo"),
        ("glob a-bracket", b"[a-]"),
        ("glob dash first", b"[-a]"),
        ("glob escaped dash", b"[\\-]"),
        ("glob escaped bracket in set", b"[\\]]"),
        ("glob lone bracket", b"["),
        ("glob lone negation", b"[^"),
        ("glob unclosed set", b"a[bc"),
        ("glob unclosed negated", b"a[^"),
        ("glob escaped star", b"\\*"),
        ("glob escaped question", b"\\?"),
        ("glob escaped backslash", b"\\\\"),
        ("glob trailing backslash", b"\\"),
        ("glob set of escapes", b"[\\*\\?]"),
        ("glob high range", b"[\x80-\xff]"),
        ("glob range into high bytes", b"[a-\xff]"),
        ("glob caret range", b"[^a-c]"),
        ("glob nul", b"?\x00"),
        ("glob question", b"?"),
        ("glob star", b"*"),
        ("glob double star", b"**"),
        ("glob empty", b""),
        ("glob star question", b"*?"),
        ("glob upper", b"[A-C]"),
    ];
    patterns.iter().map(|(name, p)| glob_case(name, p, probe)).collect()
}

fn cases() -> Vec<Case> {
    let mut cases = glob_cases();
    cases.extend(vec![
        // EXPIRE and friends.
        open("expire then ttl", "FLUSHALL\r\nSET k v\r\nEXPIRE k 100\r\nTTL k\r\nEXPIRE missing 100\r\nTTL missing\r\nSET p v\r\nTTL p\r\nPTTL p\r\nPTTL missing\r\n"),
        open("pexpire then ttl", "FLUSHALL\r\nSET k v\r\nPEXPIRE k 100000\r\nTTL k\r\nPEXPIRE k 99600\r\nTTL k\r\nPEXPIRE k 99400\r\nTTL k\r\n"),
        open("expireat and expiretime", "FLUSHALL\r\nSET k v\r\nEXPIREAT k 4000000000\r\nEXPIRETIME k\r\nPEXPIRETIME k\r\nPEXPIREAT k 4000000000123\r\nPEXPIRETIME k\r\nEXPIRETIME k\r\nPEXPIREAT k 4000000000500\r\nEXPIRETIME k\r\nEXPIRETIME missing\r\nSET p v\r\nEXPIRETIME p\r\nPEXPIRETIME p\r\n"),
        open("expire in the past deletes", "FLUSHALL\r\nSET k v\r\nEXPIRE k -1\r\nEXISTS k\r\nSET k v\r\nEXPIRE k 0\r\nEXISTS k\r\nSET k v\r\nPEXPIREAT k 1\r\nGET k\r\nSET k v\r\nEXPIREAT k 0\r\nDBSIZE\r\n"),
        open("expire nx xx", "FLUSHALL\r\nSET k v\r\nEXPIRE k 100 XX\r\nTTL k\r\nEXPIRE k 100 NX\r\nEXPIRE k 200 NX\r\nTTL k\r\nEXPIRE k 300 XX\r\nTTL k\r\n"),
        open("expire gt lt", "FLUSHALL\r\nSET k v\r\nEXPIRE k 100 GT\r\nTTL k\r\nEXPIRE k 100 LT\r\nTTL k\r\nEXPIRE k 50 GT\r\nEXPIRE k 200 GT\r\nTTL k\r\nEXPIRE k 300 LT\r\nEXPIRE k 150 lt\r\nTTL k\r\nEXPIRE k 140 XX GT\r\nEXPIRE k 160 xx gt\r\nTTL k\r\n"),
        open("expire gt past deletes", "FLUSHALL\r\nSET k v\r\nEXPIRE k 100\r\nEXPIRE k -5 LT\r\nEXISTS k\r\n"),
        open("expire option errors", "FLUSHALL\r\nSET k v\r\nEXPIRE k 100 NX XX\r\nEXPIRE k 100 NX GT\r\nEXPIRE k 100 NX LT\r\nEXPIRE k 100 GT LT\r\nEXPIRE k 100 bogus\r\nEXPIRE k 100 NX bogus\r\nEXPIRE k abc\r\nEXPIRE k abc NX XX\r\nEXPIRE k 1.5\r\nTTL k\r\n"),
        open("expire overflow", "FLUSHALL\r\nSET k v\r\nEXPIRE k 9223372036854775807\r\nEXPIRE k 9223372036854775\r\nPEXPIRE k 9223372036854775807\r\nEXPIREAT k 9223372036854775807\r\nEXPIREAT k 9223372036854775\r\nPEXPIREAT k 9223372036854775807\r\nPEXPIRETIME k\r\nEXPIRETIME k\r\nEXPIRE k -9223372036854775808\r\nEXISTS k\r\n"),
        open("expire arity", "EXPIRE\r\nEXPIRE k\r\nPEXPIREAT k\r\nTTL\r\nTTL a b\r\nPERSIST\r\nEXPIRETIME a b\r\n"),
        open("expire repeated options", "FLUSHALL\r\nSET k v\r\nEXPIRE k 100 NX NX\r\nEXPIRE k 200 xx XX\r\nTTL k\r\nEXPIRE k 300 gt GT xx\r\nTTL k\r\nEXPIRE missing 10 NX\r\nEXPIRE missing 10 GT\r\n"),
        open("ttl rounding", "FLUSHALL\r\nSET k v\r\nPEXPIRE k 2400\r\nTTL k\r\nPEXPIRE k 99000\r\nTTL k\r\nEXPIRE k 1\r\nTTL k\r\n"),
        open("expire then delete and recreate", "FLUSHALL\r\nSET k v EX 100\r\nDEL k\r\nSET k v\r\nTTL k\r\nSET k v PX 100000\r\nSET k w\r\nTTL k\r\n"),
        open("persist", "FLUSHALL\r\nSET k v\r\nPERSIST k\r\nEXPIRE k 100\r\nPERSIST k\r\nTTL k\r\nPERSIST k\r\nPERSIST missing\r\n"),
        open("set clears ttl, keepttl keeps it", "FLUSHALL\r\nSET k v EX 100\r\nTTL k\r\nSET k w\r\nTTL k\r\nSET k v EX 100\r\nSET k w KEEPTTL\r\nTTL k\r\nINCR n\r\nEXPIRE n 100\r\nINCR n\r\nTTL n\r\nAPPEND n x\r\nTTL n\r\n"),
        open("expire in another db", "FLUSHALL\r\nSELECT 3\r\nSET k v\r\nEXPIRE k 100\r\nSELECT 0\r\nTTL k\r\nSELECT 3\r\nTTL k\r\n"),
        // KEYS: each pattern matches at most one key, so order cannot differ.
        open("keys basics", "FLUSHALL\r\nKEYS *\r\nSET hello 1\r\nKEYS *\r\nKEYS h?llo\r\nKEYS h*\r\nKEYS *o\r\nKEYS x*\r\nKEYS hello\r\nKEYS Hello\r\nKEYS ''\r\n"),
        open("keys stars", "FLUSHALL\r\nSET abcdef 1\r\nKEYS a*c*f\r\nKEYS a**f\r\nKEYS *b*d*\r\nKEYS *f*\r\nKEYS ***\r\nKEYS *a*a*\r\nKEYS a*?\r\nKEYS abcdef*\r\nKEYS abcdef?\r\n"),
        open("keys empty key", "FLUSHALL\r\nSET '' v\r\nKEYS *\r\nKEYS **\r\nKEYS ?\r\nKEYS ''\r\nDBSIZE\r\n"),
        open("keys skips other dbs", "FLUSHALL\r\nSELECT 2\r\nSET k v\r\nSELECT 0\r\nKEYS *\r\nSELECT 2\r\nKEYS *\r\n"),
        open("keys nocase not", "FLUSHALL\r\nSET ABC 1\r\nKEYS abc\r\nKEYS [a-c]BC\r\nKEYS [A-C]BC\r\n"),
        // SCAN: with at most one key, cursor and order are the same everywhere.
        open("scan empty", "FLUSHALL\r\nSCAN 0\r\nSCAN 0 COUNT 100 MATCH * TYPE string\r\n"),
        open("scan one key", "FLUSHALL\r\nSET k v\r\nSCAN 0\r\nSCAN 0 MATCH k\r\nSCAN 0 MATCH x*\r\nSCAN 0 TYPE string\r\nSCAN 0 TYPE STRING\r\nSCAN 0 TYPE list\r\nSCAN 0 TYPE bogus\r\nSCAN 0 count 5 match * type string\r\nSCAN 0 MATCH x MATCH k\r\n"),
        open("scan errors", "FLUSHALL\r\nSCAN x\r\nSCAN 1x\r\nSCAN ' 1'\r\nSCAN 0x10\r\nSCAN 18446744073709551616\r\nSCAN 0 COUNT 0\r\nSCAN 0 COUNT -1\r\nSCAN 0 COUNT x\r\nSCAN 0 COUNT\r\nSCAN 0 MATCH\r\nSCAN 0 TYPE\r\nSCAN 0 BOGUS 1\r\nSCAN 0 COUNT 1 x\r\nSCAN\r\n"),
        open("scan odd cursors", "FLUSHALL\r\nSCAN -1\r\nSCAN +0\r\nSCAN 18446744073709551615\r\nSCAN ''\r\n"),
        // RANDOMKEY.
        open("randomkey", "FLUSHALL\r\nRANDOMKEY\r\nSET only v\r\nRANDOMKEY\r\nSELECT 1\r\nRANDOMKEY\r\nRANDOMKEY x\r\n"),
        // RENAME / RENAMENX.
        open("rename", "FLUSHALL\r\nSET a 1\r\nRENAME a b\r\nGET a\r\nGET b\r\nRENAME a b\r\nRENAME missing missing\r\nRENAME b b\r\nGET b\r\n"),
        open("rename keeps ttl and replaces", "FLUSHALL\r\nSET a 1\r\nEXPIRE a 100\r\nSET b 2\r\nEXPIRE b 300\r\nRENAME a b\r\nTTL b\r\nGET b\r\nEXISTS a\r\nSET c 3\r\nRENAME b c\r\nTTL c\r\n"),
        open("renamenx", "FLUSHALL\r\nMSET a 1 b 2\r\nRENAMENX a b\r\nRENAMENX a c\r\nMGET a b c\r\nRENAMENX c c\r\nRENAMENX missing x\r\nRENAMENX missing missing\r\n"),
        open("rename across shards and types", "FLUSHALL\r\nSET {x}a 1\r\nRENAME {x}a {y}b\r\nGET {y}b\r\nINCR {y}b\r\nRENAME {y}b z\r\nOBJECT ENCODING z\r\nINCR z\r\n"),
        // COPY.
        open("copy", "FLUSHALL\r\nSET a 1\r\nCOPY a b\r\nGET b\r\nCOPY a b\r\nCOPY a b REPLACE\r\nCOPY missing b\r\nCOPY a a\r\nCOPY a a DB 1\r\nSELECT 1\r\nGET a\r\n"),
        open("copy keeps ttl", "FLUSHALL\r\nSET a 1 EX 100\r\nCOPY a b\r\nTTL b\r\nCOPY a c DB 2\r\nSELECT 2\r\nTTL c\r\n"),
        open("copy errors", "FLUSHALL\r\nSET a 1\r\nCOPY a b DB\r\nCOPY a b DB x\r\nCOPY a b DB 16\r\nCOPY a b DB -1\r\nCOPY a b DB 4294967296\r\nCOPY a b BOGUS\r\nCOPY a b DB 99 BOGUS\r\nCOPY a b REPLACE REPLACE\r\nCOPY a a REPLACE\r\nCOPY a\r\n"),
        open("copy is independent", "FLUSHALL\r\nSET a 1\r\nCOPY a b\r\nINCR b\r\nAPPEND a x\r\nMGET a b\r\n"),
        // MOVE.
        open("move", "FLUSHALL\r\nSET k v\r\nEXPIRE k 100\r\nMOVE k 1\r\nEXISTS k\r\nSELECT 1\r\nGET k\r\nTTL k\r\nMOVE k 1\r\nMOVE k 0\r\nSET k w\r\nMOVE k 0\r\nGET k\r\nMOVE missing 0\r\n"),
        open("move errors", "FLUSHALL\r\nSET k v\r\nMOVE k x\r\nMOVE k 16\r\nMOVE k -1\r\nMOVE k 0\r\nMOVE missing 0\r\nMOVE k 99999999999\r\nMOVE k\r\n"),
        // TOUCH.
        open("touch", "FLUSHALL\r\nMSET a 1 b 2\r\nTOUCH a b c a\r\nTOUCH c\r\nTOUCH\r\n"),
        // SWAPDB.
        open("swapdb", "FLUSHALL\r\nSET k zero\r\nSELECT 1\r\nSET k one\r\nSET j x\r\nSWAPDB 0 1\r\nGET k\r\nDBSIZE\r\nSELECT 0\r\nGET k\r\nGET j\r\nSWAPDB 0 0\r\nGET k\r\nSWAPDB 1 0\r\nGET k\r\n"),
        open("swapdb errors", "SWAPDB x 1\r\nSWAPDB 1 x\r\nSWAPDB x y\r\nSWAPDB 16 x\r\nSWAPDB 0 16\r\nSWAPDB -1 0\r\nSWAPDB 4294967296 0\r\nSWAPDB 0 4294967296\r\nSWAPDB 0\r\n"),
        // OBJECT.
        open("object encoding", "FLUSHALL\r\nSET i 123\r\nSET s abc\r\nSET r aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nOBJECT ENCODING i\r\nOBJECT encoding s\r\nOBJECT ENCODING r\r\nOBJECT ENCODING missing\r\nAPPEND s x\r\nOBJECT ENCODING s\r\n"),
        open("append to a missing key encodes like set", "FLUSHALL\r\nAPPEND q x\r\nOBJECT ENCODING q\r\nAPPEND n 123\r\nOBJECT ENCODING n\r\nAPPEND q y\r\nOBJECT ENCODING q\r\n"),
        open("object refcount of copies", "FLUSHALL\r\nSET a 1\r\nCOPY a b\r\nOBJECT REFCOUNT b\r\nOBJECT REFCOUNT a\r\nEXPIRE b 100\r\nRENAME b c\r\nOBJECT REFCOUNT c\r\nMOVE c 1\r\nCOPY a d DB 1\r\nSELECT 1\r\nOBJECT REFCOUNT c\r\nOBJECT REFCOUNT d\r\nINCR c\r\nOBJECT REFCOUNT c\r\nSET e 20000\r\nCOPY e f\r\nOBJECT REFCOUNT f\r\nINCRBY f -19990\r\nOBJECT REFCOUNT f\r\nCOPY d g\r\nOBJECT REFCOUNT g\r\n"),
        open("object refcount", "FLUSHALL\r\nSET a 1\r\nSET b 9999\r\nSET c 10000\r\nSET d -1\r\nSET e abc\r\nOBJECT REFCOUNT a\r\nOBJECT REFCOUNT b\r\nOBJECT REFCOUNT c\r\nOBJECT REFCOUNT d\r\nOBJECT REFCOUNT e\r\nOBJECT REFCOUNT missing\r\nINCR a\r\nOBJECT REFCOUNT a\r\nSET f 9998\r\nINCR f\r\nOBJECT REFCOUNT f\r\nINCR f\r\nOBJECT REFCOUNT f\r\n"),
        open("object idletime and freq", "FLUSHALL\r\nSET k v\r\nOBJECT IDLETIME k\r\nOBJECT FREQ k\r\nOBJECT IDLETIME missing\r\nOBJECT FREQ missing\r\n").in_one_second(),
        open("object help and errors", "OBJECT HELP\r\nobject help\r\nOBJECT\r\nOBJECT bogus\r\nOBJECT ENCODING\r\nOBJECT ENCODING a b\r\nOBJECT HELP x\r\n"),
        open("object in resp3", "HELLO 3\r\nFLUSHALL\r\nOBJECT ENCODING missing\r\nSET k 5\r\nOBJECT ENCODING k\r\nOBJECT HELP\r\nSCAN 0\r\nKEYS *\r\nRANDOMKEY\r\nDEL k\r\nRANDOMKEY\r\nDUMP k\r\n"),
        // DUMP / RESTORE: payloads are kvik's own, so only what does not show one is compared.
        open("dump missing", "FLUSHALL\r\nDUMP missing\r\nDUMP\r\n"),
        open("restore errors", "FLUSHALL\r\nSET k v\r\nRESTORE k 0 garbage\r\nRESTORE k 0 garbage REPLACE\r\nRESTORE n -1 garbage\r\nRESTORE n x garbage\r\nRESTORE n 0 ''\r\nRESTORE n 0 0123456789\r\nRESTORE n 0 garbage BOGUS\r\nRESTORE n 0 garbage IDLETIME\r\nRESTORE n 0 garbage IDLETIME -1\r\nRESTORE n 0 garbage IDLETIME x\r\nRESTORE n 0 garbage FREQ 256\r\nRESTORE n 0 garbage FREQ -1\r\nRESTORE n 0 garbage FREQ x\r\nRESTORE n 0 garbage FREQ 1 IDLETIME 1\r\nRESTORE n 0 garbage IDLETIME 1 FREQ 1\r\nRESTORE n 0 garbage ABSTTL REPLACE IDLETIME 5\r\nRESTORE n 0\r\nEXISTS n\r\n"),
        open("select errors", "SELECT 4294967296\r\nSELECT -4294967297\r\nSELECT 2147483648\r\nSELECT 16\r\nSELECT -1\r\nSELECT x\r\nSELECT 1.0\r\nSELECT 2147483647\r\nSELECT 15\r\nSELECT 0\r\n"),
        open("restore busykey before ttl", "FLUSHALL\r\nSET k v\r\nRESTORE k -1 garbage\r\nRESTORE k x garbage\r\nRESTORE k -1 garbage REPLACE\r\n"),
    ]);
    cases
}

#[test]
fn key_commands_match_redis() {
    compare_each("key_commands_match_redis", cases());
}

#[test]
fn key_commands_match_redis_pipelined() {
    compare_pipelined("key_commands_match_redis_pipelined", cases());
}

/// Random short patterns over the bytes that mean something to the matcher,
/// against random short keys: KEYS must pick the same keys as Redis.
#[test]
fn random_glob_patterns_match_redis() {
    let alphabet = b"ab-^[]*?\\\xff";
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut cases = Vec::new();
    for _ in 0..40 {
        let mut bytes = Vec::new();
        for _ in 0..10 {
            let pattern: Vec<u8> = (0..1 + next(6)).map(|_| alphabet[next(alphabet.len())]).collect();
            bytes.extend(multibulk(&[b"FLUSHALL"]));
            for _ in 0..6 {
                let key: Vec<u8> = (0..1 + next(4)).map(|_| alphabet[next(alphabet.len())]).collect();
                bytes.extend(multibulk(&[b"SET", &key, b"v"]));
                bytes.extend(multibulk(&[b"KEYS", &pattern]));
                bytes.extend(multibulk(&[b"DEL", &key]));
            }
        }
        cases.push(open("random globs", bytes));
    }
    compare_each("random_glob_patterns_match_redis", cases);
}

/// Random sequences of key commands over a few keys and two databases.
/// Deadlines are absolute and read back as absolute times (some already
/// past, which deletes), so no reply depends on the clock.
#[test]
fn random_key_command_sequences_match_redis() {
    let mut state: u64 = 0x1234_5678_9abc_def1;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let keys = ["a", "b", "{a}c", "n"];
    let times = ["4000000000", "4000000500", "3999999999", "1", "-5", "4100000000"];
    let options = ["", " NX", " XX", " GT", " LT", " xx gt", " NX LT"];
    let mut cases = Vec::new();
    for _ in 0..100 {
        let mut text = String::from("FLUSHALL\r\n");
        for _ in 0..60 {
            let k = keys[next(keys.len())];
            let k2 = keys[next(keys.len())];
            let t = times[next(times.len())];
            let pick = next(27);
            let command = match pick {
                0 => format!("SET {k} v{}", next(3)),
                1 => format!("SET {k} {}", next(20000)),
                2 => format!("EXPIREAT {k} {t}{}", options[next(options.len())]),
                3 => format!("PEXPIREAT {k} {t}123{}", options[next(options.len())]),
                4 => format!("EXPIRETIME {k}"),
                5 => format!("PEXPIRETIME {k}"),
                6 => format!("PERSIST {k}"),
                7 => format!("RENAME {k} {k2}"),
                8 => format!("RENAMENX {k} {k2}"),
                9 => format!("COPY {k} {k2}{}", ["", " REPLACE", " DB 1", " DB 1 REPLACE"][next(4)]),
                10 => format!("MOVE {k} {}", next(2)),
                11 => format!("SELECT {}", next(2)),
                12 => format!("SWAPDB 0 {}", next(2)),
                13 => format!("DEL {k} {k2}"),
                14 => format!("EXISTS {k} {k2}"),
                15 => format!("OBJECT ENCODING {k}"),
                16 => format!("INCR {k}"),
                17 => format!("APPEND {k} x"),
                18 => "DBSIZE".to_string(),
                19 => format!("KEYS {}", k.replace('{', "\\{")),
                20 => format!("TOUCH {k} {k2}"),
                21 => format!("SETNX {k} 7"),
                22 => format!("MSET {k} 1 {k2} x"),
                23 => format!("RESTORE {k} 0 bad"),
                24 => format!("SCAN 0 MATCH {}", k.replace('{', "\\{")),
                25 => format!("OBJECT REFCOUNT {k}"),
                _ => format!("TYPE {k}"),
            };
            text.push_str(&command);
            text.push_str("\r\n");
        }
        cases.push(open("random key commands", text));
    }
    compare_each("random_key_command_sequences_match_redis", cases);
}

/// Keys whose TTL has passed, seen through every key command after a short
/// wait, on both servers.
#[test]
fn expired_keys_are_gone_after_their_deadline() {
    let Some(redis) = common::start_redis_or_skip("expired_keys_are_gone_after_their_deadline") else {
        return;
    };
    let kvik = start_kvik();
    let setup = "FLUSHALL\r\nSET a v PX 50\r\nSET b v\r\nPEXPIRE b 50\r\nSET c v\r\nSET d v\r\nPEXPIREAT d 1000\r\n";
    let check = "EXISTS a b c d\r\nTTL a\r\nPTTL b\r\nGET a\r\nKEYS *\r\nSCAN 0\r\nRANDOMKEY\r\nRENAME a z\r\nCOPY b z\r\nMOVE a 1\r\nPERSIST a\r\nOBJECT ENCODING a\r\nDUMP a\r\nTOUCH a b\r\n";
    let mut got = Vec::new();
    for port in [redis.port, kvik.port] {
        let mut s = connect(port);
        s.write_all(setup.as_bytes()).expect("send");
        read_until(&mut s, |b| b.windows(2).filter(|w| w == b"\r\n").count() >= 7);
        thread::sleep(Duration::from_millis(120));
        s.write_all(check.as_bytes()).expect("send");
        s.write_all(common::diff::MARKER).expect("send");
        got.push(read_until(&mut s, |b| b.ends_with(common::diff::MARKER_REPLY)).show());
    }
    assert_eq!(got[0], got[1], "redis then kvik");
}

/// A pipelined request on a fresh connection; returns the replies.
fn send(port: u16, request: &[u8]) -> Vec<u8> {
    let mut s = connect(port);
    s.write_all(request).expect("send");
    s.write_all(common::diff::MARKER).expect("send");
    let answer = read_until(&mut s, |b| b.ends_with(common::diff::MARKER_REPLY));
    let mut bytes = answer.bytes;
    bytes.truncate(bytes.len().saturating_sub(common::diff::MARKER_REPLY.len()));
    bytes
}

/// Split a RESP2 reply holding `*2 cursor [keys]` into the cursor and keys.
fn parse_scan(reply: &[u8]) -> (String, Vec<Vec<u8>>) {
    let text = reply.to_vec();
    let mut lines = text.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    assert_eq!(lines.next(), Some(&b"*2"[..]));
    lines.next();
    let cursor = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
    let n: usize = String::from_utf8_lossy(&lines.next().unwrap_or_default()[1..]).parse().unwrap_or(0);
    let mut keys = Vec::new();
    for _ in 0..n {
        lines.next();
        keys.push(lines.next().unwrap_or_default().to_vec());
    }
    (cursor, keys)
}

/// Every key present for a whole SCAN is returned, even while other clients
/// add and remove keys between the calls.
#[test]
fn scan_returns_every_key_present_throughout_despite_changes() {
    let kvik = start_kvik();
    let mut setup = b"FLUSHALL\r\n".to_vec();
    for i in 0..2000 {
        setup.extend_from_slice(format!("SET stable:{i} v\r\nSET doomed:{i} v\r\n").as_bytes());
    }
    send(kvik.port, &setup);
    let mut cursor = "0".to_string();
    let mut seen = std::collections::HashSet::new();
    let mut step = 0;
    loop {
        let reply = send(kvik.port, format!("SCAN {cursor} COUNT 25\r\n").as_bytes());
        let (next, keys) = parse_scan(&reply);
        seen.extend(keys);
        if next == "0" {
            break;
        }
        let mut churn = Vec::new();
        for j in 0..30 {
            churn.extend_from_slice(format!("SET added:{step}:{j} v\r\nDEL doomed:{}\r\n", step * 30 + j).as_bytes());
        }
        send(kvik.port, &churn);
        cursor = next;
        step += 1;
        assert!(step < 10_000, "the scan does not end");
    }
    for i in 0..2000 {
        assert!(seen.contains(format!("stable:{i}").as_bytes()), "stable:{i} was never returned");
    }
}

/// The same guarantee while another client writes continuously, renaming
/// and moving keys across shards and databases as the scan runs.
#[test]
fn scan_under_concurrent_writes_still_returns_every_stable_key() {
    let kvik = start_kvik();
    let mut setup = b"FLUSHALL\r\n".to_vec();
    for i in 0..1000 {
        setup.extend_from_slice(format!("SET stable:{i} v\r\n").as_bytes());
    }
    send(kvik.port, &setup);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = std::sync::Arc::clone(&stop);
        let port = kvik.port;
        thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut batch = Vec::new();
                for j in 0..50 {
                    batch.extend_from_slice(
                        format!("SET tmp:{round}:{j} v\r\nRENAME tmp:{round}:{j} moved:{round}:{j}\r\nCOPY moved:{round}:{j} c:{j} REPLACE\r\nMOVE c:{j} 1\r\nDEL moved:{}:{j}\r\n", round.saturating_sub(1))
                            .as_bytes(),
                    );
                }
                send(port, &batch);
                round += 1;
            }
        })
    };
    let mut cursor = "0".to_string();
    let mut seen = std::collections::HashSet::new();
    loop {
        let (next, keys) = parse_scan(&send(kvik.port, format!("SCAN {cursor} COUNT 20\r\n").as_bytes()));
        seen.extend(keys);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().expect("writer thread");
    for i in 0..1000 {
        assert!(seen.contains(format!("stable:{i}").as_bytes()), "stable:{i} was never returned");
    }
}

/// SCAN's MATCH, TYPE and COUNT over many keys agree with KEYS.
#[test]
fn scan_with_match_returns_what_keys_returns() {
    let kvik = start_kvik();
    let mut setup = b"FLUSHALL\r\n".to_vec();
    for i in 0..300 {
        setup.extend_from_slice(format!("SET user:{i} v\r\nSET item:{i} v\r\n").as_bytes());
    }
    send(kvik.port, &setup);
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    loop {
        let (next, keys) =
            parse_scan(&send(kvik.port, format!("SCAN {cursor} MATCH user:1* COUNT 7 TYPE string\r\n").as_bytes()));
        seen.extend(keys);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    seen.sort();
    let mut expected: Vec<Vec<u8>> =
        (0..300).map(|i| format!("user:{i}").into_bytes()).filter(|k| k.starts_with(b"user:1")).collect();
    expected.sort();
    assert_eq!(seen, expected);
}

/// Keys with a TTL disappear without anyone reading them.
#[test]
fn active_expiry_removes_keys_nobody_reads() {
    let kvik = start_kvik();
    let mut setup = b"FLUSHALL\r\n".to_vec();
    for i in 0..500 {
        setup.extend_from_slice(format!("SET tmp:{i} v PX 100\r\n").as_bytes());
    }
    setup.extend_from_slice(b"SET kept v\r\nSELECT 5\r\nSET tmp v PX 100\r\nSET kept v\r\n");
    send(kvik.port, &setup);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let sizes = send(kvik.port, b"DBSIZE\r\nSELECT 5\r\nDBSIZE\r\n");
        if sizes == b":1\r\n+OK\r\n:1\r\n" {
            break;
        }
        assert!(Instant::now() < deadline, "expired keys still counted: {}", sizes.escape_ascii());
        thread::sleep(Duration::from_millis(50));
    }
}

/// The payload of `DUMP key` after `setup`, sent to kvik at `port`.
fn dump_payload(port: u16, setup: &[u8]) -> Vec<u8> {
    let mut request = setup.to_vec();
    request.extend_from_slice(b"DUMP k\r\n");
    let reply = send(port, &request);
    let payload_start = reply.iter().position(|&b| b == b'$').expect("a bulk reply");
    let header_end = payload_start + reply[payload_start..].windows(2).position(|w| w == b"\r\n").expect("a length");
    let len: usize =
        std::str::from_utf8(&reply[payload_start + 1..header_end]).expect("digits").parse().expect("a length");
    reply[header_end + 2..header_end + 2 + len].to_vec()
}

/// DUMP's payload restores the value, its TTL and its idle time.
#[test]
fn dump_and_restore_round_trip() {
    let kvik = start_kvik();
    let payload = dump_payload(kvik.port, b"FLUSHALL\r\nSET k hello\r\n");

    let mut req = multibulk(&[b"RESTORE", b"k", b"0", &payload]);
    req.extend(multibulk(&[b"RESTORE", b"k2", b"100000", &payload]));
    req.extend(multibulk(&[b"RESTORE", b"k", b"0", &payload, b"REPLACE", b"IDLETIME", b"1000"]));
    req.extend_from_slice(b"GET k2\r\nTTL k2\r\nOBJECT IDLETIME k\r\nGET k\r\n");
    req.extend(multibulk(&[b"RESTORE", b"k3", b"1", &payload, b"ABSTTL"]));
    req.extend_from_slice(b"EXISTS k3\r\n");
    let mut damaged = payload.clone();
    damaged[1] ^= 0x20;
    req.extend(multibulk(&[b"RESTORE", b"k4", b"0", &damaged]));
    clear_of_second_boundary();
    let got = send(kvik.port, &req);
    assert_eq!(
        got.escape_ascii().to_string(),
        "-BUSYKEY Target key name already exists.\r\n+OK\r\n+OK\r\n$5\r\nhello\r\n:100\r\n:1000\r\n$5\r\nhello\r\n+OK\r\n:0\r\n-ERR DUMP payload version or checksum are wrong\r\n"
            .as_bytes()
            .escape_ascii()
            .to_string()
    );
}

/// RANDOMKEY returns each key of a small database sooner or later.
#[test]
fn randomkey_reaches_every_key() {
    let kvik = start_kvik();
    send(kvik.port, b"FLUSHALL\r\nMSET a 1 b 2 c 3 {a}d 4\r\n");
    let mut req = Vec::new();
    for _ in 0..200 {
        req.extend_from_slice(b"RANDOMKEY\r\n");
    }
    let got = send(kvik.port, &req);
    for key in ["$1\r\na\r\n", "$1\r\nb\r\n", "$1\r\nc\r\n", "$4\r\n{a}d\r\n"] {
        assert!(got.windows(key.len()).any(|w| w == key.as_bytes()), "{key:?} never picked");
    }
}

/// The key commands over RESPB frames (binary where the command has a
/// layout, passthrough otherwise) give the same answers as over RESP.
#[test]
fn key_commands_over_respb() {
    use kvik_protocol::resp::reply_parser::ReplyLimits;
    use kvik_protocol::respb::{decode_reply, encode_request, handshake};
    use kvik_protocol::Value;

    let kvik = start_kvik();
    let mut stream = connect(kvik.port);
    stream.write_all(&handshake::client_hello(1)).expect("send greeting");
    let answer = read_until(&mut stream, |got| got.len() >= handshake::LEN);
    assert_eq!(answer.bytes, [0xD3, 0xC1, 0x01, 0x00]);
    let mut ask = |args: &[&[u8]]| {
        let mut frame = Vec::new();
        encode_request(args, 3, &mut frame);
        stream.write_all(&frame).expect("send frame");
        let complete = |got: &[u8]| matches!(decode_reply(got, &ReplyLimits::DEFAULT), Ok(Some(_)) | Err(_));
        let answer = read_until(&mut stream, complete);
        let frame = decode_reply(&answer.bytes, &ReplyLimits::DEFAULT).expect("a reply frame").expect("complete");
        assert_eq!(frame.mux, 3);
        frame.value
    };
    assert_eq!(ask(&[b"FLUSHALL"]), Value::simple("OK"));
    assert_eq!(ask(&[b"SET", b"k", b"v"]), Value::simple("OK"));
    assert_eq!(ask(&[b"EXPIRE", b"k", b"100", b"NX"]), Value::Integer(1));
    assert_eq!(ask(&[b"TTL", b"k"]), Value::Integer(100));
    assert_eq!(ask(&[b"PEXPIREAT", b"k", b"4000000000000"]), Value::Integer(1));
    assert_eq!(ask(&[b"EXPIRETIME", b"k"]), Value::Integer(4_000_000_000));
    assert_eq!(ask(&[b"PERSIST", b"k"]), Value::Integer(1));
    assert_eq!(ask(&[b"KEYS", b"*"]), Value::Array(vec![Value::bulk("k")]));
    assert_eq!(
        ask(&[b"SCAN", b"0", b"MATCH", b"k"]),
        Value::Array(vec![Value::bulk("0"), Value::Array(vec![Value::bulk("k")])])
    );
    assert_eq!(ask(&[b"RENAME", b"k", b"j"]), Value::simple("OK"));
    assert_eq!(ask(&[b"COPY", b"j", b"i", b"DB", b"2"]), Value::Integer(1));
    assert_eq!(ask(&[b"OBJECT", b"ENCODING", b"j"]), Value::bulk("embstr"));
    assert_eq!(ask(&[b"RANDOMKEY"]), Value::bulk("j"));
    assert_eq!(ask(&[b"RENAME", b"nope", b"x"]), Value::error("ERR no such key"));
}

/// OBJECT IDLETIME counts whole seconds since the last access; reads reset
/// it, OBJECT itself and TTL do not.
#[test]
fn idle_time_counts_from_the_last_access() {
    let kvik = start_kvik();
    send(kvik.port, b"FLUSHALL\r\nSET k v\r\nSET j v\r\n");
    thread::sleep(Duration::from_millis(2100));
    clear_of_second_boundary();
    let got = send(kvik.port, b"OBJECT IDLETIME k\r\nTTL k\r\nOBJECT IDLETIME k\r\nGET k\r\nOBJECT IDLETIME k\r\nTOUCH j\r\nOBJECT IDLETIME j\r\n");
    let text = String::from_utf8_lossy(&got).into_owned();
    let replies: Vec<&str> = text.split("\r\n").collect();
    let idle: i64 = replies[0].trim_start_matches(':').parse().expect("an integer");
    assert!((2..=3).contains(&idle), "idle {idle} after 2.1 s: {text:?}");
    assert_eq!(replies[1], ":-1");
    assert_eq!(replies[2], replies[0], "TTL is not an access");
    assert_eq!(&replies[3..], ["$1", "v", ":0", ":1", ":0", ""], "{text:?}");
}
