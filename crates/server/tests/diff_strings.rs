//! Differential tests of the string and bitmap commands: every case goes to
//! kvik-server and to a real redis-server, and the replies must be identical,
//! byte for byte, errors included. Each case starts with `FLUSHALL`.

mod common;

use common::diff::*;

fn expiry_cases() -> Vec<Case> {
    vec![
        lines("setex", &["SETEX k 100 v", "GET k", "EXISTS k", "SETEX k 100 12", "GET k", "APPEND k 3"]),
        lines("psetex", &["PSETEX k 100000 v", "GET k", "PSETEX k 100000 w", "GET k"]),
        lines(
            "setex errors",
            &[
                "SETEX k 0 v",
                "SETEX k -1 v",
                "SETEX k x v",
                "SETEX k 1.5 v",
                "SETEX k 9223372036854775807 v",
                "SETEX k 9223372036854775 v",
                "SETEX k 9223372036854776 v",
                "EXISTS k",
            ],
        ),
        lines(
            "psetex errors",
            &["PSETEX k 0 v", "PSETEX k -5 v", "PSETEX k abc v", "PSETEX k 9223372036854775807 v", "EXISTS k"],
        ),
        lines("setex arity", &["SETEX k 10", "PSETEX k", "SETEX k 10 v extra"]),
        lines("getset", &["GETSET k a", "GETSET k b", "GET k", "SETEX t 100 x", "GETSET t y", "GET t", "GETSET k"]),
        lines("getset integer", &["SET n 42", "GETSET n 43", "INCR n", "GETSET n abc"]),
        lines(
            "getdel",
            &["SET k v", "GETDEL k", "EXISTS k", "GETDEL k", "GETDEL missing", "SET n 7", "GETDEL n", "GETDEL"],
        ),
        lines("getex plain", &["SET k v", "GETEX k", "GETEX missing", "GETEX missing EX 10"]),
        lines(
            "getex options",
            &[
                "SET k v",
                "GETEX k EX 100",
                "GETEX k PX 100000",
                "GETEX k EXAT 99999999999",
                "GETEX k PXAT 99999999999999",
                "GETEX k PERSIST",
                "GET k",
            ],
        ),
        lines("getex lowercase", &["SET k v", "getex k ex 100", "getex k persist", "getex k pxat 99999999999999"]),
        lines(
            "getex past deadline deletes",
            &["SET k v", "GETEX k EXAT 1", "EXISTS k", "SET k v", "GETEX k PXAT 1", "EXISTS k"],
        ),
        lines(
            "getex syntax errors",
            &[
                "SET k v",
                "GETEX k EX",
                "GETEX k EX 10 PX 10",
                "GETEX k PERSIST EX 10",
                "GETEX k EX 10 PERSIST",
                "GETEX k BOGUS",
                "GETEX k NX",
                "GETEX k KEEPTTL",
                "GETEX k GET",
                "GETEX k PERSIST PERSIST",
                "GETEX k EX 10 EX 20",
                "GET k",
            ],
        ),
        lines(
            "getex bad times",
            &[
                "SET k v",
                "GETEX k EX 0",
                "GETEX k EX -1",
                "GETEX k PX abc",
                "GETEX k EXAT 0",
                "GETEX k PXAT -1",
                "GETEX k EX 9223372036854775807",
                "GETEX k PX 9223372036854775807",
                "GETEX k EX 1.5",
                "GETEX missing EX 0",
                "EXISTS k",
            ],
        ),
        lines(
            "getex errors before missing key",
            &["GETEX missing BOGUS", "GETEX missing EX x", "GETEX missing EX 0 PX 1", "GETEX missing PERSIST EXAT x"],
        ),
        lines("getex arity", &["GETEX"]),
    ]
}

/// Null and array replies look different in RESP3.
fn resp3_cases() -> Vec<Case> {
    vec![
        open("resp3 nulls", "FLUSHALL\r\nHELLO 3\r\nGETDEL missing\r\nGETEX missing\r\nGETSET k v\r\nGETSET k w\r\nGETRANGE missing 0 1\r\nSUBSTR k 0 0\r\n"),
        open("resp3 bitfield", "FLUSHALL\r\nHELLO 3\r\nBITFIELD k OVERFLOW FAIL SET u8 0 300 SET u8 0 3 GET u8 0\r\nBITFIELD_RO k GET i4 4\r\nBITFIELD k\r\n"),
        open("resp3 incrbyfloat", "FLUSHALL\r\nHELLO 3\r\nINCRBYFLOAT k 1.5\r\nINCRBYFLOAT k x\r\nMSETNX a 1 b 2\r\nBITPOS k 1\r\n"),
    ]
}

fn msetnx_cases() -> Vec<Case> {
    vec![
        lines("msetnx all new", &["MSETNX a 1 b 2", "MGET a b"]),
        lines("msetnx one exists", &["SET b x", "MSETNX a 1 b 2", "MGET a b"]),
        lines("msetnx duplicate key", &["MSETNX a 1 a 2", "GET a"]),
        lines("msetnx arity", &["MSETNX a", "MSETNX a 1 b", "MSETNX"]),
        lines("msetnx hashtags", &["MSETNX {t}a 1 {t}b 2 c 3", "MGET {t}a {t}b c", "MSETNX c 4 d 5", "EXISTS d"]),
    ]
}

fn incrbyfloat_cases() -> Vec<Case> {
    vec![
        lines(
            "incrbyfloat basics",
            &[
                "INCRBYFLOAT k 10.5",
                "INCRBYFLOAT k 0.1",
                "INCRBYFLOAT k -5",
                "GET k",
                "INCRBYFLOAT k 3.0e3",
                "INCRBYFLOAT k 1E-2",
            ],
        ),
        lines(
            "incrbyfloat classic sums",
            &[
                "INCRBYFLOAT a 0.1",
                "INCRBYFLOAT a 0.2",
                "INCRBYFLOAT b 1.1",
                "INCRBYFLOAT b 2.2",
                "INCRBYFLOAT c 0.3",
                "INCRBYFLOAT c -0.1",
                "INCRBYFLOAT d 1e-17",
                "INCRBYFLOAT d 1",
            ],
        ),
        lines(
            "incrbyfloat big values",
            &[
                "INCRBYFLOAT a 1e30",
                "INCRBYFLOAT b 1.7976931348623157e308",
                "INCRBYFLOAT c -1e25",
                "INCRBYFLOAT d 123456789012345678901234567890.123",
                "INCRBYFLOAT e 1e4000",
            ],
        ),
        lines(
            "incrbyfloat small values",
            &[
                "INCRBYFLOAT a 1.23e-10",
                "INCRBYFLOAT b 1e-18",
                "INCRBYFLOAT c 5e-18",
                "INCRBYFLOAT d 6e-18",
                "INCRBYFLOAT e -1e-20",
                "INCRBYFLOAT f 0.000000000000000015",
                "INCRBYFLOAT g 1e-4940",
            ],
        ),
        lines(
            "incrbyfloat integers",
            &[
                "SET k 10",
                "INCRBYFLOAT k 1",
                "INCRBYFLOAT k -11",
                "SET m 9223372036854775807",
                "INCRBYFLOAT m 1",
                "SET n -9223372036854775808",
                "INCRBYFLOAT n -0.5",
                "INCRBYFLOAT z 0",
                "INCRBYFLOAT z -0",
            ],
        ),
        lines(
            "incrbyfloat accepted forms",
            &[
                "INCRBYFLOAT a +1.5",
                "INCRBYFLOAT b .5",
                "INCRBYFLOAT c 5.",
                "INCRBYFLOAT d 0x1p3",
                "INCRBYFLOAT e 0X1.8P1",
                "INCRBYFLOAT f 1e+2",
                "INCRBYFLOAT g 00012",
                "INCRBYFLOAT h 0e-99999",
            ],
        ),
        lines(
            "incrbyfloat invalid increments",
            &[
                "INCRBYFLOAT k abc",
                "INCRBYFLOAT k nan",
                "INCRBYFLOAT k 1e",
                "INCRBYFLOAT k 1.2.3",
                "INCRBYFLOAT k 1e5000",
                "INCRBYFLOAT k 1e-5000",
                "INCRBYFLOAT k 0x",
                "INCRBYFLOAT k --1",
                "INCRBYFLOAT k .",
                "EXISTS k",
            ],
        ),
        requests(
            "incrbyfloat spaces and bytes",
            &[
                &[b"INCRBYFLOAT", b"k", b" 1"],
                &[b"INCRBYFLOAT", b"k", b"1 "],
                &[b"INCRBYFLOAT", b"k", b""],
                &[b"INCRBYFLOAT", b"k", b"\t1"],
                &[b"INCRBYFLOAT", b"k", b"2\x00junk"],
                &[b"GET", b"k"],
            ],
        ),
        lines(
            "incrbyfloat infinity",
            &[
                "INCRBYFLOAT k inf",
                "INCRBYFLOAT k -inf",
                "INCRBYFLOAT k infinity",
                "SET k 1",
                "INCRBYFLOAT k +inf",
                "INCRBYFLOAT k 1.18e4932",
                "INCRBYFLOAT k 1.18e4932",
                "GET k",
            ],
        ),
        lines("incrbyfloat stored inf", &["SET k inf", "INCRBYFLOAT k 1", "SET k -inf", "INCRBYFLOAT k inf", "GET k"]),
        lines(
            "incrbyfloat non-float value",
            &[
                "SET k abc",
                "INCRBYFLOAT k 1",
                "SET k ' 1'",
                "INCRBYFLOAT k 1",
                "SET k 1.5e2",
                "INCRBYFLOAT k 1",
                "SET k nan",
                "INCRBYFLOAT k 1",
                "APPEND x 2.5",
                "INCRBYFLOAT x 0.5",
            ],
        ),
        lines(
            "incrbyfloat result is a string",
            &["INCRBYFLOAT k 5", "INCR k", "INCRBYFLOAT f 1.5", "INCR f", "APPEND f 0", "GET f"],
        ),
        lines("incrbyfloat keeps ttl", &["SETEX k 100 1", "INCRBYFLOAT k 1", "GET k"]),
        lines("incrbyfloat arity", &["INCRBYFLOAT k", "INCRBYFLOAT k 1 2"]),
        lines(
            "incrbyfloat strtold forms",
            &[
                "INCRBYFLOAT a 1e+",
                "INCRBYFLOAT a 0x1p",
                "INCRBYFLOAT a 0x.8",
                "INCRBYFLOAT a 0x1.",
                "INCRBYFLOAT a infinit",
                "INCRBYFLOAT a INF",
                "INCRBYFLOAT a nan(123)",
                "INCRBYFLOAT a 1_000",
                "INCRBYFLOAT a 0x1P-3",
                "INCRBYFLOAT a 1e-0",
                "INCRBYFLOAT a 0.0e0",
                "INCRBYFLOAT a -0",
                "INCRBYFLOAT a +.5e-3",
                "INCRBYFLOAT a -0x10",
                "INCRBYFLOAT a 0x123456789abcdef123456789p-90",
                "INCRBYFLOAT a 0x1p16383",
                "INCRBYFLOAT a 0x1p16384",
                "INCRBYFLOAT a 0x1p-16445",
                "INCRBYFLOAT a 0x1p-16446",
                "INCRBYFLOAT a 1e4932",
                "INCRBYFLOAT a 1.2e4932",
                "INCRBYFLOAT a 1e-4950",
                "INCRBYFLOAT a 1e-4952",
                "INCRBYFLOAT a 4e-4952",
                "GET a",
            ],
        ),
        lines(
            "incrbyfloat printing ties",
            &[
                "INCRBYFLOAT a 0.000003814697265625",
                "INCRBYFLOAT b 0.000011444091796875",
                "INCRBYFLOAT c -0.000011444091796875",
                "INCRBYFLOAT d 0.5",
                "INCRBYFLOAT d 0.25",
                "INCRBYFLOAT d 0.125",
            ],
        ),
        lines(
            "incrbyfloat precision limits",
            &[
                "INCRBYFLOAT a 1.00000000000000000000001",
                "INCRBYFLOAT b 9007199254740993",
                "INCRBYFLOAT c 18446744073709551615",
                "INCRBYFLOAT d 18446744073709551617",
                "INCRBYFLOAT e 36893488147419103231",
                "INCRBYFLOAT f 0.99999999999999999999",
                "INCRBYFLOAT g 123456789.123456789123456789",
            ],
        ),
        lines(
            "incrbyfloat cancellation",
            &[
                "INCRBYFLOAT a 1e20",
                "INCRBYFLOAT a 0.5",
                "INCRBYFLOAT a -1e20",
                "INCRBYFLOAT b 1e-30",
                "INCRBYFLOAT b 1",
                "INCRBYFLOAT b -1",
            ],
        ),
    ]
}

/// Redis parses floats of at most 5119 bytes.
fn long_float_cases() -> Vec<Case> {
    let pad = |total: usize| {
        let mut t = "0".repeat(total - 3);
        t.push_str("1.5");
        t
    };
    let (ok, too_long) = (pad(5119), pad(5120));
    let mut frac = "0.".to_string();
    frac.push_str(&"3".repeat(5117));
    vec![requests(
        "incrbyfloat long texts",
        &[
            &[b"INCRBYFLOAT", b"k", ok.as_bytes()],
            &[b"INCRBYFLOAT", b"k", too_long.as_bytes()],
            &[b"INCRBYFLOAT", b"f", frac.as_bytes()],
            &[b"SET", b"s", too_long.as_bytes()],
            &[b"INCRBYFLOAT", b"s", b"1"],
            &[b"SET", b"s", ok.as_bytes()],
            &[b"INCRBYFLOAT", b"s", b"1"],
        ],
    )]
}

fn range_cases() -> Vec<Case> {
    vec![
        lines(
            "getrange",
            &[
                "SET k \"This is a string\"",
                "GETRANGE k 0 3",
                "GETRANGE k -3 -1",
                "GETRANGE k 0 -1",
                "GETRANGE k 10 100",
                "GETRANGE k 5 3",
                "GETRANGE k -1 -5",
                "GETRANGE k -100 2",
                "GETRANGE k 100 200",
            ],
        ),
        lines(
            "getrange edges",
            &[
                "SET k abc",
                "GETRANGE k 0 0",
                "GETRANGE k -1 -1",
                "GETRANGE k 3 3",
                "GETRANGE k -4 -4",
                "GETRANGE k 2 -1",
                "GETRANGE k -9223372036854775808 9223372036854775807",
                "GETRANGE k 9223372036854775807 -9223372036854775808",
            ],
        ),
        lines(
            "getrange missing and empty",
            &["GETRANGE missing 0 -1", "SET e \"\"", "GETRANGE e 0 -1", "GETRANGE e 0 0", "GETRANGE e -1 0"],
        ),
        lines(
            "getrange integer value",
            &["SET n 12345", "GETRANGE n 1 3", "GETRANGE n -2 -1", "SET m -99", "GETRANGE m 0 0"],
        ),
        lines(
            "getrange errors",
            &[
                "SET k abc",
                "GETRANGE k a 1",
                "GETRANGE k 0 b",
                "GETRANGE k 1.5 2",
                "GETRANGE k 0 9223372036854775808",
                "GETRANGE missing x 1",
                "GETRANGE k 0",
                "GETRANGE k 0 1 2",
            ],
        ),
        lines(
            "substr",
            &["SET k hello", "SUBSTR k 1 3", "SUBSTR k -2 -1", "SUBSTR missing 0 1", "SUBSTR k x 1", "SUBSTR k 0"],
        ),
        requests(
            "getrange binary",
            &[
                &[b"SET", b"k", b"a\x00b\r\nc\xff"],
                &[b"GETRANGE", b"k", b"1", b"5"],
                &[b"GETRANGE", b"k", b"-1", b"-1"],
            ],
        ),
        lines(
            "setrange",
            &[
                "SET k \"Hello World\"",
                "SETRANGE k 6 Redis",
                "GET k",
                "SETRANGE k 0 J",
                "GET k",
                "SETRANGE k 11 !",
                "GET k",
                "STRLEN k",
            ],
        ),
        lines(
            "setrange padding",
            &["SETRANGE k 5 x", "GET k", "STRLEN k", "SET n 1", "SETRANGE n 3 2", "GET n", "SETRANGE m 0 abc", "GET m"],
        ),
        lines(
            "setrange empty value",
            &[
                "SETRANGE k 0 \"\"",
                "EXISTS k",
                "SETRANGE k 10 \"\"",
                "EXISTS k",
                "SET s abc",
                "SETRANGE s 100 \"\"",
                "GET s",
                "SETRANGE s 9223372036854775807 \"\"",
                "SETRANGE s 536870912 \"\"",
            ],
        ),
        lines(
            "setrange integer value",
            &["SET n 12345", "SETRANGE n 1 9", "GET n", "INCR n", "SETRANGE n 0 -", "GET n"],
        ),
        lines(
            "setrange errors",
            &[
                "SETRANGE k -1 x",
                "SETRANGE k x x",
                "SETRANGE k 1.5 x",
                "SETRANGE k 9223372036854775808 x",
                "SETRANGE k -9223372036854775808 x",
                "SETRANGE k 536870912 x",
                "SETRANGE k 536870911 xx",
                "SETRANGE k 9223372036854775807 x",
                "EXISTS k",
                "SET s abc",
                "SETRANGE s 536870912 x",
                "SETRANGE s -1 \"\"",
                "GET s",
            ],
        ),
        // The limit is proto-max-bulk-len as configured, for the string a
        // command would make and for bit offsets.
        lines(
            "results past a lowered proto-max-bulk-len",
            &[
                "CONFIG SET proto-max-bulk-len 1mb",
                "SETRANGE k 1048570 1234567890",
                "SETRANGE k 1048560 1234567890",
                "APPEND k 1234567890",
                "STRLEN k",
                "APPEND new 12345",
                "SETBIT b 8388608 1",
                "SETBIT b 8388607 1",
                "GETBIT b 8388608",
                "BITFIELD bf SET u8 8388608 1",
                "BITFIELD bf SET u8 8388600 1",
                "BITFIELD bf GET u8 #1048576",
                "CONFIG SET proto-max-bulk-len 512mb",
                "APPEND k 1234567890",
            ],
        ),
        lines("setrange arity", &["SETRANGE k 0", "SETRANGE k 0 a b"]),
        lines("setrange keeps ttl", &["SETEX k 100 abc", "SETRANGE k 1 X", "GET k"]),
        requests(
            "setrange binary",
            &[&[b"SETRANGE", b"k", b"2", b"\x00\xff\r\n"], &[b"GET", b"k"], &[b"STRLEN", b"k"]],
        ),
    ]
}

fn lcs_cases() -> Vec<Case> {
    // A table of (11585 + 1)² four-byte cells exceeds 512 MB: refused before any work.
    let big = vec![b'a'; 11585];
    vec![
        requests(
            "lcs table too large",
            &[&[b"MSET", b"a", &big, b"b", &big], &[b"LCS", b"a", b"b"], &[b"LCS", b"a", b"b", b"IDX"]],
        ),
        lines(
            "lcs",
            &[
                "MSET key1 ohmytext key2 mynewtext",
                "LCS key1 key2",
                "LCS key1 key2 LEN",
                "LCS key1 key2 IDX",
                "LCS key1 key2 IDX MINMATCHLEN 4",
                "LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN",
                "LCS key1 key2 IDX WITHMATCHLEN",
            ],
        ),
        lines(
            "lcs missing keys",
            &["LCS a b", "LCS a b LEN", "LCS a b IDX", "SET a hello", "LCS a b", "LCS b a IDX WITHMATCHLEN"],
        ),
        lines(
            "lcs same and disjoint",
            &[
                "SET a abcdef",
                "SET b xyz",
                "LCS a a",
                "LCS a a IDX WITHMATCHLEN",
                "LCS a b",
                "LCS a b IDX",
                "LCS a b LEN",
            ],
        ),
        lines(
            "lcs ranges",
            &[
                "SET a ABCBDAB",
                "SET b BDCABA",
                "LCS a b",
                "LCS a b IDX WITHMATCHLEN",
                "SET c 1234567890",
                "SET d 0912345678",
                "LCS c d",
                "LCS c d IDX WITHMATCHLEN",
                "LCS d c IDX",
            ],
        ),
        lines(
            "lcs minmatchlen",
            &[
                "SET a aaXbbbYcccc",
                "SET b aabbbcccc",
                "LCS a b IDX MINMATCHLEN 3",
                "LCS a b IDX MINMATCHLEN -5",
                "LCS a b IDX MINMATCHLEN 0 WITHMATCHLEN",
                "LCS a b MINMATCHLEN 2",
                "LCS a b LEN MINMATCHLEN 100",
            ],
        ),
        lines("lcs integers", &["SET a 12345", "SET b 2468", "LCS a b", "LCS a b IDX"]),
        lines(
            "lcs option errors",
            &[
                "SET a x",
                "LCS a b LEN IDX",
                "LCS a b IDX LEN",
                "LCS a b BOGUS",
                "LCS a b MINMATCHLEN",
                "LCS a b MINMATCHLEN x",
                "LCS a b MINMATCHLEN 1.5 LEN",
                "LCS a b len idx",
                "LCS a",
            ],
        ),
        lines("lcs lowercase", &["MSET a foobar b fobar", "lcs a b idx withmatchlen minmatchlen 2", "lcs a b len"]),
        open(
            "lcs resp3",
            "FLUSHALL\r\nHELLO 3\r\nMSET a ohmytext b mynewtext\r\nLCS a b IDX WITHMATCHLEN\r\nLCS a b LEN\r\n",
        ),
        requests(
            "lcs binary",
            &[
                &[b"SET", b"a", b"\x00\x01\x02\xff"],
                &[b"SET", b"b", b"\x01\xff\x00"],
                &[b"LCS", b"a", b"b"],
                &[b"LCS", b"a", b"b", b"IDX"],
            ],
        ),
    ]
}

fn bit_cases() -> Vec<Case> {
    vec![
        lines(
            "setbit getbit",
            &[
                "SETBIT k 7 1",
                "GET k",
                "GETBIT k 7",
                "GETBIT k 6",
                "SETBIT k 7 0",
                "SETBIT k 7 0",
                "GET k",
                "SETBIT k 100 1",
                "STRLEN k",
                "GETBIT k 100",
                "GETBIT k 1000",
            ],
        ),
        lines(
            "setbit on existing string",
            &["SET k a", "SETBIT k 6 1", "GET k", "SETBIT k 2 1", "GET k", "SET n 1", "SETBIT n 7 0", "GET n"],
        ),
        lines(
            "setbit errors",
            &[
                "SETBIT k -1 1",
                "SETBIT k x 1",
                "SETBIT k 4294967296 1",
                "SETBIT k 0 2",
                "SETBIT k 0 -1",
                "SETBIT k 0 x",
                "SETBIT k x 2",
                "SETBIT k #1 1",
                "SETBIT k 1.0 1",
                "EXISTS k",
            ],
        ),
        lines(
            "getbit errors and missing",
            &[
                "GETBIT missing 0",
                "GETBIT missing 4294967295",
                "GETBIT k -1",
                "GETBIT k 4294967296",
                "GETBIT k x",
                "GETBIT k #1",
            ],
        ),
        lines("getbit integer value", &["SET n 1", "GETBIT n 2", "GETBIT n 3", "GETBIT n 7", "GETBIT n 8"]),
        lines("setbit keeps ttl", &["SETEX k 100 a", "SETBIT k 7 0", "GET k"]),
        lines("setbit arity", &["SETBIT k 0", "GETBIT k", "SETBIT k 0 1 1"]),
        lines(
            "bitcount",
            &[
                "SET k foobar",
                "BITCOUNT k",
                "BITCOUNT k 0 0",
                "BITCOUNT k 1 1",
                "BITCOUNT k 1 -2",
                "BITCOUNT k -1 -1",
                "BITCOUNT k -2 -3",
                "BITCOUNT k 4 2",
                "BITCOUNT k -100 100",
                "BITCOUNT k 10 20",
            ],
        ),
        lines(
            "bitcount bit unit",
            &[
                "SET k foobar",
                "BITCOUNT k 5 30 BIT",
                "BITCOUNT k 0 0 bit",
                "BITCOUNT k -1 -1 BIT",
                "BITCOUNT k -9 -1 BIT",
                "BITCOUNT k 1 1 BYTE",
                "BITCOUNT k 7 8 BIT",
                "BITCOUNT k 0 47 BIT",
                "BITCOUNT k 0 1000 BIT",
                "BITCOUNT k -3 -5 BIT",
            ],
        ),
        lines(
            "bitcount missing and empty",
            &[
                "BITCOUNT missing",
                "BITCOUNT missing 0 1",
                "BITCOUNT missing x y",
                "BITCOUNT missing 0",
                "BITCOUNT missing 0 1 BOGUS",
                "SET e \"\"",
                "BITCOUNT e",
                "BITCOUNT e 0 -1",
                "BITCOUNT e 0 0 BIT",
            ],
        ),
        lines(
            "bitcount errors",
            &[
                "SET k foobar",
                "BITCOUNT k 0",
                "BITCOUNT k a 1",
                "BITCOUNT k 0 b",
                "BITCOUNT k 0 1 BOGUS",
                "BITCOUNT k 0 1 BIT x",
                "BITCOUNT k x 1 BOGUS",
                "BITCOUNT k x",
                "BITCOUNT k x 1 BIT x",
                "BITCOUNT k 0 1 BIT x",
                "BITCOUNT k 0 x BOGUS",
                "BITCOUNT k 0 1 bogus",
                "BITCOUNT",
                "BITCOUNT k -1 -6 BOGUS",
                "BITCOUNT k -3 -4 1e3",
                "BITCOUNT k -4 -3 BOGUS",
                "BITCOUNT missing -1 -6 BOGUS",
            ],
        ),
        lines(
            "bitfield set far below a narrow field's minimum",
            &[
                "BITFIELD b OVERFLOW SAT SET i63 51 -9223372036854775808 GET i63 51",
                "BITFIELD c OVERFLOW SAT SET i8 0 -200 GET i8 0 SET i62 0 -9223372036854775808 GET i62 0",
                "BITFIELD c OVERFLOW SAT SET i32 0 -9223372036854775808 GET i32 0 SET i32 0 -4611686018427387905 GET i32 0",
                "BITFIELD d OVERFLOW FAIL SET i63 0 -9223372036854775808 OVERFLOW WRAP SET i63 0 -9223372036854775808 GET i63 0",
                "BITFIELD e OVERFLOW SAT SET i64 0 -9223372036854775808 INCRBY i64 0 -1 INCRBY i63 1 -9223372036854775808",
                "GET b",
                "GET c",
            ],
        ),
        requests(
            "incrbyfloat errors keep a copy's own integer",
            &[
                &[b"SET", b"x", b"3"],
                &[b"COPY", b"x", b"n"],
                &[b"INCRBYFLOAT", b"n", b"nan"],
                &[b"INCRBYFLOAT", b"n", b"abc"],
                &[b"SETRANGE", b"n", b"0", b""],
                &[b"OBJECT", b"REFCOUNT", b"n"],
                &[b"INCRBY", b"n", b"0"],
                &[b"OBJECT", b"REFCOUNT", b"n"],
                &[b"COPY", b"x", b"m"],
                &[b"INCRBYFLOAT", b"m", b"inf"],
                &[b"OBJECT", b"REFCOUNT", b"m"],
                &[b"INCRBYFLOAT", b"m", b"1.5"],
                &[b"OBJECT", b"REFCOUNT", b"m"],
                &[b"OBJECT", b"ENCODING", b"m"],
            ],
        ),
        requests(
            "line breaks at the end of an error are trimmed",
            &[
                &[b"SET", b"k", b"v"],
                &[b"EXPIRE", b"k", b"100", b"x\r"],
                &[b"EXPIRE", b"k", b"100", b"\r\nx\ny\r\n"],
                &[b"BOGUS\r\n", b"a\r"],
            ],
        ),
        lines("bitcount integer value", &["SET n 12345", "BITCOUNT n", "BITCOUNT n 1 2", "BITCOUNT n 3 10 BIT"]),
        lines(
            "bitcount extremes",
            &[
                "SET k abc",
                "BITCOUNT k -9223372036854775808 9223372036854775807",
                "BITCOUNT k 9223372036854775807 9223372036854775807",
                "BITCOUNT k -9223372036854775808 -9223372036854775808",
                "BITCOUNT k -9223372036854775808 9223372036854775807 BIT",
            ],
        ),
    ]
}

fn bitpos_cases() -> Vec<Case> {
    vec![
        requests(
            "bitpos basics",
            &[
                &[b"SET", b"k", b"\xff\xf0\x00"],
                &[b"BITPOS", b"k", b"0"],
                &[b"BITPOS", b"k", b"1"],
                &[b"BITPOS", b"k", b"0", b"2"],
                &[b"BITPOS", b"k", b"1", b"1"],
                &[b"BITPOS", b"k", b"1", b"2"],
                &[b"BITPOS", b"k", b"0", b"2", b"-1"],
                &[b"BITPOS", b"k", b"1", b"2", b"-1"],
            ],
        ),
        requests(
            "bitpos all ones",
            &[
                &[b"SET", b"k", b"\xff\xff\xff"],
                &[b"BITPOS", b"k", b"0"],
                &[b"BITPOS", b"k", b"0", b"0"],
                &[b"BITPOS", b"k", b"0", b"0", b"-1"],
                &[b"BITPOS", b"k", b"0", b"1", b"1"],
                &[b"BITPOS", b"k", b"1", b"-1"],
                &[b"BITPOS", b"k", b"0", b"-1"],
            ],
        ),
        requests(
            "bitpos all zeros",
            &[
                &[b"SET", b"k", b"\x00\x00\x00"],
                &[b"BITPOS", b"k", b"1"],
                &[b"BITPOS", b"k", b"0"],
                &[b"BITPOS", b"k", b"1", b"1"],
                &[b"BITPOS", b"k", b"0", b"1", b"1"],
                &[b"BITPOS", b"k", b"0", b"5"],
            ],
        ),
        requests(
            "bitpos bit unit",
            &[
                &[b"SET", b"k", b"\x00\xff\xf0"],
                &[b"BITPOS", b"k", b"1", b"7", b"15", b"BIT"],
                &[b"BITPOS", b"k", b"1", b"9", b"-1", b"bit"],
                &[b"BITPOS", b"k", b"0", b"8", b"19", b"BIT"],
                &[b"BITPOS", b"k", b"0", b"8", b"20", b"BIT"],
                &[b"BITPOS", b"k", b"0", b"8", b"23", b"BIT"],
                &[b"BITPOS", b"k", b"1", b"2", b"5", b"BIT"],
                &[b"BITPOS", b"k", b"0", b"-3", b"-1", b"BIT"],
                &[b"BITPOS", b"k", b"1", b"0", b"0", b"BYTE"],
                &[b"BITPOS", b"k", b"1", b"20", b"10", b"BIT"],
                &[b"BITPOS", b"k", b"0", b"9", b"14", b"BIT"],
                &[b"BITPOS", b"k", b"1", b"21", b"23", b"BIT"],
            ],
        ),
        lines(
            "bitpos missing key",
            &[
                "BITPOS missing 0",
                "BITPOS missing 1",
                "BITPOS missing 1 5 10",
                "BITPOS missing 0 x",
                "BITPOS missing 1 0 1 BOGUS",
            ],
        ),
        lines(
            "bitpos empty string",
            &["SET e \"\"", "BITPOS e 0", "BITPOS e 1", "BITPOS e 0 0", "BITPOS e 0 0 -1", "BITPOS e 1 0 -1 BIT"],
        ),
        lines(
            "bitpos errors",
            &[
                "SET k abc",
                "BITPOS k 2",
                "BITPOS k -1",
                "BITPOS k x",
                "BITPOS k 1 x",
                "BITPOS k 1 0 x",
                "BITPOS k 1 0 1 BOGUS",
                "BITPOS k 1 0 x BOGUS",
                "BITPOS k 1 x 1 BOGUS",
                "BITPOS k 1 0 1 BIT x",
                "BITPOS k 1 x 1 BIT x",
                "BITPOS k 1 0 x BIT x",
                "BITPOS k 1 0 x bogus",
                "BITPOS k",
                "BITPOS missing 2",
            ],
        ),
        lines("bitpos integer value", &["SET n 7", "BITPOS n 1", "BITPOS n 0", "BITPOS n 1 0 -1 BIT"]),
        lines(
            "bitpos extremes",
            &[
                "SET k abc",
                "BITPOS k 1 -9223372036854775808 9223372036854775807",
                "BITPOS k 0 9223372036854775807",
                "BITPOS k 1 -9223372036854775808",
                "BITPOS k 0 -9223372036854775808 -9223372036854775808 BIT",
            ],
        ),
    ]
}

fn bitop_cases() -> Vec<Case> {
    vec![
        lines(
            "bitop and or xor",
            &[
                "SET a foof",
                "SET b abcdef",
                "BITOP AND d a b",
                "GET d",
                "BITOP OR d a b",
                "GET d",
                "BITOP XOR d a b",
                "GET d",
                "BITOP xor d a b a",
                "GET d",
            ],
        ),
        lines("bitop not", &["SET a abc", "BITOP NOT d a", "GET d", "BITOP not d d", "GET d"]),
        lines(
            "bitop missing sources",
            &[
                "SET a abc",
                "BITOP AND d a missing",
                "GET d",
                "BITOP OR d missing a",
                "GET d",
                "BITOP OR d missing1 missing2",
                "EXISTS d",
                "SET d x",
                "BITOP AND d missing",
                "EXISTS d",
                "BITOP NOT d missing",
            ],
        ),
        lines("bitop empty strings", &["SET e \"\"", "SET d x", "BITOP OR d e", "EXISTS d"]),
        lines("bitop integers", &["SET a 12", "SET b 3", "BITOP OR d a b", "GET d", "BITOP AND d a b", "GET d"]),
        lines("bitop replaces ttl and value", &["SETEX d 100 old", "SET a xyz", "BITOP OR d a", "GET d"]),
        lines(
            "bitop errors",
            &[
                "BITOP BOGUS d a",
                "BITOP NOT d a b",
                "BITOP NOT d",
                "BITOP AND d",
                "BITOP",
                "BITOP andd d a",
                "BITOP NOT",
            ],
        ),
    ]
}

fn bitfield_cases() -> Vec<Case> {
    vec![
        lines("bitfield set get", &["BITFIELD k SET i8 0 100 GET i8 0", "BITFIELD k SET u4 0 15 GET u4 0 GET u8 0", "GET k", "BITFIELD k GET i4 0 GET u16 0 GET i64 0 GET u63 1"]),
        lines("bitfield incrby", &["BITFIELD k INCRBY i5 100 1 GET u4 0", "BITFIELD k INCRBY u2 100 1", "BITFIELD k INCRBY u2 100 1", "BITFIELD k INCRBY u2 100 1", "BITFIELD k INCRBY u2 100 1", "BITFIELD k INCRBY i8 0 -300"]),
        lines("bitfield overflow wrap", &["BITFIELD k SET u8 0 255 INCRBY u8 0 10", "BITFIELD k SET i8 0 127 INCRBY i8 0 1", "BITFIELD k SET i8 0 -128 INCRBY i8 0 -1", "BITFIELD k SET u8 0 -1", "BITFIELD k SET u8 0 256 GET u8 0", "BITFIELD k SET i8 0 200 GET i8 0", "BITFIELD k SET i8 0 -200 GET i8 0"]),
        lines("bitfield overflow sat", &["BITFIELD k OVERFLOW SAT SET u8 0 300 GET u8 0", "BITFIELD k OVERFLOW SAT SET u8 0 -1 GET u8 0", "BITFIELD k OVERFLOW SAT INCRBY u8 0 -300", "BITFIELD k OVERFLOW SAT SET i8 0 1000 INCRBY i8 0 1", "BITFIELD k OVERFLOW SAT INCRBY i8 0 -1000", "BITFIELD k overflow sat incrby u2 10 5"]),
        lines("bitfield overflow fail", &["BITFIELD k OVERFLOW FAIL SET u8 0 300 GET u8 0", "BITFIELD k OVERFLOW FAIL SET u8 0 200 INCRBY u8 0 100 GET u8 0", "BITFIELD k OVERFLOW FAIL INCRBY i8 8 -200 INCRBY i8 8 -100", "GET k"]),
        lines("bitfield overflow per op", &["BITFIELD k INCRBY u2 0 5 OVERFLOW SAT INCRBY u2 2 5 OVERFLOW FAIL INCRBY u2 4 5 OVERFLOW WRAP INCRBY u2 6 5", "GET k"]),
        lines("bitfield 64 bit", &["BITFIELD k SET i64 0 9223372036854775807 INCRBY i64 0 1", "BITFIELD k OVERFLOW SAT INCRBY i64 0 -1 INCRBY i64 0 -9223372036854775808", "BITFIELD k OVERFLOW FAIL INCRBY i64 0 -1 GET i64 0", "BITFIELD k SET u63 0 9223372036854775807 GET u63 0 INCRBY u63 0 1", "BITFIELD k OVERFLOW SAT SET u63 64 -1 GET u63 64", "BITFIELD k SET i64 3 -9223372036854775808 GET i64 3 GET u63 3"]),
        lines("bitfield hash offsets", &["BITFIELD k SET u8 #0 1 SET u8 #1 2 SET u8 #2 3", "GET k", "BITFIELD k GET u8 #1 GET u4 #3 GET i16 #1", "BITFIELD k SET u8 # 1", "BITFIELD k GET u8 #-1", "BITFIELD k GET u8 ##1"]),
        lines("bitfield missing key", &["BITFIELD missing GET u8 0 GET i64 1000", "EXISTS missing", "BITFIELD missing", "BITFIELD missing OVERFLOW SAT", "EXISTS missing"]),
        lines("bitfield on strings", &["SET k hello", "BITFIELD k GET u8 0 GET i8 8 GET u16 4 GET i32 36", "BITFIELD k SET u8 0 72 GET u8 0", "GET k", "SET n 12", "BITFIELD n GET u8 0 INCRBY u8 8 1", "GET n"]),
        lines("bitfield errors", &["BITFIELD k GET u64 0", "BITFIELD k GET i65 0", "BITFIELD k GET i0 0", "BITFIELD k GET x8 0", "BITFIELD k GET u 0", "BITFIELD k GET u08 0", "BITFIELD k GET u8 -1", "BITFIELD k GET u8 x", "BITFIELD k GET u8 4294967296", "BITFIELD k SET u8 0 x", "BITFIELD k INCRBY u8 0 1.5", "BITFIELD k OVERFLOW BOGUS GET u8 0", "BITFIELD k OVERFLOW", "BITFIELD k BOGUS", "BITFIELD k GET u8", "BITFIELD k SET u8 0", "BITFIELD k INCRBY u8", "BITFIELD k GET", "EXISTS k"]),
        lines("bitfield errors after valid ops", &["BITFIELD k SET u8 0 1 GET u99 0", "BITFIELD k SET u8 0 1 BOGUS", "EXISTS k"]),
        lines("bitfield hash offset overflow", &["BITFIELD k GET i64 #9223372036854775807", "BITFIELD k GET i64 #67108864", "BITFIELD k GET i64 #67108863"]),
        lines("bitfield lowercase", &["bitfield k set i8 0 -5 get i8 0 incrby I8 0 3 get U8 0"]),
        lines("bitfield keeps ttl", &["SETEX k 100 a", "BITFIELD k SET u8 0 98", "GET k"]),
        lines("bitfield_ro", &["SET k hello", "BITFIELD_RO k GET u8 0 GET i16 #1", "BITFIELD_RO missing GET u8 0", "BITFIELD_RO k", "BITFIELD_RO k OVERFLOW SAT GET u8 0"]),
        lines("bitfield_ro errors", &["SET k hello", "BITFIELD_RO k SET u8 0 1", "BITFIELD_RO k INCRBY u8 0 1", "BITFIELD_RO k GET u8 0 SET u8 0 1", "BITFIELD_RO k SET u99 0 1", "BITFIELD_RO k BOGUS", "BITFIELD_RO missing SET u8 0 1", "BITFIELD_RO", "GET k"]),
    ]
}

/// A small deterministic pseudo-random generator, so generated cases are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, len: usize, alphabet: &[u8]) -> Vec<u8> {
        (0..len).map(|_| alphabet[self.below(alphabet.len() as u64) as usize]).collect()
    }
}

/// Many increments of assorted sizes and forms on a few keys: every
/// intermediate sum is printed, so each exercises parsing, rounding and
/// printing of the extended precision arithmetic.
fn generated_float_cases() -> Vec<Case> {
    let mut rng = Lcg(7);
    let mut out = Vec::new();
    for name in ["incrbyfloat generated 1", "incrbyfloat generated 2", "incrbyfloat generated 3"] {
        let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
        for _ in 0..150 {
            let key = format!("k{}", rng.below(3));
            let mantissa = rng.next() % 100_000_000_000;
            let digits = mantissa.to_string();
            let point = rng.below(digits.len() as u64 + 1) as usize;
            let sign = if rng.below(3) == 0 { "-" } else { "" };
            let text = match rng.below(6) {
                0 => format!("{sign}{digits}e{}", rng.below(60) as i64 - 30),
                1 => format!("{sign}0.{}{digits}", "0".repeat(rng.below(20) as usize)),
                2 => format!("{sign}{}", rng.below(1000)),
                _ => format!("{sign}{}.{}", &digits[..point], &digits[point..]),
            };
            cmds.push(vec![b"INCRBYFLOAT".to_vec(), key.into_bytes(), text.into_bytes()]);
        }
        let refs: Vec<Vec<&[u8]>> = cmds.iter().map(|c| c.iter().map(Vec::as_slice).collect()).collect();
        let slices: Vec<&[&[u8]]> = refs.iter().map(Vec::as_slice).collect();
        out.push(requests(name, &slices));
    }
    out
}

/// Every small range, in bytes and in bits, over a few bit patterns.
fn generated_range_cases() -> Vec<Case> {
    let mut rng = Lcg(11);
    let mut out = Vec::new();
    for name in ["bit ranges generated 1", "bit ranges generated 2", "bit ranges generated 3", "bit ranges generated 4"]
    {
        let len = 1 + rng.below(4) as usize;
        let value = rng.bytes(len, &[0x00, 0xff, 0x0f, 0xf0, 0x80, 0x01, 0x5a, 0x3c]);
        let mut cmds: Vec<Vec<Vec<u8>>> = vec![vec![b"SET".to_vec(), b"k".to_vec(), value]];
        let word = |s: &str| s.as_bytes().to_vec();
        for start in -6i64..6 {
            for end in -6i64..6 {
                let (s, e) = (start.to_string(), end.to_string());
                cmds.push(vec![word("BITCOUNT"), word("k"), word(&s), word(&e)]);
                cmds.push(vec![word("GETRANGE"), word("k"), word(&s), word(&e)]);
                for bit in ["0", "1"] {
                    cmds.push(vec![word("BITPOS"), word("k"), word(bit), word(&s), word(&e)]);
                }
            }
            let s = start.to_string();
            for bit in ["0", "1"] {
                cmds.push(vec![word("BITPOS"), word("k"), word(bit), word(&s)]);
            }
        }
        for start in (-40i64..40).step_by(3) {
            for end in (-40i64..40).step_by(5) {
                let (s, e) = (start.to_string(), end.to_string());
                cmds.push(vec![word("BITCOUNT"), word("k"), word(&s), word(&e), word("BIT")]);
                for bit in ["0", "1"] {
                    cmds.push(vec![word("BITPOS"), word("k"), word(bit), word(&s), word(&e), word("BIT")]);
                }
            }
        }
        let refs: Vec<Vec<&[u8]>> = cmds.iter().map(|c| c.iter().map(Vec::as_slice).collect()).collect();
        let slices: Vec<&[&[u8]]> = refs.iter().map(Vec::as_slice).collect();
        out.push(requests(name, &slices));
    }
    out
}

/// LCS of random strings over small alphabets, with every reply form.
fn generated_lcs_cases() -> Vec<Case> {
    let mut rng = Lcg(5);
    let mut out = Vec::new();
    for name in ["lcs generated 1", "lcs generated 2", "lcs generated 3", "lcs generated 4", "lcs generated 5"] {
        let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
        for _ in 0..8 {
            let (la, lb) = (rng.below(30) as usize, rng.below(30) as usize);
            let a = rng.bytes(la, b"abc");
            let b = rng.bytes(lb, b"abcd");
            cmds.push(vec![b"MSET".to_vec(), b"a".to_vec(), a, b"b".to_vec(), b]);
            cmds.push(vec![b"LCS".to_vec(), b"a".to_vec(), b"b".to_vec()]);
            cmds.push(vec![b"LCS".to_vec(), b"a".to_vec(), b"b".to_vec(), b"LEN".to_vec()]);
            cmds.push(vec![b"LCS".to_vec(), b"a".to_vec(), b"b".to_vec(), b"IDX".to_vec(), b"WITHMATCHLEN".to_vec()]);
            let min = rng.below(4).to_string().into_bytes();
            cmds.push(vec![
                b"LCS".to_vec(),
                b"b".to_vec(),
                b"a".to_vec(),
                b"IDX".to_vec(),
                b"MINMATCHLEN".to_vec(),
                min,
            ]);
        }
        let refs: Vec<Vec<&[u8]>> = cmds.iter().map(|c| c.iter().map(Vec::as_slice).collect()).collect();
        let slices: Vec<&[&[u8]]> = refs.iter().map(Vec::as_slice).collect();
        out.push(requests(name, &slices));
    }
    out
}

/// Random BITFIELD operations of every width and overflow mode on one key.
fn generated_bitfield_cases() -> Vec<Case> {
    let mut rng = Lcg(3);
    let mut out = Vec::new();
    for name in ["bitfield generated 1", "bitfield generated 2", "bitfield generated 3"] {
        let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
        for _ in 0..60 {
            let mut cmd = vec![b"BITFIELD".to_vec(), b"k".to_vec()];
            for _ in 0..1 + rng.below(4) {
                let signed = rng.below(2) == 0;
                let bits = 1 + rng.below(if signed { 64 } else { 63 });
                let ty = format!("{}{bits}", if signed { 'i' } else { 'u' });
                let offset = if rng.below(4) == 0 { format!("#{}", rng.below(5)) } else { rng.below(100).to_string() };
                let value = match rng.below(4) {
                    0 => (rng.next() as i64 - (1 << 30)).to_string(),
                    1 => ((rng.next() << 31 | rng.next()) as i64).wrapping_mul(3).to_string(),
                    2 => (rng.below(20) as i64 - 10).to_string(),
                    _ => ["9223372036854775807", "-9223372036854775808", "255", "-256"][rng.below(4) as usize]
                        .to_string(),
                };
                match rng.below(5) {
                    0 => cmd.extend([
                        b"OVERFLOW".to_vec(),
                        [&b"WRAP"[..], b"SAT", b"FAIL"][rng.below(3) as usize].to_vec(),
                    ]),
                    1 => cmd.extend([b"GET".to_vec(), ty.into_bytes(), offset.into_bytes()]),
                    2 => cmd.extend([b"SET".to_vec(), ty.into_bytes(), offset.into_bytes(), value.into_bytes()]),
                    _ => cmd.extend([b"INCRBY".to_vec(), ty.into_bytes(), offset.into_bytes(), value.into_bytes()]),
                }
            }
            cmds.push(cmd);
        }
        cmds.push(vec![b"GET".to_vec(), b"k".to_vec()]);
        let refs: Vec<Vec<&[u8]>> = cmds.iter().map(|c| c.iter().map(Vec::as_slice).collect()).collect();
        let slices: Vec<&[&[u8]]> = refs.iter().map(Vec::as_slice).collect();
        out.push(requests(name, &slices));
    }
    out
}

fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(expiry_cases());
    all.extend(resp3_cases());
    all.extend(long_float_cases());
    all.extend(msetnx_cases());
    all.extend(incrbyfloat_cases());
    all.extend(range_cases());
    all.extend(lcs_cases());
    all.extend(bit_cases());
    all.extend(bitpos_cases());
    all.extend(bitop_cases());
    all.extend(bitfield_cases());
    all.extend(generated_float_cases());
    all.extend(generated_range_cases());
    all.extend(generated_lcs_cases());
    all.extend(generated_bitfield_cases());
    all
}

#[test]
fn string_and_bitmap_replies_match_redis() {
    compare_each("string_and_bitmap_replies_match_redis", cases());
}

#[test]
fn string_and_bitmap_pipelined_match_redis() {
    compare_pipelined("string_and_bitmap_pipelined_match_redis", cases());
}
