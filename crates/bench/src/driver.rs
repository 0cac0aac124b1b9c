//! One connection's load: connect (handshake, mux channels, `AUTH`,
//! `SELECT`), then keep every logical client on it busy with pipelined
//! batches until the run's request budget is spent.
//!
//! A connection carries one logical client (RESP, or RESPB on mux 0) or,
//! with `--mux`, one per RESPB channel (mux ids 1..=N). A single task owns
//! the stream and does both the writing and the reading, so nothing is
//! shared per request: each client's batch is appended to one output
//! buffer, replies are skipped in place and routed by mux id to their
//! client, and a client whose batch is complete gets its next batch on the
//! next write. Latency is measured as redis-benchmark does: from the write of
//! a batch to the read that brings its first reply, recorded once per request.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use kvik_client::{Address, ReadHalf, Stream, WriteHalf};
use kvik_protocol::resp::command::write_command;
use kvik_protocol::respb::encode::write_passthrough;
use kvik_protocol::respb::{control_frame, encode_request, handshake, HANDSHAKE_MAGIC, MUX_CREATE, VERSION};
use tokio::io::AsyncWriteExt;

use crate::args::{Config, Wire};
use crate::histogram::Histogram;
use crate::replies::Replies;
use crate::request::Requests;
use crate::suite::{is_inline, Test};

/// Longest wait for a connection and its setup.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the answer to [`probe_respb`]'s handshake.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Bytes of the first error reply kept for the report.
pub const ERROR_TEXT_MAX: usize = 200;

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct Target {
    pub address: Address,
    pub wire: Wire,
    /// Commands every logical client sends first (`HELLO 3`, `AUTH`, `SELECT`).
    pub setup: Vec<Vec<Vec<u8>>>,
    /// Open RESPB mux channels (ids from 1) rather than using mux 0.
    pub mux: bool,
    /// `--tls`: the client configuration every connection shares.
    pub tls: Option<kvik_client::ClientTls>,
}

impl Target {
    /// The target `cfg` names; the error says why its TLS settings
    /// (certificate files, cipher names) cannot be used.
    pub fn from_config(cfg: &Config) -> Result<Target, String> {
        let address = match &cfg.socket {
            Some(p) => Address::Unix(p.clone()),
            None => Address::Tcp(format!("{}:{}", cfg.host, cfg.port)),
        };
        let mut setup = Vec::new();
        let auth = cfg.password.as_ref().map(|pass| {
            let mut a = vec![b"AUTH".to_vec()];
            a.extend(cfg.user.as_ref().map(|u| u.as_bytes().to_vec()));
            a.push(pass.as_bytes().to_vec());
            a
        });
        if cfg.wire == Wire::Resp3 {
            let mut hello = vec![b"HELLO".to_vec(), b"3".to_vec()];
            if let Some(pass) = &cfg.password {
                let user = cfg.user.clone().unwrap_or_else(|| "default".into());
                hello.extend([b"AUTH".to_vec(), user.into_bytes(), pass.as_bytes().to_vec()]);
            }
            setup.push(hello);
        } else {
            setup.extend(auth);
        }
        if cfg.dbnum != 0 {
            setup.push(vec![b"SELECT".to_vec(), cfg.dbnum.to_string().into_bytes()]);
        }
        let tls = if cfg.tls {
            let tls = kvik_client::ClientTls::new(&cfg.tls_options)
                .map_err(|e| format!("Could not create a TLS context: {e}"))?;
            Some(tls)
        } else {
            None
        };
        Ok(Target { address, wire: cfg.wire, setup, mux: cfg.mux > 1, tls })
    }

    fn name(&self) -> String {
        match &self.address {
            Address::Tcp(a) => a.clone(),
            Address::Unix(p) => p.display().to_string(),
        }
    }
}

/// Counters shared by every connection of one test.
#[derive(Debug)]
pub struct Shared {
    requests: u64,
    issued: AtomicU64,
    /// Requests answered so far.
    pub finished: AtomicU64,
    /// Error replies so far.
    pub errors: AtomicU64,
    /// The text of the first error reply (at most [`ERROR_TEXT_MAX`] bytes).
    pub first_error: OnceLock<String>,
    /// Sum of recorded latencies (ns), for the progress line's averages.
    pub latency_sum: AtomicU64,
    /// Set when a connection failed: the others stop early.
    pub stop: AtomicBool,
    /// When every connection was ready: the clock starts.
    pub started: OnceLock<Instant>,
    last_error_shown: AtomicU64,
}

impl Shared {
    /// Counters for a test of `requests` requests.
    pub fn new(requests: u64) -> Shared {
        Shared {
            requests,
            issued: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            first_error: OnceLock::new(),
            latency_sum: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            started: OnceLock::new(),
            last_error_shown: AtomicU64::new(u64::MAX),
        }
    }

    /// Take up to `want` requests from the budget; 0 when it is spent.
    pub fn claim(&self, want: usize) -> usize {
        if self.stop.load(Ordering::Relaxed) {
            return 0;
        }
        let before = self.issued.fetch_add(want as u64, Ordering::Relaxed);
        self.requests.saturating_sub(before).min(want as u64) as usize
    }

    /// Keep `text` when it is the run's first error reply. Only error
    /// replies come here, and after the first one this is one atomic load.
    fn note_error(&self, text: &[u8]) {
        if self.first_error.get().is_none() {
            let _ = self.first_error.set(String::from_utf8_lossy(&text[..text.len().min(ERROR_TEXT_MAX)]).into_owned());
        }
    }

    /// Print a server error, at most once per second for the whole run (`-e`).
    fn show_error(&self, text: &[u8]) {
        let Some(started) = self.started.get() else { return };
        let second = started.elapsed().as_secs();
        if self.last_error_shown.swap(second, Ordering::Relaxed) != second {
            eprintln!("Error from server: {}", String::from_utf8_lossy(text));
        }
    }
}

/// What one connection runs.
#[derive(Debug, Clone)]
pub struct Job {
    pub test: Test,
    pub pipeline: usize,
    pub keyspace: Option<u64>,
    pub keepalive: bool,
    pub show_errors: bool,
    /// Logical clients on this connection.
    pub channels: usize,
    /// Seeds the clients' random numbers (distinct per connection).
    pub seed: u64,
}

/// A connected stream, split so a long write can go on while replies are read.
struct Conn {
    read: ReadHalf,
    write: WriteHalf,
    replies: Replies,
}

/// Connect and set up every logical client of `channels`.
async fn connect(target: &Target, channels: usize) -> Result<Conn, String> {
    let setup = async {
        let stream = Stream::connect_with(&target.address, target.tls.as_ref()).await.map_err(|e| e.to_string())?;
        let (read, write) = stream.into_split();
        let mut conn = Conn { read, write, replies: Replies::new(false) };
        if target.wire == Wire::Respb {
            conn.handshake().await?;
        }
        conn.setup(target, channels).await?;
        Ok::<Conn, String>(conn)
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, setup).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(format!("Could not connect to the server at {}: {e}", target.name())),
        Err(_) => Err(format!("Could not connect to the server at {}: timed out", target.name())),
    }
}

/// The message of the PING that follows [`probe_respb`]'s greeting. Redis
/// and Valkey read the greeting as the start of an inline command, and its
/// `00` flags byte ends the string their search for the line's newline
/// looks at, so they would wait for the rest of that line for ever; past
/// 64 KiB of it they answer `-ERR Protocol error: too big inline request`
/// and close. The greeting and this PING together are just over that.
const PROBE_PAD: usize = 64 * 1024;

/// Check once, before a `--respb` run, that the server speaks RESPB: send
/// the greeting and, on mux 0, a PING with a [`PROBE_PAD`]-byte message (a
/// passthrough frame), then judge the first bytes of the answer. A server
/// that speaks only RESP says so at once, rather than leaving every
/// connection of the run waiting for a handshake answer that never comes;
/// one that says nothing is given [`PROBE_TIMEOUT`].
pub async fn probe_respb(target: &Target) -> Result<(), String> {
    let could_not = |e: String| format!("Could not connect to the server at {}: {e}", target.name());
    let stream =
        match tokio::time::timeout(CONNECT_TIMEOUT, Stream::connect_with(&target.address, target.tls.as_ref())).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(could_not(e.to_string())),
            Err(_) => return Err(could_not("timed out".into())),
        };
    let (mut read, mut write) = stream.into_split();
    let mut out = handshake::client_hello(VERSION).to_vec();
    let pad = vec![b'x'; PROBE_PAD];
    write_passthrough(&[&b"PING"[..], &pad], 0, &mut out);
    let mut replies = Replies::new(false);
    // The write goes on while the answer is read: a server may answer (and
    // close) before it has read all of it.
    let writing = write.write_all(&out);
    tokio::pin!(writing);
    let mut written = false;
    let verdict = async {
        loop {
            if let Some(verdict) = judge_answer(replies.pending()) {
                return verdict;
            }
            tokio::select! {
                // A failed write (the server closed) is judged by what it sent.
                _ = &mut writing, if !written => written = true,
                got = replies.fill(&mut read) => {
                    if !matches!(got, Ok(n) if n > 0) {
                        return Err(closed_during_handshake(replies.pending()));
                    }
                }
            }
        }
    };
    let refused = |why: String| format!("The server at {} does not speak RESPB: {why}", target.name());
    match tokio::time::timeout(PROBE_TIMEOUT, verdict).await {
        Ok(Ok(())) => {}
        Ok(Err(why)) => return Err(refused(why)),
        Err(_) => {
            return Err(refused(format!("it did not answer the RESPB handshake within {} s", PROBE_TIMEOUT.as_secs())))
        }
    }
    // Accepted: read the PING's reply before closing, so the server is not
    // left with a frame cut short; what it says does not matter (NOAUTH, say).
    replies.consume(handshake::LEN);
    replies.set_respb(true);
    let rest = async {
        loop {
            if !matches!(replies.next_reply(), Ok(None)) {
                return;
            }
            tokio::select! {
                w = &mut writing, if !written => {
                    written = true;
                    if w.is_err() {
                        return;
                    }
                }
                got = replies.fill(&mut read) => {
                    if !matches!(got, Ok(n) if n > 0) {
                        return;
                    }
                }
            }
        }
    };
    let _ = tokio::time::timeout(PROBE_TIMEOUT, rest).await;
    Ok(())
}

/// What the first bytes a server sent after the RESPB greeting say: `None`
/// while they cannot tell yet, `Some(Ok(()))` when they accept it, and
/// `Some(Err(why))` when they refuse it or are not RESPB at all (judged once
/// their first line, or [`ANSWER_SHOWN`] bytes of it, is in).
fn judge_answer(pending: &[u8]) -> Option<Result<(), String>> {
    let prefix = pending.len().min(HANDSHAKE_MAGIC.len());
    if pending[..prefix] == HANDSHAKE_MAGIC[..prefix] {
        let answer: [u8; handshake::LEN] = pending.get(..handshake::LEN)?.try_into().ok()?;
        if handshake::answer_accepts(&answer) {
            return Some(Ok(()));
        }
        return Some(Err(format!("it refused RESPB version {VERSION} (answer {answer:02X?})")));
    }
    if memchr::memchr(b'\n', pending).is_some() || pending.len() >= ANSWER_SHOWN {
        return Some(Err(format!("it answered the RESPB handshake with \"{}\"", shown(pending))));
    }
    None
}

/// Why a server that closed the connection during the RESPB handshake,
/// having sent `pending`, refused it.
fn closed_during_handshake(pending: &[u8]) -> String {
    if pending.is_empty() {
        "it closed the connection without answering the RESPB handshake".into()
    } else {
        format!("it answered the RESPB handshake with \"{}\" and closed the connection", shown(pending))
    }
}

/// Most bytes of a server's answer quoted in a message.
const ANSWER_SHOWN: usize = 128;

/// The first line of `answer` (at most [`ANSWER_SHOWN`] bytes, without its
/// line end) for a message: printable ASCII as it is, other bytes escaped.
fn shown(answer: &[u8]) -> String {
    let line = answer.split(|&b| b == b'\n').next().unwrap_or(answer);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let cut = &line[..line.len().min(ANSWER_SHOWN)];
    let mut s = String::with_capacity(cut.len() + 8);
    for &b in cut {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7E => s.push(char::from(b)),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    if cut.len() < line.len() {
        s.push_str("...");
    }
    s
}

impl Conn {
    async fn handshake(&mut self) -> Result<(), String> {
        self.write.write_all(&handshake::client_hello(VERSION)).await.map_err(|e| e.to_string())?;
        loop {
            match judge_answer(self.replies.pending()) {
                Some(Ok(())) => break,
                Some(Err(why)) => return Err(format!("the server does not speak RESPB: {why}")),
                None => {}
            }
            if self.replies.fill(&mut self.read).await.map_err(|e| e.to_string())? == 0 {
                return Err(format!(
                    "the server does not speak RESPB: {}",
                    closed_during_handshake(self.replies.pending())
                ));
            }
        }
        self.replies.consume(handshake::LEN);
        self.replies.set_respb(true);
        Ok(())
    }

    /// MUX_CREATE each channel, then the setup commands on each; every reply must be a success.
    async fn setup(&mut self, target: &Target, channels: usize) -> Result<(), String> {
        let mut out = Vec::new();
        let mut expected = 0;
        for mux in mux_ids(target.mux, channels) {
            if target.mux {
                control_frame(MUX_CREATE, mux, mux, &mut out);
                expected += 1;
            }
            for cmd in &target.setup {
                match target.wire {
                    Wire::Respb => {
                        encode_request(cmd, mux, &mut out);
                    }
                    _ => write_command(cmd, &mut out),
                }
                expected += 1;
            }
        }
        if expected == 0 {
            return Ok(());
        }
        self.write.write_all(&out).await.map_err(|e| e.to_string())?;
        let mut seen = 0;
        while seen < expected {
            while let Some(reply) = self.replies.next_reply()? {
                if let Some(e) = reply.error {
                    return Err(format!("setup failed: {}", String::from_utf8_lossy(self.replies.text(e))));
                }
                seen += 1;
            }
            if seen < expected && self.replies.fill(&mut self.read).await.map_err(|e| e.to_string())? == 0 {
                return Err("the server closed the connection during setup".into());
            }
        }
        Ok(())
    }
}

/// The mux ids of a connection's logical clients.
fn mux_ids(mux: bool, channels: usize) -> std::ops::RangeInclusive<u16> {
    if mux {
        1..=channels as u16
    } else {
        0..=0
    }
}

/// One logical client's state.
struct Client {
    requests: Requests,
    /// Replies still expected for the batch in flight (0: idle).
    pending: usize,
    batch: usize,
    sent: Instant,
    latency: Option<u64>,
    errors: u64,
    done: bool,
}

/// Writes up to this size go out with a plain `write_all` (the socket
/// buffers take them at once); larger ones keep reading replies meanwhile, so
/// a server that stops reading while its replies wait cannot deadlock us.
const DIRECT_WRITE: usize = 64 * 1024;

/// The logical clients of one connection and where their results go.
struct Load<'a> {
    clients: Vec<Client>,
    mux: bool,
    job: &'a Job,
    shared: &'a Shared,
    hist: &'a Mutex<Histogram>,
}

/// Connect, wait at `gate` until every connection is ready, then run
/// `job` to the end of the shared budget, recording into `hist`.
pub async fn drive(
    target: &Target,
    job: &Job,
    shared: &Shared,
    hist: &Mutex<Histogram>,
    gate: &tokio::sync::Barrier,
) -> Result<(), String> {
    let connected = connect(target, job.channels).await;
    if connected.is_err() {
        shared.stop.store(true, Ordering::Relaxed);
    }
    if gate.wait().await.is_leader() {
        let _ = shared.started.set(Instant::now());
    }
    let mut conn = connected?;
    let inline = is_inline(&job.test);
    let clients = mux_ids(target.mux, job.channels)
        .map(|mux| Client {
            requests: Requests::new(
                &job.test.args,
                target.wire,
                inline,
                mux,
                job.keyspace,
                job.seed ^ (u64::from(mux) << 40),
            ),
            pending: 0,
            batch: 0,
            sent: Instant::now(),
            latency: None,
            errors: 0,
            done: false,
        })
        .collect();
    let mut load = Load { clients, mux: target.mux, job, shared, hist };
    let mut out = Vec::with_capacity(4096);
    loop {
        out.clear();
        load.issue(&mut out);
        let completed = if out.is_empty() { false } else { load.send(&mut conn, &out).await? };
        let in_flight = load.clients.iter().any(|c| c.pending > 0);
        if !in_flight && load.clients.iter().all(|c| c.done) {
            return Ok(());
        }
        if in_flight && !completed {
            load.read_until_a_batch_completes(&mut conn).await?;
        }
        if !job.keepalive {
            // One logical client per connection here (checked by the arguments).
            conn = connect(target, job.channels).await?;
        }
    }
}

impl Load<'_> {
    /// Give every idle client its next batch (appended to `out`), or mark
    /// it done when the budget is spent.
    fn issue(&mut self, out: &mut Vec<u8>) {
        let now = Instant::now();
        for c in self.clients.iter_mut().filter(|c| c.pending == 0 && !c.done) {
            let n = self.shared.claim(self.job.pipeline);
            if n == 0 {
                c.done = true;
                continue;
            }
            c.requests.append(n, out);
            (c.pending, c.batch, c.sent, c.latency) = (n, n, now, None);
        }
    }

    /// Write `out`; true when a batch completed while a long write went on.
    async fn send(&mut self, conn: &mut Conn, out: &[u8]) -> Result<bool, String> {
        let failed = |e: std::io::Error| format!("write failed: {e}");
        if out.len() <= DIRECT_WRITE {
            conn.write.write_all(out).await.map_err(failed)?;
            return Ok(false);
        }
        let Conn { read, write, replies } = conn;
        let writing = write.write_all(out);
        tokio::pin!(writing);
        let mut completed = false;
        loop {
            tokio::select! {
                biased;
                written = &mut writing => {
                    written.map_err(failed)?;
                    return Ok(completed);
                }
                got = replies.fill(read) => {
                    received(got)?;
                    completed |= self.take_replies(replies, Instant::now())?;
                }
            }
        }
    }

    async fn read_until_a_batch_completes(&mut self, conn: &mut Conn) -> Result<(), String> {
        loop {
            received(conn.replies.fill(&mut conn.read).await)?;
            if self.take_replies(&mut conn.replies, Instant::now())? {
                return Ok(());
            }
        }
    }

    /// Account for every complete reply buffered; true when a batch completed.
    fn take_replies(&mut self, replies: &mut Replies, arrived: Instant) -> Result<bool, String> {
        let mut completed = false;
        while let Some(reply) = replies.next_reply().map_err(|e| format!("bad reply: {e}"))? {
            let index = if self.mux { usize::from(reply.mux).wrapping_sub(1) } else { usize::from(reply.mux) };
            let Some(c) = self.clients.get_mut(index).filter(|c| c.pending > 0) else {
                return Err(format!("unexpected reply on mux {}", reply.mux));
            };
            let latency = *c.latency.get_or_insert_with(|| arrived.duration_since(c.sent).as_nanos() as u64);
            if let Some(text) = reply.error {
                c.errors += 1;
                let text = replies.text(text);
                self.shared.note_error(text);
                if self.job.show_errors {
                    self.shared.show_error(text);
                }
            }
            c.pending -= 1;
            if c.pending == 0 {
                completed = true;
                let n = c.batch as u64;
                self.hist.lock().unwrap_or_else(|e| e.into_inner()).record_n(latency, n);
                self.shared.finished.fetch_add(n, Ordering::Relaxed);
                self.shared.latency_sum.fetch_add(latency.saturating_mul(n), Ordering::Relaxed);
                if c.errors > 0 {
                    self.shared.errors.fetch_add(std::mem::take(&mut c.errors), Ordering::Relaxed);
                }
            }
        }
        Ok(completed)
    }
}

/// The result of a read: an error when it failed or the server closed the connection.
fn received(got: std::io::Result<usize>) -> Result<(), String> {
    match got {
        Ok(0) => Err("the server closed the connection".into()),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("read failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_answer_is_judged_as_soon_as_it_can_be() {
        assert_eq!(judge_answer(b""), None);
        assert_eq!(judge_answer(&[0xD3]), None);
        assert_eq!(judge_answer(&[0xD3, 0xC1, 1]), None);
        assert_eq!(judge_answer(&[0xD3, 0xC1, 1, 0]), Some(Ok(())));
        assert_eq!(judge_answer(&[0xD3, 0xC1, 1, 0, 0x80, 3]), Some(Ok(())));
        assert_eq!(
            judge_answer(&[0xD3, 0xC1, 0, 0]),
            Some(Err("it refused RESPB version 1 (answer [D3, C1, 00, 00])".into()))
        );
        // A RESP answer is judged once its line is complete.
        assert_eq!(judge_answer(b"-ERR Protocol error"), None);
        assert_eq!(
            judge_answer(b"-ERR Protocol error: too big inline request\r\n"),
            Some(Err("it answered the RESPB handshake with \"-ERR Protocol error: too big inline request\"".into()))
        );
        let long = vec![b'x'; ANSWER_SHOWN];
        assert!(matches!(judge_answer(&long), Some(Err(_))));
    }

    #[test]
    fn answers_are_quoted_escaped_and_cut() {
        assert_eq!(shown(b"-ERR \"x\" \\ y\r\nsecond line"), "-ERR \\\"x\\\" \\\\ y");
        assert_eq!(shown(&[0xD3, 0x00, b'a', b'\t', b'\r', b'b']), "\\xd3\\x00a\\t\\rb");
        let long = vec![b'y'; ANSWER_SHOWN + 1];
        assert_eq!(shown(&long), format!("{}...", "y".repeat(ANSWER_SHOWN)));
        assert_eq!(closed_during_handshake(b""), "it closed the connection without answering the RESPB handshake");
        assert_eq!(
            closed_during_handshake(b"-ERR bye"),
            "it answered the RESPB handshake with \"-ERR bye\" and closed the connection"
        );
    }
}
