//! `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//! [AUTH password] [AUTH2 username password] [KEYS key ...]`: move keys to
//! another server (kvik, redis-server, valkey-server) as Redis does, by
//! sending each as `RESTORE key ttl payload [REPLACE]` with a DUMP payload in
//! Redis's format, then deleting the keys the target acknowledged.
//!
//! As in Redis the command is atomic for the keys it moves: their shards
//! stay locked from the payloads' making to the local deletes, so no other
//! client sees a key in both places or changes one in between. The exchange
//! is blocking, bounded by `timeout` for the connect and for each read and
//! write; it holds this connection's event loop meanwhile, as Redis's holds
//! the whole server. A target that is this very server answers nothing
//! while the shards are held, so that ends in the timeout, as in Redis.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use kvik_protocol::number::parse_i64;

use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::effects::changes::EventClass;
use crate::keyspace::now_ms;

/// Longest reply line read back from the target (Redis reads 1 KB lines).
const MAX_LINE: u64 = 1024;

/// What MIGRATE was asked to do.
struct Request<'a> {
    host: &'a [u8],
    port: &'a [u8],
    db: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    keys: Vec<&'a [u8]>,
}

fn parse<'a, T: ReplyTarget>(c: &Ctx<'a, T>) -> Result<Request<'a>, &'static [u8]> {
    let req = c.req;
    let (mut copy, mut replace, mut auth) = (false, false, None);
    let mut keys = vec![req.arg(3)];
    let mut j = 6;
    while j < req.argc() {
        let word = req.arg(j);
        let more = req.argc() - j - 1;
        if word.eq_ignore_ascii_case(b"copy") {
            copy = true;
        } else if word.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if word.eq_ignore_ascii_case(b"auth") && more >= 1 {
            auth = Some((None, req.arg(j + 1)));
            j += 1;
        } else if word.eq_ignore_ascii_case(b"auth2") && more >= 2 {
            auth = Some((Some(req.arg(j + 1)), req.arg(j + 2)));
            j += 2;
        } else if word.eq_ignore_ascii_case(b"keys") {
            if !req.arg(3).is_empty() {
                return Err(b"ERR When using MIGRATE KEYS option, the key argument must be set to the empty string");
            }
            keys = (j + 1..req.argc()).map(|i| req.arg(i)).collect();
            break;
        } else {
            return Err(SYNTAX_ERROR);
        }
        j += 1;
    }
    let timeout = parse_i64(req.arg(5)).ok_or(NOT_AN_INTEGER)?;
    let db = parse_i64(req.arg(4)).ok_or(NOT_AN_INTEGER)?;
    let timeout_ms = if timeout <= 0 { 1000 } else { timeout.unsigned_abs() };
    Ok(Request {
        host: req.arg(1),
        port: req.arg(2),
        db,
        timeout: Duration::from_millis(timeout_ms),
        copy,
        replace,
        auth,
        keys,
    })
}

fn bulk(out: &mut Vec<u8>, arg: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}

fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    args.iter().for_each(|a| bulk(out, a));
}

/// How the exchange with the target went wrong.
enum Failure {
    Connect,
    Write,
    Read,
}

impl Failure {
    fn reply(&self) -> &'static [u8] {
        match self {
            Failure::Connect => b"IOERR error or timeout connecting to the client",
            Failure::Write => b"IOERR error or timeout writing to target instance",
            Failure::Read => b"IOERR error or timeout reading to target instance",
        }
    }
}

/// A connection to the target. Only a connect that runs out of time is a
/// connect error: Redis connects without waiting and learns of a refused
/// connection or a name that does not resolve when it writes, so those
/// are write errors, as clients matching Redis's texts expect.
fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Result<TcpStream, Failure> {
    let host = std::str::from_utf8(host).map_err(|_| Failure::Write)?;
    let port: u16 = std::str::from_utf8(port).ok().and_then(|p| p.parse().ok()).ok_or(Failure::Write)?;
    let addr = (host, port).to_socket_addrs().map_err(|_| Failure::Write)?.next().ok_or(Failure::Write)?;
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| match e.kind() {
        std::io::ErrorKind::TimedOut => Failure::Connect,
        _ => Failure::Write,
    })?;
    stream.set_read_timeout(Some(timeout)).map_err(|_| Failure::Connect)?;
    stream.set_write_timeout(Some(timeout)).map_err(|_| Failure::Connect)?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Send `request` and read `replies` reply lines (each without its `\r\n`).
fn exchange(stream: TcpStream, request: &[u8], replies: usize) -> Result<Vec<Vec<u8>>, Failure> {
    let mut writer = &stream;
    writer.write_all(request).map_err(|_| Failure::Write)?;
    let mut reader = BufReader::new(&stream);
    let mut lines = Vec::with_capacity(replies);
    for _ in 0..replies {
        let mut line = Vec::new();
        match Read::take(&mut reader, MAX_LINE).read_until(b'\n', &mut line) {
            Ok(n) if n > 0 && line.ends_with(b"\r\n") => {
                line.truncate(line.len() - 2);
                lines.push(line);
            }
            _ => return Err(Failure::Read),
        }
    }
    Ok(lines)
}

/// `MIGRATE`.
pub fn migrate<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let r = match parse(c) {
        Ok(r) => r,
        Err(msg) => return c.error(msg),
    };
    let (db, now) = (c.session.db, now_ms());
    let compress = c.state.rdb_compression();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, r.keys.iter().copied());
    // The keys that exist, with their payloads and remaining time to live.
    let mut found: Vec<(&[u8], Vec<u8>, i64)> = Vec::new();
    for key in &r.keys {
        if let Some(e) = lock.shard_for(ks, key).db(db).get(key, now) {
            let ttl = e.deadline().map_or(0, |at| (at - now).max(1));
            found.push((key, kvik_persist::payload::dump(e.value(), compress), ttl));
        }
    }
    if found.is_empty() {
        drop(lock);
        return c.reply(|s| s.simple(b"NOKEY"));
    }
    let mut request = Vec::new();
    if let Some((user, password)) = r.auth {
        match user {
            Some(user) => command(&mut request, &[b"AUTH", user, password]),
            None => command(&mut request, &[b"AUTH", password]),
        }
    }
    command(&mut request, &[b"SELECT", r.db.to_string().as_bytes()]);
    for (key, payload, ttl) in &found {
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), payload];
        if r.replace {
            args.push(b"REPLACE");
        }
        command(&mut request, &args);
    }
    let head = usize::from(r.auth.is_some()) + 1;
    let outcome = connect(r.host, r.port, r.timeout).and_then(|stream| exchange(stream, &request, head + found.len()));
    let lines = match outcome {
        Ok(lines) => lines,
        Err(failure) => {
            drop(lock);
            return c.error(failure.reply());
        }
    };
    // The first error the target gave (AUTH, then SELECT, then a RESTORE)
    // is the reply; keys it acknowledged before are moved all the same.
    let head_error = lines[..head].iter().find(|l| l.starts_with(b"-")).cloned();
    let mut first_error = head_error.clone();
    let mut moved: Vec<&[u8]> = vec![b"DEL"];
    for ((key, _, _), line) in found.iter().zip(&lines[head..]) {
        if line.starts_with(b"-") || head_error.is_some() {
            first_error.get_or_insert_with(|| line.clone());
            continue;
        }
        if !r.copy && lock.shard_for(ks, key).db(db).take(key, now).is_some() {
            c.notify(EventClass::Generic, "del", key);
            moved.push(key);
        }
    }
    // What left this server is what its journal redoes: the keys go.
    if moved.len() > 1 {
        c.propagate(&moved);
    }
    drop(lock);
    match first_error {
        Some(line) => {
            let mut msg = b"ERR Target instance replied with error: ".to_vec();
            msg.extend_from_slice(&line[1..]);
            c.error(&msg);
        }
        None => c.ok(),
    }
}
