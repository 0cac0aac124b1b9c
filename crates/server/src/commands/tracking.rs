//! Client-side caching commands: `CLIENT TRACKING`, `CLIENT CACHING`,
//! `CLIENT GETREDIR`, `CLIENT TRACKINGINFO`, and the two hooks around every
//! command of a tracking client (remembering what it reads, using up
//! `CLIENT CACHING`). The table itself lives in [`crate::registries::tracking`].

use std::sync::Arc;

use kvik_protocol::commands::{CommandFlags, CommandSpec};
use kvik_protocol::number::parse_i64;
use kvik_protocol::resp::writer::Protocol;

use super::command::key_positions;
use super::{until_nul, Ctx, ReplyTarget, Request, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::client::session::Session;
use crate::registries::tracking::{self, Options};
use crate::state::ServerState;

handlers! {
    CLIENT_TRACKING(c) => client_tracking(c),
    CLIENT_CACHING(c) => client_caching(c),
    CLIENT_GETREDIR(c) => {
        let t = &c.session.tracking;
        let redirect = if t.on() { i64::try_from(t.options().redirect).unwrap_or(i64::MAX) } else { -1 };
        c.reply(|s| s.integer(redirect));
    },
    CLIENT_TRACKINGINFO(c) => trackinginfo(c),
}

/// Most `PREFIX` options one `CLIENT TRACKING` may carry: each is checked
/// against every other, so the count is bounded.
const MAX_PREFIXES: usize = 1024;

/// Before a command runs: remember the keys a read-only command of a
/// tracking client will read. Done before the read, so a change another
/// thread makes right after it is announced.
pub(super) fn before_command(state: &ServerState, session: &Session, spec: &CommandSpec, req: Request<'_>) {
    if !session.tracking.remembers_reads()
        || !spec.flags.contains(CommandFlags::READONLY)
        || spec.flags.contains(CommandFlags::PUBSUB)
    {
        return;
    }
    let keys = key_positions(spec, req);
    if keys.is_empty() {
        return;
    }
    let limit = state.pubsub.limit();
    tracking::remember(&state.tracking, &state.clients, limit, session.id, keys.iter().map(|&i| req.arg(i)));
}

/// After a command ran: `CLIENT CACHING` covers the next command that is
/// not itself a `CLIENT` subcommand, as in Redis.
pub(super) fn after_command(session: &mut Session, spec: &CommandSpec) {
    if spec.container != Some("client") {
        session.tracking.command_done();
    }
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]`,
/// checked in Redis's order: the options left to right, then their
/// combination and the client's current mode.
fn client_tracking<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mut options = Options::default();
    let mut i = 3;
    while i < c.argc() {
        let opt = c.arg(i);
        let more = i + 1 < c.argc();
        if opt.eq_ignore_ascii_case(b"redirect") && more {
            i += 1;
            if options.redirect != 0 {
                return c.error(b"ERR A client can only redirect to a single other client");
            }
            let Some(id) = parse_i64(c.arg(i)) else { return c.error(NOT_AN_INTEGER) };
            let id = u64::try_from(id).unwrap_or(0);
            if id == 0 || !c.state.clients.contains(id) {
                return c.error(b"ERR The client ID you want redirect to does not exist");
            }
            options.redirect = id;
        } else if opt.eq_ignore_ascii_case(b"bcast") {
            options.bcast = true;
        } else if opt.eq_ignore_ascii_case(b"optin") {
            options.optin = true;
        } else if opt.eq_ignore_ascii_case(b"optout") {
            options.optout = true;
        } else if opt.eq_ignore_ascii_case(b"noloop") {
            options.noloop = true;
        } else if opt.eq_ignore_ascii_case(b"prefix") && more && options.prefixes.len() < MAX_PREFIXES {
            i += 1;
            options.prefixes.push(Box::from(c.arg(i)));
        } else {
            return c.error(SYNTAX_ERROR);
        }
        i += 1;
    }
    let mode = c.arg(2);
    if mode.eq_ignore_ascii_case(b"off") {
        c.session.tracking.disable();
        if let Some(h) = c.session.handle() {
            h.info().tracking = None;
        }
        return c.ok();
    }
    if !mode.eq_ignore_ascii_case(b"on") {
        return c.error(SYNTAX_ERROR);
    }
    if let Err(msg) = check_on(&c.session.tracking, &options) {
        return c.error(msg);
    }
    if options.bcast {
        if let Some((msg, stop)) = prefix_collision(c.session.tracking.prefixes(), &options.prefixes) {
            c.error(&msg);
            // Redis goes on after a collision between two given prefixes
            // that are not the first, and then also replies OK.
            if stop {
                return;
            }
        }
    }
    enable(c, options);
    c.ok();
}

/// Turn tracking on for the client and show it in the client list.
fn enable<T: ReplyTarget>(c: &mut Ctx<'_, T>, options: Options) {
    let session = &mut *c.session;
    let resp3 = session.protocol == Protocol::Resp3;
    session.tracking.enable(&c.state.tracking, options, resp3);
    session.tracking.sync(resp3, &mut session.subscriptions);
    let shown = session.tracking.shown().map(Arc::clone);
    if let Some(h) = session.handle() {
        h.info().tracking = shown;
    }
}

/// The checks of `CLIENT TRACKING ON` between the options and the
/// client's current mode.
fn check_on(current: &tracking::ClientTracking, o: &Options) -> Result<(), &'static [u8]> {
    if !o.bcast && !o.prefixes.is_empty() {
        return Err(b"ERR PREFIX option requires BCAST mode to be enabled");
    }
    if current.on() && current.options().bcast != o.bcast {
        return Err(b"ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then \
                     re-enabling it with a different mode.");
    }
    if o.bcast && (o.optin || o.optout) {
        return Err(b"ERR OPTIN and OPTOUT are not compatible with BCAST");
    }
    if o.optin && o.optout {
        return Err(b"ERR You can't specify both OPTIN mode and OPTOUT mode");
    }
    let was = current.options();
    if current.on() && (o.optin && was.optout || o.optout && was.optin) {
        return Err(b"ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then \
                     re-enabling it with a different mode.");
    }
    Ok(())
}

/// Whether one of `a`, `b` starts with the other.
fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// The first collision among the given prefixes and with those already
/// followed, as Redis looks for it, with its error text and whether Redis
/// stops there (it does not for a clash between two given prefixes found
/// after the first one).
fn prefix_collision<'p>(
    existing: impl Iterator<Item = &'p [u8]> + Clone,
    given: &[Box<[u8]>],
) -> Option<(Vec<u8>, bool)> {
    let quote = |msg: &mut Vec<u8>, p: &[u8]| msg.extend_from_slice(until_nul(p, usize::MAX));
    for (i, p) in given.iter().enumerate() {
        if let Some(old) = existing.clone().find(|old| overlap(old, p)) {
            let mut msg = b"ERR Prefix '".to_vec();
            quote(&mut msg, p);
            msg.extend_from_slice(b"' overlaps with an existing prefix '");
            quote(&mut msg, old);
            msg.extend_from_slice(b"'. Prefixes for a single client must not overlap.");
            return Some((msg, true));
        }
        if let Some(other) = given[i + 1..].iter().find(|other| overlap(p, other)) {
            let mut msg = b"ERR Prefix '".to_vec();
            quote(&mut msg, p);
            msg.extend_from_slice(b"' overlaps with another provided prefix '");
            quote(&mut msg, other);
            msg.extend_from_slice(b"'. Prefixes for a single client must not overlap.");
            return Some((msg, i == 0));
        }
    }
    None
}

/// `CLIENT CACHING YES|NO`: whether the next command's reads are
/// remembered, against the OPTIN / OPTOUT default.
fn client_caching<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let t = &c.session.tracking;
    if !t.on() {
        return c.error(
            b"ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode \
              enabled",
        );
    }
    let opt = c.arg(2);
    if opt.eq_ignore_ascii_case(b"yes") {
        if !t.options().optin {
            return c.error(b"ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
        }
    } else if opt.eq_ignore_ascii_case(b"no") {
        if !t.options().optout {
            return c.error(b"ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
        }
    } else {
        return c.error(SYNTAX_ERROR);
    }
    c.session.tracking.set_caching();
    c.ok();
}

/// `CLIENT TRACKINGINFO`: flags, redirect and prefixes.
fn trackinginfo<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let t = &c.session.tracking;
    let mut flags: Vec<&[u8]> = Vec::new();
    let redirect = if t.on() {
        let o = t.options();
        flags.push(b"on");
        if o.bcast {
            flags.push(b"bcast");
        }
        if o.optin {
            flags.push(b"optin");
            if t.caching() {
                flags.push(b"caching-yes");
            }
        }
        if o.optout {
            flags.push(b"optout");
            if t.caching() {
                flags.push(b"caching-no");
            }
        }
        if o.noloop {
            flags.push(b"noloop");
        }
        if t.broken() {
            flags.push(b"broken_redirect");
        }
        i64::try_from(o.redirect).unwrap_or(i64::MAX)
    } else {
        flags.push(b"off");
        -1
    };
    let prefixes: Vec<Box<[u8]>> = t.prefixes().map(Box::from).collect();
    c.reply(|s| {
        s.map(3);
        s.bulk(b"flags");
        s.set(flags.len());
        for f in &flags {
            s.bulk(f);
        }
        s.bulk(b"redirect");
        s.integer(redirect);
        s.bulk(b"prefixes");
        s.array(prefixes.len());
        for p in &prefixes {
            s.bulk(p);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(ps: &[&str]) -> Vec<Box<[u8]>> {
        ps.iter().map(|p| Box::from(p.as_bytes())).collect()
    }

    #[test]
    fn prefix_collisions_are_found_as_redis_finds_them() {
        let none: [&[u8]; 0] = [];
        assert!(prefix_collision(none.iter().copied(), &boxed(&["a", "b"])).is_none());
        let (msg, stop) = prefix_collision(none.iter().copied(), &boxed(&["x", "xy"])).unwrap();
        assert_eq!(
            msg,
            b"ERR Prefix 'x' overlaps with another provided prefix 'xy'. Prefixes for a single client must not overlap."
        );
        assert!(stop);
        let (_, stop) = prefix_collision(none.iter().copied(), &boxed(&["a", "b", "bc"])).unwrap();
        assert!(!stop, "Redis goes on after a clash found past the first prefix");
        let old: [&[u8]; 1] = [b"a"];
        let (msg, stop) = prefix_collision(old.iter().copied(), &boxed(&["ab"])).unwrap();
        assert_eq!(
            msg,
            b"ERR Prefix 'ab' overlaps with an existing prefix 'a'. Prefixes for a single client must not overlap."
        );
        assert!(stop);
        assert!(overlap(b"", b"abc") && !overlap(b"ab", b"b"));
    }
}
