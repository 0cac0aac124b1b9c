//! Replication, the replica's side: the link to the master
//! (`REPLICAOF host port`, or `replicaof` in the configuration), one
//! thread that connects, makes Redis's handshake, synchronizes and then
//! applies the master's stream.
//!
//! - **Handshake**, as a Redis 7.0 replica makes it: `PING`, `AUTH` with
//!   `masterauth` (and `masteruser`), `REPLCONF listening-port`,
//!   `ip-address` (`replica-announce-ip`), `capa eof capa psync2`, then
//!   `PSYNC <replid> <offset>`: this server's own stream's id and the
//!   next byte, so that a former master, or a replica that lost its link,
//!   continues where it was (PSYNC2); `PSYNC ? -1` when it never had a
//!   stream.
//! - **Full resync** (`+FULLRESYNC <replid> <offset>`): the snapshot comes
//!   whole (`$<len>`, or up to an end mark with `$EOF:<mark>`, a diskless
//!   master's), is written as `dbfilename` unless `repl-diskless-load`
//!   says otherwise, and replaces the keyspace with every shard held, so
//!   that no client sees it half loaded. The stream then starts at the
//!   master's `offset`, under the master's id.
//! - **Partial resync** (`+CONTINUE [<replid>]`): the stream goes on; a
//!   new id (the master was promoted) is taken, the old one kept for what
//!   came before.
//! - **The stream**: each command runs as Redis's master client runs it
//!   ([`Apply`]: no checks, no reply), and its bytes go to this server's
//!   own stream as they came, so that its replicas, and whoever follows it
//!   after a promotion, see the master's offsets. A transaction counts
//!   once its `EXEC` has run: an offset never falls inside one. The link
//!   acknowledges its offset every second and when the master asks
//!   (`REPLCONF GETACK`), and drops when the master says nothing for
//!   `repl-timeout` seconds; it then connects again every second.
//!
//! The stream is applied under [`Replication::apply_gate`]: a full resync
//! of this server's own replicas takes it at its snapshot's moment, which
//! then falls between two commands, at the stream's end.
//!
//! [`Replication::apply_gate`]: crate::registries::replication::Replication::apply_gate

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use kvik_persist::aof::commands::{read, Ending, ReadError};
use kvik_protocol::CommandArgs;

use crate::client::session::Session;
use crate::config::parse_output_limits;
use crate::persistence::loading::InstallFunctions;
use crate::registries::replication::{FailoverState, Upstream, UpstreamState};
use crate::state::ServerState;

/// Runs one command of the master's stream. The error is for the log.
pub type Apply = fn(&ServerState, &CommandArgs, &mut Session) -> Result<(), String>;

/// What the link needs of the commands' layer, which lives above this
/// module and passes these in: the runner of the master's commands, and
/// the installer of a snapshot's function libraries.
#[derive(Debug, Clone, Copy)]
pub struct Runners {
    pub apply: Apply,
    pub install: InstallFunctions,
}

/// How long a read waits before the link looks at its generation, the
/// time since the master last spoke, and its acknowledgement.
const POLL: Duration = Duration::from_millis(100);
/// How long the link waits before connecting again.
const RETRY: Duration = Duration::from_secs(1);
/// How often the link acknowledges its offset.
const ACK_EVERY: Duration = Duration::from_secs(1);
/// The longest reply line of the handshake.
const MAX_LINE_BYTES: usize = 64 * 1024;
/// The most of the stream held unapplied: one command may be as large as
/// `proto-max-bulk-len` allows (512 MB by default), with room for its
/// headers.
const MAX_PENDING_BYTES: usize = 1 << 30;
/// What the snapshot's buffer takes before its first byte, at most,
/// whatever size the master announces.
const FIRST_RESERVE_BYTES: usize = 64 * 1024 * 1024;
/// The length of a diskless master's end mark.
const MARK_LEN: usize = 40;

/// Become a replica of `upstream`: the stream stops taking this server's
/// own changes, expired keys stay for the master to delete, and a thread
/// links to the master (any earlier link stops).
pub fn follow(state: &Arc<ServerState>, upstream: Upstream, runners: Runners) -> io::Result<()> {
    let repl = &state.replication;
    let gate = repl.apply_gate.lock().unwrap_or_else(|p| p.into_inner());
    let generation = repl.follow(upstream.clone());
    drop(gate);
    state.update_config(|c| c.set_replicaof(Some((&upstream.host, upstream.port))));
    crate::keyspace::keep_expired_keys(true);
    super::update_refusals(state);
    crate::log!(Notice, "Connecting to MASTER {}:{}", upstream.host, upstream.port);
    let weak = Arc::downgrade(state);
    std::thread::Builder::new()
        .name("kvik-repl-link".into())
        .spawn(move || run(&weak, &upstream, generation, runners))
        .map(|_| ())
}

/// Stop being a replica (`REPLICAOF NO ONE`, `PSYNC ... FAILOVER`, or a
/// failover given up): the link stops, the stream takes a new id (keeping
/// the master's for what came before) and goes on with this server's own
/// changes. `why` is for the log.
pub fn promote(state: &Arc<ServerState>, why: Option<&str>) -> io::Result<()> {
    let repl = &state.replication;
    let gate = repl.apply_gate.lock().unwrap_or_else(|p| p.into_inner());
    let all = state.keyspace.lock_all();
    let cut = state.keyspace.changes_taken();
    repl.promote(cut + 1);
    if repl.active() {
        super::feed::start(state, cut);
    }
    drop(all);
    drop(gate);
    state.update_config(|c| c.set_replicaof(None));
    crate::keyspace::keep_expired_keys(false);
    super::update_refusals(state);
    if let Some(why) = why {
        crate::log!(Notice, "MASTER MODE enabled ({why})");
    }
    if repl.active() {
        super::feed::ensure_running(state)?;
    }
    Ok(())
}

/// The link's thread: connect, synchronize, apply, and again after every
/// loss, until `REPLICAOF` moves on (another generation) or the server
/// stops.
fn run(state: &Weak<ServerState>, upstream: &Upstream, generation: u64, runners: Runners) {
    let mut session = master_session();
    loop {
        let Some(strong) = state.upgrade() else { return };
        if !current(&strong, generation) {
            return;
        }
        let outcome = link(&strong, upstream, generation, runners, &mut session);
        let repl = &strong.replication;
        if current(&strong, generation) {
            if repl.link.state() == UpstreamState::Connected {
                repl.link.down_since_ms.store(crate::keyspace::now_ms(), Ordering::Relaxed);
            }
            repl.link.set_state(UpstreamState::Connect);
            super::update_refusals(&strong);
        }
        *repl.link.socket.lock().unwrap_or_else(|p| p.into_inner()) = None;
        // A transaction the link was inside comes again, whole.
        session.multi = None;
        match outcome {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return,
            Err(e) => crate::log!(Warning, "Connection with master {}:{} lost: {e}", upstream.host, upstream.port),
        }
        drop(strong);
        let since = Instant::now();
        while since.elapsed() < RETRY {
            std::thread::sleep(POLL);
            match state.upgrade() {
                Some(s) if current(&s, generation) => {}
                _ => return,
            }
        }
    }
}

/// The session the master's commands run in: the server's own, which may
/// run anything.
fn master_session() -> Session {
    let mut session = Session::new(0);
    session.authenticated = true;
    session
}

/// Whether the link of `generation` is still the one wanted.
fn current(state: &ServerState, generation: u64) -> bool {
    !state.shutting_down() && state.replication.link.generation.load(Ordering::Acquire) == generation
}

/// One connection to the master, from connecting to its loss.
fn link(
    state: &Arc<ServerState>,
    upstream: &Upstream,
    generation: u64,
    runners: Runners,
    session: &mut Session,
) -> io::Result<()> {
    let repl = &state.replication;
    repl.link.set_state(UpstreamState::Connecting);
    let timeout = repl_timeout(state);
    let addr = (upstream.host.as_str(), upstream.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the master's name has no address"))?;
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(POLL))?;
    *repl.link.socket.lock().unwrap_or_else(|p| p.into_inner()) = Some(stream.try_clone()?);
    let local = stream.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let registration = state.clients.register(state.ids.next_id(), addr.to_string(), local, fd, None);
    registration.handle.info().master = true;
    let client = Arc::clone(&registration.handle);
    let mut conn = Conn { stream, input: Vec::new(), generation, last_io: Instant::now(), client };
    if !current(state, generation) {
        return Err(io::Error::new(io::ErrorKind::Interrupted, "replaced"));
    }
    crate::log!(Notice, "MASTER <-> REPLICA sync started");
    handshake(state, &mut conn)?;
    let ask = if repl.active() {
        (repl.replid(), (repl.offset() + 1).to_string())
    } else {
        ("?".to_string(), "-1".to_string())
    };
    // A master handing over asks its replica to take over (see
    // super::failover).
    let failing_over = repl.failover().state == FailoverState::InProgress;
    let mut psync: Vec<&[u8]> = vec![b"PSYNC", ask.0.as_bytes(), ask.1.as_bytes()];
    if failing_over {
        psync.push(b"FAILOVER");
    }
    if let Err(e) = conn.send(&psync) {
        if failing_over {
            super::failover::abort(state, "Write error to failover target");
        }
        return Err(e);
    }
    let reply = conn.reply_line(state, timeout)?;
    let text = String::from_utf8_lossy(&reply).into_owned();
    if failing_over {
        if text.starts_with("+FULLRESYNC") || text.starts_with("+CONTINUE") {
            super::failover::end(state);
        } else {
            super::failover::abort(state, "Failover target rejected psync request");
            return Err(io::Error::new(io::ErrorKind::Interrupted, "the failover target refused"));
        }
    }
    if let Some(rest) = text.strip_prefix("+FULLRESYNC ") {
        let mut words = rest.split(' ');
        let (Some(replid), Some(offset)) = (words.next(), words.next().and_then(|o| o.parse::<u64>().ok())) else {
            return Err(bad_reply("FULLRESYNC", &text));
        };
        crate::log!(Notice, "Full resync from master: {replid}:{offset}");
        full_sync(state, &mut conn, replid, offset, runners.install, session)?;
    } else if let Some(rest) = text.strip_prefix("+CONTINUE") {
        let replid = rest.trim();
        crate::log!(Notice, "Successful partial resynchronization with master.");
        if !replid.is_empty() {
            repl.continue_as(replid);
        }
    } else {
        return Err(bad_reply("PSYNC", &text));
    }
    stream_from(state, &mut conn, runners.apply, session)
}

fn bad_reply(what: &str, text: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("unexpected reply to {what} from master: '{text}'"))
}

/// `repl-timeout`.
fn repl_timeout(state: &ServerState) -> Duration {
    Duration::from_secs(u64::try_from(state.config().int("repl-timeout")).unwrap_or(60).max(1))
}

/// Redis's handshake up to `PSYNC`.
fn handshake(state: &ServerState, conn: &mut Conn) -> io::Result<()> {
    let timeout = repl_timeout(state);
    conn.send(&[b"PING"])?;
    let pong = conn.reply_line(state, timeout)?;
    // A master that wants a password answers NOAUTH (or NOPERM) to PING.
    let denied = [&b"-NOAUTH"[..], b"-NOPERM", b"-ERR operation not permitted"];
    if pong.first() == Some(&b'-') && !denied.iter().any(|d| pong.starts_with(d)) {
        return Err(bad_reply("PING", &String::from_utf8_lossy(&pong)));
    }
    let config = state.config();
    let (user, pass) = (config.get("masteruser").to_string(), config.get("masterauth").to_string());
    let port = match config.int("replica-announce-port") {
        0 => config.int("port"),
        announced => announced,
    }
    .to_string();
    let ip = config.get("replica-announce-ip").to_string();
    drop(config);
    if !pass.is_empty() {
        if user.is_empty() {
            conn.send(&[b"AUTH", pass.as_bytes()])?;
        } else {
            conn.send(&[b"AUTH", user.as_bytes(), pass.as_bytes()])?;
        }
        let reply = conn.reply_line(state, timeout)?;
        if reply != b"+OK" {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("Unable to AUTH to MASTER: {}", String::from_utf8_lossy(&reply)),
            ));
        }
    }
    conn.send(&[b"REPLCONF", b"listening-port", port.as_bytes()])?;
    if conn.reply_line(state, timeout)?.first() == Some(&b'-') {
        crate::log!(Notice, "(Non critical) Master does not understand REPLCONF listening-port");
    }
    if !ip.is_empty() {
        conn.send(&[b"REPLCONF", b"ip-address", ip.as_bytes()])?;
        if conn.reply_line(state, timeout)?.first() == Some(&b'-') {
            crate::log!(Notice, "(Non critical) Master does not understand REPLCONF ip-address");
        }
    }
    conn.send(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])?;
    if conn.reply_line(state, timeout)?.first() == Some(&b'-') {
        crate::log!(Notice, "(Non critical) Master does not understand REPLCONF capa");
    }
    Ok(())
}

/// Receive the snapshot, replace the keyspace with it, and take the
/// master's stream at `offset`.
fn full_sync(
    state: &ServerState,
    conn: &mut Conn,
    replid: &str,
    offset: u64,
    install: InstallFunctions,
    session: &mut Session,
) -> io::Result<()> {
    let repl = &state.replication;
    let timeout = repl_timeout(state);
    repl.link.set_state(UpstreamState::Sync);
    let header = conn.reply_line(state, timeout)?;
    let data = if let Some(mark) = header.strip_prefix(b"$EOF:") {
        if mark.len() != MARK_LEN {
            return Err(bad_reply("the snapshot's header", &String::from_utf8_lossy(&header)));
        }
        let mark = mark.to_vec();
        conn.payload_to_mark(state, &mark)?
    } else {
        let len = header
            .strip_prefix(b"$")
            .and_then(|l| std::str::from_utf8(l).ok())
            .and_then(|l| l.parse::<u64>().ok())
            .ok_or_else(|| bad_reply("the snapshot's header", &String::from_utf8_lossy(&header)))?;
        conn.payload_of(state, len)?
    };
    crate::log!(Notice, "MASTER <-> REPLICA sync: received {} bytes", data.len());
    let keep_file = match state.config().get("repl-diskless-load") {
        "disabled" => true,
        "on-empty-db" => !keyspace_empty(state),
        _ => false,
    };
    if keep_file {
        write_snapshot_file(state, &data)?;
    }
    crate::log!(Notice, "MASTER <-> REPLICA sync: Flushing old data");
    let gate = repl.apply_gate.lock().unwrap_or_else(|p| p.into_inner());
    let loaded = replace_keyspace(state, &data, install);
    match &loaded {
        Ok(_) => repl.restart_at(replid, offset),
        Err(e) => crate::log!(Warning, "Failed trying to load the MASTER synchronization DB: {e}"),
    }
    drop(gate);
    state.blocking.dbs_changed(None);
    let keys = loaded.map_err(io::Error::other)?;
    crate::log!(Notice, "MASTER <-> REPLICA sync: Finished with success ({keys} keys)");
    session.db = 0;
    session.multi = None;
    if crate::persistence::aof::wanted(state) {
        // The file's history ends where the master's snapshot begins.
        if let Err(e) = crate::persistence::aof::rewrite::start(state) {
            crate::log!(Warning, "The append-only file could not be rewritten after the sync: {e:?}");
        }
    }
    // The first acknowledgement puts this replica online on a diskless master.
    let at = repl.offset().to_string();
    conn.send(&[b"REPLCONF", b"ACK", at.as_bytes()])
}

/// Write the master's snapshot as `dbfilename`, through a temporary file
/// flushed to disk first, as a save does.
fn write_snapshot_file(state: &ServerState, data: &[u8]) -> io::Result<()> {
    let path = crate::persistence::snapshot_path(state);
    let dir = crate::persistence::dir_of(&path);
    let temp = dir.join(format!("temp-{}.{}.rdb", crate::persistence::snapshot::unix_seconds(), std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(data)?;
        file.sync_all()?;
        std::fs::rename(&temp, &path)?;
        std::fs::File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Whether no database holds a key.
fn keyspace_empty(state: &ServerState) -> bool {
    let ks = &state.keyspace;
    (0..ks.shard_count()).all(|i| ks.lock(i).dbs().iter().all(|d| d.is_empty()))
}

/// Empty the keyspace and load `data` into it with every shard held; the
/// number of keys loaded. A file that does not load leaves the keyspace
/// empty, for the next full resync.
fn replace_keyspace(state: &ServerState, data: &[u8], install: InstallFunctions) -> Result<u64, String> {
    use crate::persistence::loading::{load_bytes, Load};
    let ks = &state.keyspace;
    let mut lock = ks.lock_all();
    crate::effects::changes::db_flushed(state, None);
    let clear = |lock: &mut crate::keyspace::MultiLock<'_, '_>| {
        for shard in lock.shards() {
            for d in shard.dbs().iter_mut() {
                d.clear();
            }
        }
    };
    clear(&mut lock);
    let how = Load { merge: false, keep_expired: true, flush_functions: true };
    let loaded = load_bytes(state, data, "the master's snapshot", how, install, |db, e| {
        let key = e.key().to_vec();
        lock.shard_for(ks, &key).db(db).insert(e).is_none()
    });
    if loaded.is_err() {
        clear(&mut lock);
    }
    loaded.map(|l| l.keys)
}

/// Apply the master's stream until the link is lost or replaced.
fn stream_from(state: &ServerState, conn: &mut Conn, apply: Apply, session: &mut Session) -> io::Result<()> {
    let repl = &state.replication;
    repl.link.set_state(UpstreamState::Connected);
    repl.link.down_since_ms.store(0, Ordering::Relaxed);
    // What the handshake read past its last reply is the stream's start.
    repl.link.read_offset.store(repl.offset() + conn.input.len() as u64, Ordering::Relaxed);
    super::update_refusals(state);
    let timeout = repl_timeout(state);
    let mut applied = 0usize;
    let mut last_ack = Instant::now();
    let mut acks = Vec::new();
    loop {
        if !current(state, conn.generation) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "replaced"));
        }
        if conn.client.is_killed() {
            return Err(io::Error::other("the link was killed (CLIENT KILL)"));
        }
        if last_ack.elapsed() >= ACK_EVERY {
            let at = repl.offset().to_string();
            conn.send(&[b"REPLCONF", b"ACK", at.as_bytes()])?;
            last_ack = Instant::now();
        }
        let n = conn.read_some(timeout)?;
        if n == 0 {
            continue;
        }
        repl.link.read_offset.fetch_add(n as u64, Ordering::Relaxed);
        let last;
        (applied, last) = apply_input(state, &mut conn.input, applied, apply, session, &mut acks)?;
        if let Some(cmd) = last {
            conn.client.ran(cmd, crate::clock::mono_us(Instant::now()));
        }
        for at in acks.drain(..) {
            conn.send(&[b"REPLCONF", b"ACK", at.to_string().as_bytes()])?;
            last_ack = Instant::now();
        }
        if conn.input.len() > MAX_PENDING_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the master sent a command larger than allowed"));
        }
    }
}

/// Apply the whole commands of `input` after the first `applied` bytes
/// (run already, inside a transaction not yet ended), then move what
/// counts (up to the last command outside a transaction) from `input` to
/// this server's stream. Returns how many bytes left in `input` are run
/// already. Each `REPLCONF GETACK` adds the offset to acknowledge to
/// `acks`.
fn apply_input(
    state: &ServerState,
    input: &mut Vec<u8>,
    applied: usize,
    apply: Apply,
    session: &mut Session,
    acks: &mut Vec<u64>,
) -> io::Result<(usize, Option<kvik_protocol::commands::CommandId>)> {
    let repl = &state.replication;
    let gate = repl.apply_gate.lock().unwrap_or_else(|p| p.into_inner());
    let base = repl.offset();
    let mut counted = if session.multi.is_none() { applied } else { 0 };
    let mut args = CommandArgs::new();
    let mut last = None;
    let read = read::<()>(&input[applied..], |cmd| {
        let name = cmd.args[0];
        let is_replconf = name.eq_ignore_ascii_case(b"replconf");
        if is_replconf && cmd.args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"getack")) {
            acks.push(base + counted as u64);
        } else if !is_replconf {
            args.clear();
            for a in cmd.args {
                args.push_owned(a);
            }
            if let Err(e) = apply(state, &args, session) {
                log_refused(&e);
            }
        }
        last = kvik_protocol::commands::lookup(name).map(|spec| spec.id).or(last);
        if session.multi.is_none() {
            counted = applied + cmd.span.end;
        }
        Ok(())
    });
    let consumed = match read {
        Ok(Ending::Whole) => input.len(),
        Ok(Ending::Truncated { valid_up_to }) => applied + valid_up_to,
        Err(ReadError::Format(e)) => {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("the master's stream is malformed: {e}")))
        }
        Err(ReadError::Command { .. }) => {
            return Err(io::Error::other("a command of the master's stream stopped the read"))
        }
    };
    if counted > 0 {
        let config = state.config();
        let backlog_size = usize::try_from(config.int("repl-backlog-size")).unwrap_or(usize::MAX);
        let limit = parse_output_limits(config.get("client-output-buffer-limit"))[1];
        drop(config);
        repl.append(&input[..counted], backlog_size, limit);
    }
    drop(gate);
    input.drain(..counted);
    Ok((consumed - counted, last))
}

/// Log, at most once a second, a command of the master's that did not run.
fn log_refused(error: &str) {
    static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(1000);
    if LIMIT.allow() {
        crate::log!(Warning, "== CRITICAL == A command from the master did not run: {error}");
    }
}

/// The socket to the master and what was read from it and not used yet.
struct Conn {
    stream: TcpStream,
    input: Vec<u8>,
    generation: u64,
    /// When the master last sent anything.
    last_io: Instant,
    /// The link as `CLIENT LIST` shows it (`flags=M`), and `CLIENT KILL`
    /// ends it.
    client: Arc<crate::registries::clients::ClientHandle>,
}

impl Conn {
    /// Send one command.
    fn send(&mut self, args: &[&[u8]]) -> io::Result<()> {
        let mut out = Vec::new();
        kvik_persist::aof::commands::put(&mut out, args);
        self.stream.write_all(&out)
    }

    /// Read what comes within one [`POLL`] into the input; 0 when nothing
    /// did. An error when the master closed, or said nothing for `timeout`.
    fn read_some(&mut self, timeout: Duration) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the master closed the connection")),
            Ok(n) => {
                self.input.extend_from_slice(&chunk[..n]);
                self.last_io = Instant::now();
                Ok(n)
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if self.last_io.elapsed() > timeout {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "Timeout connecting to the MASTER..."));
                }
                Ok(0)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// The next line the master sends, without its `\r\n`, passing over
    /// the empty lines a master sends to keep the link alive while it
    /// prepares a snapshot.
    fn reply_line(&mut self, state: &ServerState, timeout: Duration) -> io::Result<Vec<u8>> {
        loop {
            if let Some(end) = self.input.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.input.drain(..=end).collect();
                let line = line.strip_suffix(b"\n").unwrap_or(&line);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.is_empty() {
                    state.replication.link.last_io_ms.store(crate::keyspace::now_ms(), Ordering::Relaxed);
                    continue;
                }
                return Ok(line.to_vec());
            }
            if self.input.len() > MAX_LINE_BYTES {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "the master's reply line is too long"));
            }
            self.wait_and_read(state, timeout)?;
        }
    }

    /// [`Conn::read_some`], stopping when the link is replaced.
    fn wait_and_read(&mut self, state: &ServerState, timeout: Duration) -> io::Result<usize> {
        if !current(state, self.generation) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "replaced"));
        }
        let n = self.read_some(timeout)?;
        if n > 0 {
            state.replication.link.last_io_ms.store(crate::keyspace::now_ms(), Ordering::Relaxed);
        }
        Ok(n)
    }

    /// A snapshot of `len` bytes.
    fn payload_of(&mut self, state: &ServerState, len: u64) -> io::Result<Vec<u8>> {
        let repl = &state.replication;
        let len = usize::try_from(len).map_err(|_| io::Error::other("the snapshot is larger than memory"))?;
        repl.link.sync_total_bytes.store(i64::try_from(len).unwrap_or(i64::MAX), Ordering::Relaxed);
        let timeout = repl_timeout(state);
        let mut data = Vec::with_capacity(len.min(FIRST_RESERVE_BYTES));
        loop {
            let take = (len - data.len()).min(self.input.len());
            data.extend(self.input.drain(..take));
            repl.link.sync_read_bytes.store(data.len() as u64, Ordering::Relaxed);
            if data.len() == len {
                return Ok(data);
            }
            self.wait_and_read(state, timeout)?;
        }
    }

    /// A diskless master's snapshot: everything up to `mark`. Such a
    /// master sends nothing after it until this replica acknowledges.
    fn payload_to_mark(&mut self, state: &ServerState, mark: &[u8]) -> io::Result<Vec<u8>> {
        let repl = &state.replication;
        repl.link.sync_total_bytes.store(-1, Ordering::Relaxed);
        let timeout = repl_timeout(state);
        let mut data = Vec::new();
        loop {
            data.append(&mut self.input);
            repl.link.sync_read_bytes.store(data.len() as u64, Ordering::Relaxed);
            if data.ends_with(mark) {
                data.truncate(data.len() - mark.len());
                return Ok(data);
            }
            self.wait_and_read(state, timeout)?;
        }
    }
}
