//! A replica's connection, from its `SYNC` or `PSYNC` on: the master's
//! side of Redis's protocol.
//!
//! `PSYNC` with this master's replication id and an offset the backlog
//! still holds gets `+CONTINUE` and the stream from there (a partial
//! resync). Anything else gets a full resync: a background snapshot is
//! begun, and at its moment the replica is attached to the stream
//! ([`crate::registries::replication::Replication::attach`]); once the
//! feed has put every change up to that moment in the stream, the
//! replica's place is known and `+FULLRESYNC <replid> <offset>` goes out
//! (not for `SYNC`, which predates it). The snapshot file follows as one
//! bulk string (`$<len>`); or, for a replica that reads an end mark
//! (`capa eof`) while `repl-diskless-sync` is on, no file: the snapshot
//! goes to the socket as it is made ([`super::diskless`]). Then the stream
//! from the replica's place,
//! while its `REPLCONF ACK <offset>`s are read. While it waits for the
//! snapshot the replica gets a newline every second, as Redis sends it, so
//! that its read timeout does not fire.
//!
//! `REPLCONF rdb-only 1` (what `redis-cli --rdb` sends) ends the
//! connection after the file.

use std::io;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::persistence::background;
use crate::registries::replication::{Link, LinkState, SnapshotOutcome};
use crate::registries::saves::{Purpose, Refused};
use crate::state::ServerState;

/// How often a replica waiting for its snapshot gets a newline, and a
/// streaming one's acknowledgements are checked against `repl-timeout`.
pub(super) const TICK: Duration = Duration::from_secs(1);
/// A retry to begin a snapshot while another background save runs.
const RETRY: Duration = Duration::from_millis(100);
/// The most unread input a replica may leave (its acknowledgements).
const MAX_INPUT: usize = 64 * 1024;

/// What the replica asked for.
#[derive(Debug, Clone)]
pub struct Request {
    /// `PSYNC <replid> <offset>`; `None` for `SYNC`.
    pub psync: Option<(Vec<u8>, i64)>,
    /// `REPLCONF rdb-only 1`: the snapshot alone.
    pub rdb_only: bool,
    /// `REPLCONF capa psync2`: `+CONTINUE` names the replication id.
    pub psync2: bool,
    /// `REPLCONF capa eof`: it takes a diskless sync's snapshot.
    pub eof: bool,
}

/// Serve the replica on `stream` until it leaves, falls behind, times out
/// or `stop` completes (the server stops, the client is killed).
pub async fn serve<S, F>(
    stream: &mut S,
    state: &Arc<ServerState>,
    link: Arc<Link>,
    ask: Request,
    stop: &mut F,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future<Output = ()> + Unpin,
{
    let served = sync(stream, state, &link, &ask, stop).await;
    state.replication.detach(&link);
    super::update_refusals(state);
    super::acks::serve(state);
    if let Err(e) = &served {
        crate::log!(Notice, "Connection with replica {}:{} lost: {e}", link.ip, link.port);
    }
    served
}

/// Why a `PSYNC <replid> <offset>` gets a full resync, in the words of
/// Redis's log.
fn log_refused_partial(repl: &crate::registries::replication::Replication, who: &str, replid: &[u8], offset: i64) {
    let ids = repl.ids();
    let asked = String::from_utf8_lossy(replid);
    if replid != ids.replid.as_bytes() && replid != ids.replid2.as_bytes() {
        crate::log!(
            Notice,
            "Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '{asked}', my replication IDs are '{}' and '{}')",
            ids.replid,
            ids.replid2
        );
    } else if replid != ids.replid.as_bytes() && offset > ids.second_offset {
        crate::log!(
            Notice,
            "Partial resynchronization not accepted: Requested offset for second ID was {offset}, but I can reply up to {}",
            ids.second_offset
        );
    } else if u64::try_from(offset).is_ok_and(|o| o > repl.offset() + 1) {
        crate::log!(
            Warning,
            "Warning: replica {who} tried to PSYNC with an offset that is greater than the master replication offset."
        );
    } else {
        crate::log!(
            Notice,
            "Unable to partial resync with replica {who} for lack of backlog (Replica request was: {offset})."
        );
    }
}

async fn sync<S, F>(
    stream: &mut S,
    state: &Arc<ServerState>,
    link: &Arc<Link>,
    ask: &Request,
    stop: &mut F,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future<Output = ()> + Unpin,
{
    let repl = &state.replication;
    let who = format!("{}:{}", link.ip, link.port);
    if let Some((replid, offset)) = &ask.psync {
        let continues = |o: u64| repl.continues(replid, o) && repl.place_at(link, o);
        if !ask.rdb_only && u64::try_from(*offset).is_ok_and(continues) {
            repl.syncs_partial_ok.fetch_add(1, Ordering::Relaxed);
            link.set_state(LinkState::Online);
            super::update_refusals(state);
            let reply = if ask.psync2 { format!("+CONTINUE {}\r\n", repl.replid()) } else { "+CONTINUE\r\n".into() };
            crate::log!(Notice, "Partial resynchronization request from {who} accepted, from offset {offset}.");
            write(stream, reply.as_bytes(), stop).await?;
            return stream_to(stream, state, link, true, false, stop).await;
        }
        if replid.as_slice() != b"?" {
            repl.syncs_partial_err.fetch_add(1, Ordering::Relaxed);
            log_refused_partial(repl, &who, replid, *offset);
        } else {
            crate::log!(Notice, "Full resync requested by replica {who}");
        }
    }
    repl.syncs_full.fetch_add(1, Ordering::Relaxed);
    let diskless = ask.eof && state.config().get("repl-diskless-sync") == "yes";
    if diskless {
        super::diskless::send(stream, state, link, ask, stop).await?;
    } else {
        let done_before = begin_snapshot(stream, state, link, stop).await?;
        announce(stream, state, link, ask, stop).await?;
        let file = wait_for_snapshot(stream, state, done_before, stop).await?;
        link.set_state(LinkState::SendBulk);
        send_file(stream, &file, stop).await?;
    }
    crate::log!(Notice, "Synchronization with replica {who} succeeded");
    if ask.rdb_only {
        return Ok(());
    }
    link.set_state(LinkState::Online);
    link.acked(0);
    super::update_refusals(state);
    // A replica that acknowledges says when it has loaded.
    let acks = ask.psync.is_some();
    stream_to(stream, state, link, acks, diskless && acks, stop).await
}

/// Once the feed has reached the snapshot's moment, the replica's place
/// is known: `+FULLRESYNC <replid> <offset>` (not for `SYNC`).
pub(super) async fn announce<S, F>(
    stream: &mut S,
    state: &ServerState,
    link: &Link,
    ask: &Request,
    stop: &mut F,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future<Output = ()> + Unpin,
{
    let offset = loop {
        let woken = link.wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if let Some(sent) = link.sent() {
            break sent;
        }
        tokio::select! {
            () = &mut woken => {}
            () = tokio::time::sleep(TICK) => {}
            () = &mut *stop => return Err(io::Error::other("stopped")),
        }
    };
    if ask.psync.is_some() {
        let reply = format!("+FULLRESYNC {} {offset}\r\n", state.replication.replid());
        write(stream, reply.as_bytes(), stop).await?;
    }
    Ok(())
}

/// Begin a snapshot with `link` attached at its moment, waiting while
/// another background save runs. Returns how many snapshots for replicas
/// had finished before this one.
async fn begin_snapshot<S, F>(
    stream: &mut S,
    state: &Arc<ServerState>,
    link: &Arc<Link>,
    stop: &mut F,
) -> io::Result<u64>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future<Output = ()> + Unpin,
{
    let mut since_newline = Duration::ZERO;
    loop {
        let done_before = state.replication.snapshots_done();
        let path = crate::persistence::snapshot_path(state);
        let temp = crate::registries::saves::Background::temp_path(&crate::persistence::dir_of(&path));
        // A replica's stream is its master's, appended as each command is
        // applied, under the gate: held here, the snapshot's moment falls
        // between two commands and the stream's end is its offset.
        let gate = state.replication.apply_gate.lock().unwrap_or_else(|p| p.into_inner());
        let replica = state.replication.is_replica();
        let begun = background::start_job(state, Purpose::Replication, path, temp, |cut| {
            if replica {
                state.replication.place_at_end(link);
            } else {
                super::feed::start(state, cut);
                state.replication.attach(cut, Arc::clone(link));
            }
        });
        drop(gate);
        match begun {
            Ok(()) => {
                if !replica {
                    super::feed::ensure_running(state)?;
                    // The replica's place comes from the feed's next round:
                    // now, not after its idle wait.
                    state.journal.wake_feed();
                }
                return Ok(done_before);
            }
            Err(Refused::NotRunning) => return Err(io::Error::other("the server is stopping")),
            Err(Refused::InProgress) => {}
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            () = &mut *stop => return Err(io::Error::other("stopped")),
        }
        since_newline += RETRY;
        if since_newline >= TICK {
            since_newline = Duration::ZERO;
            write(stream, b"\n", stop).await?;
        }
    }
}

/// Wait for the snapshot after the first `done_before`, sending a newline
/// every second.
async fn wait_for_snapshot<S, F>(
    stream: &mut S,
    state: &ServerState,
    done_before: u64,
    stop: &mut F,
) -> io::Result<Arc<std::fs::File>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future<Output = ()> + Unpin,
{
    let repl = &state.replication;
    loop {
        let woken = repl.snapshot_wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let outcome: Option<SnapshotOutcome> = repl.snapshot_after(done_before);
        match outcome {
            Some(Ok(file)) => return Ok(file),
            Some(Err(e)) => return Err(io::Error::other(format!("the snapshot failed: {e}"))),
            None => {}
        }
        tokio::select! {
            () = &mut woken => {}
            () = tokio::time::sleep(TICK) => write(stream, b"\n", stop).await?,
            () = &mut *stop => return Err(io::Error::other("stopped")),
        }
    }
}

/// Send the snapshot as one bulk string.
async fn send_file<S, F>(stream: &mut S, file: &std::fs::File, stop: &mut F) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future<Output = ()> + Unpin,
{
    let len = file.metadata()?.len();
    write(stream, format!("${len}\r\n").as_bytes(), stop).await?;
    let mut chunk = vec![0u8; 256 * 1024];
    let mut at = 0u64;
    while at < len {
        let want = usize::try_from(len - at).unwrap_or(usize::MAX).min(chunk.len());
        let n = file.read_at(&mut chunk[..want], at)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the snapshot file ended early"));
        }
        write(stream, &chunk[..n], stop).await?;
        at += n as u64;
    }
    Ok(())
}

/// Send the stream from the replica's place on, reading its
/// acknowledgements, until it leaves, falls behind, times out (when it
/// acknowledges: it came with `PSYNC`) or `stop` completes.
///
/// After a diskless snapshot (`after_ack`) nothing is sent until the
/// replica's first acknowledgement: a Redis replica finds the snapshot's
/// end by its mark being the last bytes it read, so nothing may follow
/// the mark until it has loaded, as Redis's master waits too.
async fn stream_to<S, F>(
    stream: &mut S,
    state: &ServerState,
    link: &Link,
    acks: bool,
    mut after_ack: bool,
    stop: &mut F,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: std::future::Future<Output = ()> + Unpin,
{
    let repl = &state.replication;
    let mut out = Vec::with_capacity(crate::registries::replication::TAKE_BYTES);
    let mut input = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let woken = link.wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if link.dropped() {
            return Err(io::Error::other("output buffer limit reached"));
        }
        if acks {
            let timeout_ms = state.config().int("repl-timeout").saturating_mul(1000);
            if crate::keyspace::now_ms() - link.ack_time_ms.load(Ordering::Relaxed) > timeout_ms {
                crate::log!(Warning, "Disconnecting timedout replica (streaming sync): {}:{}", link.ip, link.port);
                return Err(io::Error::other("timeout"));
            }
        }
        if !after_ack {
            repl.take_for(link, &mut out);
        }
        if !out.is_empty() {
            write(stream, &out, stop).await?;
            // Acknowledgements that came meanwhile, without waiting.
            while let Some(n) = try_read(stream, &mut chunk).await? {
                take_input(link, &mut input, &chunk[..n])?;
                super::acks::serve(state);
            }
            continue;
        }
        tokio::select! {
            () = &mut woken => {}
            r = stream.read(&mut chunk) => match r? {
                0 => return Ok(()),
                n => {
                    after_ack &= take_input(link, &mut input, &chunk[..n])? == 0;
                    super::acks::serve(state);
                }
            },
            () = tokio::time::sleep(TICK) => {}
            () = &mut *stop => return Err(io::Error::other("stopped")),
        }
    }
}

/// Read what the socket has now; `Ok(None)` when it has nothing yet, an
/// error when the replica closed.
async fn try_read<S: AsyncRead + Unpin>(stream: &mut S, chunk: &mut [u8]) -> io::Result<Option<usize>> {
    std::future::poll_fn(|cx| {
        let mut buf = ReadBuf::new(chunk);
        match Pin::new(&mut *stream).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) if buf.filled().is_empty() => {
                Poll::Ready(Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the replica closed")))
            }
            Poll::Ready(Ok(())) => Poll::Ready(Ok(Some(buf.filled().len()))),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Ready(Ok(None)),
        }
    })
    .await
}

/// Add `bytes` to the replica's unread input and act on its whole
/// commands: `REPLCONF ACK <offset>` notes the offset; newlines (sent
/// while it loads) and other commands are passed over, as Redis runs a
/// replica's commands without replying. Returns how many
/// acknowledgements came.
fn take_input(link: &Link, input: &mut Vec<u8>, bytes: &[u8]) -> io::Result<usize> {
    let mut acks = 0;
    input.extend_from_slice(bytes);
    let lead = input.iter().take_while(|&&b| b == b'\n' || b == b'\r').count();
    input.drain(..lead);
    let read = kvik_persist::aof::commands::read::<()>(input, |c| {
        if c.args.len() >= 3 && c.args[0].eq_ignore_ascii_case(b"replconf") && c.args[1].eq_ignore_ascii_case(b"ack") {
            if let Some(offset) = kvik_protocol::number::parse_i64(c.args[2]).and_then(|o| u64::try_from(o).ok()) {
                link.acked(offset);
                acks += 1;
            }
        }
        Ok(())
    });
    match read {
        Ok(kvik_persist::aof::commands::Ending::Whole) => input.clear(),
        Ok(kvik_persist::aof::commands::Ending::Truncated { valid_up_to }) => {
            input.drain(..valid_up_to);
        }
        Err(_) => return Err(io::Error::new(io::ErrorKind::InvalidData, "the replica sent a malformed command")),
    }
    if input.len() > MAX_INPUT {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "the replica sent too much"));
    }
    Ok(acks)
}

/// Write `bytes` whole, unless `stop` completes first.
pub(super) async fn write<S, F>(stream: &mut S, bytes: &[u8], stop: &mut F) -> io::Result<()>
where
    S: AsyncWrite + Unpin,
    F: std::future::Future<Output = ()> + Unpin,
{
    tokio::select! {
        r = stream.write_all(bytes) => r,
        () = &mut *stop => Err(io::Error::other("stopped")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_are_read_across_reads_and_newlines_passed_over() {
        let link = Link::new(1, "127.0.0.1".into(), 1);
        let mut input = Vec::new();
        let ack = b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$3\r\n120\r\n";
        assert_eq!(take_input(&link, &mut input, b"\n\n").expect("newlines"), 0);
        assert_eq!(take_input(&link, &mut input, &ack[..10]).expect("half"), 0);
        assert_eq!(link.ack_offset.load(Ordering::Relaxed), 0);
        assert_eq!(take_input(&link, &mut input, &ack[10..]).expect("rest"), 1);
        assert_eq!(link.ack_offset.load(Ordering::Relaxed), 120);
        assert!(input.is_empty());
        assert!(take_input(&link, &mut input, b"garbage").is_err());
    }
}
