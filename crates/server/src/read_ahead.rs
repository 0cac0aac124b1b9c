//! Looking at the commands a connection has buffered before they run, to
//! prefetch the keys they will look up (see [`crate::keyspace::lookahead`]).
//!
//! A connection's frame loop calls [`ReadAhead::before`] before each
//! command it runs and [`ReadAhead::after`] once its bytes are consumed.
//! `before` keeps a scan [`TABLE_AHEAD`] commands in front of the one about
//! to run, decoding each with the protocol's own decoder into a spare
//! argument list and starting step 1 for its first key; commands that
//! come within [`ENTRY_AHEAD`] get step 2. The scan stops at the first
//! frame that is incomplete or malformed: the frame loop meets it later
//! and answers it as it always does.
//!
//! A scan lives within one run of the frame loop over one buffer (see
//! [`ReadAhead::start`]), so the offsets it keeps never outlive the bytes
//! they point into.

use kvik_protocol::commands::{by_id, lookup};
use kvik_protocol::resp::request::{Progress, RequestParser};
use kvik_protocol::respb::decode::{Decoded, RespbDecoder};
use kvik_protocol::CommandArgs;

use crate::keyspace::lookahead::{Ahead, KeyMemo};
use crate::keyspace::Keyspace;

/// How many commands ahead of the running one the table lines are loaded.
pub const TABLE_AHEAD: usize = 8;
/// How many commands ahead of the running one the entry is loaded; the
/// table lines loaded at [`TABLE_AHEAD`] have arrived by then.
pub const ENTRY_AHEAD: usize = 3;

/// The keyspace size (its memory estimate) from which the scan runs.
///
/// Below it most of the keyspace stays in the CPU's caches, and decoding
/// and hashing every key twice costs about what the prefetches save. On
/// the machine the figures in `bench/` come from, a pipelined GET over
/// 63,000 keys (a 2.7 MB estimate) took as much server time with the scan
/// as without, while over 632,000 keys (27 MB) it took a quarter less.
pub const MIN_KEYSPACE_BYTES: usize = 8 << 20;

/// Room for the frames a scan keeps: the running one and [`TABLE_AHEAD`] more.
const RING: usize = 16;
const _: () = assert!(TABLE_AHEAD < RING);

/// A frame scanned ahead.
#[derive(Debug, Clone, Copy, Default)]
struct Waiting {
    /// Its number (see [`ReadAhead::start`]).
    frame: usize,
    /// Its first key, located by step 1.
    at: Option<Ahead>,
    /// Step 2 has started loading its entry.
    loaded: bool,
}

/// The scan of one connection (see the module docs).
#[derive(Debug, Default)]
pub struct ReadAhead {
    /// The spare argument list frames are decoded into.
    args: CommandArgs,
    /// Bytes from the start of the command about to run to the first frame
    /// not yet scanned.
    scan_off: usize,
    /// Number of the first frame not yet scanned, and of the frame about to
    /// run, counted from [`ReadAhead::start`].
    scanned: usize,
    running: usize,
    /// The scan met an incomplete or malformed frame.
    stopped: bool,
    /// The keyspace is large enough for the scan to pay (see [`ReadAhead::start`]).
    active: bool,
    /// Frames scanned and not yet run, oldest first: the key step 1
    /// located (if any), and whether step 2 loaded its entry.
    waiting: [Waiting; RING],
    waiting_head: usize,
    waiting_len: usize,
    /// What the scan did, for the tests: frames located by step 1, and
    /// frames whose entry step 2 loaded.
    #[cfg(test)]
    located: Vec<(usize, Option<Ahead>)>,
    #[cfg(test)]
    loaded: Vec<usize>,
}

impl ReadAhead {
    /// A scan over a buffer, starting with the frame at its beginning; it
    /// does nothing unless the keyspace holds [`MIN_KEYSPACE_BYTES`].
    pub fn start(&mut self, ks: &Keyspace) {
        self.start_from(ks, MIN_KEYSPACE_BYTES);
    }

    /// [`ReadAhead::start`] with the keyspace size it takes given.
    fn start_from(&mut self, ks: &Keyspace, min_keyspace_bytes: usize) {
        self.active = ks.used_memory() >= min_keyspace_bytes;
        self.scan_off = 0;
        self.scanned = 0;
        self.running = 0;
        self.stopped = false;
        self.waiting_len = 0;
    }

    /// Before the frame at the start of `pending` runs (its session in
    /// database `db`): scan up to [`TABLE_AHEAD`] frames past it and start
    /// the loads that are due.
    ///
    /// The key of the frame about to run, located when it was scanned, is
    /// remembered until the returned memo is dropped, so that the command
    /// does not hash it again (see [`KeyMemo`]): drop it once the command
    /// ran, before anything awaits.
    #[inline]
    pub fn before(&mut self, ks: &Keyspace, db: usize, pending: &[u8], peek: &mut impl FramePeek) -> KeyMemo {
        if self.active {
            self.scan(ks, db, pending, peek)
        } else {
            KeyMemo::none()
        }
    }

    /// [`ReadAhead::before`] on a keyspace large enough.
    #[inline(never)]
    fn scan(&mut self, ks: &Keyspace, db: usize, pending: &[u8], peek: &mut impl FramePeek) -> KeyMemo {
        // Frames already run leave the ring (a frame the loop consumed
        // without asking first, a busy channel's, among them).
        while self.waiting_len > 0 && self.waiting[self.waiting_head].frame < self.running {
            self.pop();
        }
        while !self.stopped && self.scanned <= self.running + TABLE_AHEAD {
            let Some(rest) = pending.get(self.scan_off..) else {
                self.stopped = true;
                break;
            };
            let Some(len) = peek.peek(rest, &mut self.args) else {
                self.stopped = true;
                break;
            };
            let at = first_key(&self.args, rest).and_then(|key| ks.prefetch_table(db, key));
            self.push(Waiting { frame: self.scanned, at, loaded: false });
            self.scan_off += len;
            self.scanned += 1;
        }
        let mut memo = KeyMemo::none();
        for i in 0..self.waiting_len {
            let w = &mut self.waiting[(self.waiting_head + i) % RING];
            if w.frame > self.running + ENTRY_AHEAD {
                break;
            }
            match w.at {
                Some(at) if w.frame == self.running => memo = KeyMemo::remember(&at),
                Some(at) if !w.loaded => {
                    ks.prefetch_entry(at);
                    w.loaded = true;
                    #[cfg(test)]
                    self.loaded.push(w.frame);
                }
                _ => {}
            }
        }
        memo
    }

    /// The frame that was about to run took `consumed` bytes.
    #[inline]
    pub fn after(&mut self, consumed: usize) {
        if !self.active {
            return;
        }
        self.running += 1;
        if self.scan_off >= consumed && self.scanned >= self.running {
            self.scan_off -= consumed;
        } else {
            // The scan had not got past this frame: it goes on from the next.
            self.scan_off = 0;
            self.scanned = self.running;
        }
    }

    fn push(&mut self, w: Waiting) {
        // Frames `running..=running + TABLE_AHEAD` at most are waiting.
        assert!(self.waiting_len < RING, "the ring holds every frame scanned ahead");
        #[cfg(test)]
        self.located.push((w.frame, w.at));
        self.waiting[(self.waiting_head + self.waiting_len) % RING] = w;
        self.waiting_len += 1;
    }

    fn pop(&mut self) {
        self.waiting_head = (self.waiting_head + 1) % RING;
        self.waiting_len -= 1;
    }
}

/// Finds where the next whole frame of a buffer ends, decoding it into an
/// argument list: a protocol's own decoder, used for looking ahead.
pub trait FramePeek {
    /// The length of the whole frame at the start of `bytes`, its
    /// arguments in `args`; `None` when no whole, well-formed frame is there.
    fn peek(&mut self, bytes: &[u8], args: &mut CommandArgs) -> Option<usize>;
}

impl FramePeek for RequestParser {
    fn peek(&mut self, bytes: &[u8], args: &mut CommandArgs) -> Option<usize> {
        match self.parse(bytes, args) {
            Ok(Progress::Done(n)) => Some(n),
            _ => {
                // A partial frame leaves progress behind; the next scan starts afresh.
                self.reset();
                None
            }
        }
    }
}

impl FramePeek for RespbDecoder {
    fn peek(&mut self, bytes: &[u8], args: &mut CommandArgs) -> Option<usize> {
        match self.decode(bytes, args) {
            Ok(Decoded::Frame { consumed, .. }) => Some(consumed),
            _ => None,
        }
    }
}

/// [`ReadAhead`] with a decoder of its own.
#[derive(Debug, Default)]
pub struct FrameScan<P> {
    scan: ReadAhead,
    peek: P,
}

/// The scan of a RESP connection.
pub type RespReadAhead = FrameScan<RequestParser>;
/// The scan of a RESPB connection.
pub type RespbReadAhead = FrameScan<RespbDecoder>;

impl<P: FramePeek> FrameScan<P> {
    /// See [`ReadAhead::before`].
    #[inline]
    pub fn before(&mut self, ks: &Keyspace, db: usize, pending: &[u8]) -> KeyMemo {
        self.scan.before(ks, db, pending, &mut self.peek)
    }

    /// See [`ReadAhead::after`].
    #[inline]
    pub fn after(&mut self, consumed: usize) {
        self.scan.after(consumed);
    }
}

impl RespReadAhead {
    /// See [`ReadAhead::start`]; frames are parsed within `parser`'s limits.
    pub fn start(&mut self, ks: &Keyspace, parser: &RequestParser) {
        self.scan.start(ks);
        self.peek.clone_from(parser);
        self.peek.reset();
    }
}

impl RespbReadAhead {
    /// A scan decoding frames as `decoder` does.
    pub fn new(decoder: &RespbDecoder) -> RespbReadAhead {
        FrameScan { scan: ReadAhead::default(), peek: RespbDecoder::new(decoder.limits()) }
    }

    /// See [`ReadAhead::start`].
    pub fn start(&mut self, ks: &Keyspace) {
        self.scan.start(ks);
    }
}

/// The first key a decoded command names, if its table entry says where.
fn first_key<'a>(args: &'a CommandArgs, input: &'a [u8]) -> Option<&'a [u8]> {
    let spec = match args.command() {
        Some(id) => by_id(id)?,
        None => lookup(args.get(input, 0)?)?,
    };
    let at = usize::try_from(spec.first_key).ok().filter(|&i| i > 0)?;
    args.get(input, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::db::key_hasher;
    use crate::keyspace::lookahead::{remembered_hash, remembered_slot};
    use crate::keyspace::{key_slot, Entry, Meta};
    use kvik_protocol::resp::command::write_command;
    use kvik_protocol::respb::encode_request;
    use kvik_protocol::respb::RespbLimits;
    use std::hash::BuildHasher;

    fn resp(args: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        write_command(args, &mut out);
        out
    }

    fn keyspace_with(keys: usize) -> Keyspace {
        let ks = Keyspace::new(16, 2);
        for i in 0..keys {
            let key = format!("k{i}");
            ks.lock_key(key.as_bytes()).db(0).insert(Entry::string(key.as_bytes(), b"v", None, Meta::new(0, false)));
        }
        ks
    }

    /// Run the scan as a frame loop does over `input`, frame by frame, with
    /// `parse` finding each frame's length the way the loop's own decoder
    /// would; returns the scan and the number of frames run.
    fn drive(ks: &Keyspace, input: &[u8], scan: &mut RespReadAhead) -> usize {
        let mut parser = RequestParser::default();
        let mut args = CommandArgs::new();
        scan.scan.start_from(ks, 0);
        let mut at = 0;
        let mut frames = 0;
        while let Ok(Progress::Done(n)) = parser.parse(&input[at..], &mut args) {
            let memo = scan.before(ks, 0, &input[at..]);
            // While the command runs, its key's slot and hash are remembered.
            if let (Some(b"GET"), Some(key)) = (args.get(&input[at..], 0), args.get(&input[at..], 1)) {
                let copy = key.to_vec();
                assert_eq!(remembered_slot(key), Some(key_slot(&copy)), "frame {frames}");
                assert_eq!(remembered_hash(key), Some(key_hasher().hash_one(&copy)), "frame {frames}");
                drop(memo);
                assert_eq!(remembered_slot(key), None);
            }
            at += n;
            scan.after(n);
            frames += 1;
        }
        frames
    }

    type Place = (usize, Option<(usize, usize, u16, u64)>);

    /// What the scan located, without the keys' addresses (each of which
    /// must lie in `input`).
    fn places(scan: &ReadAhead, input: &[u8]) -> Vec<Place> {
        for (_, at) in &scan.located {
            assert!(at.is_none_or(|a| a.within(input)), "a key outside the input");
        }
        scan.located.iter().map(|(i, at)| (*i, at.map(|a| a.place()))).collect()
    }

    #[test]
    fn every_frame_is_located_once_and_every_later_one_loaded_once() {
        let ks = keyspace_with(100);
        let mut input = Vec::new();
        let mut keys = Vec::new();
        for i in 0..40 {
            let key = format!("k{}", i * 7 % 120);
            if i % 5 == 3 {
                input.extend(resp(&[b"PING"]));
                keys.push(None);
            } else {
                input.extend(resp(&[b"GET", key.as_bytes()]));
                keys.push(Some(key));
            }
        }
        let mut scan = RespReadAhead::default();
        assert_eq!(drive(&ks, &input, &mut scan), 40);
        let expected: Vec<Place> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (i, k.as_ref().and_then(|k| ks.prefetch_table(0, k.as_bytes())).map(|a| a.place())))
            .collect();
        assert_eq!(places(&scan.scan, &input), expected);
        let loaded: Vec<usize> = (1..40).filter(|&i| keys[i].is_some()).collect();
        assert_eq!(scan.scan.loaded, loaded);
    }

    #[test]
    fn a_small_keyspace_is_not_scanned() {
        let ks = keyspace_with(10);
        let input = [resp(&[b"GET", b"k1"]), resp(&[b"GET", b"k2"])].concat();
        let mut scan = RespReadAhead::default();
        scan.start(&ks, &RequestParser::default());
        let _memo = scan.before(&ks, 0, &input);
        scan.after(input.len() / 2);
        let _memo = scan.before(&ks, 0, &input[input.len() / 2..]);
        assert!(scan.scan.located.is_empty());
    }

    #[test]
    fn the_scan_stops_at_an_incomplete_or_malformed_frame() {
        let ks = keyspace_with(10);
        for tail in [&b"*2\r\n$3\r\nGET\r\n$2\r\nk"[..], b"*2\r\n$x\r\n", b"\x00\xff garbage"] {
            let mut input = Vec::new();
            for i in 0..4 {
                input.extend(resp(&[b"GET", format!("k{i}").as_bytes()]));
            }
            input.extend_from_slice(tail);
            let mut scan = RespReadAhead::default();
            assert_eq!(drive(&ks, &input, &mut scan), 4);
            let located: Vec<usize> = scan.scan.located.iter().map(|&(i, _)| i).collect();
            assert_eq!(located, [0, 1, 2, 3], "tail {:?}", tail.escape_ascii().to_string());
        }
    }

    #[test]
    fn respb_frames_are_scanned_with_their_own_decoder() {
        let ks = keyspace_with(50);
        let mut input = Vec::new();
        for i in 0..12 {
            let key = format!("k{i}");
            encode_request(&[b"GET", key.as_bytes()], 3, &mut input);
        }
        let decoder = RespbDecoder::new(RespbLimits { max_bulk_len: 1 << 20, max_passthrough_len: 1 << 20 });
        let mut scan = RespbReadAhead::new(&decoder);
        scan.scan.start_from(&ks, 0);
        let mut main = RespbDecoder::new(decoder.limits());
        let mut args = CommandArgs::new();
        let mut at = 0;
        while let Ok(Decoded::Frame { consumed, .. }) = main.decode(&input[at..], &mut args) {
            let _memo = scan.before(&ks, 0, &input[at..]);
            at += consumed;
            scan.after(consumed);
        }
        assert_eq!(at, input.len());
        let expected: Vec<Place> =
            (0..12).map(|i| (i, ks.prefetch_table(0, format!("k{i}").as_bytes()).map(|a| a.place()))).collect();
        assert_eq!(places(&scan.scan, &input), expected);
    }

    /// Arbitrary bytes, and frames the loop consumes without asking the
    /// scan first (a busy channel's, a control frame): the scan never reads
    /// past the buffer nor panics, whatever it is shown.
    #[test]
    fn random_input_and_skipped_frames_never_upset_the_scan() {
        let ks = keyspace_with(20);
        let mut rng = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..300 {
            let mut input = Vec::new();
            for _ in 0..next() % 30 {
                match next() % 4 {
                    0 => input.extend((0..next() % 20).map(|_| next() as u8)),
                    1 => input.extend(resp(&[b"SET", format!("k{}", next() % 30).as_bytes(), b"v"])),
                    _ => input.extend(resp(&[b"GET", format!("k{}", next() % 30).as_bytes()])),
                }
            }
            let mut scan = RespReadAhead::default();
            scan.scan.start_from(&ks, 0);
            let mut parser = RequestParser::default();
            let mut args = CommandArgs::new();
            let mut at = 0;
            while let Ok(Progress::Done(n)) = parser.parse(&input[at..], &mut args) {
                if next() % 3 != 0 {
                    let _memo = scan.before(&ks, (next() % 3) as usize, &input[at..]);
                }
                at += n;
                scan.after(n);
                assert!(scan.scan.scan_off <= input.len() - at);
            }
        }
    }
}
