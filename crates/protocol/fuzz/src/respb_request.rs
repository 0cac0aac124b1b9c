//! RESPB request decoding over a stream of frames.
//!
//! For each frame: the decoder never reads past the frame (bytes after it,
//! whatever they are, change nothing), every shorter prefix asks for more
//! bytes, and a decoded command encodes back to a frame that decodes to the
//! same arguments.

use kvik_protocol::respb::{
    control_frame, encode_request, DecodeError, Decoded, Encoding, Frame, RespbDecoder, RespbLimits, MUX_CLOSE,
    MUX_CREATE, PASSTHROUGH,
};
use kvik_protocol::CommandArgs;

use crate::resp_reply::prefixes;

/// Appended after a frame to show the decoder does not look past it.
const GARBAGE: &[u8] = &[0xFF, 0xFF, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, b'*', b'1', b'\r', b'\n', 0x00];

/// Everything observable about one decode call.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Frame { frame: Frame, consumed: usize, args: Vec<Vec<u8>> },
    NeedMore,
    Error(DecodeError),
}

fn decode(decoder: &mut RespbDecoder, buf: &[u8], args: &mut CommandArgs) -> Seen {
    match decoder.decode(buf, args) {
        Ok(Decoded::Frame { frame, consumed }) => {
            assert!(consumed > 0 && consumed <= buf.len(), "frame of {consumed} bytes from a buffer of {}", buf.len());
            let own = &buf[..consumed];
            for i in 0..args.len() {
                assert!(
                    args.get(own, i).is_some(),
                    "argument {i} of {:?} points outside its {consumed}-byte frame",
                    args.arg_ref(i)
                );
            }
            Seen::Frame { frame, consumed, args: args.to_vec(own) }
        }
        Ok(Decoded::NeedMore { hint }) => {
            assert!(hint > 0, "NeedMore with a zero hint");
            Seen::NeedMore
        }
        Err(e) => Seen::Error(e),
    }
}

/// Decode `args` after encoding them, checking the frame is exactly one frame.
fn reencode(decoder: &mut RespbDecoder, args: &[Vec<u8>], mux: u16) -> (Encoding, Vec<Vec<u8>>) {
    let mut bytes = Vec::new();
    let how = encode_request(args, mux, &mut bytes);
    let mut out = CommandArgs::new();
    match decode(decoder, &bytes, &mut out) {
        Seen::Frame { frame: Frame::Command { mux: m }, consumed, args: again }
            if m == mux && consumed == bytes.len() =>
        {
            (how, again)
        }
        other => panic!("{how:?} frame {bytes:?} for {args:?} decodes as {other:?}"),
    }
}

fn is_passthrough(frame: &[u8]) -> bool {
    frame.get(..2) == Some(&PASSTHROUGH.to_be_bytes()[..])
}

/// Equal, except that an argument the decoder wrote as an upper-case word
/// (a command name or option token) may have been sent in another case.
fn same_modulo_word_case(sent: &[Vec<u8>], decoded: &[Vec<u8>]) -> bool {
    let word = |a: &[u8]| {
        !a.is_empty() && a.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
    };
    sent.len() == decoded.len()
        && sent.iter().zip(decoded).all(|(s, d)| s == d || (word(d) && s.eq_ignore_ascii_case(d)))
}

/// Check the properties of the frame at the start of `buf`; returns its
/// length, or `None` when the stream ends (need more, or an error).
fn check_frame(decoder: &mut RespbDecoder, tight: &mut RespbDecoder, buf: &[u8]) -> Option<usize> {
    let mut args = CommandArgs::new();
    let seen = decode(decoder, buf, &mut args);

    let mut extended = buf.to_vec();
    extended.extend_from_slice(GARBAGE);
    let with_garbage = decode(decoder, &extended, &mut args);
    match &seen {
        Seen::NeedMore => {}
        _ => assert_eq!(seen, with_garbage, "bytes after the frame changed its decoding"),
    }

    // Tighter limits may refuse a frame but must not read it differently.
    let under_limits = decode(tight, buf, &mut args);
    if let Seen::Frame { .. } = under_limits {
        assert_eq!(under_limits, seen, "limits changed how a frame reads");
    }

    let Seen::Frame { frame, consumed, args: first } = seen else {
        return None;
    };
    assert_eq!(
        decode(decoder, &buf[..consumed], &mut args),
        Seen::Frame { frame, consumed, args: first.clone() },
        "frame read alone decodes differently"
    );
    for cut in prefixes(consumed) {
        let partial = decode(decoder, &buf[..cut], &mut args);
        assert_eq!(partial, Seen::NeedMore, "prefix of {cut}/{consumed} bytes");
    }

    match frame {
        Frame::Command { mux } => {
            let (how, second) = reencode(decoder, &first, mux);
            if is_passthrough(buf) && how == Encoding::Binary {
                // The client wrote RESP text, where the command name and
                // option words may be in any letter case; the binary form
                // gives them back in the table's upper case.
                assert!(
                    same_modulo_word_case(&first, &second),
                    "binary re-encoding changed the arguments {first:?} into {second:?}"
                );
            } else {
                // Passthrough carries arguments verbatim, and a binary frame's
                // arguments are already in the form the encoder expects.
                assert_eq!(second, first, "{how:?} re-encoding changed the arguments");
            }
            let (_, third) = reencode(decoder, &second, mux);
            assert_eq!(third, second, "decode after encode is not idempotent");
        }
        Frame::MuxCreate { mux, target } | Frame::MuxClose { mux, target } => {
            let op = if matches!(frame, Frame::MuxCreate { .. }) { MUX_CREATE } else { MUX_CLOSE };
            let mut bytes = Vec::new();
            control_frame(op, mux, target, &mut bytes);
            assert_eq!(&bytes[..], &buf[..consumed], "control frame does not rebuild");
        }
    }
    Some(consumed)
}

/// Check one fuzz input.
pub fn check(data: &[u8]) {
    let mut decoder = RespbDecoder::default();
    let mut tight = RespbDecoder::new(RespbLimits { max_bulk_len: 16, max_passthrough_len: 64, unauthenticated: false });
    let mut pos = 0;
    while let Some(n) = check_frame(&mut decoder, &mut tight, &data[pos..]) {
        pos += n;
    }
}
