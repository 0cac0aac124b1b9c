//! HyperLogLog counters stored in string values, in Redis's format.
//!
//! Redis keeps a HyperLogLog in a plain string: a 16-byte header (`HYLL`,
//! the encoding, three unused bytes, an 8-byte cached cardinality whose top
//! bit marks it stale) followed by 16384 six-bit registers, either packed
//! (`dense`, 12288 bytes) or run-length coded (`sparse`, a few bytes for
//! small sets). kvik uses the same format, the same hash (MurmurHash64A,
//! seed `0xadc83b19`) and the same estimator, so `PFCOUNT` gives Redis's
//! numbers exactly, `PFADD` reports the same changes, and the strings can be
//! moved between kvik and Redis with `GET`/`SET`.
//!
//! Sparse opcodes: `00xxxxxx` = a run of x+1 zero registers; `01xxxxxx
//! yyyyyyyy` = a run of (x<<8|y)+1 zero registers; `1vvvvvxx` = a run of x+1
//! registers of value v+1. A register above 32, or a sparse form longer than
//! `hll-sparse-max-bytes`, turns the string dense for good.

/// Bits of the hash that pick a register.
const P: u32 = 14;
/// Number of registers.
pub const REGISTERS: usize = 1 << P;
/// Bits of the hash left for the run of zeros.
const Q: u32 = 64 - P;
/// Bits per dense register.
const BITS: usize = 6;
/// Largest register value.
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Header bytes before the registers.
pub const HDR_SIZE: usize = 16;
/// Length of a dense HyperLogLog.
pub const DENSE_SIZE: usize = HDR_SIZE + (REGISTERS * BITS).div_ceil(8);
/// Encoding byte of the dense form.
const DENSE: u8 = 0;
/// Encoding byte of the sparse form.
const SPARSE: u8 = 1;
/// Largest value a sparse VAL opcode holds.
const VAL_MAX_VALUE: u8 = 32;
/// Longest run a sparse VAL opcode covers.
const VAL_MAX_LEN: usize = 4;
/// Longest run a one-byte ZERO opcode covers.
const ZERO_MAX_LEN: usize = 64;
/// Longest run a two-byte XZERO opcode covers.
const XZERO_MAX_LEN: usize = 16384;
/// Hash seed Redis uses for HyperLogLog elements.
const SEED: u64 = 0xadc8_3b19;

/// Redis's reply for a string that is not a HyperLogLog.
pub const NOT_HLL: &[u8] = b"WRONGTYPE Key is not a valid HyperLogLog string value.";
/// Redis's reply for a HyperLogLog whose registers do not add up.
pub const CORRUPT: &[u8] = b"INVALIDOBJ Corrupted HLL object detected";

/// A HyperLogLog string whose sparse opcodes do not cover exactly the
/// 16384 registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("corrupted HyperLogLog")
    }
}

impl std::error::Error for Corrupt {}

/// MurmurHash64A over `data` (little-endian blocks), as Redis computes it.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().unwrap_or([0; 8]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `element` updates and the value it offers (the position of
/// the first set bit in the rest of its hash, 1..=51).
fn register_and_value(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// A new, empty HyperLogLog: sparse, one XZERO run over every register, a
/// valid cached cardinality of 0.
pub fn new_sparse() -> Vec<u8> {
    let mut s = header(SPARSE);
    push_zero_run(&mut s, REGISTERS);
    s
}

fn header(encoding: u8) -> Vec<u8> {
    let mut s = Vec::with_capacity(HDR_SIZE + 8);
    s.extend_from_slice(b"HYLL");
    s.extend_from_slice(&[encoding, 0, 0, 0]);
    s.extend_from_slice(&[0; 8]);
    s
}

/// True when `s` is a HyperLogLog Redis would accept: magic, a known
/// encoding, and for the dense one the exact length.
pub fn is_valid(s: &[u8]) -> bool {
    s.len() >= HDR_SIZE && &s[..4] == b"HYLL" && (s[4] == SPARSE || (s[4] == DENSE && s.len() == DENSE_SIZE))
}

/// Mark the cached cardinality stale.
pub fn invalidate_cache(s: &mut [u8]) {
    s[15] |= 0x80;
}

/// The cached cardinality, if still valid.
pub fn cached_count(s: &[u8]) -> Option<u64> {
    let card = u64::from_le_bytes(s[8..16].try_into().ok()?);
    (s[15] & 0x80 == 0).then_some(card)
}

/// Store `card` as the cached cardinality.
pub fn store_count(s: &mut [u8], card: u64) {
    s[8..16].copy_from_slice(&card.to_le_bytes());
}

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u16::from(regs[byte]);
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 | b1 << 8) >> fb) as u8) & REGISTER_MAX
}

fn dense_set(regs: &mut [u8], i: usize, v: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let mask = u16::from(REGISTER_MAX) << fb;
    let bits = u16::from(v) << fb;
    regs[byte] = (regs[byte] & !(mask as u8)) | bits as u8;
    if fb > 8 - BITS {
        let hi = &mut regs[byte + 1];
        *hi = (*hi & !((mask >> 8) as u8)) | (bits >> 8) as u8;
    }
}

/// One sparse opcode: a run of `len` registers of value `value` (0 for the
/// zero opcodes), `bytes` long.
#[derive(Debug, Clone, Copy)]
struct Op {
    value: u8,
    len: usize,
    bytes: usize,
}

fn read_op(s: &[u8], at: usize) -> Option<Op> {
    let b = *s.get(at)?;
    Some(if b & 0x80 != 0 {
        Op { value: ((b >> 2) & 0x1f) + 1, len: usize::from(b & 3) + 1, bytes: 1 }
    } else if b & 0x40 != 0 {
        // A two-byte opcode cut short by the end of the string reads the
        // byte after it as 0, as Redis reads its string's terminating NUL.
        let low = s.get(at + 1).copied().unwrap_or(0);
        Op { value: 0, len: (usize::from(b & 0x3f) << 8 | usize::from(low)) + 1, bytes: 2 }
    } else {
        Op { value: 0, len: usize::from(b & 0x3f) + 1, bytes: 1 }
    })
}

fn val_op(value: u8, len: usize) -> u8 {
    debug_assert!((1..=VAL_MAX_VALUE).contains(&value) && (1..=VAL_MAX_LEN).contains(&len));
    0x80 | (value - 1) << 2 | (len - 1) as u8
}

/// Append opcodes for a run of `len` zero registers (one or two bytes per
/// opcode, the short form when it is enough).
fn push_zero_run(out: &mut Vec<u8>, mut len: usize) {
    while len > 0 {
        let run = len.min(XZERO_MAX_LEN);
        if run > ZERO_MAX_LEN {
            let l = run - 1;
            out.push(0x40 | (l >> 8) as u8);
            out.push((l & 0xff) as u8);
        } else {
            out.push((run - 1) as u8);
        }
        len -= run;
    }
}

/// Every register of `s` in order, as runs of (value, length).
fn runs(s: &[u8]) -> Result<Vec<(u8, usize)>, Corrupt> {
    let mut out = Vec::new();
    if s[4] == DENSE {
        let regs = &s[HDR_SIZE..];
        out.extend((0..REGISTERS).map(|i| (dense_get(regs, i), 1)));
        return Ok(out);
    }
    let mut at = HDR_SIZE;
    let mut covered = 0;
    while at < s.len() {
        let op = read_op(s, at).ok_or(Corrupt)?;
        out.push((op.value, op.len));
        covered += op.len;
        at += op.bytes;
    }
    if covered != REGISTERS {
        return Err(Corrupt);
    }
    Ok(out)
}

/// Raise every register of `max` to at least the register of `s` (PFMERGE,
/// multi-key PFCOUNT).
pub fn merge_into(max: &mut [u8; REGISTERS], s: &[u8]) -> Result<(), Corrupt> {
    let mut i = 0;
    for (value, len) in runs(s)? {
        for m in &mut max[i..i + len] {
            *m = (*m).max(value);
        }
        i += len;
    }
    Ok(())
}

/// The registers of `s`, one byte each.
pub fn registers(s: &[u8]) -> Result<[u8; REGISTERS], Corrupt> {
    let mut max = [0u8; REGISTERS];
    merge_into(&mut max, s)?;
    Ok(max)
}

/// Turn a sparse HyperLogLog dense, keeping its header (and cached count).
pub fn to_dense(s: &mut Vec<u8>) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        return Ok(());
    }
    let regs = registers(s)?;
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR_SIZE].copy_from_slice(&s[..HDR_SIZE]);
    dense[4] = DENSE;
    for (i, &v) in regs.iter().enumerate() {
        if v != 0 {
            dense_set(&mut dense[HDR_SIZE..], i, v);
        }
    }
    *s = dense;
    Ok(())
}

/// Add `element`; true when a register changed. `sparse_max_bytes` is
/// `hll-sparse-max-bytes`.
pub fn add(s: &mut Vec<u8>, element: &[u8], sparse_max_bytes: usize) -> Result<bool, Corrupt> {
    let (index, value) = register_and_value(element);
    set_register(s, index, value, sparse_max_bytes)
}

/// Raise register `index` to `value`; true when it changed.
pub fn set_register(s: &mut Vec<u8>, index: usize, value: u8, sparse_max_bytes: usize) -> Result<bool, Corrupt> {
    if s[4] == SPARSE {
        match sparse_set(s, index, value, sparse_max_bytes)? {
            SparseSet::Done(changed) => return Ok(changed),
            SparseSet::NeedsDense => to_dense(s)?,
        }
    }
    let regs = &mut s[HDR_SIZE..];
    if dense_get(regs, index) < value {
        dense_set(regs, index, value);
        return Ok(true);
    }
    Ok(false)
}

enum SparseSet {
    Done(bool),
    NeedsDense,
}

/// Update one register of a sparse string in place, splitting the opcode
/// that covers it, then merging equal neighbours; Redis's exact steps, so the
/// bytes come out as Redis's do.
fn sparse_set(s: &mut Vec<u8>, index: usize, value: u8, max_bytes: usize) -> Result<SparseSet, Corrupt> {
    if value > VAL_MAX_VALUE {
        return Ok(SparseSet::NeedsDense);
    }
    // Find the opcode covering `index`, its first register and the one before it.
    let (mut at, mut first, mut prev) = (HDR_SIZE, 0usize, None);
    let op = loop {
        let op = read_op(s, at).ok_or(Corrupt)?;
        if index < first + op.len {
            break op;
        }
        prev = Some(at);
        at += op.bytes;
        first += op.len;
    };
    let last = first + op.len - 1;
    if op.value != 0 && op.value >= value {
        return Ok(SparseSet::Done(false));
    }
    let mut seq: Vec<u8> = Vec::with_capacity(5);
    if op.len == 1 {
        seq.push(val_op(value, 1));
    } else if op.value == 0 {
        push_zero_run(&mut seq, index - first);
        seq.push(val_op(value, 1));
        push_zero_run(&mut seq, last - index);
    } else {
        if index != first {
            seq.push(val_op(op.value, index - first));
        }
        seq.push(val_op(value, 1));
        if index != last {
            seq.push(val_op(op.value, last - index));
        }
    }
    if seq.len() > op.bytes && s.len() + seq.len() - op.bytes > max_bytes {
        return Ok(SparseSet::NeedsDense);
    }
    // An opcode cut short by the end of the string still counts as its
    // full length, so what it is replaced by loses as many bytes off the
    // end, as Redis's update of such a string does.
    let new_len = s.len() + seq.len() - op.bytes;
    let end = (at + op.bytes).min(s.len());
    s.splice(at..end, seq);
    s.truncate(new_len);
    merge_neighbours(s, prev.unwrap_or(HDR_SIZE));
    invalidate_cache(s);
    Ok(SparseSet::Done(true))
}

/// Merge adjacent VAL opcodes of equal value over up to five opcodes from `at`.
fn merge_neighbours(s: &mut Vec<u8>, mut at: usize) {
    let mut budget = 5;
    while at < s.len() && budget > 0 {
        budget -= 1;
        let Some(op) = read_op(s, at) else { return };
        if op.value == 0 {
            at += op.bytes;
            continue;
        }
        if let Some(next) = read_op(s, at + 1).filter(|n| n.value == op.value && n.bytes == 1) {
            let len = op.len + next.len;
            if len <= VAL_MAX_LEN {
                s[at + 1] = val_op(op.value, len);
                s.remove(at);
                continue;
            }
        }
        at += 1;
    }
}

/// The estimate for registers described by `histogram` (how many registers
/// hold each value): Ertl's improved estimator, as Redis computes it.
fn estimate(histogram: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - f64::from(histogram[q + 1])) / m);
    for j in (1..=q).rev() {
        z += f64::from(histogram[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate of a HyperLogLog string (ignoring its cache).
pub fn count(s: &[u8]) -> Result<u64, Corrupt> {
    let mut histogram = [0u32; 64];
    for (value, len) in runs(s)? {
        histogram[usize::from(value)] += len as u32;
    }
    Ok(estimate(&histogram))
}

/// The cardinality estimate of raw registers (multi-key `PFCOUNT`).
pub fn count_registers(regs: &[u8; REGISTERS]) -> u64 {
    let mut histogram = [0u32; 64];
    for &v in regs {
        histogram[usize::from(v & REGISTER_MAX)] += 1;
    }
    estimate(&histogram)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
    }

    /// Add `elements` one command at a time, as a client would, then count
    /// and cache as a single-key `PFCOUNT` does.
    fn build(elements: impl Iterator<Item = String>) -> (Vec<u8>, u64) {
        let mut s = new_sparse();
        for e in elements {
            if add(&mut s, e.as_bytes(), 3000).unwrap() {
                invalidate_cache(&mut s);
            }
        }
        invalidate_cache(&mut s);
        let n = count(&s).unwrap();
        store_count(&mut s, n);
        (s, n)
    }

    /// The bytes and counts below were read from redis-server 7.0 after the
    /// same commands, so the format, hash, sparse updates and estimator all
    /// match Redis's.
    #[test]
    fn strings_and_counts_match_redis_byte_for_byte() {
        let (s, n) = build(["a", "b", "c", "foo", "bar"].iter().map(|e| e.to_string()));
        assert_eq!(n, 5);
        let hex: String = s.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "48594c4c0100000005000000000000005cb390443e804621804a8e844bfb80425a");
        let (s, n) = build((0..300).map(|i| format!("x{i}")));
        assert_eq!((n, s.len(), fnv1a(&s)), (299, 688, 0x9b6a_de63_54d8_543d));
        let (d, n) = build((0..5000).map(|i| format!("e{i}")));
        assert_eq!((n, d.len(), fnv1a(&d)), (4968, DENSE_SIZE, 0x9219_c5a2_921d_b657));
        let mut max = registers(&d).unwrap();
        merge_into(&mut max, &s).unwrap();
        assert_eq!(count_registers(&max), 5263);
    }

    #[test]
    fn an_empty_counter_is_one_xzero_run() {
        let s = new_sparse();
        assert_eq!(s.len(), HDR_SIZE + 2);
        assert_eq!(&s[HDR_SIZE..], [0x7f, 0xff]);
        assert!(is_valid(&s));
        assert_eq!(cached_count(&s), Some(0));
        assert_eq!(count(&s), Ok(0));
    }

    #[test]
    fn dense_registers_round_trip() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR_SIZE];
        for i in 0..REGISTERS {
            dense_set(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8, "register {i}");
        }
    }

    #[test]
    fn sparse_and_dense_agree_and_stay_within_the_error_bound() {
        let mut sparse = new_sparse();
        let mut dense = new_sparse();
        to_dense(&mut dense).unwrap();
        for i in 0..20_000u32 {
            let e = format!("element:{i}");
            let a = add(&mut sparse, e.as_bytes(), 3000).unwrap();
            let b = add(&mut dense, e.as_bytes(), 3000).unwrap();
            assert_eq!(a, b, "element {i}");
        }
        assert_eq!(sparse[4], DENSE, "grew past hll-sparse-max-bytes");
        assert_eq!(registers(&sparse).unwrap(), registers(&dense).unwrap());
        let n = count(&dense).unwrap() as f64;
        assert!((n - 20_000.0).abs() / 20_000.0 < 0.03, "{n}");
    }

    #[test]
    fn small_sets_stay_sparse_and_count_exactly_enough() {
        let mut s = new_sparse();
        let mut changed = 0;
        for i in 0..100u32 {
            changed += usize::from(add(&mut s, format!("{i}").as_bytes(), 3000).unwrap());
        }
        assert_eq!(s[4], SPARSE);
        assert!(changed >= 95);
        assert!(!add(&mut s, b"7", 3000).unwrap());
        let n = count(&s).unwrap();
        assert!((98..=102).contains(&n), "{n}");
        assert_eq!(cached_count(&s), None);
        let mut bad = s.clone();
        bad.truncate(bad.len() - 1);
        assert!(count(&bad).is_err() || count(&bad) != Ok(n));
    }

    #[test]
    fn validity_checks() {
        assert!(!is_valid(b"HYLL"));
        let mut s = new_sparse();
        s[4] = 2;
        assert!(!is_valid(&s));
        let mut d = new_sparse();
        to_dense(&mut d).unwrap();
        assert!(is_valid(&d));
        d.push(0);
        assert!(!is_valid(&d));
    }
}
