//! Command dispatch and the commands kvik implements.
//!
//! Every request goes through the same checks Redis makes, in Redis's order,
//! using the shared command table for the facts: is the name known, is the
//! subcommand known, is the argument count right. Only then is the command
//! run. A name the table knows but kvik does not run is answered exactly like
//! a name nobody knows, because from the client's point of view the server
//! does not support it.
//!
//! Commands write replies through a [`ReplyTarget`], which picks the encoding
//! for the session (RESP2, RESP3 or RESPB) at the moment the reply is written;
//! that is what lets `HELLO 3` answer in RESP3 after switching the session.

use kvik_protocol::commands::{lookup, lookup_subcommand, CommandFlags, CommandSpec, COMMANDS};
use kvik_protocol::number::parse_i64;
use kvik_protocol::resp::writer::Protocol;
use kvik_protocol::{CommandArgs, ReplySink};

use crate::session::Session;
use crate::state::ServerState;
use crate::REDIS_VERSION;

mod bitmap;
mod config;
mod keys;
mod server;
mod strings;

/// Everything a command needs: the shared state, its request, its client and
/// where its reply goes.
pub struct Ctx<'a, T: ReplyTarget> {
    /// State shared by all clients (the keyspace above all).
    pub state: &'a ServerState,
    /// The request being executed.
    pub req: Request<'a>,
    /// The client that sent it.
    pub session: &'a mut Session,
    /// Where the reply goes.
    pub target: &'a mut T,
}

impl<T: ReplyTarget> Ctx<'_, T> {
    /// Write one reply through the session's encoding.
    pub fn reply(&mut self, write: impl FnOnce(&mut dyn ReplySink)) {
        self.target.reply(self.session, write);
    }

    /// Reply with an error (code first, no leading `-`).
    pub fn error(&mut self, msg: &[u8]) {
        self.reply(|s| s.error(msg));
    }

    /// Reply `+OK`.
    pub fn ok(&mut self) {
        self.reply(|s| s.simple(b"OK"));
    }

    /// Argument `i` of the request.
    pub fn arg(&self, i: usize) -> &[u8] {
        self.req.arg(i)
    }

    /// Number of arguments, the name included.
    pub fn argc(&self) -> usize {
        self.req.argc()
    }
}

/// Redis's reply for an operation on a key holding another type.
pub const WRONGTYPE: &[u8] = b"WRONGTYPE Operation against a key holding the wrong kind of value";
/// Redis's reply for malformed options.
pub const SYNTAX_ERROR: &[u8] = b"ERR syntax error";
/// Redis's reply for an argument that must be an integer.
pub const NOT_AN_INTEGER: &[u8] = b"ERR value is not an integer or out of range";

/// Redis's reply to a command that may add data while memory stays over `maxmemory`.
pub const OOM: &[u8] = b"OOM command not allowed when used memory > 'maxmemory'.";

/// Longest part of a client-supplied name or argument quoted back in an
/// error, as Redis bounds it, so a huge argument cannot make a huge error.
const QUOTE_LIMIT: usize = 128;

/// One decoded request: the argument list and the buffer its references point into.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    args: &'a CommandArgs,
    input: &'a [u8],
}

impl<'a> Request<'a> {
    /// Pair decoded arguments with the buffer they were decoded from.
    pub fn new(args: &'a CommandArgs, input: &'a [u8]) -> Self {
        Request { args, input }
    }

    /// Number of arguments, the command name included.
    pub fn argc(&self) -> usize {
        self.args.len()
    }

    /// Argument `i` (empty when out of range, which the arity checks rule out).
    pub fn arg(&self, i: usize) -> &'a [u8] {
        self.args.get(self.input, i).unwrap_or(&[])
    }
}

/// Where a command writes its reply.
///
/// The connection decides the encoding; the command only says what to send.
/// The target is asked for a sink once per reply, after the command has
/// updated the session, so a protocol switch applies to its own reply.
pub trait ReplyTarget {
    /// Write one reply for `session` through the sink handed to `write`.
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F);
}

/// What the connection must do after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Keep serving the client.
    Continue,
    /// Send what was written, then close (the client sent `QUIT`).
    Close,
}

/// Validate `req` against the command table and run it.
pub fn execute<T: ReplyTarget>(
    state: &ServerState,
    req: Request<'_>,
    session: &mut Session,
    target: &mut T,
) -> Outcome {
    let name = req.arg(0);
    // Redis 7.0 answers QUIT before looking at the table, whatever its arguments.
    if name.eq_ignore_ascii_case(b"quit") {
        target.reply(session, |s| s.simple(b"OK"));
        return Outcome::Close;
    }
    let Some(mut spec) = lookup(name) else {
        let msg = unknown_command(&req);
        target.reply(session, |s| s.error(&msg));
        return Outcome::Continue;
    };
    if !spec.subcommands.is_empty() && req.argc() >= 2 {
        match lookup_subcommand(spec, req.arg(1)) {
            Some(sub) => spec = sub,
            None => {
                let msg = unknown_subcommand(&req);
                target.reply(session, |s| s.error(&msg));
                return Outcome::Continue;
            }
        }
    }
    if !spec.arity_ok(req.argc()) {
        let msg = wrong_arity(spec);
        target.reply(session, |s| s.error(&msg));
        return Outcome::Continue;
    }
    // Redis checks authentication after the name and the arity, and lets
    // AUTH and HELLO (which can carry credentials) through.
    if !session.authenticated && state.limits.auth_required() && !matches!(spec.name, "auth" | "hello") {
        target.reply(session, |s| s.error(b"NOAUTH Authentication required."));
        return Outcome::Continue;
    }
    if !state.enforce_maxmemory() && spec.flags.contains(CommandFlags::DENYOOM) {
        target.reply(session, |s| s.error(OOM));
        return Outcome::Continue;
    }
    match spec.name {
        "ping" => ping(req, session, target),
        "echo" => {
            let msg = req.arg(1);
            target.reply(session, |s| s.bulk(msg));
        }
        "hello" => hello(state, req, session, target),
        "auth" => auth(state, req, session, target),
        "command|count" => {
            let count = i64::try_from(COMMANDS.len()).unwrap_or(i64::MAX);
            target.reply(session, |s| s.integer(count));
        }
        "shutdown" => return server::shutdown(&mut Ctx { state, req, session, target }),
        name => {
            let mut ctx = Ctx { state, req, session, target };
            let known = strings::dispatch(name, &mut ctx)
                || bitmap::dispatch(name, &mut ctx)
                || keys::dispatch(name, &mut ctx)
                || server::dispatch(name, &mut ctx)
                || config::dispatch(name, &mut ctx);
            if !known {
                let msg = unknown_command(&req);
                ctx.error(&msg);
            }
        }
    }
    Outcome::Continue
}

/// `PING [message]`: `PONG`, or the message back as a bulk string.
fn ping<T: ReplyTarget>(req: Request<'_>, session: &mut Session, target: &mut T) {
    match req.argc() {
        1 => target.reply(session, |s| s.simple(b"PONG")),
        2 => {
            let msg = req.arg(1);
            target.reply(session, |s| s.bulk(msg));
        }
        // The table allows any count; PING itself takes at most one argument.
        _ => {
            let msg = b"ERR wrong number of arguments for 'ping' command";
            target.reply(session, |s| s.error(msg));
        }
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`.
///
/// Checks happen in Redis's order (version, then options left to right, then
/// credentials) so the first error a client sees is the one Redis would send.
fn hello<T: ReplyTarget>(state: &ServerState, req: Request<'_>, session: &mut Session, target: &mut T) {
    let mut version = None;
    if req.argc() >= 2 {
        match parse_i64(req.arg(1)) {
            None => {
                let msg = b"ERR Protocol version is not an integer or out of range";
                target.reply(session, |s| s.error(msg));
                return;
            }
            Some(2) => version = Some(Protocol::Resp2),
            Some(3) => version = Some(Protocol::Resp3),
            Some(_) => {
                target.reply(session, |s| s.error(b"NOPROTO unsupported protocol version"));
                return;
            }
        }
    }
    let mut credentials = None;
    let mut new_name = None;
    let mut i = 2;
    while i < req.argc() {
        let option = req.arg(i);
        let more = req.argc() - 1 - i;
        if option.eq_ignore_ascii_case(b"auth") && more >= 2 {
            credentials = Some((req.arg(i + 1), req.arg(i + 2)));
            i += 3;
        } else if option.eq_ignore_ascii_case(b"setname") && more >= 1 {
            let name = req.arg(i + 1);
            if !valid_client_name(name) {
                let msg = b"ERR Client names cannot contain spaces, newlines or special characters.";
                target.reply(session, |s| s.error(msg));
                return;
            }
            new_name = Some(name);
            i += 2;
        } else {
            let mut msg = b"ERR Syntax error in HELLO option '".to_vec();
            msg.extend_from_slice(until_nul(option, usize::MAX));
            msg.push(b'\'');
            target.reply(session, |s| s.error(&msg));
            return;
        }
    }
    if let Some((user, password)) = credentials {
        if !password_ok(state, user, password) {
            target.reply(session, |s| s.error(WRONGPASS));
            return;
        }
        session.authenticated = true;
    } else if !session.authenticated && state.limits.auth_required() {
        let msg = b"NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";
        target.reply(session, |s| s.error(msg));
        return;
    }
    if let Some(name) = new_name {
        session.name = (!name.is_empty()).then(|| name.to_vec());
    }
    if let Some(v) = version {
        session.protocol = v;
    }
    let proto = match session.protocol {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    let id = i64::try_from(session.id).unwrap_or(i64::MAX);
    target.reply(session, |s| {
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

/// Redis's reply to a wrong user name or password.
const WRONGPASS: &[u8] = b"WRONGPASS invalid username-password pair or user is disabled.";

/// Whether `user` / `password` log in. Only the default user exists: it
/// takes any password while `requirepass` is unset, else exactly that one.
fn password_ok(state: &ServerState, user: &[u8], password: &[u8]) -> bool {
    if user != b"default" {
        return false;
    }
    let config = state.config();
    let required = config.get("requirepass").as_bytes();
    required.is_empty() || same_secret(required, password)
}

/// Compare secrets in time that does not depend on where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

/// `AUTH [username] password`, against `requirepass` for the default user.
fn auth<T: ReplyTarget>(state: &ServerState, req: Request<'_>, session: &mut Session, target: &mut T) {
    let (user, password): (&[u8], &[u8]) = match req.argc() {
        2 => (b"default", req.arg(1)),
        3 => (req.arg(1), req.arg(2)),
        _ => return target.reply(session, |s| s.error(b"ERR syntax error")),
    };
    if req.argc() == 2 && !state.limits.auth_required() {
        let msg = b"ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
        return target.reply(session, |s| s.error(msg));
    }
    if password_ok(state, user, password) {
        session.authenticated = true;
        target.reply(session, |s| s.simple(b"OK"));
    } else {
        target.reply(session, |s| s.error(WRONGPASS));
    }
}

/// Redis accepts client names made only of printable ASCII other than space.
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|b| (b'!'..=b'~').contains(b))
}

/// The bytes of `arg` that a C string would show: up to the first NUL, at most `max`.
///
/// Redis formats names and arguments into errors with `%s`, so they stop at a
/// NUL byte; quoting the same bytes keeps kvik's errors identical.
fn until_nul(arg: &[u8], max: usize) -> &[u8] {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    &arg[..end.min(max)]
}

/// `ERR unknown command '<name>', with args beginning with: '<a>' '<b>' `.
///
/// The arguments are quoted until the quoted text reaches 128 bytes, each cut
/// to what is left of that budget, exactly as Redis builds the message.
fn unknown_command(req: &Request<'_>) -> Vec<u8> {
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(until_nul(req.arg(0), QUOTE_LIMIT));
    msg.extend_from_slice(b"', with args beginning with: ");
    let mut quoted = 0;
    for i in 1..req.argc() {
        if quoted >= QUOTE_LIMIT {
            break;
        }
        let shown = until_nul(req.arg(i), QUOTE_LIMIT - quoted);
        msg.push(b'\'');
        msg.extend_from_slice(shown);
        msg.extend_from_slice(b"' ");
        quoted += shown.len() + 3;
    }
    msg
}

/// `ERR unknown subcommand '<sub>'. Try <COMMAND> HELP.`
fn unknown_subcommand(req: &Request<'_>) -> Vec<u8> {
    let mut msg = b"ERR unknown subcommand '".to_vec();
    msg.extend_from_slice(until_nul(req.arg(1), QUOTE_LIMIT));
    msg.extend_from_slice(b"'. Try ");
    msg.extend(until_nul(req.arg(0), usize::MAX).iter().map(u8::to_ascii_uppercase));
    msg.extend_from_slice(b" HELP.");
    msg
}

/// `ERR wrong number of arguments for '<name>' command`, with the table's full
/// name (`client|setname` for a subcommand), as Redis 7.0 reports it.
fn wrong_arity(spec: &CommandSpec) -> Vec<u8> {
    format!("ERR wrong number of arguments for '{}' command", spec.name).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::resp::writer::RespWriter;

    /// Collects RESP bytes for a session, as a RESP connection does.
    struct Collect(Vec<u8>);

    impl ReplyTarget for Collect {
        fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
            let mut w = RespWriter::new(&mut self.0, session.protocol);
            write(&mut w);
        }
    }

    fn run(session: &mut Session, words: &[&[u8]]) -> (Vec<u8>, Outcome) {
        let mut args = CommandArgs::new();
        for w in words {
            args.push_owned(w);
        }
        let mut out = Collect(Vec::new());
        let outcome = execute(&ServerState::default(), Request::new(&args, &[]), session, &mut out);
        (out.0, outcome)
    }

    fn reply(words: &[&[u8]]) -> Vec<u8> {
        run(&mut Session::new(1), words).0
    }

    #[test]
    fn ping_and_echo() {
        assert_eq!(reply(&[b"PING"]), b"+PONG\r\n");
        assert_eq!(reply(&[b"ping", b"hi"]), b"$2\r\nhi\r\n");
        assert_eq!(reply(&[b"ping", b"a", b"b"]), b"-ERR wrong number of arguments for 'ping' command\r\n");
        assert_eq!(reply(&[b"Echo", b""]), b"$0\r\n\r\n");
        assert_eq!(reply(&[b"echo"]), b"-ERR wrong number of arguments for 'echo' command\r\n");
    }

    #[test]
    fn quit_closes_whatever_its_arguments() {
        let (bytes, outcome) = run(&mut Session::new(1), &[b"QUIT", b"x"]);
        assert_eq!(bytes, b"+OK\r\n");
        assert_eq!(outcome, Outcome::Close);
    }

    #[test]
    fn unknown_command_quotes_like_redis() {
        assert_eq!(reply(&[b"foo", b"a", b"b"]), b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n");
        assert_eq!(reply(&[b"f\0oo", b"a\0b"]), b"-ERR unknown command 'f', with args beginning with: 'a' \r\n");
        let x = [b'x'; 100];
        let y = [b'y'; 100];
        let expected = format!(
            "-ERR unknown command 'foo', with args beginning with: '{}' '{}' \r\n",
            "x".repeat(100),
            "y".repeat(25)
        );
        assert_eq!(reply(&[b"foo", &x, &y, b"z"]), expected.as_bytes());
        let long_name = [b'n'; 300];
        let got = reply(&[&long_name]);
        let expected = format!("-ERR unknown command '{}', with args beginning with: \r\n", "n".repeat(128));
        assert_eq!(got, expected.as_bytes());
    }

    #[test]
    fn known_but_unsupported_commands_read_as_unknown() {
        assert_eq!(reply(&[b"PFADD", b"k"]), b"-ERR unknown command 'PFADD', with args beginning with: 'k' \r\n");
        // Arity is still checked first, from the table, as Redis does.
        assert_eq!(reply(&[b"get"]), b"-ERR wrong number of arguments for 'get' command\r\n");
    }

    #[test]
    fn subcommands_are_resolved_before_arity() {
        assert_eq!(reply(&[b"client", b"foo"]), b"-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n");
        assert_eq!(reply(&[b"client", b"setname"]), b"-ERR wrong number of arguments for 'client|setname' command\r\n");
        assert_eq!(reply(&[b"client"]), b"-ERR wrong number of arguments for 'client' command\r\n");
        let count = reply(&[b"command", b"COUNT"]);
        assert_eq!(count, format!(":{}\r\n", COMMANDS.len()).as_bytes());
    }

    #[test]
    fn hello_switches_protocol_for_its_own_reply() {
        let mut session = Session::new(42);
        let (bytes, _) = run(&mut session, &[b"HELLO", b"3", b"SETNAME", b"app"]);
        assert!(bytes.starts_with(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"));
        assert!(bytes.windows(13).any(|w| w == b"$2\r\nid\r\n:42\r\n"));
        assert!(bytes.ends_with(b"$7\r\nmodules\r\n*0\r\n"));
        assert_eq!(session.protocol, Protocol::Resp3);
        assert_eq!(session.name.as_deref(), Some(&b"app"[..]));
        let (bytes, _) = run(&mut session, &[b"hello", b"2"]);
        assert!(bytes.starts_with(b"*14\r\n"));
        assert_eq!(session.protocol, Protocol::Resp2);
    }

    #[test]
    fn over_maxmemory_only_commands_that_may_add_data_are_refused() {
        let state = ServerState::default();
        let mut session = Session::new(1);
        let mut send = |words: &[&[u8]]| {
            let mut args = CommandArgs::new();
            for w in words {
                args.push_owned(w);
            }
            let mut out = Collect(Vec::new());
            execute(&state, Request::new(&args, &[]), &mut session, &mut out);
            out.0
        };
        assert_eq!(send(&[b"SET", b"a", b"hello"]), b"+OK\r\n");
        assert_eq!(send(&[b"CONFIG", b"SET", b"maxmemory", b"1"]), b"+OK\r\n");
        assert_eq!(send(&[b"SET", b"b", b"x"]), b"-OOM command not allowed when used memory > 'maxmemory'.\r\n");
        assert_eq!(send(&[b"GET", b"a"]), b"$5\r\nhello\r\n");
        // The new policy applies at once, and then before every command.
        assert_eq!(send(&[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-random"]), b"+OK\r\n");
        assert_eq!(state.keyspace.evicted_keys(), 1);
        assert_eq!(send(&[b"SET", b"b", b"x"]), b"+OK\r\n");
        assert_eq!(send(&[b"EXISTS", b"a", b"b"]), b":0\r\n", "b alone is over one byte");
        assert_eq!(state.keyspace.evicted_keys(), 2);
    }

    #[test]
    fn hello_errors_follow_redis_order() {
        assert_eq!(reply(&[b"hello", b"4"]), b"-NOPROTO unsupported protocol version\r\n");
        assert_eq!(reply(&[b"hello", b"x"]), b"-ERR Protocol version is not an integer or out of range\r\n");
        assert_eq!(reply(&[b"hello", b"3", b"auth", b"default"]), b"-ERR Syntax error in HELLO option 'auth'\r\n");
        assert_eq!(
            reply(&[b"hello", b"3", b"auth", b"bob", b"pw"]),
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        );
        let mut session = Session::new(1);
        let (bytes, _) = run(&mut session, &[b"hello", b"3", b"setname", b"a b"]);
        assert_eq!(bytes, b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
        assert_eq!(session.protocol, Protocol::Resp2, "a failed HELLO changes nothing");
    }
}
