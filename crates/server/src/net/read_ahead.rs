//! Looking at the commands a connection has buffered before they run, to
//! prefetch the keys they will look up (see [`crate::keyspace::lookahead`]).
//!
//! A connection's frame loop asks [`FrameScan::take`] for the frame at the
//! start of its buffer, calls [`FrameScan::before`] before running it and
//! [`FrameScan::after`] once its bytes are consumed. `before` keeps a scan
//! [`TABLE_AHEAD`] frames in front of the running one, decoding each with
//! the protocol's own decoder ([`FramePeek`]) into an argument list of its
//! own and starting step 1 for its first key; frames that come within
//! [`ENTRY_AHEAD`] get step 2. When a frame's turn comes, `take` hands the
//! loop the arguments the scan decoded, so no frame is decoded twice.
//!
//! The scan stops at the first frame that is incomplete or malformed: the
//! loop decodes that one itself and answers it as it always does. A scan
//! lives within one pass of the loop over one buffer (see
//! [`FrameScan::start`]), so the offsets and arguments it keeps never
//! outlive the bytes they point into.

use kvik_protocol::commands::{by_id, id, lookup};
use kvik_protocol::resp::request::{Progress, RequestParser};
use kvik_protocol::respb::decode::{Decoded, Frame, RespbDecoder, RespbLimits};
use kvik_protocol::CommandArgs;

pub use crate::keyspace::lookahead::min_keyspace_bytes;
use crate::keyspace::lookahead::{Ahead, KeyMemo, MemberStep};
use crate::keyspace::Keyspace;
use crate::types::compact::CompactBytes;
use crate::types::member_table::MemberTable;

/// How many commands ahead of the running one the table lines are loaded.
pub const TABLE_AHEAD: usize = 8;
/// How many commands ahead of the running one the entry is loaded; the
/// table lines loaded at [`TABLE_AHEAD`] have arrived by then.
pub const ENTRY_AHEAD: usize = 3;

/// After this many frames in a row that name no key (`PING`, `ECHO`,
/// `MULTI`), the scan rests for [`REST_FRAMES`] frames.
///
/// Scanning a frame costs about 300 instructions beyond parsing it
/// (callgrind, RESP `PING` at `-P 1000`: 1,504 instructions per `PING` with
/// a keyspace large enough for the scan, 1,116 without), and a frame with no
/// key gains nothing from it. A pipeline of such frames pays it only on the
/// frames the scan still looks at between rests; a pipeline that mixes them
/// with keyed commands rarely has this many in a row and is scanned whole.
pub const KEYLESS_RUN: usize = 16;

/// Frames the loop parses by itself after [`KEYLESS_RUN`] keyless ones;
/// the scan looks again at the frame after them.
///
/// Each further keyless run in the same pass doubles the rest, up to
/// [`MAX_REST_FRAMES`], so a long pipeline of `PING`s is scanned on about
/// 80 of 1,000 frames rather than on one in five; the first frame that
/// names a key brings the rest back to this.
pub const REST_FRAMES: usize = 64;

/// The longest rest. It bounds how many keyed frames after a long keyless
/// run go unscanned; a 1,000-frame pipeline of `PING`s already ends within
/// its fifth rest at this length.
pub const MAX_REST_FRAMES: usize = 512;

/// Room for the frames a scan keeps: the running one and [`TABLE_AHEAD`] more.
const RING: usize = 16;
/// Memory an argument list of the ring may keep between frames. One that
/// grew past it (a large MSET went through) is dropped when it comes back,
/// so a connection's ring keeps at most `RING` times this.
const MAX_RETAINED_BYTES: usize = 4 << 10;
const _: () = assert!(TABLE_AHEAD < RING);
const _: () = assert!(REST_FRAMES <= MAX_REST_FRAMES);

/// Finds where the next whole frame of a buffer ends, decoding it into an
/// argument list: a protocol's own decoder, used for looking ahead.
pub trait FramePeek {
    /// What else the loop needs to know of a frame (a RESPB frame's kind).
    type Kind: Copy + Default + std::fmt::Debug;

    /// The length of the whole frame at the start of `bytes`, and its kind,
    /// with its arguments in `args`; `None` when no whole, well-formed
    /// frame is there.
    fn peek(&mut self, bytes: &[u8], args: &mut CommandArgs) -> Option<(usize, Self::Kind)>;
}

impl FramePeek for RequestParser {
    type Kind = ();

    fn peek(&mut self, bytes: &[u8], args: &mut CommandArgs) -> Option<(usize, ())> {
        match self.parse(bytes, args) {
            Ok(Progress::Done(n)) => {
                // Found once here, the command is not looked up again when it runs.
                if let Some(spec) = args.get(bytes, 0).and_then(lookup) {
                    args.set_command(Some(spec.id));
                }
                Some((n, ()))
            }
            _ => {
                // A partial frame leaves progress behind; the next scan starts afresh.
                self.reset();
                None
            }
        }
    }
}

impl FramePeek for RespbDecoder {
    type Kind = Option<Frame>;

    fn peek(&mut self, bytes: &[u8], args: &mut CommandArgs) -> Option<(usize, Option<Frame>)> {
        match self.decode(bytes, args) {
            Ok(Decoded::Frame { frame, consumed }) => Some((consumed, Some(frame))),
            _ => None,
        }
    }
}

/// A frame scanned ahead.
#[derive(Debug, Clone, Copy, Default)]
struct Waiting<K> {
    /// Its number (see [`FrameScan::start`]).
    frame: usize,
    /// Its length in bytes, and its kind.
    len: usize,
    kind: K,
    /// Its first key, located by step 1.
    at: Option<Ahead>,
    /// Step 2 has started loading its entry.
    loaded: bool,
    /// The hash of the member it names after its key, if any, and the
    /// member steps done for it (see [`MemberStep`]): 0, 1 or 2.
    member: Option<u64>,
    member_steps: u8,
}

/// The scan of one connection (see the module docs), decoding with `P`.
#[derive(Debug)]
pub struct FrameScan<P: FramePeek> {
    peek: P,
    /// The frames scanned and not yet run, oldest first, each with the
    /// arguments it was decoded into at the same index of `args`.
    waiting: [Waiting<P::Kind>; RING],
    args: Vec<CommandArgs>,
    waiting_head: usize,
    waiting_len: usize,
    /// Number of the first frame that step 2 has not yet looked at: every
    /// frame before it within [`ENTRY_AHEAD`] of the running one had its
    /// entry loaded (or needed no load) when it came that close.
    next_entry: usize,
    /// How many of the waiting frames name a member (see [`Waiting::member`]).
    member_frames: usize,
    /// Bytes from the start of the frame about to run to the first frame
    /// not yet scanned.
    scan_off: usize,
    /// Number of the first frame not yet scanned, and of the frame about to
    /// run, counted from [`FrameScan::start`].
    scanned: usize,
    running: usize,
    /// The scan met an incomplete or malformed frame.
    stopped: bool,
    /// The keyspace is large enough for the scan to pay (see [`FrameScan::start`]).
    active: bool,
    /// Frames scanned in a row that name no key, the number of the frame
    /// before which the scan rests, and how long the next rest is (see
    /// [`KEYLESS_RUN`] and [`REST_FRAMES`]).
    keyless: usize,
    rest_until: usize,
    rest_frames: usize,
    /// What the scan did, for the tests: frames located by step 1, and
    /// frames whose entry step 2 loaded.
    #[cfg(test)]
    located: Vec<(usize, Option<Ahead>)>,
    #[cfg(test)]
    loaded: Vec<usize>,
    #[cfg(test)]
    member_steps: Vec<(usize, MemberStep)>,
}

/// The scan of a RESP connection.
pub type RespReadAhead = FrameScan<RequestParser>;
/// The scan of a RESPB connection.
pub type RespbReadAhead = FrameScan<RespbDecoder>;

impl<P: FramePeek> FrameScan<P> {
    /// A scan decoding frames with `peek`; its argument lists are made on
    /// the first pass that runs.
    fn with_peek(peek: P) -> FrameScan<P> {
        FrameScan {
            peek,
            waiting: [Waiting::default(); RING],
            args: Vec::new(),
            waiting_head: 0,
            waiting_len: 0,
            next_entry: 0,
            member_frames: 0,
            scan_off: 0,
            scanned: 0,
            running: 0,
            stopped: false,
            active: false,
            keyless: 0,
            rest_until: 0,
            rest_frames: REST_FRAMES,
            #[cfg(test)]
            located: Vec::new(),
            #[cfg(test)]
            loaded: Vec::new(),
            #[cfg(test)]
            member_steps: Vec::new(),
        }
    }

    /// A pass over a buffer, starting with the frame at its beginning (see
    /// [`FrameScan::start_from`]).
    pub fn start(&mut self, ks: &Keyspace) {
        self.start_from(ks, min_keyspace_bytes());
    }

    /// A pass over a buffer, starting with the frame at its beginning; the
    /// scan does nothing unless the keyspace holds `min_keyspace_bytes`.
    fn start_from(&mut self, ks: &Keyspace, min_keyspace_bytes: usize) {
        self.active = ks.used_memory() >= min_keyspace_bytes;
        if self.active && self.args.is_empty() {
            self.args = (0..RING).map(|_| CommandArgs::new()).collect();
        }
        self.keyless = 0;
        self.rest_until = 0;
        self.rest_frames = REST_FRAMES;
        self.reset_at(0);
    }

    /// Forget every frame scanned: the next scan starts at the frame
    /// numbered `running`, at the start of the pending bytes.
    fn reset_at(&mut self, running: usize) {
        self.scan_off = 0;
        self.scanned = running;
        self.running = running;
        self.stopped = false;
        self.waiting_len = 0;
        self.next_entry = running;
        self.member_frames = 0;
    }

    /// The frame at the start of the pending bytes, if the scan decoded it:
    /// its length and kind, with its arguments swapped into `args`.
    #[inline]
    fn take_decoded(&mut self, args: &mut CommandArgs) -> Option<(usize, P::Kind)> {
        if !self.active {
            return None;
        }
        self.drop_run();
        let w = self.waiting_len.checked_sub(1).map(|_| self.waiting[self.waiting_head])?;
        if w.frame != self.running {
            return None;
        }
        let slot = &mut self.args[self.waiting_head];
        std::mem::swap(args, slot);
        if slot.retained_bytes() > MAX_RETAINED_BYTES {
            *slot = CommandArgs::new();
        }
        Some((w.len, w.kind))
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
    pub fn before(&mut self, ks: &Keyspace, db: usize, pending: &[u8]) -> KeyMemo {
        if self.active {
            self.scan(ks, db, pending)
        } else {
            KeyMemo::none()
        }
    }

    /// [`FrameScan::before`] on a keyspace large enough.
    #[inline(never)]
    fn scan(&mut self, ks: &Keyspace, db: usize, pending: &[u8]) -> KeyMemo {
        self.drop_run();
        if self.running < self.rest_until {
            // Resting: the frames left in the ring name no key.
            return KeyMemo::none();
        }
        while !self.stopped && self.scanned <= self.running + TABLE_AHEAD {
            let Some(rest) = pending.get(self.scan_off..) else {
                self.stopped = true;
                break;
            };
            // Frames `running..=running + TABLE_AHEAD` at most are waiting.
            assert!(self.waiting_len < RING, "the ring holds every frame scanned ahead");
            let slot = (self.waiting_head + self.waiting_len) % RING;
            let args = &mut self.args[slot];
            let Some((len, kind)) = self.peek.peek(rest, args) else {
                self.stopped = true;
                break;
            };
            // A key that repeats the frame before's (a queue, a counter, one
            // big set) is in cache by its turn: it is neither hashed nor
            // loaded again.
            let before = match self.waiting_len {
                0 => None,
                n => self.waiting[(self.waiting_head + n - 1) % RING].at,
            };
            let key = first_key(args, rest);
            if key.is_some() {
                self.keyless = 0;
                self.rest_frames = REST_FRAMES;
            } else {
                self.keyless += 1;
            }
            let again = before.zip(key).and_then(|(b, key)| b.again(pending, key));
            let at = again.or_else(|| key.and_then(|key| ks.prefetch_table(db, key)));
            #[cfg(test)]
            self.located.push((self.scanned, at));
            let member = at.and_then(|_| member_arg(args, rest)).map(MemberTable::<CompactBytes>::hash);
            let loaded = again.is_some();
            self.waiting[slot] = Waiting { frame: self.scanned, len, kind, at, loaded, member, member_steps: 0 };
            self.waiting_len += 1;
            self.member_frames += usize::from(member.is_some());
            self.scan_off += len;
            self.scanned += 1;
            if self.keyless >= KEYLESS_RUN {
                self.keyless = 0;
                self.rest_until = self.scanned + self.rest_frames;
                self.rest_frames = (self.rest_frames * 2).min(MAX_REST_FRAMES);
                self.stopped = true;
            }
        }
        // Frames `running..=last` are within ENTRY_AHEAD; the scan has them all.
        let Some(last) = (self.running + ENTRY_AHEAD + 1).min(self.scanned).checked_sub(1) else {
            return KeyMemo::none();
        };
        if self.member_frames > 0 {
            self.member_steps_due(ks, pending, last);
        }
        // Step 2 for the frames that came within ENTRY_AHEAD since the last
        // call: one, when every frame asks before it runs. The running frame
        // gets none, its command is about to look it up.
        for frame in self.next_entry.max(self.running + 1)..=last {
            let i = self.ring_index(frame);
            let w = &mut self.waiting[i];
            if let (Some(at), false) = (w.at, w.loaded) {
                ks.prefetch_entry(at);
                w.loaded = true;
                #[cfg(test)]
                self.loaded.push(frame);
            }
        }
        self.next_entry = self.next_entry.max(last + 1);
        match self.waiting_len {
            0 => KeyMemo::none(),
            _ => match self.waiting[self.waiting_head] {
                Waiting { frame, at: Some(at), .. } if frame == self.running => KeyMemo::remember(&at),
                _ => KeyMemo::none(),
            },
        }
    }

    /// Where frame `frame`, which the scan has and has not dropped, sits in
    /// the ring.
    #[inline]
    fn ring_index(&self, frame: usize) -> usize {
        let first = self.scanned - self.waiting_len;
        debug_assert!((first..self.scanned).contains(&frame));
        (self.waiting_head + (frame - first)) % RING
    }

    /// The member steps due for the frames up to `last` whose entry is on
    /// its way or cached from an earlier call: the slot step, then, the
    /// second one command ahead, the entry step once the slot has arrived.
    fn member_steps_due(&mut self, ks: &Keyspace, pending: &[u8], last: usize) {
        for frame in self.running + 1..=last {
            let i = self.ring_index(frame);
            let w = &mut self.waiting[i];
            let (Some(at), true, Some(member_hash)) = (w.at, w.loaded, w.member) else { continue };
            let step = match (w.member_steps, frame == self.running + 1) {
                (0, _) => MemberStep::Slot,
                (1, true) => MemberStep::Entry,
                _ => continue,
            };
            // A value with no member table (a small hash, a string) needs
            // no second step: its lock is not taken again.
            let table = ks.prefetch_member(at, pending, member_hash, step);
            w.member_steps = if table { w.member_steps + 1 } else { 2 };
            #[cfg(test)]
            self.member_steps.push((frame, step));
        }
    }

    /// The frame that was about to run took `consumed` bytes.
    #[inline]
    pub fn after(&mut self, consumed: usize) {
        if !self.active {
            return;
        }
        let scanned_as = (self.waiting_len > 0 && self.waiting[self.waiting_head].frame == self.running)
            .then(|| self.waiting[self.waiting_head].len);
        self.running += 1;
        match scanned_as {
            Some(len) if len == consumed => self.scan_off -= consumed,
            // The scan had not got past this frame, or saw it otherwise
            // than the loop did (the loop's limits changed): it starts
            // afresh at the next frame.
            _ => self.reset_at(self.running),
        }
    }

    /// Let go of the frames already run (a frame the loop consumed without
    /// asking first, a busy channel's, among them).
    fn drop_run(&mut self) {
        while self.waiting_len > 0 && self.waiting[self.waiting_head].frame < self.running {
            self.member_frames -= usize::from(self.waiting[self.waiting_head].member.is_some());
            self.waiting_head = (self.waiting_head + 1) % RING;
            self.waiting_len -= 1;
        }
    }
}

impl Default for RespReadAhead {
    fn default() -> RespReadAhead {
        FrameScan::with_peek(RequestParser::default())
    }
}

impl RespReadAhead {
    /// The command at the start of the pending bytes, if the scan parsed it
    /// under the limits `parser` has now: its length, its arguments
    /// swapped into `args`. `parser` is left between commands, as parsing
    /// it would have.
    #[inline]
    pub fn take(&mut self, parser: &mut RequestParser, args: &mut CommandArgs) -> Option<usize> {
        if !self.active {
            return None;
        }
        if self.peek.limits() != parser.limits() || self.peek.auth_required() != parser.auth_required() {
            // Frames scanned under other limits are scanned again.
            self.peek.clone_from(parser);
            self.peek.reset();
            self.reset_at(self.running);
            return None;
        }
        let (n, ()) = self.take_decoded(args)?;
        parser.reset();
        Some(n)
    }
}

impl RespbReadAhead {
    /// A scan decoding frames as `decoder` does.
    pub fn new(decoder: &RespbDecoder) -> RespbReadAhead {
        FrameScan::with_peek(RespbDecoder::new(decoder.limits()))
    }

    /// Decode under `limits` from now on, as the connection's decoder
    /// does: frames scanned under other limits are scanned again.
    pub fn set_limits(&mut self, limits: RespbLimits) {
        self.peek.set_limits(limits);
        self.reset_at(self.running);
    }

    /// The frame at the start of the pending bytes, if the scan decoded it:
    /// its length and kind, its arguments swapped into `args`.
    #[inline]
    pub fn take(&mut self, args: &mut CommandArgs) -> Option<(usize, Frame)> {
        match self.take_decoded(args)? {
            (n, Some(frame)) => Some((n, frame)),
            (_, None) => None,
        }
    }
}

/// The member a hash, set or sorted-set command names after its key (a
/// hash field, a set or sorted-set member), for the member steps; the first
/// one when it names several. Commands naming none (`HLEN`, `SSCAN`, …)
/// give none.
fn member_arg<'a>(args: &'a CommandArgs, input: &'a [u8]) -> Option<&'a [u8]> {
    let at = match args.command()? {
        id::HSET
        | id::HSETNX
        | id::HMSET
        | id::HGET
        | id::HMGET
        | id::HEXISTS
        | id::HDEL
        | id::HINCRBY
        | id::HINCRBYFLOAT
        | id::HSTRLEN
        | id::SADD
        | id::SREM
        | id::SISMEMBER
        | id::SMISMEMBER
        | id::ZSCORE
        | id::ZMSCORE
        | id::ZREM
        | id::ZRANK
        | id::ZREVRANK => 2,
        id::ZINCRBY => 3,
        // `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member …`.
        id::ZADD => 3 + (2..6).take_while(|&i| args.get(input, i).is_some_and(is_zadd_option)).count(),
        _ => return None,
    };
    args.get(input, at)
}

/// Whether `arg` is one of ZADD's options (they come before the scores).
fn is_zadd_option(arg: &[u8]) -> bool {
    [&b"NX"[..], b"XX", b"GT", b"LT", b"CH", b"INCR"].iter().any(|o| arg.eq_ignore_ascii_case(o))
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
    use crate::keyspace::hashing::key_hasher;
    use crate::keyspace::lookahead::{remembered_hash, remembered_slot};
    use crate::keyspace::{key_slot, Entry, Meta};
    use crate::types::hash::{HashLimits, HashValue};
    use crate::types::Value;
    use kvik_protocol::resp::command::write_command;
    use kvik_protocol::resp::request::RequestLimits;
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

    /// Every argument of `args`, read from `input`.
    fn all_args(args: &CommandArgs, input: &[u8]) -> Vec<Vec<u8>> {
        (0..args.len()).map(|i| args.get(input, i).unwrap_or_default().to_vec()).collect()
    }

    /// Run the scan as the RESP frame loop does over `input`, frame by
    /// frame: each command taken from the scan when it parsed it (and then
    /// checked against a parse of its own), parsed otherwise. Returns the
    /// number of frames run and how many came from the scan.
    fn drive(ks: &Keyspace, input: &[u8], scan: &mut RespReadAhead) -> (usize, usize) {
        let mut parser = RequestParser::default();
        let mut args = CommandArgs::new();
        let (mut check, mut check_args) = (RequestParser::default(), CommandArgs::new());
        scan.start_from(ks, 0);
        let (mut at, mut frames, mut taken) = (0, 0, 0);
        loop {
            let n = match scan.take(&mut parser, &mut args) {
                Some(n) => {
                    taken += 1;
                    assert_eq!(check.parse(&input[at..], &mut check_args), Ok(Progress::Done(n)), "frame {frames}");
                    assert_eq!(all_args(&args, &input[at..]), all_args(&check_args, &input[at..]), "frame {frames}");
                    n
                }
                None => match parser.parse(&input[at..], &mut args) {
                    Ok(Progress::Done(n)) => n,
                    _ => break,
                },
            };
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
        (frames, taken)
    }

    type Place = (usize, Option<(usize, usize, u16, u64)>);

    /// What the scan located, without the keys' addresses (each of which
    /// must lie in `input`).
    fn places<P: FramePeek>(scan: &FrameScan<P>, input: &[u8]) -> Vec<Place> {
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
        // All but the first command come parsed from the scan.
        assert_eq!(drive(&ks, &input, &mut scan), (40, 39));
        let expected: Vec<Place> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (i, k.as_ref().and_then(|k| ks.prefetch_table(0, k.as_bytes())).map(|a| a.place())))
            .collect();
        assert_eq!(places(&scan, &input), expected);
        let loaded: Vec<usize> = (1..40).filter(|&i| keys[i].is_some()).collect();
        assert_eq!(scan.loaded, loaded);
    }

    /// A run of frames that name no key rests the scan: the loop parses the
    /// next `REST_FRAMES` frames itself, then the scan looks again, and the
    /// keys after the run are located and loaded as before.
    #[test]
    fn a_run_of_keyless_frames_rests_the_scan() {
        let ks = keyspace_with(100);
        let pings = KEYLESS_RUN + REST_FRAMES + 10;
        let gets = 20;
        let mut input = Vec::new();
        for _ in 0..pings {
            input.extend(resp(&[b"PING"]));
        }
        for i in 0..gets {
            input.extend(resp(&[b"GET", format!("k{i}").as_bytes()]));
        }
        let mut scan = RespReadAhead::default();
        let (frames, taken) = drive(&ks, &input, &mut scan);
        assert_eq!(frames, pings + gets);
        let scanned: Vec<usize> = scan.located.iter().map(|(i, _)| *i).collect();
        let rest_ends = KEYLESS_RUN + REST_FRAMES;
        let want: Vec<usize> = (0..KEYLESS_RUN).chain(rest_ends..frames).collect();
        assert_eq!(scanned, want, "the first run, then nothing until the rest ends");
        // Where it looked, the scan hands the loop every frame but two: the
        // pass's first and the first after the rest, which the loop parses
        // before the scan gets to them.
        assert_eq!(taken, want.len() - 2);
        let get_frames: Vec<usize> = (pings..frames).collect();
        assert_eq!(scan.loaded, get_frames, "every GET's entry is loaded");
    }

    /// In one pass, each keyless run after the first doubles the rest, up
    /// to MAX_REST_FRAMES; a frame that names a key starts again from
    /// REST_FRAMES.
    #[test]
    fn rests_double_through_a_long_keyless_pipeline() {
        let ks = keyspace_with(100);
        // Runs of KEYLESS_RUN scanned frames, each followed by a rest twice
        // as long as the one before, until the rest reaches its cap.
        let mut want = Vec::new();
        let (mut at, mut rest, mut capped) = (0, REST_FRAMES, false);
        while at < 1500 {
            want.extend(at..at + KEYLESS_RUN);
            at += KEYLESS_RUN + rest;
            capped |= rest * 2 > MAX_REST_FRAMES;
            rest = (rest * 2).min(MAX_REST_FRAMES);
        }
        assert!(capped, "the pipeline is long enough for the rest to reach its cap");
        // The GET comes as the last rest ends: it is scanned and brings the
        // rest back to REST_FRAMES for the PINGs after it.
        let pings = at;
        let mut input = Vec::new();
        for _ in 0..pings {
            input.extend(resp(&[b"PING"]));
        }
        input.extend(resp(&[b"GET", b"k1"]));
        for _ in 0..KEYLESS_RUN + REST_FRAMES + 5 {
            input.extend(resp(&[b"PING"]));
        }
        let mut scan = RespReadAhead::default();
        let (frames, _) = drive(&ks, &input, &mut scan);
        want.extend(pings..=pings + KEYLESS_RUN);
        want.extend(pings + 1 + KEYLESS_RUN + REST_FRAMES..frames);
        let scanned: Vec<usize> = scan.located.iter().map(|(i, _)| *i).collect();
        assert_eq!(scanned, want);
    }

    #[test]
    fn a_key_repeating_the_frame_befores_is_located_from_it_and_not_loaded_again() {
        let ks = keyspace_with(100);
        let frames: [&[&[u8]]; 6] = [
            &[b"LPUSH", b"q", b"a"],
            &[b"LPUSH", b"q", b"b"],
            &[b"RPOP", b"q"],
            &[b"PING"],
            &[b"RPOP", b"q"],
            &[b"GET", b"k7"],
        ];
        let input: Vec<u8> = frames.iter().flat_map(|f| resp(f)).collect();
        let mut scan = RespReadAhead::default();
        assert_eq!(drive(&ks, &input, &mut scan), (6, 5));
        let q = ks.prefetch_table(0, b"q").map(|a| a.place());
        let k7 = ks.prefetch_table(0, b"k7").map(|a| a.place());
        assert_eq!(places(&scan, &input), vec![(0, q), (1, q), (2, q), (3, None), (4, q), (5, k7)]);
        // Frame 0 runs first, so nothing loads it ahead; 1 and 2 follow a
        // frame with the same key; 4 follows a PING.
        assert_eq!(scan.loaded, [4, 5]);
        // Each repeat is located at its own bytes.
        let keys: Vec<usize> = scan.located.iter().filter_map(|(_, at)| *at).map(|a| a.addr_for_tests()).collect();
        let mut distinct = keys.clone();
        distinct.dedup();
        assert_eq!(distinct, keys);
    }

    /// Hash, set and sorted-set commands naming a member get the member
    /// steps once their key's entry is loaded or repeats the frame
    /// before's: the slot step first, the entry step when the frame is next
    /// to run. Commands naming no member (HLEN, GET) get none; ZADD's
    /// member comes after its options and score.
    #[test]
    fn members_of_hash_set_and_zset_commands_get_the_member_steps() {
        let ks = keyspace_with(100);
        let mut big = HashValue::new();
        for i in 0..600 {
            big.set(format!("f{i}").as_bytes(), b"v", HashLimits::default());
        }
        assert_eq!(big.encoding(), "hashtable");
        let entry = crate::keyspace::Entry::new(b"h", Value::Hash(Box::new(big)), None, Meta::new(0, false));
        ks.lock_key(b"h").db(0).insert(entry);
        let frames: [&[&[u8]]; 7] = [
            &[b"HSET", b"h", b"f1", b"v"],
            &[b"hset", b"h", b"f2", b"v"],
            &[b"HGET", b"h", b"f3"],
            &[b"HLEN", b"h"],
            &[b"HINCRBY", b"h", b"f4", b"1"],
            &[b"HGET", b"k3", b"f"],
            &[b"GET", b"k7"],
        ];
        let input: Vec<u8> = frames.iter().flat_map(|f| resp(f)).collect();
        let mut scan = RespReadAhead::default();
        assert_eq!(drive(&ks, &input, &mut scan), (7, 6));
        use MemberStep::{Entry, Slot};
        // Frame 5's key holds a string: after its slot step finds no member
        // table, it gets no entry step.
        let steps = [(1, Slot), (2, Slot), (2, Entry), (4, Slot), (4, Entry), (5, Slot)];
        assert_eq!(scan.member_steps, steps);
        assert_eq!(scan.loaded, [5, 6]);
        let member = |frame: &[&[u8]]| {
            let mut args = CommandArgs::new();
            let mut parser = RequestParser::default();
            let input = resp(frame);
            assert!(matches!(parser.parse(&input, &mut args), Ok(Progress::Done(_))));
            if let Some(spec) = args.get(&input, 0).and_then(lookup) {
                args.set_command(Some(spec.id));
            }
            member_arg(&args, &input).map(<[u8]>::to_vec)
        };
        assert_eq!(member(frames[1]), Some(b"f2".to_vec()));
        assert_eq!(member(frames[3]), None);
        assert_eq!(member(frames[5]), Some(b"f".to_vec()));
        assert_eq!(member(frames[6]), None);
        assert_eq!(member(&[b"SADD", b"s", b"m1", b"m2"]), Some(b"m1".to_vec()));
        assert_eq!(member(&[b"sismember", b"s", b"m"]), Some(b"m".to_vec()));
        assert_eq!(member(&[b"SMOVE", b"s", b"t", b"m"]), None);
        assert_eq!(member(&[b"HSET", b"h"]), None);
        assert_eq!(member(&[b"ZADD", b"z", b"1", b"m"]), Some(b"m".to_vec()));
        assert_eq!(member(&[b"zadd", b"z", b"nx", b"CH", b"1", b"m", b"2", b"n"]), Some(b"m".to_vec()));
        assert_eq!(member(&[b"ZADD", b"z", b"XX", b"GT", b"CH", b"INCR", b"1", b"m"]), Some(b"m".to_vec()));
        assert_eq!(member(&[b"ZADD", b"z", b"NX"]), None);
        assert_eq!(member(&[b"ZINCRBY", b"z", b"2", b"m"]), Some(b"m".to_vec()));
        assert_eq!(member(&[b"ZSCORE", b"z", b"m"]), Some(b"m".to_vec()));
        assert_eq!(member(&[b"ZRANGE", b"z", b"0", b"1"]), None);
    }

    #[test]
    fn a_small_keyspace_is_not_scanned() {
        let ks = keyspace_with(10);
        let input = [resp(&[b"GET", b"k1"]), resp(&[b"GET", b"k2"])].concat();
        let mut scan = RespReadAhead::default();
        scan.start(&ks);
        let (mut parser, mut args) = (RequestParser::default(), CommandArgs::new());
        assert_eq!(scan.take(&mut parser, &mut args), None);
        let _memo = scan.before(&ks, 0, &input);
        scan.after(input.len() / 2);
        assert_eq!(scan.take(&mut parser, &mut args), None);
        let _memo = scan.before(&ks, 0, &input[input.len() / 2..]);
        assert!(scan.located.is_empty());
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
            assert_eq!(drive(&ks, &input, &mut scan), (4, 3));
            let located: Vec<usize> = scan.located.iter().map(|&(i, _)| i).collect();
            assert_eq!(located, [0, 1, 2, 3], "tail {:?}", tail.escape_ascii().to_string());
        }
    }

    /// A command is taken from the scan only if the scan parsed it under
    /// the limits the connection's parser has when its turn comes.
    #[test]
    fn frames_scanned_under_other_limits_are_parsed_again() {
        let ks = keyspace_with(10);
        let big = vec![b'x'; 100];
        let input = [resp(&[b"GET", b"k1"]), resp(&[b"SET", b"k2", &big]), resp(&[b"GET", b"k3"])].concat();
        let mut scan = RespReadAhead::default();
        scan.start_from(&ks, 0);
        let (mut parser, mut args) = (RequestParser::default(), CommandArgs::new());
        assert_eq!(scan.take(&mut parser, &mut args), None, "nothing scanned yet");
        let Ok(Progress::Done(n)) = parser.parse(&input, &mut args) else { panic!("GET parses") };
        let _memo = scan.before(&ks, 0, &input);
        scan.after(n);
        // `CONFIG SET proto-max-bulk-len 10` ran: the SET scanned under the
        // old limit is not taken, and the loop's parser refuses it.
        parser.set_limits(RequestLimits { max_bulk_len: 10, ..RequestLimits::default() });
        assert_eq!(scan.take(&mut parser, &mut args), None);
        assert!(parser.parse(&input[n..], &mut args).is_err());
        // Under the new limit the scan stops at that frame.
        let _memo = scan.before(&ks, 0, &input[n..]);
        assert_eq!(scan.take(&mut parser, &mut args), None);
        assert_eq!(scan.located.iter().map(|&(i, _)| i).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn respb_frames_are_scanned_with_their_own_decoder() {
        let ks = keyspace_with(50);
        let mut input = Vec::new();
        for i in 0..12 {
            let key = format!("k{i}");
            encode_request(&[b"GET", key.as_bytes()], 3, &mut input);
        }
        let decoder = RespbDecoder::new(RespbLimits {
            max_bulk_len: 1 << 20,
            max_passthrough_len: 1 << 20,
            unauthenticated: false,
        });
        let mut scan = RespbReadAhead::new(&decoder);
        scan.start_from(&ks, 0);
        let mut main = RespbDecoder::new(decoder.limits());
        let (mut args, mut check_args) = (CommandArgs::new(), CommandArgs::new());
        let (mut at, mut taken) = (0, 0);
        loop {
            let consumed = match scan.take(&mut args) {
                Some((consumed, frame)) => {
                    taken += 1;
                    let decoded = main.decode(&input[at..], &mut check_args);
                    assert_eq!(decoded, Ok(Decoded::Frame { frame, consumed }));
                    assert_eq!(all_args(&args, &input[at..]), all_args(&check_args, &input[at..]));
                    assert_eq!(args.command(), check_args.command());
                    consumed
                }
                None => match main.decode(&input[at..], &mut args) {
                    Ok(Decoded::Frame { consumed, .. }) => consumed,
                    _ => break,
                },
            };
            let _memo = scan.before(&ks, 0, &input[at..]);
            at += consumed;
            scan.after(consumed);
        }
        assert_eq!((at, taken), (input.len(), 11));
        let expected: Vec<Place> =
            (0..12).map(|i| (i, ks.prefetch_table(0, format!("k{i}").as_bytes()).map(|a| a.place()))).collect();
        assert_eq!(places(&scan, &input), expected);
    }

    /// The ring lets go of argument lists that grew large.
    #[test]
    fn large_argument_lists_are_not_kept() {
        let ks = keyspace_with(10);
        let mset: Vec<Vec<u8>> = std::iter::once(b"MSET".to_vec())
            .chain((0..1000).flat_map(|i| [format!("k{i}").into_bytes(), b"v".to_vec()]))
            .collect();
        let mset: Vec<&[u8]> = mset.iter().map(Vec::as_slice).collect();
        let input: Vec<u8> = (0..20).flat_map(|_| resp(&mset)).collect();
        let mut scan = RespReadAhead::default();
        assert_eq!(drive(&ks, &input, &mut scan), (20, 19));
        let kept: usize = scan.args.iter().map(CommandArgs::retained_bytes).sum();
        assert!(kept <= RING * MAX_RETAINED_BYTES, "{kept} bytes kept");
    }

    /// Frames a busy channel holds are consumed without asking the scan:
    /// the frame after them loads what came within reach meanwhile, each
    /// entry once, and never the entry of the frame about to run.
    #[test]
    fn frames_skipped_by_the_loop_leave_no_entry_loaded_twice() {
        let ks = keyspace_with(100);
        let input: Vec<u8> = (0..30).flat_map(|i| resp(&[b"GET", format!("k{i}").as_bytes()])).collect();
        let mut parser = RequestParser::default();
        let mut args = CommandArgs::new();
        let mut scan = RespReadAhead::default();
        scan.start_from(&ks, 0);
        let mut at = 0;
        for frame in 0..30 {
            let n = match scan.take(&mut parser, &mut args) {
                Some(n) => n,
                None => match parser.parse(&input[at..], &mut args) {
                    Ok(Progress::Done(n)) => n,
                    other => panic!("frame {frame}: {other:?}"),
                },
            };
            if !(5..8).contains(&frame) {
                let _memo = scan.before(&ks, 0, &input[at..]);
            }
            at += n;
            scan.after(n);
        }
        let want: Vec<usize> = (1..8).chain(9..30).collect();
        assert_eq!(scan.loaded, want);
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
            scan.start_from(&ks, 0);
            let (mut parser, mut check) = (RequestParser::default(), RequestParser::default());
            let (mut args, mut check_args) = (CommandArgs::new(), CommandArgs::new());
            let mut at = 0;
            while let Ok(Progress::Done(n)) = check.parse(&input[at..], &mut check_args) {
                // Taken or parsed, a command reads the same.
                if next() % 4 != 0 {
                    if let Some(taken) = scan.take(&mut parser, &mut args) {
                        assert_eq!(taken, n);
                        assert_eq!(all_args(&args, &input[at..]), all_args(&check_args, &input[at..]));
                    }
                }
                if next() % 3 != 0 {
                    let _memo = scan.before(&ks, (next() % 3) as usize, &input[at..]);
                }
                at += n;
                scan.after(n);
                assert!(scan.scan_off <= input.len() - at);
            }
        }
    }
}
