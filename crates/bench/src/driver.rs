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
use kvik_protocol::respb::{control_frame, encode_request, handshake, MUX_CREATE, VERSION};
use tokio::io::AsyncWriteExt;

use crate::args::{Config, Wire};
use crate::histogram::Histogram;
use crate::replies::Replies;
use crate::request::Requests;
use crate::suite::{is_inline, Test};

/// Longest wait for a connection and its setup.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct Target {
    pub address: Address,
    pub wire: Wire,
    /// Commands every logical client sends first (`HELLO 3`, `AUTH`, `SELECT`).
    pub setup: Vec<Vec<Vec<u8>>>,
    /// Open RESPB mux channels (ids from 1) rather than using mux 0.
    pub mux: bool,
}

impl Target {
    /// The target `cfg` names.
    pub fn from_config(cfg: &Config) -> Target {
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
        Target { address, wire: cfg.wire, setup, mux: cfg.mux > 1 }
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
        let stream = Stream::connect(&target.address).await.map_err(|e| e.to_string())?;
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

impl Conn {
    async fn handshake(&mut self) -> Result<(), String> {
        self.write.write_all(&handshake::client_hello(VERSION)).await.map_err(|e| e.to_string())?;
        while self.replies.pending().len() < handshake::LEN {
            if self.replies.fill(&mut self.read).await.map_err(|e| e.to_string())? == 0 {
                return Err("the server closed the connection during the RESPB handshake".into());
            }
        }
        let mut answer = [0u8; handshake::LEN];
        answer.copy_from_slice(&self.replies.pending()[..handshake::LEN]);
        if !handshake::answer_accepts(&answer) {
            return Err(format!("the server refused the RESPB handshake (answer {answer:02X?})"));
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
                if self.job.show_errors {
                    self.shared.show_error(replies.text(text));
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
