//! RESPB/1: kvik's binary protocol, as `spec/respb.md` defines it.
//!
//! - [`detect`] classifies a new connection from its first byte;
//! - [`handshake`] builds and checks the optional `D3 C1` greeting;
//! - [`decode::RespbDecoder`] turns request frames into [`CommandArgs`](crate::CommandArgs);
//! - [`encode`] turns RESP-form commands into frames (binary layout or passthrough);
//! - [`reply`] writes replies through the [`ReplySink`](crate::ReplySink) interface and reads them back;
//! - [`layout`] / [`layouts`] hold the per-opcode payload layouts both directions walk.

pub mod decode;
pub mod encode;
pub mod float_text;
pub mod layout;
pub mod layouts;
pub mod reply;
pub mod reply_skip;
pub mod sample;

pub use decode::{DecodeError, DecodeErrorKind, Decoded, Frame, RespbDecoder, RespbLimits, UNAUTHENTICATED_MAX_FRAME};
pub use encode::{encode_request, Encoding};
pub use reply::{decode_reply, ReplyFrame, RespbReplyWriter};
pub use reply_skip::{skip_reply, SkippedReply};

/// Opcode prefix of module command frames: `[F000][mux][4B module<<16|cmd][payload]`.
pub const MODULE_PREFIX: u16 = 0xF000;
/// MUX_CREATE control frame: `[FF00][mux][2B target mux]`.
pub const MUX_CREATE: u16 = 0xFF00;
/// MUX_CLOSE control frame: `[FF01][mux][2B target mux]`.
pub const MUX_CLOSE: u16 = 0xFF01;
/// Passthrough frame: `[FFFF][mux][4B len][RESP text]`, one RESP command or reply.
pub const PASSTHROUGH: u16 = 0xFFFF;

/// First byte of the RESPB handshake.
pub const HANDSHAKE_MAGIC: [u8; 2] = [0xD3, 0xC1];
/// The protocol version this implementation speaks.
pub const VERSION: u8 = 1;

/// What a connection speaks, judged once from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    /// `0xD3`: a RESPB handshake follows.
    Handshake,
    /// `0x00`–`0x1F` but CR and LF, `0xF0`, `0xFF`: RESPB frames without a
    /// handshake.
    Respb,
    /// Anything else: RESP text (multibulk or inline).
    Resp,
}

/// Classify a connection by its first byte (design decision 1).
pub fn detect(first_byte: u8) -> Detected {
    match first_byte {
        0xD3 => Detected::Handshake,
        // A blank line before the first command is RESP: Redis skips it, and
        // no opcode starts with CR or LF (core opcodes start with 0x00-0x03).
        b'\r' | b'\n' => Detected::Resp,
        0x00..=0x1F | 0xF0 | 0xFF => Detected::Respb,
        _ => Detected::Resp,
    }
}

/// The `D3 C1 <ver> <flags>` greeting.
pub mod handshake {
    use super::{HANDSHAKE_MAGIC, VERSION};

    /// Length of both the greeting and the answer.
    pub const LEN: usize = 4;

    /// The client's greeting for `version` (no flags are defined; send 0).
    pub fn client_hello(version: u8) -> [u8; LEN] {
        [HANDSHAKE_MAGIC[0], HANDSHAKE_MAGIC[1], version, 0]
    }

    /// Outcome of reading a client's greeting.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Greeting {
        /// Fewer than four bytes so far.
        Incomplete,
        /// A version the server speaks: answer `reply`, then exchange frames.
        Accept {
            /// Bytes to send back.
            reply: [u8; LEN],
        },
        /// Not a greeting or an unknown version: send `reply` and close.
        Reject {
            /// Bytes to send back.
            reply: [u8; LEN],
        },
    }

    /// Server side: judge the first bytes of a connection that started with `0xD3`.
    pub fn read_greeting(buf: &[u8]) -> Greeting {
        let Some(g) = buf.get(..LEN) else {
            return Greeting::Incomplete;
        };
        // No flags are defined: a greeting that sets one asks for something
        // this version does not have, and is malformed (spec/respb.md, 2).
        if g[..2] == HANDSHAKE_MAGIC && g[2] == VERSION && g[3] == 0 {
            Greeting::Accept { reply: [HANDSHAKE_MAGIC[0], HANDSHAKE_MAGIC[1], VERSION, 0] }
        } else {
            Greeting::Reject { reply: [HANDSHAKE_MAGIC[0], HANDSHAKE_MAGIC[1], 0, 0] }
        }
    }

    /// Client side: true when the server's answer accepts the version.
    pub fn answer_accepts(answer: &[u8; LEN]) -> bool {
        answer[..2] == HANDSHAKE_MAGIC && answer[2] != 0
    }
}

/// Build a MUX_CREATE or MUX_CLOSE control frame.
pub fn control_frame(opcode: u16, mux: u16, target: u16, out: &mut Vec<u8>) {
    debug_assert!(opcode == MUX_CREATE || opcode == MUX_CLOSE);
    out.extend_from_slice(&opcode.to_be_bytes());
    out.extend_from_slice(&mux.to_be_bytes());
    out.extend_from_slice(&target.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_follows_the_first_byte() {
        assert_eq!(detect(0xD3), Detected::Handshake);
        for b in [0x00, 0x03, 0x1F, 0xF0, 0xFF] {
            assert_eq!(detect(b), Detected::Respb);
        }
        for b in [b'*', b'P', b'p', b' ', 0x20, 0x80, 0xFE, b'\r', b'\n'] {
            assert_eq!(detect(b), Detected::Resp);
        }
    }

    #[test]
    fn handshake_accepts_version_one_only() {
        use handshake::*;
        assert_eq!(read_greeting(&[0xD3, 0xC1]), Greeting::Incomplete);
        assert_eq!(read_greeting(&client_hello(1)), Greeting::Accept { reply: [0xD3, 0xC1, 1, 0] });
        assert_eq!(read_greeting(&client_hello(2)), Greeting::Reject { reply: [0xD3, 0xC1, 0, 0] });
        assert_eq!(read_greeting(&[0xD3, 0x00, 1, 0]), Greeting::Reject { reply: [0xD3, 0xC1, 0, 0] });
        assert_eq!(read_greeting(&[0xD3, 0xC1, 1, 0x01]), Greeting::Reject { reply: [0xD3, 0xC1, 0, 0] });
        assert!(answer_accepts(&[0xD3, 0xC1, 1, 0]));
        assert!(!answer_accepts(&[0xD3, 0xC1, 0, 0]));
    }
}

#[cfg(test)]
mod roundtrip_tests;
