//! Building request bytes for a batch without allocating per request.
//!
//! Each logical client owns a [`Requests`]: the test's command encoded once
//! (RESP multibulk, inline text, or a RESPB frame on the client's mux id)
//! with the byte offsets of every `__rand_int__` in it. A batch is that
//! template copied `n` times into the connection's output buffer with fresh
//! 12-digit numbers written over the placeholders, as redis-benchmark does.
//!
//! One RESPB case cannot work that way: a placeholder that is a whole
//! numeric argument (ZADD's score with `-r`) is not a valid number, so the
//! encoder would fall back to a passthrough frame. There the arguments are
//! kept and re-encoded per request with the number written plainly (same
//! value, no leading zeros, so the binary layout applies), still into the
//! reused buffer.

use kvik_protocol::number::write_u64;
use kvik_protocol::resp::command::write_command;
use kvik_protocol::respb::layouts::layout_by_name;
use kvik_protocol::respb::{encode_request, Encoding};

use crate::args::Wire;
use crate::suite::PLACEHOLDER;

/// Digits written over a placeholder (`-r` is at most 10^12).
pub const DIGITS: usize = 12;

/// A small, fast generator (splitmix64); benchmark keys need spread, not secrecy.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Write `n` as exactly [`DIGITS`] zero-padded decimal digits into `out`.
pub fn write_padded(out: &mut [u8], mut n: u64) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// How the requests of one logical client are produced.
#[derive(Debug, Clone)]
pub struct Requests {
    template: Vec<u8>,
    holes: Vec<usize>,
    reencode: Option<Reencode>,
    keyspace: Option<u64>,
    rng: Rng,
    mux: u16,
}

/// Arguments re-encoded per request: (argument, `Some(offset)` for a padded
/// placeholder inside it, `None` for a whole-argument plain number).
#[derive(Debug, Clone)]
struct Reencode {
    args: Vec<Vec<u8>>,
    holes: Vec<(usize, Option<usize>)>,
}

fn placeholders(bytes: &[u8]) -> Vec<usize> {
    memchr::memmem::find_iter(bytes, PLACEHOLDER).collect()
}

impl Requests {
    /// Requests for `args` on `wire` (RESPB frames on channel `mux`); `inline`
    /// sends RESP as an inline command. Without `keyspace` the placeholders
    /// stay as they are, as redis-benchmark leaves them without `-r`.
    pub fn new(args: &[Vec<u8>], wire: Wire, inline: bool, mux: u16, keyspace: Option<u64>, seed: u64) -> Requests {
        let mut template = Vec::new();
        let encoding = match wire {
            Wire::Respb => encode_request(args, mux, &mut template),
            _ if inline => {
                template = args.join(&b' ');
                template.extend_from_slice(b"\r\n");
                Encoding::Binary
            }
            _ => {
                write_command(args, &mut template);
                Encoding::Binary
            }
        };
        let mut req = Requests { template, holes: Vec::new(), reencode: None, keyspace, rng: Rng::new(seed), mux };
        if keyspace.is_none() {
            return req;
        }
        let expected: usize = args.iter().map(|a| placeholders(a).len()).sum();
        if wire == Wire::Respb && encoding == Encoding::Passthrough {
            if let Some(re) = Reencode::for_numbers(args, mux) {
                req.reencode = Some(re);
                return req;
            }
        }
        let holes = placeholders(&req.template);
        if holes.len() == expected {
            req.holes = holes;
        } else {
            // The encoder moved or changed a placeholder: re-encode each time,
            // with every placeholder padded (the meaning RESP would send).
            let holes =
                args.iter().enumerate().flat_map(|(i, a)| placeholders(a).into_iter().map(move |o| (i, Some(o))));
            req.reencode = Some(Reencode { args: args.to_vec(), holes: holes.collect() });
        }
        req
    }

    /// Append `n` requests to `out`, each with fresh random numbers.
    pub fn append(&mut self, n: usize, out: &mut Vec<u8>) {
        let Some(keyspace) = self.keyspace else {
            for _ in 0..n {
                out.extend_from_slice(&self.template);
            }
            return;
        };
        if let Some(re) = &mut self.reencode {
            for _ in 0..n {
                re.fill(&mut self.rng, keyspace);
                encode_request(&re.args, self.mux, out);
            }
            return;
        }
        for _ in 0..n {
            let start = out.len();
            out.extend_from_slice(&self.template);
            for &h in &self.holes {
                let at = start + h;
                write_padded(&mut out[at..at + DIGITS], self.rng.below(keyspace));
            }
        }
    }

    /// True when requests are re-encoded one by one (see the module docs).
    pub fn reencodes(&self) -> bool {
        self.reencode.is_some()
    }
}

impl Reencode {
    /// When whole-argument placeholders written as plain numbers let the
    /// command take its binary layout, the plan for that.
    fn for_numbers(args: &[Vec<u8>], mux: u16) -> Option<Reencode> {
        layout_by_name(args.first()?)?;
        if !args.iter().any(|a| a.as_slice() == PLACEHOLDER) {
            return None;
        }
        let trial: Vec<&[u8]> =
            args.iter().map(|a| if a.as_slice() == PLACEHOLDER { b"1" } else { a.as_slice() }).collect();
        if encode_request(&trial, mux, &mut Vec::new()) != Encoding::Binary {
            return None;
        }
        let mut holes = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if a.as_slice() == PLACEHOLDER {
                holes.push((i, None));
            } else {
                holes.extend(placeholders(a).into_iter().map(|o| (i, Some(o))));
            }
        }
        let mut args = args.to_vec();
        for a in &mut args {
            a.reserve(DIGITS);
        }
        Some(Reencode { args, holes })
    }

    fn fill(&mut self, rng: &mut Rng, keyspace: u64) {
        for &(i, at) in &self.holes {
            let n = rng.below(keyspace);
            let arg = &mut self.args[i];
            match at {
                Some(o) => write_padded(&mut arg[o..o + DIGITS], n),
                None => {
                    arg.clear();
                    write_u64(arg, n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::resp::reply_parser::ReplyLimits;
    use kvik_protocol::respb::{RespbDecoder, RespbLimits};

    fn args(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    /// Split RESP multibulk requests back into their arguments.
    fn resp_commands(mut bytes: &[u8]) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let v = kvik_protocol::resp::reply_parser::parse_reply(bytes, &ReplyLimits::DEFAULT).unwrap().unwrap();
            bytes = &bytes[v.1..];
            let kvik_protocol::Value::Array(items) = v.0 else { panic!() };
            out.push(
                items
                    .into_iter()
                    .map(|i| match i {
                        kvik_protocol::Value::Bulk(b) => String::from_utf8(b).unwrap(),
                        other => panic!("{other:?}"),
                    })
                    .collect(),
            );
        }
        out
    }

    #[test]
    fn without_r_the_placeholder_stays() {
        let mut r = Requests::new(&args(&["SET", "key:__rand_int__", "x"]), Wire::Resp2, false, 0, None, 1);
        let mut out = Vec::new();
        r.append(2, &mut out);
        assert_eq!(resp_commands(&out), vec![vec!["SET", "key:__rand_int__", "x"]; 2]);
    }

    #[test]
    fn with_r_every_placeholder_gets_12_digits_in_range() {
        let mut r = Requests::new(
            &args(&["MSET", "key:__rand_int__", "a", "key:__rand_int__", "b"]),
            Wire::Resp2,
            false,
            0,
            Some(10),
            7,
        );
        let mut out = Vec::new();
        r.append(200, &mut out);
        let cmds = resp_commands(&out);
        assert_eq!(cmds.len(), 200);
        let mut seen = std::collections::HashSet::new();
        for c in &cmds {
            for k in [&c[1], &c[3]] {
                let digits = k.strip_prefix("key:").unwrap();
                assert_eq!(digits.len(), 12);
                let n: u64 = digits.parse().unwrap();
                assert!(n < 10);
                seen.insert(n);
            }
        }
        assert_eq!(seen.len(), 10, "all of 0..10 drawn in 400 tries");
    }

    #[test]
    fn inline_requests_are_text_lines() {
        let mut r = Requests::new(&args(&["PING"]), Wire::Resp2, true, 0, Some(5), 1);
        let mut out = Vec::new();
        r.append(3, &mut out);
        assert_eq!(out, b"PING\r\nPING\r\nPING\r\n");
    }

    fn respb_commands(bytes: &[u8]) -> Vec<(u16, Vec<String>)> {
        use kvik_protocol::respb::{Decoded, Frame};
        let mut d = RespbDecoder::new(RespbLimits::default());
        let mut args = kvik_protocol::CommandArgs::new();
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < bytes.len() {
            let input = &bytes[pos..];
            let Decoded::Frame { frame: Frame::Command { mux }, consumed } = d.decode(input, &mut args).unwrap() else {
                panic!("not a command frame")
            };
            out.push((mux, args.iter(input).map(|a| String::from_utf8_lossy(a).into_owned()).collect()));
            pos += consumed;
        }
        out
    }

    #[test]
    fn respb_templates_carry_the_mux_and_fresh_keys() {
        let mut r = Requests::new(&args(&["GET", "key:__rand_int__"]), Wire::Respb, false, 9, Some(1000), 3);
        assert!(!r.reencodes());
        let mut out = Vec::new();
        r.append(4, &mut out);
        let cmds = respb_commands(&out);
        assert_eq!(cmds.len(), 4);
        for (mux, c) in cmds {
            assert_eq!(mux, 9);
            assert_eq!(c[0].to_ascii_uppercase(), "GET");
            assert!(c[1].starts_with("key:") && c[1].len() == 16);
        }
    }

    #[test]
    fn respb_zadd_scores_are_plain_numbers_in_the_binary_layout() {
        let mut r = Requests::new(
            &args(&["ZADD", "z", "__rand_int__", "element:__rand_int__"]),
            Wire::Respb,
            false,
            2,
            Some(50),
            3,
        );
        assert!(r.reencodes());
        let mut out = Vec::new();
        r.append(20, &mut out);
        // Binary frames (not passthrough 0xFFFF).
        assert_ne!(&out[..2], &[0xFF, 0xFF]);
        for (mux, c) in respb_commands(&out) {
            assert_eq!(mux, 2);
            let score: f64 = c[2].parse().unwrap();
            assert!((0.0..50.0).contains(&score));
            assert!(c[3].starts_with("element:") && c[3].len() == 20);
        }
    }

    #[test]
    fn padded_digits_and_range() {
        let mut buf = [0u8; DIGITS];
        write_padded(&mut buf, 42);
        assert_eq!(&buf, b"000000000042");
        let mut rng = Rng::new(0);
        assert!((0..1000).all(|_| rng.below(3) < 3));
    }
}
