//! kvik-benchmark against servers that refuse what it sends: tests whose
//! every reply is an error, and `--respb` against servers without RESPB.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::{run_bench, start, MODES};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    text(stdout).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn a_command_redis_lacks_fails_the_run_and_is_reported() {
    let Some(redis) = kvik_testkit::start_redis(&[]) else { return };
    let port = redis.port.to_string();
    let unknown = "ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' 'b' ";

    let out = run_bench(&["-p", &port, "-n", "1000", "NOSUCHCMD", "a", "b"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("  1000 requests completed in "), "{stdout}");
    assert!(stdout.contains(&format!("\n  1000 errors (first: {unknown})\n")), "{stdout}");
    assert!(
        stderr.contains(&format!("NOSUCHCMD a b: every reply was an error, 1000 of 1000 (first: {unknown})")),
        "{stderr}"
    );

    let out = run_bench(&["-p", &port, "-n", "1000", "--json", "NOSUCHCMD", "a", "b"]);
    assert_eq!(out.status.code(), Some(1));
    let o = &json_lines(&out.stdout)[0];
    assert_eq!((o["requests"].as_u64(), o["errors"].as_u64()), (Some(1000), Some(1000)), "{o}");
    assert_eq!(o["first_error"], unknown);

    let out = run_bench(&["-p", &port, "-n", "1000", "-q", "NOSUCHCMD", "a", "b"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).trim_end().ends_with(" msec, 1000 errors"), "{}", text(&out.stdout));

    // A normal run against the same server: no errors, and it passes.
    let out = run_bench(&["-p", &port, "-n", "1000", "-t", "set,get", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for o in json_lines(&out.stdout) {
        assert_eq!((o["requests"].as_u64(), o["errors"].as_u64()), (Some(1000), Some(0)), "{o}");
        assert!(o["first_error"].is_null(), "{o}");
    }
    let out = run_bench(&["-p", &port, "-n", "1000", "-t", "set"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("error"), "{}", text(&out.stdout));
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn some_error_replies_are_counted_and_the_run_passes() {
    let mut s = start(&[]);
    // -r 2: INCR goes to k:000000000000 (not a number) or k:000000000001.
    s.cmd(&["SET", "k:000000000000", "abc"]);
    for mode in MODES {
        let mut args = mode.to_vec();
        args.extend(["-n", "400", "-c", "4", "-r", "2", "--json", "incr", "k:__rand_int__"]);
        let o = &json_lines(s.bench_ok(&args).as_bytes())[0];
        let errors = o["errors"].as_u64().unwrap_or(0);
        assert!(errors > 0 && errors < 400, "{mode:?} {o}");
        assert_eq!(o["first_error"], "ERR value is not an integer or out of range", "{mode:?}");
    }
    let out = s.bench(&["-n", "400", "-c", "4", "-r", "2", "--csv", "incr", "k:__rand_int__"]);
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("incr k:__rand_int__: "), "{stderr}");
    assert!(stderr.trim_end().ends_with(" errors (first: ERR value is not an integer or out of range)"), "{stderr}");
}

#[test]
fn respb_against_redis_fails_at_once_saying_what_it_answered() {
    let Some(redis) = kvik_testkit::start_redis(&[]) else { return };
    let port = redis.port.to_string();
    for mode in [&["--respb"][..], &["--mux", "4"]] {
        let mut args = vec!["-p", port.as_str(), "-t", "get", "-n", "1000", "-q"];
        args.extend_from_slice(mode);
        let began = Instant::now();
        let out = run_bench(&args);
        let took = began.elapsed();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{mode:?} {stderr}");
        assert!(took < Duration::from_secs(3), "{mode:?} took {took:?}");
        assert!(
            stderr.contains(&format!(
                "The server at 127.0.0.1:{port} does not speak RESPB: it answered the RESPB handshake with \
                 \"-ERR Protocol error: too big inline request\""
            )),
            "{mode:?} {stderr}"
        );
        assert_eq!(text(&out.stdout), "", "{mode:?}");
    }
}

#[test]
fn respb_against_a_server_that_hangs_up_names_that() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    // Every connection is read a little, then closed unanswered.
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = conn.read(&mut [0; 16]);
        }
    });
    let began = Instant::now();
    let out = run_bench(&["-p", &port, "-t", "get", "-n", "10", "-q", "--respb"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(began.elapsed() < Duration::from_secs(3), "took {:?}", began.elapsed());
    assert!(
        stderr.contains(&format!(
            "The server at 127.0.0.1:{port} does not speak RESPB: it closed the connection without answering the RESPB handshake"
        )),
        "{stderr}"
    );
}
