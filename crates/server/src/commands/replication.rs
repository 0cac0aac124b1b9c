//! The commands a replica sends its master: `REPLCONF`, then `PSYNC` (or
//! `SYNC`, which predates it and which `redis-cli --replica` and `--rdb`
//! still send).
//!
//! `REPLCONF` notes what the replica says of itself in the session, with
//! Redis's checks and replies. `SYNC` and `PSYNC` answer nothing here:
//! they end the command part of the connection ([`Outcome::Replica`]), and
//! the connection serves the replica from then on
//! ([`crate::replication::master`]).

use kvik_protocol::number::parse_i64;

use super::{Ctx, Outcome, ReplyTarget};

handlers! {
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
    begin(c, Some((replid, offset)));
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
    c.session.replica.psync = psync;
    c.outcome = Outcome::Replica;
}
