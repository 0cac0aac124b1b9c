//! Redis's RDB format, version 10 (Redis 7.0), as files and as DUMP
//! payloads hold it.
//!
//! [`write`] and [`read`] are the primitives (lengths, strings with their
//! integer and LZF forms, doubles, times); [`listpack`] and [`packed`] (intset, ziplist, zipmap) the
//! blobs values are packed in; [`value`] a whole value of each type, in
//! the encodings redis-server 7.0.15 writes, and back, also from the older
//! encodings (ziplist, zipmap, intset) of the RDB versions 6 to 9 that
//! Redis 4 to 6 wrote. Every read is bounded by the input and checked, so
//! a damaged file or payload is an error, never a panic or a huge
//! allocation.

pub mod file;
pub mod listpack;
pub mod packed;
pub mod read;
pub mod value;
pub mod write;

/// The RDB version written, Redis 7.0's.
pub const RDB_VERSION: u16 = 10;

/// The latest RDB version read: Redis 7.2's and Valkey 7.2 and 8's, so that
/// their files and payloads move into kvik too. Version 11 adds listpack
/// sets and a consumer's active time in streams, which kvik reads (and,
/// writing version 10, leaves as Redis 7.0 has them: table or intset sets,
/// no active time).
pub const MAX_READ_VERSION: u16 = 11;

/// Value types (the byte before a key).
pub mod kind {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE_PRE_GA: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    pub const SET_LISTPACK: u8 = 20;
    pub const STREAM_LISTPACKS_3: u8 = 21;
}

/// File opcodes (bytes that are not value types).
pub mod opcode {
    /// Valkey 8's per-slot sizes in cluster mode (RDB 11): three lengths.
    pub const SLOT_INFO: u8 = 244;
    pub const FUNCTION2: u8 = 245;
    pub const FUNCTION_PRE_GA: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}

/// Why RDB data cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdbError {
    /// The data ends inside something.
    Truncated,
    /// The data is not what the format allows here; says what was read.
    Bad(&'static str),
    /// A value type kvik cannot load (modules).
    Unsupported(&'static str),
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RdbError::Truncated => f.write_str("unexpected end of data"),
            RdbError::Bad(what) => write!(f, "bad {what}"),
            RdbError::Unsupported(what) => write!(f, "unsupported {what}"),
        }
    }
}

impl std::error::Error for RdbError {}
