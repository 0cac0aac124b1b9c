//! `--pipe`: mass insertion of the RESP commands on stdin.
//!
//! As redis-cli does, one task streams stdin to the server while the other
//! reads and counts replies, so neither side waits for the other and memory
//! stays at one input chunk plus one reply. After the input an `ECHO` of a
//! random marker is sent; its reply tells that every earlier reply has come
//! in. Error replies are printed on stderr as they arrive; the summary lines
//! go to stdout; the exit status is 1 when any reply was an error.
//!
//! With `--respb` the input is converted to RESPB frames on the fly by the
//! [`Converter`] (passthrough frames for what a layout cannot carry), and the
//! replies are RESPB frames.

use std::time::Duration;

use kvik_client::{Protocol, ReadHalf, Stream, Value, WriteHalf};
use kvik_protocol::resp::command::write_command;
use kvik_protocol::resp::reply_parser::{parse_reply, ReplyLimits};
use kvik_protocol::respb::{decode_reply, encode_request, handshake};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{client_options, print, server_name};
use crate::convert::{Converter, CHUNK};
use crate::options::{Config, Target};

pub(super) async fn run(cfg: &Config) -> i32 {
    let opts = match client_options(cfg) {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let stream = match Stream::connect_with(&opts.address, opts.tls.as_ref()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("Could not connect to Redis at {}: {}", server_name(cfg), super::reason(&e));
            return 1;
        }
    };
    let (rd, wr) = stream.into_split();
    let mut link = Link {
        rd,
        wr,
        respb: cfg.protocol == Protocol::Respb,
        buf: Vec::with_capacity(CHUNK),
        start: 0,
        scratch: vec![0; CHUNK],
    };
    if let Err(msg) = link.setup(cfg).await {
        eprintln!("{msg}");
        return 1;
    }
    let marker = marker();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let Link { rd, wr, respb, buf, start, scratch } = link;
    let writer = tokio::spawn(send_all(wr, respb, marker.clone(), done_tx));
    let timeout = (cfg.pipe_timeout > 0).then(|| Duration::from_secs(cfg.pipe_timeout));
    let mut reader = Link { rd, wr: (), respb, buf, start, scratch };
    let code = reader.count_replies(&marker, done_rx, timeout).await;
    writer.abort();
    code
}

/// 20 random bytes as hex, so no command of the input can answer the same.
fn marker() -> Vec<u8> {
    use std::hash::{BuildHasher, Hasher};
    let mut text = String::new();
    for i in 0..3u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(i);
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        text.push_str(&format!("{:016x}", h.finish()));
    }
    text.truncate(40);
    text.into_bytes()
}

/// Stream stdin (converted when speaking RESPB), then the marker.
async fn send_all(
    mut wr: WriteHalf,
    respb: bool,
    marker: Vec<u8>,
    done: tokio::sync::oneshot::Sender<Result<(), String>>,
) {
    let result = async {
        let mut stdin = tokio::io::stdin();
        let mut chunk = vec![0u8; CHUNK];
        let mut conv = Converter::new(Target::Respb);
        let mut out = Vec::with_capacity(2 * CHUNK);
        loop {
            let n = stdin.read(&mut chunk).await.map_err(|e| format!("Error reading from stdin: {e}"))?;
            if n == 0 {
                break;
            }
            let bytes = if respb {
                out.clear();
                conv.feed(&chunk[..n], &mut out).map_err(|e| format!("Error: {e}"))?;
                &out[..]
            } else {
                &chunk[..n]
            };
            wr.write_all(bytes).await.map_err(|e| format!("Error writing to the server: {e}"))?;
        }
        let echo = [b"ECHO".as_slice(), marker.as_slice()];
        out.clear();
        if respb {
            let stats = conv.finish().map_err(|e| format!("Error: {e}"))?;
            eprintln!("{}", stats.report(Target::Respb));
            encode_request(&echo, 0, &mut out);
        } else {
            write_command(&echo, &mut out);
        }
        wr.write_all(&out).await.map_err(|e| format!("Error writing to the server: {e}"))?;
        wr.flush().await.map_err(|e| format!("Error writing to the server: {e}"))?;
        Ok(())
    }
    .await;
    let _ = done.send(result);
    // Keep the write half open until the reader is finished (the task is aborted then).
    std::future::pending::<()>().await;
    drop(wr);
}

/// Both halves before streaming starts, then the read half alone.
struct Link<W> {
    rd: ReadHalf,
    wr: W,
    respb: bool,
    buf: Vec<u8>,
    start: usize,
    /// Where reads land before joining `buf`, so a read cancelled by
    /// `select!` leaves `buf` untouched.
    scratch: Vec<u8>,
}

impl Link<WriteHalf> {
    /// Handshake, AUTH, HELLO 3 and SELECT as the options ask, each answered
    /// before the data goes.
    async fn setup(&mut self, cfg: &Config) -> Result<(), String> {
        if self.respb {
            self.wr.write_all(&handshake::client_hello(kvik_protocol::respb::VERSION)).await.map_err(io_msg)?;
            while self.buf.len() < handshake::LEN {
                self.fill().await?;
            }
            let answer: [u8; handshake::LEN] = self.buf[..handshake::LEN].try_into().map_err(|_| "short handshake")?;
            if !handshake::answer_accepts(&answer) {
                return Err(format!("RESPB handshake refused (answer {answer:02X?})"));
            }
            self.start = handshake::LEN;
        }
        let mut steps: Vec<Vec<Vec<u8>>> = Vec::new();
        if let Some(pass) = &cfg.password {
            let mut auth = vec![b"AUTH".to_vec()];
            auth.extend(cfg.user.clone());
            auth.push(pass.clone());
            steps.push(auth);
        }
        if cfg.protocol == Protocol::Resp3 {
            steps.push(vec![b"HELLO".to_vec(), b"3".to_vec()]);
        }
        if let Some(db) = cfg.db {
            steps.push(vec![b"SELECT".to_vec(), db.to_string().into_bytes()]);
        }
        for args in steps {
            let mut out = Vec::new();
            if self.respb {
                encode_request(&args, 0, &mut out);
            } else {
                write_command(&args, &mut out);
            }
            self.wr.write_all(&out).await.map_err(io_msg)?;
            // As redis-cli does, a refused step is reported and the data goes anyway.
            if let Value::Error(e) = self.next_reply().await? {
                let name = String::from_utf8_lossy(&args[0]).into_owned();
                match name.as_str() {
                    "SELECT" => eprintln!("SELECT {} failed: {}", cfg.db.unwrap_or(0), String::from_utf8_lossy(&e)),
                    "HELLO" => {}
                    _ => eprintln!("{name} failed: {}", String::from_utf8_lossy(&e)),
                }
            }
        }
        Ok(())
    }
}

fn io_msg(e: std::io::Error) -> String {
    format!("Error: {e}")
}

impl<W> Link<W> {
    /// Read more bytes from the server, dropping what was consumed.
    async fn fill(&mut self) -> Result<(), String> {
        let n = match self.rd.read(&mut self.scratch).await {
            Ok(0) => return Err("Error: the server closed the connection".into()),
            Ok(n) => n,
            Err(e) => return Err(format!("Error reading from the server: {e}")),
        };
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(&self.scratch[..n]);
        Ok(())
    }

    /// The next complete reply in the buffer, if there is one.
    fn parse_one(&mut self) -> Result<Option<Value>, String> {
        let pending = &self.buf[self.start..];
        let parsed = if self.respb {
            decode_reply(pending, &ReplyLimits::DEFAULT)
                .map(|f| f.map(|f| (f.value, f.consumed)))
                .map_err(|e| format!("Error: {e}"))?
        } else {
            parse_reply(pending, &ReplyLimits::DEFAULT).map_err(|e| format!("Error: {e}"))?
        };
        Ok(parsed.map(|(value, used)| {
            self.start += used;
            value
        }))
    }

    async fn next_reply(&mut self) -> Result<Value, String> {
        loop {
            if let Some(v) = self.parse_one()? {
                return Ok(v);
            }
            self.fill().await?;
        }
    }

    /// Count replies until the marker's echo; print the summary.
    async fn count_replies(
        &mut self,
        marker: &[u8],
        mut sent: tokio::sync::oneshot::Receiver<Result<(), String>>,
        timeout: Option<Duration>,
    ) -> i32 {
        let (mut replies, mut errors) = (0u64, 0u64);
        let mut all_sent = false;
        loop {
            while let Some(reply) = match self.parse_one() {
                Ok(r) => r,
                Err(msg) => return fail(&msg),
            } {
                match reply {
                    Value::Bulk(b) if b == marker => {
                        if !all_sent {
                            // The marker goes last: its echo means everything was sent.
                            print(b"All data transferred. Waiting for the last reply...\n");
                        }
                        print(b"Last reply received from server.\n");
                        print(format!("errors: {errors}, replies: {replies}\n").as_bytes());
                        return i32::from(errors > 0);
                    }
                    Value::Error(e) => {
                        eprintln!("{}", String::from_utf8_lossy(&e));
                        errors += 1;
                        replies += 1;
                    }
                    _ => replies += 1,
                }
            }
            let read = async {
                match (all_sent, timeout) {
                    (true, Some(limit)) => tokio::time::timeout(limit, self.fill()).await.ok(),
                    _ => Some(self.fill().await),
                }
            };
            tokio::select! {
                outcome = &mut sent, if !all_sent => {
                    all_sent = true;
                    match outcome {
                        Ok(Ok(())) => print(b"All data transferred. Waiting for the last reply...\n"),
                        Ok(Err(msg)) => return fail(&msg),
                        Err(_) => return fail("Error: the writer stopped"),
                    }
                }
                r = read => match r {
                    Some(Ok(())) => {}
                    Some(Err(msg)) => return fail(&msg),
                    None => {
                        // Given up on: counted as one more error, as redis-cli does.
                        let secs = timeout.map_or(0, |t| t.as_secs());
                        eprintln!("No replies for {secs} seconds: exiting.");
                        print(format!("errors: {}, replies: {replies}\n", errors + 1).as_bytes());
                        return 1;
                    }
                }
            }
        }
    }
}

fn fail(msg: &str) -> i32 {
    eprintln!("{msg}");
    1
}
