//! Sample RESPB frames generated from the layouts, for property tests, fuzz
//! seeds, benchmarks and the published test vectors.
//!
//! Every frame produced here is *canonical*: decoding it and encoding the
//! resulting arguments gives back the same bytes.

use super::layout::{Bit, Effect, Field, Layout, Opt};

/// Small deterministic generator (xorshift64*), so failures reproduce from the seed.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform-ish value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
    /// True once in `one_in` calls on average.
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// Data bytes that never spell a token (tokens have no ':').
fn data(rng: &mut Rng, style: Style) -> Vec<u8> {
    match style {
        Style::Arbitrary => {
            let len = rng.below(12) as usize;
            let mut v = b"d:".to_vec();
            v.extend((0..len).map(|_| rng.next_u64() as u8));
            v
        }
        Style::Readable => {
            const WORDS: [&str; 8] = ["key", "value", "member", "field", "user", "item", "a", "b"];
            format!("{}:{}", WORDS[rng.below(8) as usize], rng.below(100)).into_bytes()
        }
    }
}

/// What the generated data looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Any bytes, any numbers: for property tests and fuzz seeds.
    Arbitrary,
    /// Short words and small numbers: for published test vectors.
    Readable,
}

fn random_f64(rng: &mut Rng) -> f64 {
    match rng.below(6) {
        0 => f64::INFINITY,
        1 => f64::NEG_INFINITY,
        2 => rng.below(1000) as f64,
        3 => (rng.below(100_000) as f64) / 64.0 - 700.0,
        _ => loop {
            let x = f64::from_bits(rng.next_u64());
            if !x.is_nan() {
                break x;
            }
        },
    }
}

fn random_i64(rng: &mut Rng) -> i64 {
    match rng.below(3) {
        0 => rng.below(100) as i64 - 50,
        1 => i64::MIN + rng.below(3) as i64,
        _ => rng.next_u64() as i64,
    }
}

/// Build a random frame that is canonical for `layout`: one the encoder would
/// produce for the arguments the decoder yields.
pub fn random_frame(layout: &Layout, mux: u16, rng: &mut Rng, style: Style) -> Vec<u8> {
    frame_with_bits(layout, mux, rng, style, None, None)
}

/// Like [`random_frame`], with chosen flags and presence-mask bits.
///
/// The mask is completed so the frame stays canonical: paired fields are
/// added to their partners, and a token-less field brings the token-less
/// fields before it.
pub fn frame_with_bits(
    layout: &Layout,
    mux: u16,
    rng: &mut Rng,
    style: Style,
    flags: Option<u8>,
    mask: Option<u8>,
) -> Vec<u8> {
    let mut out = Vec::new();
    layout.write_header(mux, &mut out);
    // Choose the flags byte first: it decides how Number64 fields read.
    let wanted_flags = flags;
    let flags = layout.fields.iter().find_map(|f| if let Field::Flags(b) = f { Some(*b) } else { None });
    let flag_byte = match (flags, wanted_flags) {
        (Some(bits), Some(b)) => b & (u8::MAX >> (8 - bits.len().min(8))),
        (Some(bits), None) => random_flag_byte(bits, rng),
        (None, _) => 0,
    };
    let float = flags.is_some_and(|bits| {
        bits.iter().enumerate().any(|(i, b)| b.effect == Effect::FloatFields && flag_byte & (1 << i) != 0)
    });
    let mut g = Gen { rng, out, last_count: 0, float, flag_byte, style, mask };
    for f in layout.fields {
        g.field(f);
    }
    g.out
}

fn random_flag_byte(bits: &[Bit], rng: &mut Rng) -> u8 {
    let mut b = 0u8;
    for (i, _) in bits.iter().enumerate() {
        if rng.chance(3) {
            b |= 1 << i;
        }
    }
    b
}

/// Close a requested mask over pairs and the token-less prefix rule.
fn complete_mask(want: u8, opts: &[Opt]) -> u8 {
    let n = opts.len().min(8);
    let mut m = want & (u8::MAX >> (8 - n));
    for _ in 0..n {
        for i in 0..n {
            let set = m & (1 << i) != 0;
            if set && opts[i].with_previous && i > 0 {
                m |= 1 << (i - 1);
            }
            if set && i + 1 < n && opts[i + 1].with_previous {
                m |= 1 << (i + 1);
            }
            if set && opts[i].token.is_empty() && !opts[i].with_previous {
                for (j, o) in opts.iter().enumerate().take(i) {
                    if o.token.is_empty() && !o.with_previous {
                        m |= 1 << j;
                    }
                }
            }
        }
    }
    m
}

struct Gen<'r> {
    rng: &'r mut Rng,
    style: Style,
    mask: Option<u8>,
    out: Vec<u8>,
    last_count: usize,
    float: bool,
    flag_byte: u8,
}

impl Gen<'_> {
    fn bytes2(&mut self, b: &[u8]) {
        self.out.extend_from_slice(&(b.len() as u16).to_be_bytes());
        self.out.extend_from_slice(b);
    }

    fn field(&mut self, f: &Field) {
        match *f {
            Field::Bytes2 => {
                let d = data(self.rng, self.style);
                self.bytes2(&d);
            }
            Field::Bytes4 => {
                let d = data(self.rng, self.style);
                self.out.extend_from_slice(&(d.len() as u32).to_be_bytes());
                self.out.extend_from_slice(&d);
            }
            Field::Int64 => {
                let n = if self.style == Style::Readable { self.rng.below(100) as i64 } else { random_i64(self.rng) };
                self.out.extend_from_slice(&n.to_be_bytes());
            }
            Field::Uint64 => {
                let n = if self.style == Style::Readable {
                    self.rng.below(100)
                } else {
                    self.rng.next_u64() >> self.rng.below(64)
                };
                self.out.extend_from_slice(&n.to_be_bytes());
            }
            Field::Float64 => {
                let x =
                    if self.style == Style::Readable { self.rng.below(40) as f64 / 4.0 } else { random_f64(self.rng) };
                self.out.extend_from_slice(&x.to_bits().to_be_bytes());
            }
            Field::Number64 => {
                let raw = match (self.float, self.style) {
                    (true, Style::Readable) => (self.rng.below(40) as f64 / 4.0).to_bits(),
                    (true, Style::Arbitrary) => random_f64(self.rng).to_bits(),
                    (false, Style::Readable) => self.rng.below(20),
                    (false, Style::Arbitrary) => random_i64(self.rng) as u64,
                };
                self.out.extend_from_slice(&raw.to_be_bytes());
            }
            Field::Uint16 | Field::Int16 => {
                let n = if self.style == Style::Readable {
                    self.rng.below(16) as u16
                } else {
                    self.rng.below(70_000) as u16
                };
                self.out.extend_from_slice(&n.to_be_bytes());
            }
            Field::Uint8 => self.out.push(if self.style == Style::Readable {
                self.rng.below(2) as u8
            } else {
                self.rng.next_u64() as u8
            }),
            Field::Token(_) => {}
            Field::Choice(alts) => {
                let i = self.rng.below(alts.len() as u64) as usize;
                self.out.push(i as u8);
                for f in alts[i].fields {
                    self.field(f);
                }
            }
            Field::OptToken(tokens) => self.out.push(self.rng.below(tokens.len() as u64 + 1) as u8),
            Field::Bool(_) => self.out.push(self.rng.below(2) as u8),
            Field::List(l) => {
                let n = self.rng.below(4) as usize;
                self.out.extend_from_slice(&(n as u16).to_be_bytes());
                self.last_count = n;
                for _ in 0..n {
                    for f in l.item {
                        self.field(f);
                    }
                }
            }
            Field::Weights => {
                for _ in 0..self.last_count {
                    self.field(&Field::Float64);
                }
            }
            Field::StreamPairs => {
                let n = self.rng.below(3) as usize + 1;
                self.out.extend_from_slice(&(n as u16).to_be_bytes());
                for _ in 0..2 * n {
                    self.field(&Field::Bytes2);
                }
            }
            Field::Flags(bits) => {
                self.out.push(self.flag_byte);
                for (i, bit) in bits.iter().enumerate() {
                    if self.flag_byte & (1 << i) != 0 && matches!(bit.effect, Effect::Inline | Effect::FloatFields) {
                        for f in bit.fields {
                            self.field(f);
                        }
                    }
                }
            }
            Field::Mask(opts) => {
                // Token-less options are set only as a prefix of the token-less ones,
                // since that is the only way RESP can tell them apart.
                let mut m = 0u8;
                let mut tokenless_open = true;
                for (i, o) in opts.iter().enumerate() {
                    let set = if o.with_previous {
                        i > 0 && m & (1 << (i - 1)) != 0
                    } else if o.token.is_empty() {
                        let s = tokenless_open && self.rng.chance(2);
                        tokenless_open &= s;
                        s
                    } else {
                        self.rng.chance(2)
                    };
                    if set {
                        m |= 1 << i;
                    }
                }
                if let Some(want) = self.mask {
                    m = complete_mask(want, opts);
                }
                self.out.push(m);
                for (i, o) in opts.iter().enumerate() {
                    if m & (1 << i) != 0 {
                        self.field(&o.field);
                    }
                }
            }
            Field::Rest => {
                let n = self.rng.below(4) as usize;
                self.out.extend_from_slice(&(n as u16).to_be_bytes());
                for _ in 0..n {
                    let d = if self.rng.chance(4) { b"NX".to_vec() } else { data(self.rng, self.style) };
                    self.out.extend_from_slice(&(d.len() as u32).to_be_bytes());
                    self.out.extend_from_slice(&d);
                }
            }
        }
    }
}
