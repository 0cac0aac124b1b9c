//! Connection commands: PING, ECHO, HELLO, AUTH, RESET and CLIENT.
//!
//! These act on the calling client's session (protocol, name, database,
//! authentication, reply mode) or, for CLIENT LIST / KILL, on the server's
//! registry of connected clients.

use kvik_protocol::number::parse_i64;
use kvik_protocol::resp::writer::Protocol;

use super::{unknown_subcommand_syntax, until_nul, valid_client_name, Ctx, Outcome, ReplyTarget, SYNTAX_ERROR};
use crate::client::auth::{self, WRONGPASS};
use crate::client::session::ReplyMode;
use crate::keyspace::now_ms;
use crate::registries::blocking::Cancel;
use crate::registries::clients::list_line;
use crate::registries::pause::PauseMode;
use crate::REDIS_VERSION;

handlers! {
    PING(c) => ping(c),
    ECHO(c) => {
        let msg = c.arg(1);
        c.reply(|s| s.bulk(msg));
    },
    HELLO(c) => hello(c),
    AUTH(c) => auth(c),
    RESET(c) => reset(c),
    CLIENT_ID(c) => {
        let id = i64::try_from(c.session.id).unwrap_or(i64::MAX);
        c.reply(|s| s.integer(id));
    },
    CLIENT_GETNAME(c) => match c.session.name.clone() {
        Some(name) => c.reply(|s| s.bulk(&name)),
        None => c.reply(|s| s.null()),
    },
    CLIENT_SETNAME(c) => {
        let name = c.arg(2);
        if valid_client_name(name) {
            c.session.name = (!name.is_empty()).then(|| name.to_vec());
            c.ok();
        } else {
            c.error(b"ERR Client names cannot contain spaces, newlines or special characters.");
        }
    },
    CLIENT_INFO(c) => {
        let argv = argv_mem(c);
        let line = c.session.handle().map(|h| list_line(h, c.session.id, argv, false)).unwrap_or_default();
        c.reply(|s| s.verbatim(b"txt", &line));
    },
    CLIENT_LIST(c) => client_list(c),
    CLIENT_KILL(c) => client_kill(c),
    CLIENT_REPLY(c) => client_reply(c),
    CLIENT_NO_EVICT(c) => match on_off(c.arg(2)) {
        Some(on) => {
            if let Some(h) = c.session.handle() {
                h.info().no_evict = on;
            }
            c.ok();
        }
        None => c.error(SYNTAX_ERROR),
    },
    CLIENT_PAUSE(c) => client_pause(c),
    CLIENT_UNPAUSE(c) => {
        c.state.pause.end();
        c.ok();
    },
    CLIENT_SETINFO(c) => client_setinfo(c),
    CLIENT_HELP(c) => client_help(c),
    CLIENT_UNBLOCK(c) => client_unblock(c),
    MONITOR(c) => {
        if c.session.monitor.is_none() {
            if let Some(h) = c.session.handle() {
                if let Some(feed) = c.state.clients.add_monitor(h) {
                    h.info().monitor = true;
                    c.session.monitor = Some(feed);
                }
            }
        }
        c.ok();
    },
}

/// `ON` / `OFF`, any case.
fn on_off(arg: &[u8]) -> Option<bool> {
    if arg.eq_ignore_ascii_case(b"on") {
        Some(true)
    } else if arg.eq_ignore_ascii_case(b"off") {
        Some(false)
    } else {
        None
    }
}

/// `PING [message]`: `PONG`, or the message back as a bulk string.
fn ping<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    // A RESP2 subscriber cannot tell a status from a message, so Redis
    // answers it with a message-shaped array.
    if c.session.subscriptions.active() && c.session.protocol == Protocol::Resp2 && c.argc() <= 2 {
        let msg: &[u8] = if c.argc() == 2 { c.arg(1) } else { b"" };
        return c.reply(|s| {
            s.array(2);
            s.bulk(b"pong");
            s.bulk(msg);
        });
    }
    match c.argc() {
        1 => c.reply(|s| s.simple(b"PONG")),
        2 => {
            let msg = c.arg(1);
            c.reply(|s| s.bulk(msg));
        }
        // The table allows any count; PING itself takes at most one argument.
        _ => c.error(b"ERR wrong number of arguments for 'ping' command"),
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`.
///
/// Checks happen in Redis's order (version, then options left to right, then
/// credentials, then whether the client may continue at all) so the first
/// error a client sees is the one Redis would send.
fn hello<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mut version = None;
    if c.argc() >= 2 {
        match parse_i64(c.arg(1)) {
            None => return c.error(b"ERR Protocol version is not an integer or out of range"),
            Some(2) => version = Some(Protocol::Resp2),
            Some(3) => version = Some(Protocol::Resp3),
            Some(_) => return c.error(b"NOPROTO unsupported protocol version"),
        }
    }
    let mut credentials = None;
    let mut new_name = None;
    let mut respb = false;
    let mut i = 2;
    while i < c.argc() {
        let option = c.arg(i);
        let more = c.argc() - 1 - i;
        if option.eq_ignore_ascii_case(b"proto") && more >= 1 {
            // kvik's own option: switch the connection to RESPB after this reply.
            if !c.arg(i + 1).eq_ignore_ascii_case(b"respb") {
                return c.error(b"ERR unsupported HELLO PROTO, only RESPB is supported");
            }
            if version != Some(Protocol::Resp3) {
                return c.error(b"ERR HELLO PROTO RESPB requires protocol version 3");
            }
            respb = true;
            i += 2;
        } else if option.eq_ignore_ascii_case(b"auth") && more >= 2 {
            credentials = Some((c.arg(i + 1), c.arg(i + 2)));
            i += 3;
        } else if option.eq_ignore_ascii_case(b"setname") && more >= 1 {
            let name = c.arg(i + 1);
            if !valid_client_name(name) {
                return c.error(b"ERR Client names cannot contain spaces, newlines or special characters.");
            }
            new_name = Some(name);
            i += 2;
        } else {
            let mut msg = b"ERR Syntax error in HELLO option '".to_vec();
            msg.extend_from_slice(until_nul(option, usize::MAX));
            msg.push(b'\'');
            return c.error(&msg);
        }
    }
    if let Some((user, password)) = credentials {
        let context = log_context(c);
        if !auth::log_in(c.state, c.session, user, password, c.req.arg(0), context) {
            return c.error(WRONGPASS);
        }
    }
    if !c.session.authenticated && auth::required(c.state) {
        return c.error(
            b"NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH \
              <user> <pass> option can be used to authenticate the client and select the RESP protocol \
              version at the same time",
        );
    }
    if let Some(name) = new_name {
        c.session.name = (!name.is_empty()).then(|| name.to_vec());
    }
    if let Some(v) = version {
        c.session.protocol = v;
    }
    // A RESPB channel has no RESP2 mode: its replies keep RESP3 shapes
    // whatever version HELLO asks for, and HELLO says so.
    let on_respb = matches!(c.target.encoding(c.session), crate::registries::blocking::Encoding::Respb(_));
    if on_respb {
        c.session.protocol = Protocol::Resp3;
    } else if respb {
        c.session.upgrade_respb = true;
        c.outcome = Outcome::Close;
    }
    let proto = match c.session.protocol {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    let id = i64::try_from(c.session.id).unwrap_or(i64::MAX);
    c.reply(|s| {
        s.map(7);
        s.bulk(b"server");
        s.bulk(b"redis");
        s.bulk(b"version");
        s.bulk(REDIS_VERSION.as_bytes());
        s.bulk(b"proto");
        s.integer(proto);
        s.bulk(b"id");
        s.integer(id);
        s.bulk(b"mode");
        s.bulk(b"standalone");
        s.bulk(b"role");
        s.bulk(b"master");
        s.bulk(b"modules");
        s.array(0);
    });
}

/// `AUTH [username] password`.
///
/// A failed attempt leaves an already authenticated client authenticated, as in Redis.
fn auth<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 3 {
        return c.error(SYNTAX_ERROR);
    }
    let (user, password): (&[u8], &[u8]) = if c.argc() == 2 {
        if c.state.acl.default_user().nopass() {
            return c.error(
                b"ERR AUTH <password> called without any password configured for the default user. \
                  Are you sure your configuration is correct?",
            );
        }
        (b"default", c.arg(1))
    } else {
        (c.arg(1), c.arg(2))
    };
    let context = log_context(c);
    if auth::log_in(c.state, c.session, user, password, c.req.arg(0), context) {
        c.ok();
    } else {
        c.error(WRONGPASS);
    }
}

/// Where a command runs, for `ACL LOG`: queued in or run by a transaction,
/// or sent on its own.
fn log_context<T: ReplyTarget>(c: &Ctx<'_, T>) -> crate::registries::acl::Context {
    use crate::registries::acl::Context;
    if c.session.multi.is_some() || c.waits == super::Waits::AnswerNow {
        Context::Multi
    } else {
        Context::Toplevel
    }
}

/// `RESET`: back to a fresh connection's state (database 0, RESP2, no name,
/// replies on, out of MONITOR mode, authenticated only if no password is required).
fn reset<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    c.session.db = 0;
    c.session.protocol = Protocol::Resp2;
    c.session.name = None;
    // Clears OFF and a pending SKIP; a SKIP already covering this RESET still applies.
    c.session.reply_mode = ReplyMode::On;
    c.session.authenticated = !auth::required(c.state);
    c.session.set_user(c.state, c.state.acl.default_user());
    c.session.monitor = None;
    c.session.subscriptions.clear();
    c.session.tracking.disable();
    c.session.discard_multi();
    if let Some(h) = c.session.handle() {
        let mut info = h.info();
        info.tracking = None;
        if info.monitor {
            info.monitor = false;
            c.state.clients.remove_monitor(h.id);
        }
        info.no_evict = false;
        info.name = None;
        info.db = 0;
        info.resp = 2;
    }
    c.reply(|s| s.simple(b"RESET"));
}

/// `argv-mem` of the command running: the bytes of its arguments, as
/// Redis counts them (`argv_len_sum`).
fn argv_mem<T: ReplyTarget>(c: &Ctx<'_, T>) -> usize {
    (0..c.argc()).map(|i| c.arg(i).len()).sum()
}

/// Client types `CLIENT LIST` / `CLIENT KILL` filter on, as Redis tells
/// them apart: the link to this replica's master, a replica, a client
/// with subscriptions, or any other (`normal`, MONITORs included).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TypeFilter {
    Normal,
    Master,
    Replica,
    PubSub,
}

impl TypeFilter {
    fn of(info: &crate::registries::clients::ClientInfo) -> TypeFilter {
        if info.master {
            TypeFilter::Master
        } else if info.replica {
            TypeFilter::Replica
        } else if info.subscriptions.iter().sum::<usize>() > 0 {
            TypeFilter::PubSub
        } else {
            TypeFilter::Normal
        }
    }

    /// Whether a client is of this type (any, without a filter).
    fn admits(filter: Option<TypeFilter>, info: &crate::registries::clients::ClientInfo) -> bool {
        filter.is_none_or(|f| f == TypeFilter::of(info))
    }
}

fn client_type(arg: &[u8]) -> Option<TypeFilter> {
    let t = arg.to_ascii_lowercase();
    match t.as_slice() {
        b"normal" => Some(TypeFilter::Normal),
        b"replica" | b"slave" => Some(TypeFilter::Replica),
        b"master" => Some(TypeFilter::Master),
        b"pubsub" => Some(TypeFilter::PubSub),
        _ => None,
    }
}

fn unknown_type<T: ReplyTarget>(c: &mut Ctx<'_, T>, arg: &[u8]) {
    let mut msg = b"ERR Unknown client type '".to_vec();
    msg.extend_from_slice(until_nul(arg, usize::MAX));
    msg.push(b'\'');
    c.error(&msg);
}

/// `CLIENT LIST [TYPE type] [ID id ...]`.
fn client_list<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mut ids: Option<Vec<u64>> = None;
    let mut filter = None;
    if c.argc() == 4 && c.arg(2).eq_ignore_ascii_case(b"type") {
        match client_type(c.arg(3)) {
            Some(t) => filter = Some(t),
            None => return unknown_type(c, c.arg(3)),
        }
    } else if c.argc() > 3 && c.arg(2).eq_ignore_ascii_case(b"id") {
        let mut list = Vec::new();
        for i in 3..c.argc() {
            match parse_i64(c.arg(i)) {
                Some(n) => list.push(u64::try_from(n).unwrap_or(0)),
                None => return c.error(b"ERR Invalid client ID"),
            }
        }
        ids = Some(list);
    } else if c.argc() != 2 {
        return c.error(SYNTAX_ERROR);
    }
    let mut text = Vec::new();
    let current = c.session.id;
    let argv = argv_mem(c);
    for h in c.state.clients.snapshot() {
        let of_type = TypeFilter::admits(filter, &h.info());
        if of_type && ids.as_ref().is_none_or(|ids| ids.contains(&h.id)) {
            text.extend_from_slice(&list_line(&h, current, argv, c.state.blocking.is_blocked(h.id)));
        }
    }
    c.reply(|s| s.verbatim(b"txt", &text));
}

/// `CLIENT KILL addr` (old form) or `CLIENT KILL <filter> <value> ...` (new form).
fn client_kill<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let me = c.session.id;
    let clients = c.state.clients.snapshot();
    if c.argc() == 3 {
        // Old form: every client from that address (RESPB channels share one), the caller included.
        let addr = c.arg(2);
        let mut found = false;
        for h in clients.iter().filter(|h| h.info().addr.as_bytes() == addr) {
            found = true;
            if h.id == me {
                c.outcome = Outcome::Close;
            } else {
                h.kill();
                // At once, so that nothing is served to it from now on.
                c.state.blocking.abandon(h.id);
            }
        }
        return if found { c.ok() } else { c.error(b"ERR No such client") };
    }
    let mut id = None;
    let mut addr = None;
    let mut laddr = None;
    let mut user = None;
    let mut filter = None;
    let mut skipme = true;
    let mut i = 2;
    while i < c.argc() {
        if i + 1 >= c.argc() {
            return c.error(SYNTAX_ERROR);
        }
        let (option, value) = (c.arg(i).to_ascii_lowercase(), c.arg(i + 1));
        match option.as_slice() {
            b"id" => match parse_i64(value) {
                Some(n) if n >= 1 => id = Some(n as u64),
                _ => return c.error(b"ERR client-id should be greater than 0"),
            },
            b"type" => match client_type(value) {
                Some(t) => filter = Some(t),
                None => return unknown_type(c, value),
            },
            b"addr" => addr = Some(value),
            b"laddr" => laddr = Some(value),
            b"user" => {
                if c.state.acl.user(value).is_none() {
                    let mut msg = b"ERR No such user '".to_vec();
                    msg.extend_from_slice(until_nul(value, usize::MAX));
                    msg.push(b'\'');
                    return c.error(&msg);
                }
                user = Some(value);
            }
            b"skipme" => {
                if value.eq_ignore_ascii_case(b"yes") {
                    skipme = true;
                } else if value.eq_ignore_ascii_case(b"no") {
                    skipme = false;
                } else {
                    return c.error(SYNTAX_ERROR);
                }
            }
            _ => return c.error(SYNTAX_ERROR),
        }
        i += 2;
    }
    let mut killed = 0;
    for h in &clients {
        let matches = {
            let info = h.info();
            TypeFilter::admits(filter, &info)
                && id.is_none_or(|id| id == h.id)
                && addr.is_none_or(|a| a == info.addr.as_bytes())
                && laddr.is_none_or(|a| a == info.laddr.as_bytes())
                && user.is_none_or(|u| u == info.user.as_slice())
        };
        if !matches || (skipme && h.id == me) {
            continue;
        }
        if h.id == me {
            c.outcome = Outcome::Close;
        } else {
            h.kill();
            // At once, so that nothing is served to it from now on.
            c.state.blocking.abandon(h.id);
        }
        killed += 1;
    }
    c.reply(|s| s.integer(killed));
}

/// `CLIENT REPLY ON|OFF|SKIP`: only `ON` is answered.
fn client_reply<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mode = c.arg(2);
    if mode.eq_ignore_ascii_case(b"on") {
        // ON ends a skip too, its own reply included, as in Redis.
        c.session.reply_mode = ReplyMode::On;
        c.session.skip_this = false;
        c.ok();
    } else if mode.eq_ignore_ascii_case(b"off") {
        c.session.reply_mode = ReplyMode::Off;
    } else if mode.eq_ignore_ascii_case(b"skip") {
        if c.session.reply_mode == ReplyMode::On {
            c.session.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        c.error(SYNTAX_ERROR);
    }
}

/// `CLIENT PAUSE timeout [WRITE|ALL]`: commands the mode holds back wait
/// before they run until the timeout (milliseconds) or `CLIENT UNPAUSE`.
fn client_pause<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 4 {
        return unknown_subcommand_syntax(c);
    }
    let timeout = match parse_i64(c.arg(2)) {
        None => return c.error(b"ERR timeout is not an integer or out of range"),
        Some(t) if t < 0 => return c.error(b"ERR timeout is negative"),
        Some(t) => t,
    };
    let mode = match c.argc() {
        3 => PauseMode::All,
        _ if c.arg(3).eq_ignore_ascii_case(b"all") => PauseMode::All,
        _ if c.arg(3).eq_ignore_ascii_case(b"write") => PauseMode::Write,
        _ => return c.error(b"ERR CLIENT PAUSE mode must be WRITE or ALL"),
    };
    c.state.pause.start(now_ms().saturating_add(timeout), mode);
    c.ok();
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: end a blocked client's wait as if it
/// timed out, or with an error; 1 when the client was blocked.
fn client_unblock<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 4 {
        return unknown_subcommand_syntax(c);
    }
    let Some(id) = parse_i64(c.arg(2)) else {
        return c.error(b"ERR value is not an integer or out of range");
    };
    let why = match c.argc() {
        4 if c.arg(3).eq_ignore_ascii_case(b"error") => Cancel::Error,
        4 if !c.arg(3).eq_ignore_ascii_case(b"timeout") => {
            return c.error(b"ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        }
        _ => Cancel::Timeout,
    };
    let unblocked = u64::try_from(id).is_ok_and(|id| c.state.blocking.unblock(id, why));
    c.reply(|s| s.integer(i64::from(unblocked)));
}

/// `CLIENT SETINFO LIB-NAME|LIB-VER value` (Redis 7.2 / Valkey).
fn client_setinfo<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let attr = c.arg(2).to_ascii_lowercase();
    let value = c.arg(3);
    let is_name = match attr.as_slice() {
        b"lib-name" => true,
        b"lib-ver" => false,
        _ => {
            let mut msg = b"ERR Unrecognized option '".to_vec();
            msg.extend_from_slice(until_nul(c.arg(2), usize::MAX));
            msg.push(b'\'');
            return c.error(&msg);
        }
    };
    if !valid_client_name(value) {
        let msg = format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            if is_name { "lib-name" } else { "lib-ver" }
        );
        return c.error(msg.as_bytes());
    }
    if let Some(h) = c.session.handle() {
        let mut info = h.info();
        if is_name {
            info.lib_name = value.to_vec();
        } else {
            info.lib_ver = value.to_vec();
        }
    }
    c.ok();
}

/// Redis 7.0's `CLIENT HELP` text.
const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
];

fn client_help<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    super::help(c, CLIENT_HELP);
}
