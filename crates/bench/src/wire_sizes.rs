//! Bytes on the wire for a handful of typical requests and replies, in RESP
//! and RESPB/1, measured by running kvik-protocol's own encoders and reply
//! writers (`kvik-benchmark --wire-sizes`).
//!
//! The numbers are computed, not written down, so they follow the codec: if an
//! encoder changes (or a command starts going as passthrough), the table in
//! `bench/results/respb.md` changes with it. The unit tests pin a few of them
//! to sizes worked out by hand from `spec/respb.md`.

use std::fmt::Write;

use kvik_protocol::resp::command::write_command;
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::{encode_request, Encoding, RespbReplyWriter};
use kvik_protocol::ReplySink;

/// Key length used by every sample request (`key:000000000001`).
pub const KEY_LEN: usize = 16;
/// Value length of SET and of the GET / MGET replies.
pub const VALUE_LEN: usize = 64;
/// Length of list elements, hash values and sorted-set members.
pub const ELEMENT_LEN: usize = 16;

/// One request in both encodings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSize {
    /// What was encoded, as a reader would write it.
    pub name: String,
    /// `*N\r\n$len\r\n…` multibulk bytes.
    pub resp: usize,
    /// RESPB frame bytes, 4-byte header included.
    pub respb: usize,
    /// Whether RESPB carried it in its opcode's layout or as passthrough.
    pub encoding: Encoding,
}

/// One reply in the three encodings a kvik server writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplySize {
    pub name: String,
    pub resp2: usize,
    pub resp3: usize,
    /// RESPB frame bytes, 4-byte header included.
    pub respb: usize,
}

fn key(i: u32) -> Vec<u8> {
    format!("key:{i:012}").into_bytes()
}

fn element(i: u32) -> Vec<u8> {
    format!("element:{i:08}").into_bytes()
}

fn value() -> Vec<u8> {
    vec![b'v'; VALUE_LEN]
}

/// The sample requests, command name first.
pub fn sample_requests() -> Vec<(String, Vec<Vec<u8>>)> {
    let b = |s: &str| s.as_bytes().to_vec();
    vec![
        ("GET (3-byte key)".into(), vec![b("GET"), b("key")]),
        ("GET".into(), vec![b("GET"), key(1)]),
        (format!("SET ({VALUE_LEN}-byte value)"), vec![b("SET"), key(1), value()]),
        ("MGET 3 keys".into(), vec![b("MGET"), key(1), key(2), key(3)]),
        ("PING".into(), vec![b("PING")]),
        ("HGETALL".into(), vec![b("HGETALL"), key(1)]),
        ("LPUSH 3 elements".into(), vec![b("LPUSH"), key(1), element(1), element(2), element(3)]),
        ("ZADD one member (score 1.5)".into(), vec![b("ZADD"), key(1), b("1.5"), element(1)]),
    ]
}

/// Encode every sample request both ways.
pub fn request_sizes() -> Vec<RequestSize> {
    sample_requests()
        .into_iter()
        .map(|(name, args)| {
            let mut resp = Vec::new();
            write_command(&args, &mut resp);
            let mut respb = Vec::new();
            let encoding = encode_request(&args, 0, &mut respb);
            RequestSize { name, resp: resp.len(), respb: respb.len(), encoding }
        })
        .collect()
}

/// A reply written through the [`ReplySink`] interface, as command code writes it.
type WriteReply = fn(&mut dyn ReplySink);

fn write_get_hit(s: &mut dyn ReplySink) {
    s.bulk(&value());
}

fn write_null(s: &mut dyn ReplySink) {
    s.null();
}

fn write_ok(s: &mut dyn ReplySink) {
    s.simple(b"OK");
}

fn write_pong(s: &mut dyn ReplySink) {
    s.simple(b"PONG");
}

fn write_integer(s: &mut dyn ReplySink) {
    s.integer(3);
}

fn write_mget(s: &mut dyn ReplySink) {
    s.array(3);
    for _ in 0..3 {
        s.bulk(&value());
    }
}

fn write_hgetall(s: &mut dyn ReplySink) {
    s.map(3);
    for i in 1..=3 {
        s.bulk(format!("field{i}").as_bytes());
        s.bulk(&element(i));
    }
}

fn write_double(s: &mut dyn ReplySink) {
    s.double(1.5);
}

/// The sample replies and how to write each.
pub fn sample_replies() -> Vec<(String, WriteReply)> {
    vec![
        (format!("GET hit ({VALUE_LEN}-byte value)"), write_get_hit as WriteReply),
        ("GET miss (null)".into(), write_null),
        ("OK (SET)".into(), write_ok),
        ("PONG".into(), write_pong),
        ("integer 3 (LPUSH)".into(), write_integer),
        (format!("MGET of 3 ({VALUE_LEN}-byte values)"), write_mget),
        ("HGETALL of 3 fields (Map)".into(), write_hgetall),
        ("double 1.5 (ZSCORE)".into(), write_double),
    ]
}

/// Write every sample reply in RESP2, RESP3 and RESPB.
pub fn reply_sizes() -> Vec<ReplySize> {
    sample_replies()
        .into_iter()
        .map(|(name, write)| {
            let resp = |proto| {
                let mut out = Vec::new();
                write(&mut RespWriter::new(&mut out, proto));
                out.len()
            };
            let mut respb = Vec::new();
            write(&mut RespbReplyWriter::new(&mut respb, 0));
            ReplySize { name, resp2: resp(Protocol::Resp2), resp3: resp(Protocol::Resp3), respb: respb.len() }
        })
        .collect()
}

/// `+25.0%` when RESPB is 25% smaller than `base`, `-10.0%` when larger.
fn saving(base: usize, respb: usize) -> String {
    if base == 0 {
        return "n/a".into();
    }
    let pct = (base as f64 - respb as f64) * 100.0 / base as f64;
    format!("{pct:+.1}%")
}

/// Both tables as Markdown, with a line saying what the samples are.
pub fn markdown() -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Computed by `kvik-benchmark --wire-sizes` with kvik-protocol's encoders (RESP requests: \
         `resp::command::write_command`; RESPB requests: `respb::encode_request`; replies: \
         `RespWriter` in RESP2 / RESP3 and `RespbReplyWriter`). Keys are {KEY_LEN} bytes, \
         list elements, hash values and members {ELEMENT_LEN} bytes, values {VALUE_LEN} bytes. \
         RESPB sizes include the 4-byte frame header (opcode or reply code, mux id). \
         Saving = (RESP − RESPB) / RESP; negative means RESPB is larger."
    );
    s.push_str(
        "\n### Requests\n\n| request | RESP bytes | RESPB bytes | RESPB form | saving |\n|---|---:|---:|---|---:|\n",
    );
    for r in request_sizes() {
        let form = match r.encoding {
            Encoding::Binary => "binary layout",
            Encoding::Passthrough => "passthrough",
        };
        let _ = writeln!(s, "| {} | {} | {} | {} | {} |", r.name, r.resp, r.respb, form, saving(r.resp, r.respb));
    }
    s.push_str(
        "\n### Replies\n\n| reply | RESP2 bytes | RESP3 bytes | RESPB bytes | saving vs RESP2 | saving vs RESP3 |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for r in reply_sizes() {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            r.name,
            r.resp2,
            r.resp3,
            r.respb,
            saving(r.resp2, r.respb),
            saving(r.resp3, r.respb)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(name: &str) -> RequestSize {
        request_sizes().into_iter().find(|r| r.name.starts_with(name)).expect("sample request")
    }

    fn reply(name: &str) -> ReplySize {
        reply_sizes().into_iter().find(|r| r.name.starts_with(name)).expect("sample reply")
    }

    #[test]
    fn samples_have_the_stated_lengths() {
        assert_eq!(key(1).len(), KEY_LEN);
        assert_eq!(element(1).len(), ELEMENT_LEN);
        assert_eq!(value().len(), VALUE_LEN);
    }

    // Expected sizes below are worked out from spec/respb.md: a request frame
    // is [2B opcode][2B mux][payload] (section 3); s16 = [2B len][bytes],
    // s32 = [4B len][bytes], f64 = 8 bytes, flags and masks 1 byte, list =
    // [2B count] then items (section 4); opcode layouts from section 9.

    #[test]
    fn get_with_a_three_byte_key() {
        // GET = s16: 2 + 2 + (2 + 3).
        let r = request("GET (3-byte key)");
        assert_eq!(r.respb, 9);
        assert_eq!(r.encoding, Encoding::Binary);
        // *2\r\n $3\r\nGET\r\n $3\r\nkey\r\n
        assert_eq!(r.resp, 4 + 9 + 9);
    }

    #[test]
    fn set_with_a_sixteen_byte_key_and_a_64_byte_value() {
        // SET = s16 s32 flags: 4 + (2 + 16) + (4 + 64) + 1.
        let r = request("SET");
        assert_eq!(r.respb, 91);
        // *3\r\n $3\r\nSET\r\n $16\r\n<16>\r\n $64\r\n<64>\r\n
        assert_eq!(r.resp, 4 + 9 + (5 + 16 + 2) + (5 + 64 + 2));
    }

    #[test]
    fn ping_mget_and_zadd() {
        // PING = mask{0:s16}: header + an empty presence mask.
        assert_eq!(request("PING").respb, 4 + 1);
        // MGET = list(s16): 4 + 2 + 3 × (2 + 16).
        assert_eq!(request("MGET").respb, 4 + 2 + 3 * 18);
        // ZADD = s16 flags list(f64 s16): 4 + 18 + 1 + 2 + 8 + (2 + 16).
        let z = request("ZADD");
        assert_eq!(z.respb, 51);
        assert_eq!(z.encoding, Encoding::Binary);
    }

    #[test]
    fn every_sample_request_uses_its_binary_layout() {
        for r in request_sizes() {
            assert_eq!(r.encoding, Encoding::Binary, "{}", r.name);
        }
    }

    #[test]
    fn reply_sizes_match_the_spec() {
        // OK: 0x8000, mux, then 00 02 4F 4B (section 5).
        let ok = reply("OK");
        assert_eq!((ok.resp2, ok.resp3, ok.respb), (5, 5, 8));
        // Integer: header + 8-byte i64; RESP ":3\r\n".
        let int = reply("integer");
        assert_eq!((int.resp2, int.resp3, int.respb), (4, 4, 12));
        // Bulk: header + 4-byte length + 64 bytes; RESP "$64\r\n" + 64 + "\r\n".
        let hit = reply("GET hit");
        assert_eq!((hit.resp2, hit.resp3, hit.respb), (71, 71, 72));
        // One null, no payload; RESP2 $-1, RESP3 _.
        let miss = reply("GET miss");
        assert_eq!((miss.resp2, miss.resp3, miss.respb), (5, 3, 4));
        // Map of 3 pairs: header + 2-byte count + 3 × (tag + 4 + 6, tag + 4 + 16).
        let h = reply("HGETALL");
        assert_eq!(h.respb, 4 + 2 + 3 * (11 + 21));
        // RESP3 %3 / RESP2 *6, then $6 field1 and $16 element:…
        assert_eq!((h.resp2, h.resp3), (4 + 3 * (12 + 23), 4 + 3 * (12 + 23)));
    }

    #[test]
    fn markdown_lists_every_sample() {
        let md = markdown();
        for (name, _) in sample_requests() {
            assert!(md.contains(&format!("| {name} |")), "{name}");
        }
        for (name, _) in sample_replies() {
            assert!(md.contains(&format!("| {name} |")), "{name}");
        }
        assert!(md.contains("| GET (3-byte key) | 22 | 9 | binary layout | +59.1% |"), "{md}");
    }
}
