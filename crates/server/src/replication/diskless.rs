//! A diskless full resync (`repl-diskless-sync yes`, a replica that said
//! `capa eof`): the snapshot goes to the replicas' sockets as the
//! persistence thread makes it, with no file between.
//!
//! As in Redis, the first replica to ask waits `repl-diskless-sync-delay`
//! seconds (or until `repl-diskless-sync-max-replicas` are waiting) so
//! that others can share the snapshot; each gets a newline every second
//! meanwhile. Whichever waiting connection finds the snapshot due begins
//! it for all of them ([`begin`]), each attached to the stream at its
//! moment. Each connection then sends `+FULLRESYNC`, `$EOF:<mark>`, the
//! pieces from its channel, and the mark again: the replica reads up to
//! the mark, as the length is not known in advance.
//!
//! The channels are bounded, so the snapshot goes as fast as its slowest
//! replica takes it and holds no more than they do. A replica that takes
//! nothing for `repl-timeout` seconds is dropped, and the snapshot goes on
//! for the others.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};

use super::master::{announce, write, Request, TICK};
use crate::persistence::background;
use crate::registries::replication::Link;
use crate::registries::saves::{Piece, Refused};
use crate::state::ServerState;

/// Pieces a replica's channel holds (each one flush of the snapshot's
/// buffer, about a megabyte).
const PIECES: usize = 8;
/// How often a waiting replica looks whether its snapshot is due.
const LOOK: Duration = Duration::from_millis(50);

/// Serve `link` a diskless full resync, up to the end of the snapshot.
pub async fn send<S, F>(
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
    let (sink, mut pieces) = tokio::sync::mpsc::channel(PIECES);
    repl.wait_for_diskless(Arc::clone(link), sink);
    if delay(state) > Duration::ZERO {
        crate::log!(Notice, "Delay next BGSAVE for diskless SYNC");
    }
    let mut newline = Instant::now();
    while repl.is_waiting(link) {
        let max = usize::try_from(state.config().int("repl-diskless-sync-max-replicas")).unwrap_or(0);
        if repl.waiting_due(delay(state), max) {
            begin(state)?;
            if !repl.is_waiting(link) {
                break;
            }
        }
        tokio::select! {
            () = tokio::time::sleep(LOOK) => {}
            () = &mut *stop => return Err(io::Error::other("stopped")),
        }
        if newline.elapsed() >= TICK {
            newline = Instant::now();
            write(stream, b"\n", stop).await?;
        }
    }
    announce(stream, state, link, ask, stop).await?;
    let mark = crate::registries::replication::hex_id();
    write(stream, format!("$EOF:{mark}\r\n").as_bytes(), stop).await?;
    let timeout = Duration::from_secs(u64::try_from(state.config().int("repl-timeout")).unwrap_or(60).max(1));
    loop {
        let piece = tokio::select! {
            p = pieces.recv() => p,
            () = &mut *stop => return Err(io::Error::other("stopped")),
        };
        match piece {
            Some(Piece::Bytes(bytes)) => match tokio::time::timeout(timeout, write(stream, &bytes, stop)).await {
                Ok(written) => written?,
                Err(_) => {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "Disconnecting timedout replica (full sync)"))
                }
            },
            Some(Piece::End(Ok(()))) => break,
            Some(Piece::End(Err(e))) => return Err(io::Error::other(format!("the snapshot failed: {e}"))),
            None => return Err(io::Error::other("the snapshot stopped")),
        }
    }
    write(stream, mark.as_bytes(), stop).await?;
    crate::log!(Notice, "Streamed RDB transfer with replica {}:{} succeeded (socket)", link.ip, link.port);
    Ok(())
}

/// `repl-diskless-sync-delay`.
fn delay(state: &ServerState) -> Duration {
    Duration::from_secs(u64::try_from(state.config().int("repl-diskless-sync-delay")).unwrap_or(0))
}

/// Begin the snapshot for every waiting replica, unless another background
/// save runs (they then wait for the next look).
fn begin(state: &Arc<ServerState>) -> io::Result<()> {
    let repl = &state.replication;
    // As for a snapshot to a file: under the gate the snapshot's moment
    // falls between two of a master's commands (see super::master).
    let gate = repl.apply_gate.lock().unwrap_or_else(|p| p.into_inner());
    let waiting = repl.take_waiting();
    if waiting.is_empty() {
        return Ok(());
    }
    let replica = repl.is_replica();
    let sinks = waiting.iter().map(|w| w.sink.clone()).collect();
    let begun = background::start_to_replicas(state, sinks, |cut| {
        for w in &waiting {
            if replica {
                repl.place_at_end(&w.link);
            } else {
                super::feed::start(state, cut);
                repl.attach(cut, Arc::clone(&w.link));
            }
        }
    });
    drop(gate);
    match begun {
        Ok(()) => {
            if !replica {
                super::feed::ensure_running(state)?;
                state.journal.wake_feed();
            }
            Ok(())
        }
        Err(Refused::InProgress) => {
            repl.put_back_waiting(waiting);
            Ok(())
        }
        Err(Refused::NotRunning) => Err(io::Error::other("the server is stopping")),
    }
}
