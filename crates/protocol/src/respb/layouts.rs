//! The layout of every RESPB/1 request opcode.
//!
//! Opcodes and field order follow `spec/respb/opcodes.csv`; where the table
//! leaves a layout incomplete (flag bits, optional fields, subcommand ids),
//! the choices made here are normative and printed in `spec/respb.md`.

use super::layout::{all_strings, has_deferred, Alt, Bit, Effect, Field, Layout, List, Opt};
use Field::*;

const B2: Field = Bytes2;
const B4: Field = Bytes4;
const I64: Field = Int64;
const F64: Field = Float64;

const fn list(item: &'static [Field]) -> Field {
    List(List { token: None, emit_count: false, item })
}
const fn numbered(item: &'static [Field]) -> Field {
    List(List { token: None, emit_count: true, item })
}
const fn tagged(token: &'static str, emit_count: bool, item: &'static [Field]) -> Field {
    List(List { token: Some(token), emit_count, item })
}
const fn bit(token: &'static str) -> Bit {
    Bit { token, fields: &[], effect: Effect::Inline }
}
const fn bitf(token: &'static str, fields: &'static [Field]) -> Bit {
    Bit { token, fields, effect: Effect::Inline }
}
const fn excl(field: u8) -> Bit {
    Bit { token: "", fields: &[], effect: Effect::Exclusive(field) }
}
const fn before(token: &'static str, field: u8) -> Bit {
    Bit { token, fields: &[], effect: Effect::BeforeField(field) }
}
const fn opt(token: &'static str, field: Field) -> Opt {
    Opt { token, field, with_previous: false }
}
const fn then(field: Field) -> Opt {
    Opt { token: "", field, with_previous: true }
}
const fn alt(token: &'static str) -> Alt {
    Alt { token, fields: &[] }
}
const fn core(opcode: u32, name: &'static str, fields: &'static [Field]) -> Layout {
    Layout { name, opcode, module: false, fields, plain: all_strings(fields), deferred: has_deferred(fields) }
}
const fn module(opcode: u32, name: &'static str, fields: &'static [Field]) -> Layout {
    Layout { name, opcode, module: true, fields, plain: all_strings(fields), deferred: has_deferred(fields) }
}

const KEYS: Field = list(&[B2]);
const NUMKEYS: Field = numbered(&[B2]);
const ITEMS2: Field = list(&[B2]);
const LEFT_RIGHT: Field = Choice(&[alt("LEFT"), alt("RIGHT")]);
const MIN_MAX: Field = Choice(&[alt("MIN"), alt("MAX")]);
const COUNT_U16: Field = Mask(&[opt("COUNT", Uint16)]);
const OPT_U16: Field = Mask(&[opt("", Uint16)]);
const SCAN_OPTS: Field = Mask(&[opt("MATCH", B2), opt("COUNT", I64)]);
const LIMIT_PAIR: Field = Mask(&[opt("LIMIT", I64), then(I64)]);
const GEO_UNIT: Field = Choice(&[alt("m"), alt("km"), alt("ft"), alt("mi")]);
const EXPIRE_BITS: Field = Flags(&[bit("NX"), bit("XX"), bit("GT"), bit("LT")]);
const FIELDS: Field = tagged("FIELDS", true, &[B2]);
const ASYNC_SYNC: Field = OptToken(&["ASYNC", "SYNC"]);
const SET_BITS: Field = Flags(&[
    bit("NX"),
    bit("XX"),
    bit("GET"),
    bit("KEEPTTL"),
    bitf("EX", &[I64]),
    bitf("PX", &[I64]),
    bitf("EXAT", &[I64]),
    bitf("PXAT", &[I64]),
]);
const GETEX_BITS: Field =
    Flags(&[bitf("EX", &[I64]), bitf("PX", &[I64]), bitf("EXAT", &[I64]), bitf("PXAT", &[I64]), bit("PERSIST")]);
/// ZRANGE and ZRANGESTORE: start/stop are ranks unless BYSCORE makes them scores.
const ZRANGE_BITS: Field = Flags(&[
    Bit { token: "BYSCORE", fields: &[], effect: Effect::FloatFields },
    bit("REV"),
    bitf("LIMIT", &[I64, I64]),
    bit("WITHSCORES"),
    excl(1),
    excl(2),
]);
const ZSTORE_BITS: Field =
    Flags(&[bitf("WEIGHTS", &[Weights]), bit("AGGREGATE SUM"), bit("AGGREGATE MIN"), bit("AGGREGATE MAX")]);
const ZCOMBINE_BITS: Field = Flags(&[
    bitf("WEIGHTS", &[Weights]),
    bit("AGGREGATE SUM"),
    bit("AGGREGATE MIN"),
    bit("AGGREGATE MAX"),
    bit("WITHSCORES"),
]);
const GEORADIUS_BITS: Field = Flags(&[
    bit("WITHCOORD"),
    bit("WITHDIST"),
    bit("WITHHASH"),
    bitf("COUNT", &[I64]),
    bit("ANY"),
    bit("ASC"),
    bit("DESC"),
]);
const SCRIPT_CALL: [Field; 3] = [B4, NUMKEYS, list(&[B2])];
const SHA_CALL: [Field; 3] = [B2, NUMKEYS, list(&[B2])];
const RESTORE_FIELDS: [Field; 4] =
    [B2, I64, B4, Flags(&[bit("REPLACE"), bit("ABSTTL"), bitf("IDLETIME", &[I64]), bitf("FREQ", &[I64])])];
const JSON_KEY_PATH: [Field; 2] = [B2, Mask(&[opt("", B2)])];

/// Subcommand alternatives, in the order their ids are assigned (id = index).
const fn subs(names: &'static [Alt]) -> Field {
    Choice(names)
}

/// Every request opcode, sorted by opcode (module opcodes after core ones).
pub static LAYOUTS: &[Layout] = &[
    // Strings
    core(0x0000, "GET", &[B2]),
    core(0x0001, "SET", &[B2, B4, SET_BITS]),
    core(0x0002, "APPEND", &[B2, B4]),
    core(0x0003, "DECR", &[B2]),
    core(0x0004, "DECRBY", &[B2, I64]),
    core(0x0005, "GETDEL", &[B2]),
    core(0x0006, "GETEX", &[B2, GETEX_BITS]),
    core(0x0007, "GETRANGE", &[B2, I64, I64]),
    core(0x0008, "GETSET", &[B2, B4]),
    core(0x0009, "INCR", &[B2]),
    core(0x000A, "INCRBY", &[B2, I64]),
    core(0x000B, "INCRBYFLOAT", &[B2, F64]),
    core(0x000C, "MGET", &[KEYS]),
    core(0x000D, "MSET", &[list(&[B2, B4])]),
    core(0x000E, "MSETNX", &[list(&[B2, B4])]),
    core(0x000F, "PSETEX", &[B2, I64, B4]),
    core(0x0010, "SETEX", &[B2, I64, B4]),
    core(0x0011, "SETNX", &[B2, B4]),
    core(0x0012, "SETRANGE", &[B2, I64, B4]),
    core(0x0013, "STRLEN", &[B2]),
    core(0x0014, "SUBSTR", &[B2, I64, I64]),
    core(0x0015, "LCS", &[B2, B2, Flags(&[bit("LEN"), bit("IDX"), bitf("MINMATCHLEN", &[I64]), bit("WITHMATCHLEN")])]),
    core(0x0016, "DELIFEQ", &[B2, B4]),
    // Lists
    core(0x0040, "LPUSH", &[B2, ITEMS2]),
    core(0x0041, "RPUSH", &[B2, ITEMS2]),
    core(0x0042, "LPOP", &[B2, OPT_U16]),
    core(0x0043, "RPOP", &[B2, OPT_U16]),
    core(0x0044, "LLEN", &[B2]),
    core(0x0045, "LRANGE", &[B2, I64, I64]),
    core(0x0046, "LINDEX", &[B2, I64]),
    core(0x0047, "LSET", &[B2, I64, B2]),
    core(0x0048, "LREM", &[B2, I64, B2]),
    core(0x0049, "LTRIM", &[B2, I64, I64]),
    core(0x004A, "LINSERT", &[B2, Choice(&[alt("BEFORE"), alt("AFTER")]), B2, B2]),
    core(0x004B, "LPUSHX", &[B2, ITEMS2]),
    core(0x004C, "RPUSHX", &[B2, ITEMS2]),
    core(0x004D, "RPOPLPUSH", &[B2, B2]),
    core(0x004E, "LMOVE", &[B2, B2, LEFT_RIGHT, LEFT_RIGHT]),
    core(0x004F, "LMPOP", &[NUMKEYS, LEFT_RIGHT, COUNT_U16]),
    core(0x0050, "LPOS", &[B2, B2, Mask(&[opt("RANK", I64), opt("COUNT", Uint16), opt("MAXLEN", I64)])]),
    core(0x0051, "BLPOP", &[KEYS, F64]),
    core(0x0052, "BRPOP", &[KEYS, F64]),
    core(0x0053, "BRPOPLPUSH", &[B2, B2, F64]),
    core(0x0054, "BLMOVE", &[B2, B2, LEFT_RIGHT, LEFT_RIGHT, F64]),
    core(0x0055, "BLMPOP", &[F64, NUMKEYS, LEFT_RIGHT, COUNT_U16]),
    // Sets
    core(0x0080, "SADD", &[B2, ITEMS2]),
    core(0x0081, "SREM", &[B2, ITEMS2]),
    core(0x0082, "SMEMBERS", &[B2]),
    core(0x0083, "SISMEMBER", &[B2, B2]),
    core(0x0084, "SCARD", &[B2]),
    core(0x0085, "SPOP", &[B2, OPT_U16]),
    core(0x0086, "SRANDMEMBER", &[B2, Mask(&[opt("", I64)])]),
    core(0x0087, "SINTER", &[KEYS]),
    core(0x0088, "SINTERSTORE", &[B2, KEYS]),
    core(0x0089, "SUNION", &[KEYS]),
    core(0x008A, "SUNIONSTORE", &[B2, KEYS]),
    core(0x008B, "SDIFF", &[KEYS]),
    core(0x008C, "SDIFFSTORE", &[B2, KEYS]),
    core(0x008D, "SMOVE", &[B2, B2, B2]),
    core(0x008E, "SSCAN", &[B2, Uint64, SCAN_OPTS]),
    core(0x008F, "SINTERCARD", &[NUMKEYS, Mask(&[opt("LIMIT", I64)])]),
    core(0x0090, "SMISMEMBER", &[B2, ITEMS2]),
    // Sorted sets
    core(
        0x00C0,
        "ZADD",
        &[B2, Flags(&[bit("NX"), bit("XX"), bit("GT"), bit("LT"), bit("CH"), bit("INCR")]), list(&[F64, B2])],
    ),
    core(0x00C1, "ZREM", &[B2, ITEMS2]),
    core(0x00C2, "ZCARD", &[B2]),
    core(0x00C3, "ZCOUNT", &[B2, F64, F64]),
    core(0x00C4, "ZINCRBY", &[B2, F64, B2]),
    core(0x00C5, "ZRANGE", &[B2, Number64, Number64, ZRANGE_BITS]),
    core(
        0x00C6,
        "ZRANGEBYSCORE",
        &[B2, F64, F64, Flags(&[bit("WITHSCORES"), bitf("LIMIT", &[I64, I64]), excl(1), excl(2)])],
    ),
    core(0x00C7, "ZRANGEBYLEX", &[B2, B2, B2, LIMIT_PAIR]),
    core(0x00C8, "ZREVRANGE", &[B2, I64, I64, Bool("WITHSCORES")]),
    core(
        0x00C9,
        "ZREVRANGEBYSCORE",
        &[B2, F64, F64, Flags(&[bit("WITHSCORES"), bitf("LIMIT", &[I64, I64]), excl(1), excl(2)])],
    ),
    core(0x00CA, "ZREVRANGEBYLEX", &[B2, B2, B2, LIMIT_PAIR]),
    core(0x00CB, "ZRANK", &[B2, B2, Bool("WITHSCORE")]),
    core(0x00CC, "ZREVRANK", &[B2, B2, Bool("WITHSCORE")]),
    core(0x00CD, "ZSCORE", &[B2, B2]),
    core(0x00CE, "ZMSCORE", &[B2, ITEMS2]),
    core(0x00CF, "ZREMRANGEBYRANK", &[B2, I64, I64]),
    core(0x00D0, "ZREMRANGEBYSCORE", &[B2, F64, F64]),
    core(0x00D1, "ZREMRANGEBYLEX", &[B2, B2, B2]),
    core(0x00D2, "ZLEXCOUNT", &[B2, B2, B2]),
    core(0x00D3, "ZPOPMIN", &[B2, OPT_U16]),
    core(0x00D4, "ZPOPMAX", &[B2, OPT_U16]),
    core(0x00D5, "BZPOPMIN", &[KEYS, F64]),
    core(0x00D6, "BZPOPMAX", &[KEYS, F64]),
    core(0x00D7, "ZRANDMEMBER", &[B2, Mask(&[opt("", Int16)]), Bool("WITHSCORES")]),
    core(0x00D8, "ZDIFF", &[NUMKEYS, Bool("WITHSCORES")]),
    core(0x00D9, "ZDIFFSTORE", &[B2, NUMKEYS]),
    core(0x00DA, "ZINTER", &[NUMKEYS, ZCOMBINE_BITS]),
    core(0x00DB, "ZINTERSTORE", &[B2, NUMKEYS, ZSTORE_BITS]),
    core(0x00DC, "ZINTERCARD", &[NUMKEYS, Mask(&[opt("LIMIT", I64)])]),
    core(0x00DD, "ZUNION", &[NUMKEYS, ZCOMBINE_BITS]),
    core(0x00DE, "ZUNIONSTORE", &[B2, NUMKEYS, ZSTORE_BITS]),
    core(0x00DF, "ZSCAN", &[B2, Uint64, SCAN_OPTS, Bool("NOSCORES")]),
    core(0x00E0, "ZMPOP", &[NUMKEYS, MIN_MAX, COUNT_U16]),
    core(0x00E1, "BZMPOP", &[F64, NUMKEYS, MIN_MAX, COUNT_U16]),
    core(
        0x00E2,
        "ZRANGESTORE",
        &[
            B2,
            B2,
            Number64,
            Number64,
            Flags(&[
                Bit { token: "BYSCORE", fields: &[], effect: Effect::FloatFields },
                bit("REV"),
                bitf("LIMIT", &[I64, I64]),
                excl(2),
                excl(3),
            ]),
        ],
    ),
    // Hashes
    core(0x0100, "HSET", &[B2, list(&[B2, B4])]),
    core(0x0101, "HGET", &[B2, B2]),
    core(0x0102, "HMSET", &[B2, list(&[B2, B4])]),
    core(0x0103, "HMGET", &[B2, ITEMS2]),
    core(0x0104, "HGETALL", &[B2]),
    core(0x0105, "HDEL", &[B2, ITEMS2]),
    core(0x0106, "HEXISTS", &[B2, B2]),
    core(0x0107, "HINCRBY", &[B2, B2, I64]),
    core(0x0108, "HINCRBYFLOAT", &[B2, B2, F64]),
    core(0x0109, "HKEYS", &[B2]),
    core(0x010A, "HVALS", &[B2]),
    core(0x010B, "HLEN", &[B2]),
    core(0x010C, "HSETNX", &[B2, B2, B4]),
    core(0x010D, "HSTRLEN", &[B2, B2]),
    core(0x010E, "HSCAN", &[B2, Uint64, SCAN_OPTS, Bool("NOVALUES")]),
    core(0x010F, "HRANDFIELD", &[B2, Mask(&[opt("", Int16)]), Bool("WITHVALUES")]),
    core(0x0110, "HEXPIRE", &[B2, I64, EXPIRE_BITS, FIELDS]),
    core(0x0111, "HEXPIREAT", &[B2, I64, EXPIRE_BITS, FIELDS]),
    core(0x0112, "HEXPIRETIME", &[B2, FIELDS]),
    core(0x0113, "HPEXPIRE", &[B2, I64, EXPIRE_BITS, FIELDS]),
    core(0x0114, "HPEXPIREAT", &[B2, I64, EXPIRE_BITS, FIELDS]),
    core(0x0115, "HPEXPIRETIME", &[B2, FIELDS]),
    core(0x0116, "HPTTL", &[B2, FIELDS]),
    core(0x0117, "HTTL", &[B2, FIELDS]),
    core(0x0118, "HPERSIST", &[B2, FIELDS]),
    core(0x0119, "HGETEX", &[B2, GETEX_BITS, FIELDS]),
    core(
        0x011A,
        "HSETEX",
        &[
            B2,
            Flags(&[
                bit("FNX"),
                bit("FXX"),
                bitf("EX", &[I64]),
                bitf("PX", &[I64]),
                bitf("EXAT", &[I64]),
                bitf("PXAT", &[I64]),
                bit("KEEPTTL"),
            ]),
            tagged("FIELDS", true, &[B2, B4]),
        ],
    ),
    // Bitmaps
    core(0x0140, "SETBIT", &[B2, I64, Uint8]),
    core(0x0141, "GETBIT", &[B2, I64]),
    core(0x0142, "BITCOUNT", &[B2, Mask(&[opt("", I64), opt("", I64)]), OptToken(&["BYTE", "BIT"])]),
    core(0x0143, "BITPOS", &[B2, Uint8, Mask(&[opt("", I64), opt("", I64)]), OptToken(&["BYTE", "BIT"])]),
    core(
        0x0144,
        "BITOP",
        &[
            Choice(&[
                alt("AND"),
                alt("OR"),
                alt("XOR"),
                alt("NOT"),
                alt("DIFF"),
                alt("DIFF1"),
                alt("ANDOR"),
                alt("ONE"),
            ]),
            B2,
            KEYS,
        ],
    ),
    core(0x0145, "BITFIELD", &[B2, list(&[BITFIELD_OP])]),
    core(0x0146, "BITFIELD_RO", &[B2, list(&[BITFIELD_OP])]),
    // HyperLogLog
    core(0x0160, "PFADD", &[B2, ITEMS2]),
    core(0x0161, "PFCOUNT", &[KEYS]),
    core(0x0162, "PFMERGE", &[B2, KEYS]),
    core(0x0163, "PFDEBUG", &[B2, B2]),
    core(0x0164, "PFSELFTEST", &[]),
    // Geo
    core(0x0180, "GEOADD", &[B2, Flags(&[bit("NX"), bit("XX"), bit("CH")]), list(&[F64, F64, B2])]),
    core(0x0181, "GEODIST", &[B2, B2, B2, OptToken(&["m", "km", "ft", "mi"])]),
    core(0x0182, "GEOHASH", &[B2, ITEMS2]),
    core(0x0183, "GEOPOS", &[B2, ITEMS2]),
    core(0x0184, "GEORADIUS", &[B2, F64, F64, F64, GEO_UNIT, GEORADIUS_BITS]),
    core(0x0185, "GEORADIUSBYMEMBER", &[B2, B2, F64, GEO_UNIT, GEORADIUS_BITS]),
    core(0x0186, "GEORADIUS_RO", &[B2, F64, F64, F64, GEO_UNIT, GEORADIUS_BITS]),
    core(0x0187, "GEORADIUSBYMEMBER_RO", &[B2, B2, F64, GEO_UNIT, GEORADIUS_BITS]),
    core(0x0188, "GEOSEARCH", &[B2, Rest]),
    core(0x0189, "GEOSEARCHSTORE", &[B2, B2, Rest]),
    // Streams
    core(0x01C0, "XADD", &[B2, B2, list(&[B2, B4])]),
    core(0x01C1, "XLEN", &[B2]),
    core(0x01C2, "XRANGE", &[B2, B2, B2, Mask(&[opt("COUNT", I64)])]),
    core(0x01C3, "XREVRANGE", &[B2, B2, B2, Mask(&[opt("COUNT", I64)])]),
    core(0x01C4, "XREAD", &[Mask(&[opt("COUNT", I64), opt("BLOCK", I64)]), StreamPairs]),
    core(
        0x01C5,
        "XREADGROUP",
        &[Token("GROUP"), B2, B2, Mask(&[opt("COUNT", I64), opt("BLOCK", I64)]), Bool("NOACK"), StreamPairs],
    ),
    core(0x01C6, "XDEL", &[B2, ITEMS2]),
    core(
        0x01C7,
        "XTRIM",
        &[
            B2,
            Choice(&[alt("MAXLEN"), alt("MINID")]),
            I64,
            Flags(&[before("=", 2), before("~", 2), bitf("LIMIT", &[I64])]),
        ],
    ),
    core(0x01C8, "XACK", &[B2, B2, ITEMS2]),
    core(0x01C9, "XPENDING", &[B2, B2, Mask(&[opt("IDLE", I64), opt("", B2), then(B2), then(I64), opt("", B2)])]),
    core(
        0x01CA,
        "XCLAIM",
        &[
            B2,
            B2,
            B2,
            I64,
            ITEMS2,
            Flags(&[
                bitf("IDLE", &[I64]),
                bitf("TIME", &[I64]),
                bitf("RETRYCOUNT", &[I64]),
                bit("FORCE"),
                bit("JUSTID"),
                bitf("LASTID", &[B2]),
            ]),
        ],
    ),
    core(0x01CB, "XAUTOCLAIM", &[B2, B2, B2, I64, B2, Mask(&[opt("COUNT", I64)]), Bool("JUSTID")]),
    core(0x01CC, "XINFO", &[subs(&[alt("CONSUMERS"), alt("GROUPS"), alt("STREAM")]), B2, Rest]),
    core(
        0x01CD,
        "XGROUP",
        &[subs(&[alt("CREATE"), alt("SETID"), alt("DESTROY"), alt("CREATECONSUMER"), alt("DELCONSUMER")]), B2, Rest],
    ),
    core(0x01CE, "XSETID", &[B2, B2, Mask(&[opt("ENTRIESADDED", I64), opt("MAXDELETEDID", B2)])]),
    // Pub/Sub
    core(0x0200, "PUBLISH", &[B2, B4]),
    core(0x0201, "SUBSCRIBE", &[ITEMS2]),
    core(0x0202, "UNSUBSCRIBE", &[ITEMS2]),
    core(0x0203, "PSUBSCRIBE", &[ITEMS2]),
    core(0x0204, "PUNSUBSCRIBE", &[ITEMS2]),
    core(
        0x0205,
        "PUBSUB",
        &[
            subs(&[
                alt("CHANNELS"),
                alt("NUMSUB"),
                alt("NUMPAT"),
                alt("SHARDCHANNELS"),
                alt("SHARDNUMSUB"),
                alt("HELP"),
            ]),
            Rest,
        ],
    ),
    core(0x0206, "SPUBLISH", &[B2, B4]),
    core(0x0207, "SSUBSCRIBE", &[ITEMS2]),
    core(0x0208, "SUNSUBSCRIBE", &[ITEMS2]),
    // Transactions
    core(0x0240, "MULTI", &[]),
    core(0x0241, "EXEC", &[]),
    core(0x0242, "DISCARD", &[]),
    core(0x0243, "WATCH", &[KEYS]),
    core(0x0244, "UNWATCH", &[]),
    // Scripting and functions
    core(0x0260, "EVAL", &SCRIPT_CALL),
    core(0x0261, "EVALSHA", &SHA_CALL),
    core(0x0262, "EVAL_RO", &SCRIPT_CALL),
    core(0x0263, "EVALSHA_RO", &SHA_CALL),
    core(
        0x0264,
        "SCRIPT",
        &[subs(&[alt("LOAD"), alt("EXISTS"), alt("FLUSH"), alt("KILL"), alt("DEBUG"), alt("HELP")]), Rest],
    ),
    core(0x0265, "FCALL", &SHA_CALL),
    core(0x0266, "FCALL_RO", &SHA_CALL),
    core(
        0x0267,
        "FUNCTION",
        &[
            subs(&[
                alt("LOAD"),
                alt("DELETE"),
                alt("FLUSH"),
                alt("KILL"),
                alt("LIST"),
                alt("STATS"),
                alt("DUMP"),
                alt("RESTORE"),
                alt("HELP"),
            ]),
            Rest,
        ],
    ),
    // Keys
    core(0x02C0, "DEL", &[KEYS]),
    core(0x02C1, "UNLINK", &[KEYS]),
    core(0x02C2, "EXISTS", &[KEYS]),
    core(0x02C3, "EXPIRE", &[B2, I64, EXPIRE_BITS]),
    core(0x02C4, "EXPIREAT", &[B2, I64, EXPIRE_BITS]),
    core(0x02C5, "EXPIRETIME", &[B2]),
    core(0x02C6, "PEXPIRE", &[B2, I64, EXPIRE_BITS]),
    core(0x02C7, "PEXPIREAT", &[B2, I64, EXPIRE_BITS]),
    core(0x02C8, "PEXPIRETIME", &[B2]),
    core(0x02C9, "TTL", &[B2]),
    core(0x02CA, "PTTL", &[B2]),
    core(0x02CB, "PERSIST", &[B2]),
    core(0x02CC, "KEYS", &[B2]),
    core(0x02CD, "SCAN", &[Uint64, Mask(&[opt("MATCH", B2), opt("COUNT", I64), opt("TYPE", B2)])]),
    core(0x02CE, "RANDOMKEY", &[]),
    core(0x02CF, "RENAME", &[B2, B2]),
    core(0x02D0, "RENAMENX", &[B2, B2]),
    core(0x02D1, "TYPE", &[B2]),
    core(0x02D2, "DUMP", &[B2]),
    core(0x02D3, "RESTORE", &RESTORE_FIELDS),
    core(
        0x02D4,
        "MIGRATE",
        &[
            B2,
            Uint16,
            B2,
            Uint16,
            I64,
            Flags(&[
                bit("COPY"),
                bit("REPLACE"),
                bitf("AUTH", &[B2]),
                bitf("AUTH2", &[B2, B2]),
                bitf("KEYS", &[list(&[B2])]),
            ]),
        ],
    ),
    core(0x02D5, "MOVE", &[B2, Uint16]),
    core(0x02D6, "COPY", &[B2, B2, Mask(&[opt("DB", Uint16)]), Bool("REPLACE")]),
    core(0x02D7, "SORT", &[B2, Rest]),
    core(0x02D8, "SORT_RO", &[B2, Rest]),
    core(0x02D9, "TOUCH", &[KEYS]),
    core(0x02DA, "OBJECT", &[subs(&[alt("ENCODING"), alt("FREQ"), alt("IDLETIME"), alt("REFCOUNT")]), B2]),
    core(0x02DB, "WAIT", &[I64, I64]),
    core(0x02DC, "WAITAOF", &[I64, I64, I64]),
    // Connection
    core(0x0300, "PING", &[Mask(&[opt("", B2)])]),
    core(0x0301, "ECHO", &[B2]),
    core(0x0302, "AUTH", &[Mask(&[opt("", B2)]), B2]),
    core(0x0303, "SELECT", &[Uint16]),
    core(0x0304, "QUIT", &[]),
    core(0x0305, "HELLO", &[Uint8, Mask(&[opt("AUTH", B2), then(B2), opt("SETNAME", B2)])]),
    core(0x0306, "RESET", &[]),
    core(0x0307, "CLIENT", &[CLIENT_SUBS, Rest]),
    // Cluster
    core(0x0340, "CLUSTER", &[CLUSTER_SUBS, Rest]),
    core(0x0341, "READONLY", &[]),
    core(0x0342, "READWRITE", &[]),
    core(0x0343, "ASKING", &[]),
    // Server
    core(0x03C0, "DBSIZE", &[]),
    core(0x03C1, "FLUSHDB", &[ASYNC_SYNC]),
    core(0x03C2, "FLUSHALL", &[ASYNC_SYNC]),
    core(0x03C3, "SAVE", &[]),
    core(0x03C4, "BGSAVE", &[Flags(&[bit("SCHEDULE")])]),
    core(0x03C5, "BGREWRITEAOF", &[]),
    core(0x03C6, "LASTSAVE", &[]),
    core(0x03C7, "SHUTDOWN", &[Flags(&[bit("NOSAVE"), bit("SAVE"), bit("NOW"), bit("FORCE"), bit("ABORT")])]),
    core(0x03C8, "INFO", &[ITEMS2]),
    core(0x03C9, "CONFIG", &[subs(&[alt("GET"), alt("SET"), alt("RESETSTAT"), alt("REWRITE"), alt("HELP")]), Rest]),
    core(
        0x03CA,
        "COMMAND",
        &[
            subs(&[
                alt("COUNT"),
                alt("DOCS"),
                alt("GETKEYS"),
                alt("GETKEYSANDFLAGS"),
                alt("INFO"),
                alt("LIST"),
                alt("HELP"),
            ]),
            Rest,
        ],
    ),
    core(0x03CB, "TIME", &[]),
    core(0x03CC, "ROLE", &[]),
    core(0x03CD, "REPLICAOF", &[B2, Uint16]),
    core(0x03CE, "SLAVEOF", &[B2, Uint16]),
    core(0x03CF, "MONITOR", &[]),
    core(0x03D0, "DEBUG", &[DEBUG_SUBS, Rest]),
    core(0x03D1, "SYNC", &[]),
    core(0x03D2, "PSYNC", &[B2, I64]),
    core(0x03D3, "REPLCONF", &[ITEMS2]),
    core(0x03D4, "SLOWLOG", &[subs(&[alt("GET"), alt("LEN"), alt("RESET"), alt("HELP")]), Mask(&[opt("", I64)])]),
    core(
        0x03D5,
        "LATENCY",
        &[
            subs(&[
                alt("DOCTOR"),
                alt("GRAPH"),
                alt("HISTOGRAM"),
                alt("HISTORY"),
                alt("LATEST"),
                alt("RESET"),
                alt("HELP"),
            ]),
            Rest,
        ],
    ),
    core(
        0x03D6,
        "MEMORY",
        &[subs(&[alt("DOCTOR"), alt("MALLOC-STATS"), alt("PURGE"), alt("STATS"), alt("USAGE"), alt("HELP")]), Rest],
    ),
    core(0x03D7, "MODULE", &[subs(&[alt("LIST"), alt("LOAD"), alt("LOADEX"), alt("UNLOAD"), alt("HELP")]), Rest]),
    core(
        0x03D8,
        "ACL",
        &[
            subs(&[
                alt("CAT"),
                alt("DELUSER"),
                alt("DRYRUN"),
                alt("GENPASS"),
                alt("GETUSER"),
                alt("LIST"),
                alt("LOAD"),
                alt("LOG"),
                alt("SAVE"),
                alt("SETUSER"),
                alt("USERS"),
                alt("WHOAMI"),
                alt("HELP"),
            ]),
            Rest,
        ],
    ),
    core(
        0x03D9,
        "FAILOVER",
        &[Flags(&[bitf("TO", &[B2, Uint16]), bit("FORCE"), bit("ABORT"), bitf("TIMEOUT", &[I64])])],
    ),
    core(0x03DA, "SWAPDB", &[Uint16, Uint16]),
    core(0x03DB, "LOLWUT", &[ITEMS2]),
    core(0x03DC, "RESTORE-ASKING", &RESTORE_FIELDS),
    core(0x03DD, "COMMANDLOG", &[subs(&[alt("GET"), alt("LEN"), alt("RESET"), alt("HELP")]), Rest]),
    // Module commands: module 0 = JSON, 1 = Bloom, 2 = Search.
    module(0x0000_0000, "JSON.SET", &[B2, B2, B4, Flags(&[bit("NX"), bit("XX")])]),
    module(0x0000_0001, "JSON.GET", &[B2, ITEMS2]),
    module(0x0000_0002, "JSON.MGET", &[KEYS, B2]),
    module(0x0000_0003, "JSON.MSET", &[list(&[B2, B2, B4])]),
    module(0x0000_0004, "JSON.DEL", &JSON_KEY_PATH),
    module(0x0000_0005, "JSON.FORGET", &JSON_KEY_PATH),
    module(0x0000_0006, "JSON.TYPE", &JSON_KEY_PATH),
    module(0x0000_0007, "JSON.CLEAR", &JSON_KEY_PATH),
    module(0x0000_0008, "JSON.ARRAPPEND", &[B2, B2, list(&[B4])]),
    module(0x0000_0009, "JSON.ARRINDEX", &[B2, B2, B4, Mask(&[opt("", I64), opt("", I64)])]),
    module(0x0000_000A, "JSON.ARRINSERT", &[B2, B2, I64, list(&[B4])]),
    module(0x0000_000B, "JSON.ARRLEN", &JSON_KEY_PATH),
    module(0x0000_000C, "JSON.ARRPOP", &[B2, Mask(&[opt("", B2), opt("", I64)])]),
    module(0x0000_000D, "JSON.ARRTRIM", &[B2, B2, I64, I64]),
    module(0x0000_000E, "JSON.OBJKEYS", &JSON_KEY_PATH),
    module(0x0000_000F, "JSON.OBJLEN", &JSON_KEY_PATH),
    module(0x0000_0010, "JSON.STRLEN", &JSON_KEY_PATH),
    module(0x0000_0011, "JSON.STRAPPEND", &[B2, B2, B4]),
    module(0x0000_0012, "JSON.NUMINCRBY", &[B2, B2, F64]),
    module(0x0000_0013, "JSON.NUMMULTBY", &[B2, B2, F64]),
    module(0x0000_0014, "JSON.TOGGLE", &[B2, B2]),
    module(0x0000_0015, "JSON.DEBUG", &[subs(&[alt("MEMORY"), alt("HELP")]), B2, Mask(&[opt("", B2)])]),
    module(0x0000_0016, "JSON.RESP", &JSON_KEY_PATH),
    module(0x0001_0000, "BF.ADD", &[B2, B2]),
    module(0x0001_0001, "BF.MADD", &[B2, ITEMS2]),
    module(0x0001_0002, "BF.EXISTS", &[B2, B2]),
    module(0x0001_0003, "BF.MEXISTS", &[B2, ITEMS2]),
    module(0x0001_0004, "BF.RESERVE", &[B2, F64, I64, Flags(&[bitf("EXPANSION", &[I64]), bit("NONSCALING")])]),
    module(
        0x0001_0005,
        "BF.INSERT",
        &[
            B2,
            Flags(&[
                bitf("CAPACITY", &[I64]),
                bitf("ERROR", &[F64]),
                bitf("EXPANSION", &[I64]),
                bit("NOCREATE"),
                bit("NONSCALING"),
            ]),
            tagged("ITEMS", false, &[B2]),
        ],
    ),
    module(0x0001_0006, "BF.CARD", &[B2]),
    module(0x0001_0007, "BF.INFO", &[B2]),
    module(0x0001_0008, "BF.LOAD", &[B2, B4]),
    module(0x0002_0000, "FT.CREATE", &[B2, Rest]),
    module(0x0002_0001, "FT.SEARCH", &[B2, B2, Rest]),
    module(0x0002_0002, "FT.DROPINDEX", &[B2, Flags(&[bit("DD")])]),
    module(0x0002_0003, "FT.INFO", &[B2]),
    module(0x0002_0004, "FT._LIST", &[]),
];

/// One BITFIELD operation: `[1B op]` then its arguments, each `[2B len][bytes]`.
const BITFIELD_OP: Field = Choice(&[
    Alt { token: "GET", fields: &[B2, B2] },
    Alt { token: "SET", fields: &[B2, B2, B2] },
    Alt { token: "INCRBY", fields: &[B2, B2, B2] },
    Alt { token: "OVERFLOW", fields: &[B2] },
]);

const CLIENT_SUBS: Field = subs(&[
    alt("CACHING"),
    alt("GETNAME"),
    alt("GETREDIR"),
    alt("ID"),
    alt("INFO"),
    alt("KILL"),
    alt("LIST"),
    alt("NO-EVICT"),
    alt("NO-TOUCH"),
    alt("PAUSE"),
    alt("REPLY"),
    alt("SETINFO"),
    alt("SETNAME"),
    alt("TRACKING"),
    alt("TRACKINGINFO"),
    alt("UNBLOCK"),
    alt("UNPAUSE"),
    alt("HELP"),
    alt("CAPA"),
]);

const CLUSTER_SUBS: Field = subs(&[
    alt("ADDSLOTS"),
    alt("ADDSLOTSRANGE"),
    alt("BUMPEPOCH"),
    alt("COUNT-FAILURE-REPORTS"),
    alt("COUNTKEYSINSLOT"),
    alt("DELSLOTS"),
    alt("DELSLOTSRANGE"),
    alt("FAILOVER"),
    alt("FLUSHSLOTS"),
    alt("FORGET"),
    alt("GETKEYSINSLOT"),
    alt("INFO"),
    alt("KEYSLOT"),
    alt("LINKS"),
    alt("MEET"),
    alt("MYID"),
    alt("MYSHARDID"),
    alt("NODES"),
    alt("REPLICAS"),
    alt("REPLICATE"),
    alt("RESET"),
    alt("SAVECONFIG"),
    alt("SET-CONFIG-EPOCH"),
    alt("SETSLOT"),
    alt("SHARDS"),
    alt("SLAVES"),
    alt("SLOTS"),
    alt("HELP"),
]);

const DEBUG_SUBS: Field = subs(&[
    alt("SLEEP"),
    alt("SET-ACTIVE-EXPIRE"),
    alt("OBJECT"),
    alt("RELOAD"),
    alt("JMAP"),
    alt("QUICKLIST-PACKED-THRESHOLD"),
    alt("SEGFAULT"),
    alt("DIGEST"),
    alt("DIGEST-VALUE"),
    alt("PROTOCOL"),
    alt("CHANGE-REPL-ID"),
    alt("LISTPACK"),
    alt("STRINGMATCH-LEN"),
    alt("POPULATE"),
    alt("LOG"),
    alt("HELP"),
]);

/// Highest core opcode plus one: core opcodes live in `0x0000..0x0400`.
const CORE_OPCODES: usize = 0x0400;

/// The table id of the command a core opcode names: what looking up its
/// layout's name finds, computed once for every opcode, so a RESPB frame's
/// command is known without a lookup by name.
pub fn core_command(opcode: u16) -> Option<crate::commands::CommandId> {
    static IDS: std::sync::OnceLock<Vec<Option<crate::commands::CommandId>>> = std::sync::OnceLock::new();
    let ids = IDS.get_or_init(|| {
        (0..CORE_OPCODES)
            .map(|op| {
                let layout = u16::try_from(op).ok().and_then(core_layout)?;
                crate::commands::lookup(layout.name.as_bytes()).map(|spec| spec.id)
            })
            .collect()
    });
    ids.get(usize::from(opcode)).copied().flatten()
}

/// The layout of a core opcode: one table lookup, since it runs for every frame.
pub fn core_layout(opcode: u16) -> Option<&'static Layout> {
    static INDEX: std::sync::OnceLock<[u16; CORE_OPCODES]> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = [u16::MAX; CORE_OPCODES];
        for (i, l) in LAYOUTS.iter().enumerate().filter(|(_, l)| !l.module) {
            index[l.opcode as usize] = i as u16;
        }
        index
    });
    let i = *index.get(usize::from(opcode))?;
    LAYOUTS.get(usize::from(i))
}

/// The layout of a module command id (`module << 16 | command`).
pub fn module_layout(id: u32) -> Option<&'static Layout> {
    let core_end = LAYOUTS.partition_point(|l| !l.module);
    let modules = &LAYOUTS[core_end..];
    modules.binary_search_by_key(&id, |l| l.opcode).ok().map(|i| &modules[i])
}

/// The layout for a command name, ASCII case-insensitive.
pub fn layout_by_name(name: &[u8]) -> Option<&'static Layout> {
    let index = by_name_index();
    let upper = |b: &u8| b.to_ascii_uppercase();
    let found = index.binary_search_by(|&i| LAYOUTS[i].name.as_bytes().iter().copied().cmp(name.iter().map(upper)));
    found.ok().map(|at| &LAYOUTS[index[at]])
}

/// Indexes of `LAYOUTS` sorted by name (built once; lookups are by name on the client side only).
fn by_name_index() -> &'static [usize] {
    static INDEX: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut v: Vec<usize> = (0..LAYOUTS.len()).collect();
        v.sort_by_key(|&i| LAYOUTS[i].name);
        v
    })
}

#[cfg(test)]
mod command_id_tests {
    use super::*;

    #[test]
    fn every_core_opcode_knows_the_command_its_name_finds() {
        let mut known = 0;
        for op in 0..CORE_OPCODES as u16 {
            let Some(layout) = core_layout(op) else {
                assert_eq!(core_command(op), None);
                continue;
            };
            let by_name = crate::commands::lookup(layout.name.as_bytes()).map(|s| s.id);
            assert_eq!(core_command(op), by_name, "{}", layout.name);
            known += usize::from(by_name.is_some());
        }
        assert!(known > 100, "{known}");
    }
}
