//! The commands of replication: `REPLICAOF` (and `SLAVEOF`), which makes
//! this server a replica or a master again, `ROLE`, `WAIT`, and those a replica
//! sends its master: `REPLCONF`, then `PSYNC` (or `SYNC`, which predates
//! it and which `redis-cli --replica` and `--rdb` still send).
//!
//! `REPLCONF` notes what the replica says of itself in the session, with
//! Redis's checks and replies. `SYNC` and `PSYNC` answer nothing here:
//! they end the command part of the connection ([`Outcome::Replica`]), and
//! the connection serves the replica from then on
//! ([`crate::replication::master`]).

use std::sync::atomic::Ordering;

use kvik_protocol::number::parse_i64;

use super::{Ctx, Outcome, ReplyTarget, Waits};
use crate::registries::blocking::AckTarget;
use crate::registries::replication::{FailoverState, LinkState, Upstream, UpstreamState};
use crate::replication::replica::{self, Runners};
use crate::replication::{acks, failover};

/// What the link to a master runs: the master's commands, and a
/// snapshot's function libraries.
pub const RUNNERS: Runners = Runners { apply: super::apply_from_master, install: super::install_loaded_functions };

/// `REPLICAOF host port` / `REPLICAOF NO ONE`.
fn replicaof<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(state) = c.state.shared() else {
        return c.error(b"ERR the server is stopping");
    };
    if c.state.replication.failover().state != FailoverState::None {
        return c.error(b"ERR REPLICAOF not allowed while failing over.");
    }
    if c.arg(1).eq_ignore_ascii_case(b"no") && c.arg(2).eq_ignore_ascii_case(b"one") {
        if c.state.replication.upstream().is_some() {
            let why = format!("user request from 'id={}'", c.session.id);
            if let Err(e) = replica::promote(&state, Some(&why)) {
                return c.error(format!("ERR the replication feed could not start: {e}").as_bytes());
            }
        }
        return c.ok();
    }
    let Some(port) = parse_i64(c.arg(2)).and_then(|p| u16::try_from(p).ok()) else {
        return c.error(b"ERR Invalid master port");
    };
    let host = String::from_utf8_lossy(c.arg(1)).into_owned();
    if c.state.replication.upstream().is_some_and(|u| u.host.eq_ignore_ascii_case(&host) && u.port == port) {
        crate::log!(Notice, "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
        return c.reply(|s| s.simple(b"OK Already connected to specified master"));
    }
    crate::log!(Notice, "REPLICAOF {host}:{port} enabled (user request from 'id={}')", c.session.id);
    match replica::follow(&state, Upstream { host, port }, RUNNERS) {
        Ok(()) => c.ok(),
        Err(e) => c.error(format!("ERR the link to the master could not start: {e}").as_bytes()),
    }
}

/// `ROLE`: `master`, its offset and its online replicas; or `slave`, the
/// master, the link's state and the offset applied (-1 while not
/// connected).
fn role<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let repl = &c.state.replication;
    if let Some(up) = repl.upstream() {
        let state = repl.link.state();
        let offset =
            if state == UpstreamState::Connected { i64::try_from(repl.offset()).unwrap_or(i64::MAX) } else { -1 };
        return c.reply(|s| {
            s.array(5);
            s.bulk(b"slave");
            s.bulk(up.host.as_bytes());
            s.integer(i64::from(up.port));
            s.bulk(state.role_name().as_bytes());
            s.integer(offset);
        });
    }
    let online: Vec<_> = repl.replicas().into_iter().filter(|r| r.state() == LinkState::Online).collect();
    let offset = i64::try_from(repl.offset()).unwrap_or(i64::MAX);
    c.reply(|s| {
        s.array(3);
        s.bulk(b"master");
        s.integer(offset);
        s.array(online.len());
        for r in &online {
            s.array(3);
            s.bulk(r.ip.as_bytes());
            s.bulk(r.port.to_string().as_bytes());
            s.bulk(r.ack_offset.load(Ordering::Relaxed).to_string().as_bytes());
        }
    });
}

/// `WAIT numreplicas timeout`: how many replicas acknowledged every
/// change made before it, once `numreplicas` have or `timeout`
/// milliseconds have passed (0: no limit). Inside `EXEC` it answers at
/// once.
fn wait<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.state.replication.is_replica() {
        return c.error(b"ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.");
    }
    let Some(wanted) = parse_i64(c.arg(1)) else {
        return c.error(b"ERR value is not an integer or out of range");
    };
    let timeout_ms = match parse_i64(c.arg(2)) {
        None => return c.error(b"ERR timeout is not an integer or out of range"),
        Some(ms) if ms < 0 => return c.error(b"ERR timeout is negative"),
        Some(ms) => ms,
    };
    let place = c.state.keyspace.changes_taken();
    let offset = acks::offset_of(c.state, place);
    let count = offset.map_or(0, |o| acks::count(c.state, o));
    if i64::try_from(count).unwrap_or(i64::MAX) >= wanted || c.waits != Waits::Block {
        return c.reply(|s| s.integer(i64::try_from(count).unwrap_or(i64::MAX)));
    }
    let wanted = usize::try_from(wanted).unwrap_or(usize::MAX);
    let target = AckTarget { place, wanted, offset, count };
    super::blocked::wait_for_acks(c, target, super::blocked::deadline_after(timeout_ms));
    acks::request(c.state);
}

/// `FAILOVER [TO host port [FORCE]] [TIMEOUT milliseconds]` and
/// `FAILOVER ABORT`, parsed as Redis parses them; the failover itself
/// goes on after the reply ([`crate::replication::failover`]).
fn failover_command<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(state) = c.state.shared() else {
        return c.error(b"ERR the server is stopping");
    };
    if c.argc() == 2 && c.arg(1).eq_ignore_ascii_case(b"abort") {
        return match failover::abort_by_request(&state) {
            Ok(()) => c.ok(),
            Err(e) => c.error(e.as_bytes()),
        };
    }
    let mut ask = failover::Request::default();
    let mut j = 1;
    while j < c.argc() {
        let word = c.arg(j);
        if word.eq_ignore_ascii_case(b"timeout") && j + 1 < c.argc() && ask.timeout_ms == 0 {
            let Some(ms) = parse_i64(c.arg(j + 1)) else {
                return c.error(b"ERR value is not an integer or out of range");
            };
            if ms <= 0 {
                return c.error(b"ERR FAILOVER timeout must be greater than 0");
            }
            ask.timeout_ms = ms;
            j += 2;
        } else if word.eq_ignore_ascii_case(b"to") && j + 2 < c.argc() && ask.target.is_none() {
            let Some(port) = parse_i64(c.arg(j + 2)) else {
                return c.error(b"ERR value is not an integer or out of range");
            };
            ask.target = Some((String::from_utf8_lossy(c.arg(j + 1)).into_owned(), port));
            j += 3;
        } else if word.eq_ignore_ascii_case(b"force") && !ask.force {
            ask.force = true;
            j += 1;
        } else {
            return c.error(b"ERR syntax error");
        }
    }
    match failover::start(&state, ask, RUNNERS) {
        Ok(()) => c.ok(),
        Err(e) => c.error(e.as_bytes()),
    }
}

handlers! {
    FAILOVER(c) => failover_command(c),
    WAIT(c) => wait(c),
    REPLICAOF(c) => replicaof(c),
    SLAVEOF(c) => replicaof(c),
    ROLE(c) => role(c),
    REPLCONF(c) => replconf(c),
    PSYNC(c) => psync(c),
    SYNC(c) => sync(c),
}

/// Redis's limit on an announced address (`NET_HOST_STR_LEN`).
const HOST_LEN_MAX: usize = 256;

/// `REPLCONF <option> <value> [<option> <value> ...]`.
fn replconf<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc().is_multiple_of(2) {
        return c.error(b"ERR wrong number of arguments for 'replconf' command");
    }
    for j in (1..c.argc()).step_by(2) {
        let (option, value) = (c.arg(j).to_ascii_lowercase(), c.arg(j + 1));
        match option.as_slice() {
            b"listening-port" => match parse_i64(value) {
                Some(port) => c.session.replica.port = u16::try_from(port).unwrap_or(0),
                None => return c.error(b"ERR value is not an integer or out of range"),
            },
            b"ip-address" => {
                if value.len() >= HOST_LEN_MAX {
                    let msg = format!(
                        "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                        value.len()
                    );
                    return c.error(msg.as_bytes());
                }
                c.session.replica.ip = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"capa" => {
                // Capabilities kvik does not know are passed over, as Redis does.
                if value.eq_ignore_ascii_case(b"psync2") {
                    c.session.replica.psync2 = true;
                } else if value.eq_ignore_ascii_case(b"eof") {
                    c.session.replica.eof = true;
                }
            }
            // Only a replica's own connection acknowledges, and gets no
            // reply; kvik is never a replica that is asked for one.
            b"ack" | b"getack" => return,
            b"rdb-only" => match parse_i64(value) {
                Some(n @ 0..=1) => c.session.replica.rdb_only = n == 1,
                Some(_) => return c.error(b"ERR value is out of range, value must between 0 and 1"),
                None => return c.error(b"ERR value is not an integer or out of range"),
            },
            _ => {
                let mut msg = b"ERR Unrecognized REPLCONF option: ".to_vec();
                msg.extend_from_slice(c.arg(j));
                return c.error(&msg);
            }
        }
    }
    c.ok();
}

/// `PSYNC <replid> <offset>`.
fn psync<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(offset) = parse_i64(c.arg(2)) else {
        return c.error(b"ERR value is not an integer or out of range");
    };
    let replid = c.arg(1).to_vec();
    if c.argc() > 3 && c.arg(3).eq_ignore_ascii_case(b"failover") && !take_over(c, &replid) {
        return;
    }
    begin(c, Some((replid, offset)));
}

/// `PSYNC <replid> <offset> FAILOVER`: this server's master hands over
/// to it. With the master's id, it becomes a master at once, and the
/// `PSYNC` then continues the old master from its offset (PSYNC2).
/// Returns whether the `PSYNC` goes on.
fn take_over<T: ReplyTarget>(c: &mut Ctx<'_, T>, replid: &[u8]) -> bool {
    crate::log!(Warning, "Failover request received for replid {}.", String::from_utf8_lossy(replid));
    let Some(state) = c.state.shared() else {
        c.error(b"ERR the server is stopping");
        return false;
    };
    if state.replication.upstream().is_none() {
        c.error(b"ERR PSYNC FAILOVER can't be sent to a master.");
        return false;
    }
    if replid != state.replication.replid().as_bytes() {
        c.error(b"ERR PSYNC FAILOVER replid must match my replid.");
        return false;
    }
    let why = format!("failover request from 'id={}'", c.session.id);
    if let Err(e) = replica::promote(&state, Some(&why)) {
        c.error(format!("ERR the replication feed could not start: {e}").as_bytes());
        return false;
    }
    true
}

/// `SYNC`.
fn sync<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    begin(c, None);
}

fn begin<T: ReplyTarget>(c: &mut Ctx<'_, T>, psync: Option<(Vec<u8>, i64)>) {
    if c.session.handle().is_some_and(|h| h.info().mux.is_some()) {
        return c.error(b"ERR SYNC and PSYNC are not served on RESPB channels: replicas connect over RESP");
    }
    if c.target.has_pending() {
        return c.error(b"ERR SYNC and PSYNC are invalid with pending output");
    }
    let repl = &c.state.replication;
    if repl.failover().state != FailoverState::None {
        return c.error(b"NOMASTERLINK Can't SYNC while failing over");
    }
    if repl.upstream().is_some() && repl.link.state() != UpstreamState::Connected {
        return c.error(b"NOMASTERLINK Can't SYNC while not connected with my master");
    }
    c.session.replica.psync = psync;
    c.outcome = Outcome::Replica;
}
