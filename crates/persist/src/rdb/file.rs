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
//! checksum as it goes. The loader reads a file of RDB version 1 to 10
//! from memory and hands each key to a callback; it checks the checksum
//! (unless the file says 0, as Redis does), and refuses what kvik cannot
//! hold (module values, function libraries) with a reason instead of
//! dropping it.

use std::io::{self, Write};

use kvik_store::types::{Value, ValueRef};

use super::read::Input;
use super::value::{read_value, write_value, LoadLimits};
use super::write::{put_int, put_len, put_ms, put_string};
use super::{kind, opcode, RdbError, RDB_VERSION};
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
        .filter(|v| (1..=RDB_VERSION).contains(v))
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
                opcode::MODULE_AUX => return Err(RdbError::Unsupported("module data")),
                opcode::FUNCTION2 | opcode::FUNCTION_PRE_GA => return Err(RdbError::Unsupported("function library")),
                kind::STRING..=kind::STREAM_LISTPACKS_2 => {
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
        assert_eq!(keys(b"REDIS0011\xff").map(|_| ()).unwrap_err().error, RdbError::Unsupported("RDB version"));
        assert!(keys(b"NOTREDIS0").is_err());
        let mut function = b"REDIS0010".to_vec();
        function.push(opcode::FUNCTION2);
        assert_eq!(keys(&function).unwrap_err().error, RdbError::Unsupported("function library"));
    }

    #[test]
    fn a_refused_key_stops_the_load_with_its_reason() {
        let data = file(true);
        let err =
            load(&data, &LoadLimits::default(), |k| if k.db == 3 { Err("database out of range") } else { Ok(()) });
        assert_eq!(err.unwrap_err().error, RdbError::Bad("database out of range"));
    }
}
