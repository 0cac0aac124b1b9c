//! `RequestParser` fed in chunks must behave exactly as when fed everything at once.
//!
//! Input layout: byte 0 holds option bits (bit 0: pre-authentication bounds,
//! bit 1: tight limits so the "too big" paths are reachable with short
//! inputs); bytes 1..4 choose the chunk sizes, used in turn; the rest is the
//! byte stream a client sends.

use kvik_protocol::resp::request::{Progress, RequestError, RequestLimits, RequestParser};
use kvik_protocol::CommandArgs;

/// Bytes at the start of the input that steer the run rather than being parsed.
pub const HEADER_LEN: usize = 4;

/// Something the parser reported, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Command(Vec<Vec<u8>>),
    Error(RequestError),
}

/// Everything observable about one run over a stream.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    events: Vec<Event>,
    consumed: usize,
}

fn parser_for(options: u8) -> RequestParser {
    let limits = if options & 2 != 0 {
        RequestLimits { max_bulk_len: 64, max_multibulk_len: 16, max_inline_len: 32 }
    } else {
        RequestLimits::default()
    };
    let mut parser = RequestParser::new(limits);
    parser.set_auth_required(options & 1 != 0);
    parser
}

/// Chunk size for a control byte: mostly small, so commands are split at
/// every interesting place, with 255 meaning "everything left".
fn chunk_size(control: u8) -> usize {
    match control {
        255 => usize::MAX,
        c => usize::from(c % 32) + 1,
    }
}

/// Record a finished command after checking what `Done(n)` promises.
fn record_done(stream: &[u8], start: usize, n: usize, available: usize, args: &CommandArgs, events: &mut Vec<Event>) {
    assert!(n > 0, "Done(0) would stall the connection");
    assert!(start + n <= available, "Done({n}) at {start} claims bytes beyond the {available} given");
    let frame = &stream[start..start + n];
    for i in 0..args.len() {
        assert!(
            args.get(frame, i).is_some(),
            "argument {i} of {:?} points outside the {n} bytes of its command",
            args.arg_ref(i)
        );
    }
    events.push(Event::Command(args.to_vec(frame)));
}

/// Parse `stream` with everything available from the start.
fn whole(options: u8, stream: &[u8]) -> Outcome {
    let mut parser = parser_for(options);
    let mut args = CommandArgs::new();
    let mut events = Vec::new();
    let mut start = 0;
    loop {
        match parser.parse(&stream[start..], &mut args) {
            Ok(Progress::Done(n)) => {
                record_done(stream, start, n, stream.len(), &args, &mut events);
                start += n;
            }
            Ok(Progress::NeedMore { .. }) => break,
            Err(e) => {
                events.push(Event::Error(e));
                break;
            }
        }
    }
    Outcome { events, consumed: start }
}

/// Parse `stream` as it would arrive in reads of the sizes `controls` pick.
///
/// Each `NeedMore { hint }` is also checked against the whole-buffer run: a
/// command that completes must take at least `hint` more bytes than were
/// available when the hint was given.
fn chunked(options: u8, controls: &[u8], stream: &[u8], reference: &Outcome) -> Outcome {
    let mut parser = parser_for(options);
    let mut args = CommandArgs::new();
    let mut events = Vec::new();
    let mut start = 0;
    let mut available = 0;
    let mut turn = 0;
    // The hint given for the command now in progress, with the bytes that were available then.
    let mut pending_hint: Option<(usize, usize)> = None;
    'feed: while available < stream.len() {
        let size = controls.get(turn % controls.len().max(1)).map_or(usize::MAX, |&c| chunk_size(c));
        turn += 1;
        available = available.saturating_add(size).min(stream.len());
        loop {
            match parser.parse(&stream[start..available], &mut args) {
                Ok(Progress::Done(n)) => {
                    if let Some((hint, had)) = pending_hint.take() {
                        assert!(
                            n >= had + hint,
                            "NeedMore {{ hint: {hint} }} with {had} bytes buffered, yet the command took {n}"
                        );
                    }
                    record_done(stream, start, n, available, &args, &mut events);
                    start += n;
                }
                Ok(Progress::NeedMore { hint }) => {
                    if available > start {
                        pending_hint = Some((hint, available - start));
                    }
                    break;
                }
                Err(e) => {
                    events.push(Event::Error(e));
                    break 'feed;
                }
            }
        }
        // Once the reference run has finished, anything else is already a difference.
        if events.len() > reference.events.len() {
            break;
        }
    }
    Outcome { events, consumed: start }
}

/// Check one fuzz input.
pub fn check(data: &[u8]) {
    let (header, stream) = data.split_at(data.len().min(HEADER_LEN));
    let options = header.first().copied().unwrap_or(0);
    let controls = header.get(1..).unwrap_or(&[]);
    let reference = whole(options, stream);
    let split = chunked(options, controls, stream, &reference);
    assert_eq!(reference, split, "chunked parsing (sizes from {controls:?}) differs from parsing the whole buffer");
}
