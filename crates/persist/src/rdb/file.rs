//! A whole RDB file, as redis-server 7.0.15 writes one and reads one.
//!
//! ```text
//! "REDIS0010"
//! AUX redis-ver, redis-bits, ctime, used-mem, aof-base
//! per database: SELECTDB n, RESIZEDB keys expires,
//!   per key: [EXPIRETIME_MS t] [IDLE s | FREQ f] type key value
//! EOF, CRC-64 of everything before it (8 bytes LE; 0 with rdbchecksum no)
//! ```
//!
//! The writer streams into any `Write` through a buffer, keeping the
//! checksum as it goes. The loader reads a file of RDB version 1 to 11
//! from memory and hands each key to a callback; it checks the checksum
//! (unless the file says 0, as Redis does), and refuses what kvik cannot
//! hold (module values, function libraries) with a reason instead of
//! dropping it.

use std::io::{self, Write};

use kvik_store::types::{Value, ValueRef};

use super::read::Input;
use super::value::{read_value, write_value, LoadLimits};
use super::write::{put_int, put_len, put_ms, put_string};
use super::{kind, opcode, RdbError, MAX_READ_VERSION, RDB_VERSION};
use crate::crc64::crc64;

/// Bytes gathered before a write to the underlying writer.
const FLUSH_BYTES: usize = 64 * 1024;

/// What the AUX fields at the top of a file say about the server.
#[derive(Debug, Clone)]
pub struct SaveInfo {
    /// `redis-ver`: the Redis version kvik answers as.
    pub redis_version: String,
    /// `ctime`: when the file was written, Unix seconds.
    pub ctime_s: i64,
    /// `used-mem`: the memory the data took, bytes.
    pub used_mem: u64,
    /// `aof-base`: whether the file is the base of an append-only file.
    pub aof_base: bool,
}

/// Writes an RDB file.
pub struct FileWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    crc: u64,
    compress: bool,
    checksum: bool,
}

impl<W: Write> FileWriter<W> {
    /// Start a file on `out`: the header and the AUX fields.
    /// `compress`: `rdbcompression`; `checksum`: `rdbchecksum`.
    pub fn start(out: W, info: &SaveInfo, compress: bool, checksum: bool) -> io::Result<FileWriter<W>> {
        let mut w = FileWriter { out, buf: Vec::with_capacity(FLUSH_BYTES * 2), crc: 0, compress, checksum };
        w.buf.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        w.aux_str(b"redis-ver", info.redis_version.as_bytes());
        w.aux_int(b"redis-bits", 64);
        w.aux_int(b"ctime", info.ctime_s);
        w.aux_int(b"used-mem", i64::try_from(info.used_mem).unwrap_or(i64::MAX));
        w.aux_int(b"aof-base", i64::from(info.aof_base));
        w.maybe_flush()?;
        Ok(w)
    }

    fn aux_str(&mut self, name: &[u8], value: &[u8]) {
        self.buf.push(opcode::AUX);
        put_string(&mut self.buf, name, false);
        put_string(&mut self.buf, value, false);
    }

    fn aux_int(&mut self, name: &[u8], value: i64) {
        self.buf.push(opcode::AUX);
        put_string(&mut self.buf, name, false);
        put_int(&mut self.buf, value);
    }

    /// One function library: its code, under Redis 7.0's `FUNCTION2`
    /// opcode (written before the databases, as Redis writes them).
    pub fn function(&mut self, code: &[u8]) -> io::Result<()> {
        self.buf.push(opcode::FUNCTION2);
        put_string(&mut self.buf, code, self.compress);
        self.maybe_flush()
    }

    /// Start database `db`, which holds `keys` keys of which `expires` have
    /// a deadline (a hint the loader sizes its tables by).
    pub fn select_db(&mut self, db: usize, keys: usize, expires: usize) -> io::Result<()> {
        self.buf.push(opcode::SELECTDB);
        put_len(&mut self.buf, db as u64);
        self.buf.push(opcode::RESIZEDB);
        put_len(&mut self.buf, keys as u64);
        put_len(&mut self.buf, expires as u64);
        self.maybe_flush()
    }

    /// One key: its deadline, its LRU idle time or LFU counter (whichever
    /// the `maxmemory-policy` keeps, if any), its value.
    pub fn entry(
        &mut self,
        key: &[u8],
        value: ValueRef<'_>,
        deadline_ms: Option<i64>,
        access: Access,
    ) -> io::Result<()> {
        self.put_entry(key, value, deadline_ms, access);
        self.maybe_flush()
    }

    /// [`FileWriter::entry`] into the buffer only, with no write to the
    /// underlying writer: a background save encodes keys under a shard's
    /// lock and writes them out after letting go ([`FileWriter::flush_if_full`]).
    pub fn put_entry(&mut self, key: &[u8], value: ValueRef<'_>, deadline_ms: Option<i64>, access: Access) {
        if let Some(at) = deadline_ms {
            self.buf.push(opcode::EXPIRETIME_MS);
            put_ms(&mut self.buf, at);
        }
        match access {
            Access::None => {}
            Access::IdleSeconds(s) => {
                self.buf.push(opcode::IDLE);
                put_len(&mut self.buf, s);
            }
            Access::Frequency(f) => {
                self.buf.push(opcode::FREQ);
                self.buf.push(f);
            }
        }
        let at = self.buf.len();
        self.buf.push(0);
        put_string(&mut self.buf, key, self.compress);
        self.buf[at] = write_value(&mut self.buf, value, self.compress);
    }

    /// Bytes encoded and not yet written out.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Write the buffer out once it holds enough to be worth a write.
    pub fn flush_if_full(&mut self) -> io::Result<()> {
        self.maybe_flush()
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_BYTES {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        if self.checksum {
            self.crc = crc64(self.crc, &self.buf);
        }
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// End the file (EOF and checksum) and hand back the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.buf.push(opcode::EOF);
        self.flush_buf()?;
        let crc = if self.checksum { self.crc } else { 0 };
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// What a file records of a key's accesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Nothing (a policy that keeps neither).
    None,
    /// Seconds since the last access (LRU policies).
    IdleSeconds(u64),
    /// The LFU counter (LFU policies).
    Frequency(u8),
}

/// One key read from a file.
#[derive(Debug)]
pub struct LoadedKey<'a> {
    /// Its database.
    pub db: usize,
    /// The key.
    pub key: std::borrow::Cow<'a, [u8]>,
    /// The value.
    pub value: Value,
    /// Its deadline, Unix milliseconds.
    pub deadline_ms: Option<i64>,
    /// What the file recorded of its accesses.
    pub access: Access,
}

/// What loading found besides the keys.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadSummary {
    /// The file's RDB version.
    pub version: u16,
    /// The AUX fields, in order.
    pub aux: Vec<(Vec<u8>, Vec<u8>)>,
    /// Keys handed to the callback.
    pub keys: u64,
    /// The code of each function library, in order (the loader of the
    /// file compiles them: this crate knows no Lua).
    pub functions: Vec<Vec<u8>>,
    /// Keys skipped because their value was empty (as Redis skips them).
    pub empty_skipped: u64,
}

/// Why a file did not load: where, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// Bytes into the file where reading stopped.
    pub offset: usize,
    /// What was wrong.
    pub error: RdbError,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at offset {}", self.error, self.offset)
    }
}

impl std::error::Error for LoadError {}

/// Load the RDB file `data`, handing every key to `on_key` (which may
/// refuse it with its own error text, e.g. a database number out of range).
pub fn load(
    data: &[u8],
    limits: &LoadLimits,
    mut on_key: impl FnMut(LoadedKey<'_>) -> Result<(), &'static str>,
) -> Result<LoadSummary, LoadError> {
    let mut r = Input::new(data);
    let fail = |r: &Input<'_>, error: RdbError| LoadError { offset: r.position(), error };
    let magic = r.take(9).map_err(|e| fail(&r, e))?;
    if &magic[..5] != b"REDIS" {
        return Err(fail(&r, RdbError::Bad("signature (not an RDB file)")));
    }
    let version = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|v| v.parse::<u16>().ok())
        .filter(|v| (1..=MAX_READ_VERSION).contains(v))
        .ok_or_else(|| fail(&r, RdbError::Unsupported("RDB version")))?;
    let mut summary = LoadSummary { version, ..LoadSummary::default() };
    let (mut db, mut deadline_ms, mut access) = (0usize, None, Access::None);
    loop {
        let op = r.byte().map_err(|e| fail(&r, e))?;
        let mut step = |r: &mut Input<'_>| -> Result<bool, RdbError> {
            match op {
                opcode::EOF => return Ok(false),
                opcode::SELECTDB => db = usize::try_from(r.len()?).map_err(|_| RdbError::Bad("database number"))?,
                opcode::RESIZEDB => {
                    r.len()?;
                    r.len()?;
                }
                opcode::EXPIRETIME_MS => deadline_ms = Some(r.ms()?),
                opcode::EXPIRETIME => deadline_ms = Some(i64::from(r.seconds()?) * 1000),
                opcode::IDLE => access = Access::IdleSeconds(r.len()?),
                opcode::FREQ => access = Access::Frequency(r.byte()?),
                opcode::AUX => {
                    let name = r.string()?.into_owned();
                    let value = r.string()?.into_owned();
                    summary.aux.push((name, value));
                }
                opcode::SLOT_INFO => {
                    // Slot, keys and expiring keys in it: a sizing hint only.
                    for _ in 0..3 {
                        r.len()?;
                    }
                }
                opcode::MODULE_AUX => return Err(RdbError::Unsupported("module data")),
                opcode::FUNCTION2 => summary.functions.push(r.string()?.into_owned()),
                opcode::FUNCTION_PRE_GA => return Err(RdbError::Unsupported("pre-GA function library format")),
                kind::STRING..=kind::STREAM_LISTPACKS_3 => {
                    let key = r.string()?;
                    match read_value(r, op, limits)? {
                        Some(value) => {
                            let loaded = LoadedKey { db, key, value, deadline_ms, access };
                            on_key(loaded).map_err(RdbError::Bad)?;
                            summary.keys += 1;
                        }
                        None => summary.empty_skipped += 1,
                    }
                    deadline_ms = None;
                    access = Access::None;
                }
                _ => return Err(RdbError::Bad("opcode")),
            }
            Ok(true)
        };
        if !step(&mut r).map_err(|e| fail(&r, e))? {
            break;
        }
    }
    if version >= 5 {
        let body_len = r.position();
        let stored = r.take(8).map_err(|e| fail(&r, e))?;
        let stored = u64::from_le_bytes([
            stored[0], stored[1], stored[2], stored[3], stored[4], stored[5], stored[6], stored[7],
        ]);
        if stored != 0 && stored != crc64(0, &data[..body_len]) {
            return Err(LoadError { offset: body_len, error: RdbError::Bad("checksum") });
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_store::types::string::StrValue;

    fn info() -> SaveInfo {
        SaveInfo { redis_version: "7.0.15".into(), ctime_s: 1_700_000_000, used_mem: 1 << 20, aof_base: false }
    }

    fn file(checksum: bool) -> Vec<u8> {
        let mut w = FileWriter::start(Vec::new(), &info(), true, checksum).expect("start");
        w.select_db(0, 2, 1).expect("db");
        let hello = StrValue::from_bytes(b"hello");
        w.entry(b"greeting", ValueRef::Str(hello.view()), Some(1_900_000_000_000), Access::IdleSeconds(7))
            .expect("key");
        let n = StrValue::from_bytes(b"42");
        w.entry(b"n", ValueRef::Str(n.view()), None, Access::None).expect("key");
        w.select_db(3, 1, 0).expect("db");
        w.entry(b"x", ValueRef::Str(hello.view()), None, Access::Frequency(9)).expect("key");
        w.finish().expect("finish")
    }

    /// Database, key, deadline and access record of a loaded key.
    type Seen = (usize, Vec<u8>, Option<i64>, Access);

    fn keys(data: &[u8]) -> Result<Vec<Seen>, LoadError> {
        let mut got = Vec::new();
        load(data, &LoadLimits::default(), |k| {
            got.push((k.db, k.key.into_owned(), k.deadline_ms, k.access));
            Ok(())
        })?;
        Ok(got)
    }

    #[test]
    fn a_written_file_loads_back() {
        let data = file(true);
        assert_eq!(&data[..9], b"REDIS0010");
        let got = keys(&data).expect("loads");
        assert_eq!(
            got,
            [
                (0, b"greeting".to_vec(), Some(1_900_000_000_000), Access::IdleSeconds(7)),
                (0, b"n".to_vec(), None, Access::None),
                (3, b"x".to_vec(), None, Access::Frequency(9)),
            ]
        );
        let summary = load(&data, &LoadLimits::default(), |_| Ok(())).expect("loads");
        assert_eq!(summary.aux[0], (b"redis-ver".to_vec(), b"7.0.15".to_vec()));
        assert_eq!(summary.aux[1], (b"redis-bits".to_vec(), b"64".to_vec()));
    }

    #[test]
    fn checksums_are_checked_unless_zero() {
        let mut data = file(true);
        let at = data.len() - 20;
        data[at] ^= 1;
        assert!(keys(&data).is_err(), "a changed byte");
        let unchecked = file(false);
        assert_eq!(&unchecked[unchecked.len() - 8..], &[0; 8]);
        assert_eq!(keys(&unchecked).expect("loads").len(), 3);
    }

    #[test]
    fn truncated_and_foreign_files_are_errors() {
        let data = file(true);
        for cut in [0, 5, 9, 20, data.len() / 2, data.len() - 9, data.len() - 1] {
            assert!(keys(&data[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(keys(b"REDIS0012\xff").map(|_| ()).unwrap_err().error, RdbError::Unsupported("RDB version"));
        assert!(keys(b"NOTREDIS0").is_err());
        let mut function = b"REDIS0010".to_vec();
        function.push(opcode::FUNCTION_PRE_GA);
        assert_eq!(keys(&function).unwrap_err().error, RdbError::Unsupported("pre-GA function library format"));
    }

    /// A file as Redis 5 and 6 wrote one (RDB 9): the ziplist, zipmap and
    /// intset encodings, text doubles, a deadline in seconds, a version-1
    /// stream.
    fn version_9_file() -> Vec<u8> {
        use crate::rdb::packed::{intset, ziplist};
        use crate::rdb::write::{put_len, put_string};
        let mut f = b"REDIS0009".to_vec();
        f.push(opcode::AUX);
        put_string(&mut f, b"redis-ver", false);
        put_string(&mut f, b"6.0.16", false);
        f.push(opcode::SELECTDB);
        put_len(&mut f, 0);
        let key = |f: &mut Vec<u8>, kind: u8, name: &[u8]| {
            f.push(kind);
            put_string(f, name, false);
        };
        key(&mut f, kind::LIST_ZIPLIST, b"old-list");
        put_string(&mut f, &ziplist(&[b"a", b"7", b"1000"]), false);
        key(&mut f, kind::LIST_QUICKLIST, b"quicklist");
        put_len(&mut f, 2);
        put_string(&mut f, &ziplist(&[b"x", b"y"]), false);
        put_string(&mut f, &ziplist(&[b"z"]), false);
        key(&mut f, kind::HASH_ZIPLIST, b"hash");
        put_string(&mut f, &ziplist(&[b"f1", b"v1", b"f2", b"2"]), false);
        key(&mut f, kind::HASH_ZIPMAP, b"zipmap");
        put_string(&mut f, &[1, 1, b'k', 1, 0, b'v', 0xFF], false);
        key(&mut f, kind::ZSET_ZIPLIST, b"zset");
        put_string(&mut f, &ziplist(&[b"m1", b"1", b"m2", b"2.5"]), false);
        key(&mut f, kind::ZSET, b"text-scores");
        put_len(&mut f, 2);
        put_string(&mut f, b"low", false);
        f.extend_from_slice(&[4, b'-', b'1', b'.', b'5']);
        put_string(&mut f, b"top", false);
        f.push(254);
        f.push(opcode::EXPIRETIME);
        f.extend_from_slice(&2_000_000_000i32.to_le_bytes());
        key(&mut f, kind::SET_INTSET, b"ints");
        put_string(&mut f, &intset(&[2, 3, 5]), false);
        // A version-1 stream: one node with entries 1-1 and 1-2 (same
        // fields as the master), no group.
        key(&mut f, kind::STREAM_LISTPACKS, b"stream");
        put_len(&mut f, 1);
        let mut id = [0u8; 16];
        id[7] = 1;
        id[15] = 1;
        put_string(&mut f, &id, false);
        let mut lp = crate::rdb::listpack::Writer::new();
        for n in [2, 0, 1] {
            lp.push_int(n);
        }
        lp.push(b"field");
        lp.push_int(0);
        for (seq, value) in [(0i64, &b"one"[..]), (1, b"two")] {
            lp.push_int(2);
            lp.push_int(0);
            lp.push_int(seq);
            lp.push(value);
            lp.push_int(4);
        }
        put_string(&mut f, &lp.finish(), false);
        put_len(&mut f, 2);
        put_len(&mut f, 1);
        put_len(&mut f, 2);
        put_len(&mut f, 0);
        f.push(opcode::EOF);
        let crc = crc64(0, &f);
        f.extend_from_slice(&crc.to_le_bytes());
        f
    }

    #[test]
    fn files_of_redis_5_and_6_load() {
        use kvik_store::types::ValueRef;
        let mut got = std::collections::BTreeMap::new();
        let summary = load(&version_9_file(), &LoadLimits::default(), |k| {
            got.insert(k.key.into_owned(), (k.value, k.deadline_ms));
            Ok(())
        })
        .expect("loads");
        assert_eq!(summary.version, 9);
        let list = |v: &Value| match v.view() {
            ValueRef::List(l) => l.iter().map(<[u8]>::to_vec).collect::<Vec<_>>(),
            _ => panic!("not a list"),
        };
        assert_eq!(list(&got[&b"old-list"[..]].0), [b"a".to_vec(), b"7".to_vec(), b"1000".to_vec()]);
        assert_eq!(list(&got[&b"quicklist"[..]].0), [b"x".to_vec(), b"y".to_vec(), b"z".to_vec()]);
        match got[&b"hash"[..]].0.view() {
            ValueRef::Hash(h) => {
                assert_eq!((h.get(b"f1"), h.get(b"f2"), h.encoding()), (Some(&b"v1"[..]), Some(&b"2"[..]), "listpack"))
            }
            _ => panic!("not a hash"),
        }
        match got[&b"zipmap"[..]].0.view() {
            ValueRef::Hash(h) => assert_eq!(h.get(b"k"), Some(&b"v"[..])),
            _ => panic!("not a hash"),
        }
        match got[&b"zset"[..]].0.view() {
            ValueRef::ZSet(z) => assert_eq!((z.score(b"m1"), z.score(b"m2")), (Some(1.0), Some(2.5))),
            _ => panic!("not a sorted set"),
        }
        match got[&b"text-scores"[..]].0.view() {
            ValueRef::ZSet(z) => assert_eq!((z.score(b"low"), z.score(b"top")), (Some(-1.5), Some(f64::INFINITY))),
            _ => panic!("not a sorted set"),
        }
        assert_eq!(got[&b"ints"[..]].1, Some(2_000_000_000_000), "a deadline in seconds");
        match got[&b"ints"[..]].0.view() {
            ValueRef::Set(s) => assert_eq!((s.len(), s.encoding()), (3, "intset")),
            _ => panic!("not a set"),
        }
        match got[&b"stream"[..]].0.view() {
            ValueRef::Stream(s) => {
                assert_eq!((s.len(), s.entries_added), (2, 2));
                let values: Vec<Vec<u8>> = s
                    .range(kvik_store::types::stream::StreamId::MIN, kvik_store::types::stream::StreamId::MAX)
                    .map(|(_, f)| f[1].to_vec())
                    .collect();
                assert_eq!(values, [b"one".to_vec(), b"two".to_vec()]);
            }
            _ => panic!("not a stream"),
        }
    }

    #[test]
    fn valkey_slot_sizes_are_read_past() {
        let mut data = b"REDIS0011".to_vec();
        data.push(opcode::SELECTDB);
        data.push(0);
        data.extend_from_slice(&[opcode::SLOT_INFO, 5, 1, 0]);
        data.push(kind::STRING);
        crate::rdb::write::put_string(&mut data, b"k", false);
        crate::rdb::write::put_string(&mut data, b"v", false);
        data.push(opcode::EOF);
        data.extend_from_slice(&[0; 8]);
        assert_eq!(keys(&data).expect("loads").len(), 1);
    }

    #[test]
    fn a_refused_key_stops_the_load_with_its_reason() {
        let data = file(true);
        let err =
            load(&data, &LoadLimits::default(), |k| if k.db == 3 { Err("database out of range") } else { Ok(()) });
        assert_eq!(err.unwrap_err().error, RdbError::Bad("database out of range"));
    }
}
