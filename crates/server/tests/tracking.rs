//! Client-side caching against redis-server: the same conversation between
//! a tracking client, writers and redirect targets runs on both servers, and
//! every connection must receive the same bytes in the same order (replies
//! and invalidation pushes interleaved as Redis interleaves them).
//!
//! Each step sends some commands on one connection followed by a
//! `PING -sync-`, and reads until that PING's reply: whatever arrived before
//! it (replies, pushes, pub/sub messages) is the step's record. Client ids
//! differ between the servers, so steps that show them have them masked.

mod common;

use std::io::Write;
use std::net::TcpStream;

use common::*;

const SYNC: &[u8] = b"$6\r\n-sync-\r\n";

/// The connections of one conversation and what they received.
struct Talk {
    port: u16,
    conns: Vec<TcpStream>,
    /// The client id of each connection, for masking.
    ids: Vec<u64>,
    seen: Vec<String>,
}

impl Talk {
    fn new(port: u16, count: usize) -> Talk {
        let mut talk = Talk { port, conns: Vec::new(), ids: Vec::new(), seen: Vec::new() };
        for _ in 0..count {
            talk.open();
        }
        talk
    }

    /// One more connection; its index.
    fn open(&mut self) -> usize {
        let mut conn = connect(self.port);
        let reply = call_text(&mut conn, &["CLIENT", "ID"]);
        let id = std::str::from_utf8(&reply[1..reply.len() - 2]).expect("id").parse().expect("id");
        self.conns.push(conn);
        self.ids.push(id);
        self.conns.len() - 1
    }

    /// Close connection `c` and wait until the server no longer lists it.
    fn close(&mut self, c: usize, via: usize) {
        let id = self.ids[c];
        let _ = self.conns[c].shutdown(std::net::Shutdown::Both);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            let list = call_text(&mut self.conns[via], &["CLIENT", "LIST", "ID", &id.to_string()]);
            if !String::from_utf8_lossy(&list).contains("id=") {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("client {id} still listed");
    }

    /// Send `commands` (inline) and a sync PING on connection `c`; record
    /// everything received up to the PING's reply.
    fn step(&mut self, c: usize, commands: &[&str]) {
        self.step_masked(c, commands, false);
    }

    /// [`Talk::step`], with client ids in integer replies masked.
    fn step_masked(&mut self, c: usize, commands: &[&str], mask: bool) {
        let mut bytes = Vec::new();
        for cmd in commands.iter().chain(&["PING -sync-"]) {
            bytes.extend_from_slice(cmd.as_bytes());
            bytes.extend_from_slice(b"\r\n");
        }
        let conn = &mut self.conns[c];
        conn.write_all(&bytes).expect("send");
        let mut got = read_until(conn, |got| got.windows(SYNC.len()).any(|w| w == SYNC)).bytes;
        // What a batch sends after its last reply (BCAST invalidations)
        // comes before the reply to a second PING.
        conn.write_all(b"PING -sync-\r\n").expect("send");
        let more = read_until(conn, |more| {
            let all = [&got[..], more].concat();
            all.ends_with(SYNC) && all.windows(SYNC.len()).filter(|w| *w == SYNC).count() == 2
        });
        got.extend_from_slice(&more.bytes);
        let mut text = common::diff::mask_client_id(&got).escape_ascii().to_string();
        let mut label = format!("{commands:?}");
        for (i, id) in self.ids.iter().enumerate() {
            label = label.replace(&format!("REDIRECT {id}"), &format!("REDIRECT <client {i}>"));
            if mask {
                text = text.replace(&format!(":{id}\\r\\n"), &format!(":<client {i}>\\r\\n"));
            }
        }
        self.seen.push(format!("[{c}] {label} -> {text}"));
    }

    /// Record the `CLIENT INFO` fields about tracking of connection `c`.
    fn client_flags(&mut self, c: usize) {
        let info = call_text(&mut self.conns[c], &["CLIENT", "INFO"]);
        let text = String::from_utf8_lossy(&info).to_string();
        let field =
            |name: &str| text.split_whitespace().find(|f| f.starts_with(name)).map(str::to_string).unwrap_or_default();
        let redir = field("redir=");
        let masked = self.ids.iter().enumerate().fold(redir, |r, (i, id)| {
            if r == format!("redir={id}") {
                format!("redir=<client {i}>")
            } else {
                r
            }
        });
        self.seen.push(format!("[{c}] CLIENT INFO -> {} {masked}", field("flags=")));
    }

    /// Record the tracking lines of `INFO` as connection `c` sees them.
    fn info(&mut self, c: usize) {
        let info = call_text(&mut self.conns[c], &["INFO", "everything"]);
        let text = String::from_utf8_lossy(&info).to_string();
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("tracking_")).collect();
        self.seen.push(format!("[{c}] INFO -> {lines:?}"));
    }
}

/// Run `script` on redis-server and on kvik (both started with `options`)
/// and require the same records.
fn compare(test: &str, options: &[&str], script: fn(&mut Talk)) {
    let Some(redis) = start_redis_with_or_skip(test, options) else { return };
    let kvik = start_kvik_with(options);
    let mut expected = Talk::new(redis.port, 0);
    script(&mut expected);
    let mut got = Talk::new(kvik.port, 0);
    script(&mut got);
    assert_eq!(got.seen.len(), expected.seen.len());
    for (e, g) in expected.seen.iter().zip(&got.seen) {
        assert_eq!(g, e, "\nall of redis: {:#?}\nall of kvik: {:#?}", expected.seen, got.seen);
    }
}

#[test]
fn default_mode_invalidates_what_was_read_once() {
    compare("default_mode_invalidates_what_was_read_once", &[], |t| {
        let (a, b) = (t.open(), t.open());
        t.step(a, &["HELLO 3", "CLIENT TRACKING on", "GET k", "MGET m1 m2", "EXISTS e", "TTL e2", "STRLEN s"]);
        t.step(b, &["SET k 1", "MSET m1 1 m2 2 e 3 e2 4 s 5"]);
        t.step(a, &[]);
        // Forgotten after the first change: a second change says nothing.
        t.step(b, &["SET k 2", "DEL m1"]);
        t.step(a, &[]);
        // The client's own change is announced right after its reply.
        t.step(a, &["GET k", "SET k 3", "GET k", "INCR k", "GET k"]);
        // Invalidations are pushed even while replies are off.
        t.step(a, &["GET k", "CLIENT REPLY OFF", "SET k 9", "GET k", "CLIENT REPLY ON"]);
        t.step(a, &["MGET p1 p2", "MSET p2 1 p1 2", "GET p1"]);
        // Key names are tracked whatever the database.
        t.step(b, &["SELECT 1", "SET k x", "SELECT 0"]);
        t.step(a, &["GET k", "EXPIRE k 100", "GET k", "DEL k", "DEL k"]);
        // Writes fail without changing anything: nothing is sent.
        t.step(a, &["GET w"]);
        t.step(b, &["EXPIRE w 10", "INCR w", "SET w v NX", "SET w v2 NX"]);
        t.step(a, &[]);
        t.info(a);
        t.client_flags(a);
        t.step_masked(a, &["CLIENT TRACKINGINFO", "CLIENT GETREDIR"], true);
        t.step(a, &["CLIENT TRACKING off", "CLIENT TRACKINGINFO", "CLIENT GETREDIR"]);
        t.client_flags(a);
        t.info(a);
    });
}

#[test]
fn resp2_without_redirect_records_but_receives_nothing() {
    compare("resp2_without_redirect_records_but_receives_nothing", &[], |t| {
        let (a, b) = (t.open(), t.open());
        t.step(a, &["CLIENT TRACKING on", "GET r1", "GET r2", "SET r1 x"]);
        t.info(a);
        t.step(b, &["SET r2 y"]);
        t.step(a, &["GET r1"]);
        t.info(a);
    });
}

#[test]
fn broadcast_mode_follows_prefixes() {
    compare("broadcast_mode_follows_prefixes", &[], |t| {
        let (a, b) = (t.open(), t.open());
        t.step(a, &["HELLO 3", "CLIENT TRACKING on BCAST PREFIX a PREFIX b", "SET a1 x", "GET c"]);
        // One message per prefix, its keys gathered and sorted.
        t.step(b, &["MSET a2 1 a1 2 b1 3 c1 4"]);
        t.step(a, &[]);
        // A batch of commands is one round of messages.
        t.step(b, &["SET a3 1", "SET b2 1", "SET a1 1", "SET a3 2"]);
        t.step(a, &[]);
        t.info(a);
        t.client_flags(a);
        t.step(a, &["CLIENT TRACKINGINFO", "CLIENT TRACKING on BCAST PREFIX c", "CLIENT TRACKINGINFO"]);
        t.step(a, &["CLIENT TRACKING off", "CLIENT TRACKING on BCAST"]);
        t.step(b, &["SET anything 1"]);
        t.step(a, &["CLIENT TRACKINGINFO"]);
        t.step(a, &["CLIENT TRACKING off", "CLIENT TRACKING on BCAST NOLOOP PREFIX n", "SET n1 1", "MSET n2 1"]);
        t.step(b, &["SET n1 2", "SET n3 3"]);
        t.step(a, &["SET n4 4"]);
        t.info(b);
    });
}

#[test]
fn optin_and_optout_follow_client_caching() {
    compare("optin_and_optout_follow_client_caching", &[], |t| {
        let (a, b) = (t.open(), t.open());
        t.step(a, &["HELLO 3", "CLIENT TRACKING on OPTIN"]);
        t.step(a, &["GET o1", "CLIENT CACHING yes", "GET o2", "GET o3"]);
        // Other CLIENT subcommands do not use CACHING up.
        t.step(a, &["CLIENT CACHING yes", "CLIENT GETNAME", "CLIENT TRACKINGINFO", "GET o4", "CLIENT TRACKINGINFO"]);
        t.step(a, &["CLIENT CACHING yes", "PING", "GET o5"]);
        t.step(b, &["MSET o1 1 o2 1 o3 1 o4 1 o5 1"]);
        t.step(a, &["CLIENT TRACKING off", "CLIENT TRACKING on OPTOUT NOLOOP"]);
        t.step(a, &["GET o1", "CLIENT CACHING no", "GET o2", "GET o3", "CLIENT TRACKINGINFO"]);
        t.step(b, &["MSET o1 2 o2 2 o3 2"]);
        t.step(a, &["GET o1", "SET o1 3"]);
        t.step(b, &["SET o1 4"]);
        t.step(a, &["CLIENT CACHING no", "CLIENT TRACKINGINFO", "CLIENT TRACKING on", "CLIENT TRACKINGINFO"]);
    });
}

#[test]
fn resp2_clients_redirect_to_a_subscriber() {
    compare("resp2_clients_redirect_to_a_subscriber", &[], |t| {
        let (a, sub, b) = (t.open(), t.open(), t.open());
        let sub_id = t.ids[sub].to_string();
        t.step(sub, &["SUBSCRIBE __redis__:invalidate"]);
        t.step(a, &[&format!("CLIENT TRACKING on REDIRECT {sub_id}"), "GET k", "SET k 1", "GET k", "GET j"]);
        t.step(sub, &[]);
        t.step(b, &["SET j 1"]);
        t.step(sub, &[]);
        t.step(a, &["GET j"]);
        t.step(b, &["FLUSHALL"]);
        t.step(sub, &[]);
        t.step(a, &[]);
        t.client_flags(a);
        t.step_masked(a, &["CLIENT TRACKINGINFO", "CLIENT GETREDIR"], true);
    });
}

#[test]
fn redirect_targets_in_resp3_and_broken_redirects() {
    compare("redirect_targets_in_resp3_and_broken_redirects", &[], |t| {
        let (target, c, b) = (t.open(), t.open(), t.open());
        let target_id = t.ids[target].to_string();
        t.step(target, &["HELLO 3"]);
        // A RESP3 target gets pushes, subscribed or not.
        t.step(c, &[&format!("CLIENT TRACKING on REDIRECT {target_id}"), "GET x"]);
        t.step(b, &["SET x 1"]);
        t.step(target, &[]);
        t.step(target, &["SUBSCRIBE __redis__:invalidate"]);
        t.step(c, &["GET x"]);
        t.step(b, &["SET x 2"]);
        t.step(target, &[]);
        // The null of a flush is written in the tracking client's protocol.
        t.step(b, &["FLUSHDB"]);
        t.step(target, &[]);
        // Once the target is gone, a RESP3 tracking client is told so.
        let d = t.open();
        t.step(d, &["HELLO 3", &format!("CLIENT TRACKING on REDIRECT {target_id}"), "GET y"]);
        t.close(target, b);
        t.step(b, &["SET y 1"]);
        t.step_masked(d, &[], true);
        t.step(c, &["GET y"]);
        t.step(b, &["SET y 2", "FLUSHALL"]);
        t.step_masked(d, &[], true);
        t.step(c, &[]);
        t.client_flags(d);
        t.client_flags(c);
        t.step_masked(d, &["CLIENT TRACKINGINFO"], true);
        t.step_masked(c, &["CLIENT TRACKINGINFO"], true);
        // Turning tracking on again clears the broken flag.
        t.step(d, &["CLIENT TRACKING on", "CLIENT TRACKINGINFO"]);
        t.client_flags(d);
    });
}

#[test]
fn flushes_send_a_null_invalidation_to_every_tracking_client() {
    compare("flushes_send_a_null_invalidation_to_every_tracking_client", &[], |t| {
        let (a, bc, b) = (t.open(), t.open(), t.open());
        t.step(a, &["HELLO 3", "CLIENT TRACKING on", "GET k"]);
        t.step(bc, &["HELLO 3", "CLIENT TRACKING on BCAST PREFIX z"]);
        t.info(b);
        t.step(b, &["SELECT 2", "FLUSHDB"]);
        t.step(a, &[]);
        t.step(bc, &[]);
        t.info(b);
        // Empty or not, the flush is announced; the own one after the reply.
        t.step(a, &["FLUSHALL", "GET k"]);
        t.step(bc, &[]);
        t.step(b, &["SET k 1"]);
        t.step(a, &[]);
    });
}

#[test]
fn the_table_is_bounded_by_tracking_table_max_keys() {
    let options = ["--tracking-table-max-keys", "2"];
    let Some(redis) = start_redis_with_or_skip("the_table_is_bounded_by_tracking_table_max_keys", &options) else {
        return;
    };
    let kvik = start_kvik_with(&options);
    // Which key goes is chosen at random, by both servers: compare the
    // shape, with the key name hidden.
    let run = |port: u16| {
        let mut t = Talk::new(port, 1);
        t.step(0, &["HELLO 3", "CLIENT TRACKING on", "GET k1", "GET k2", "GET k3", "PING"]);
        t.info(0);
        t.step(0, &["CONFIG SET tracking-table-max-keys 0", "GET k4", "GET k5", "PING"]);
        t.info(0);
        t.step(0, &["CONFIG GET tracking-table-max-keys"]);
        // Lowering the limit forgets keys before the next command.
        t.step(0, &["CONFIG SET tracking-table-max-keys 1"]);
        t.info(0);
        t.seen
            .iter()
            .map(|s| (1..=5).fold(s.clone(), |s, i| s.replace(&format!("$2\\r\\nk{i}"), "$2\\r\\nkN")))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(kvik.port), run(redis.port));
}

/// Writers on several threads: every change of a key a client read is
/// announced, however the threads interleave.
#[test]
fn changes_from_many_threads_are_all_announced() {
    let kvik = start_kvik_with(&["--threads", "4"]);
    let mut reader = connect(kvik.port);
    call_text(&mut reader, &["HELLO", "3"]);
    call_text(&mut reader, &["CLIENT", "TRACKING", "on"]);
    for round in 0..20 {
        let keys: Vec<String> = (0..8).map(|i| format!("key:{round}:{i}")).collect();
        for k in &keys {
            call_text(&mut reader, &["GET", k]);
        }
        let writers: Vec<_> = keys
            .chunks(2)
            .map(|pair| {
                let (port, pair) = (kvik.port, pair.to_vec());
                std::thread::spawn(move || {
                    let mut w = connect(port);
                    for k in &pair {
                        call_text(&mut w, &["SET", k, "v"]);
                        call_text(&mut w, &["SET", k, "again"]);
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        reader.write_all(b"PING -sync-\r\n").expect("send");
        let got = read_until(&mut reader, |got| got.ends_with(SYNC)).bytes;
        let text = String::from_utf8_lossy(&got);
        for k in &keys {
            assert_eq!(text.matches(&format!("\r\n{k}\r\n")).count(), 1, "round {round}: {k} in {text:?}");
        }
    }
}

#[test]
fn keys_that_expire_are_invalidated() {
    compare("keys_that_expire_are_invalidated", &["--enable-debug-command", "yes"], |t| {
        let (a, b) = (t.open(), t.open());
        t.step(b, &["DEBUG SET-ACTIVE-EXPIRE 0", "SET lazy 1 PX 30", "SET active 1 PX 30", "SET stays 1"]);
        t.step(a, &["HELLO 3", "CLIENT TRACKING on", "GET lazy", "GET active", "GET stays"]);
        // Found expired by a read: the tracking client is told.
        std::thread::sleep(std::time::Duration::from_millis(60));
        t.step(b, &["GET lazy"]);
        t.step(a, &[]);
        // Removed by the expiry cycle with nobody reading it.
        t.step(b, &["DEBUG SET-ACTIVE-EXPIRE 1"]);
        std::thread::sleep(std::time::Duration::from_millis(500));
        t.step(a, &[]);
        t.step(a, &["EXISTS active", "GET stays"]);
    });
}
