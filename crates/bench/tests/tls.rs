//! kvik-benchmark over TLS (`--tls`, `--cacert`, `--cert`, `--key`) in
//! RESP, RESPB and with mux channels, and with `-k 0`, which makes a TLS
//! handshake per request; certificates are made at run time.

mod common;

use kvik_testkit::pki::Pki;
use kvik_testkit::ScratchDir;

#[test]
fn kvik_benchmark_runs_over_tls() {
    let dir = ScratchDir::new("bench-tls");
    let pki = Pki::generate(dir.path());
    let tls_port = common::free_port();
    let server_args = pki.server_args(tls_port);
    let refs: Vec<&str> = server_args.iter().map(String::as_str).collect();
    let mut server = common::start(&refs);
    let port = tls_port.to_string();
    let client = pki.client_args();
    for mode in [&[][..], &["--respb"], &["--mux", "4", "-c", "8"], &["-k", "0", "-c", "2"]] {
        let mut args: Vec<&str> = vec!["-p", &port];
        args.extend(client.iter().map(String::as_str));
        args.extend(["-n", "400", "-t", "set,get", "-q"]);
        args.extend(mode);
        let out = common::run_bench(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{mode:?}: {text} {}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("SET: ") && text.contains("GET: "), "{mode:?}: {text}");
    }
    assert_eq!(server.int(&["EXISTS", "key:__rand_int__"]), 1);
    let mut args: Vec<&str> = vec!["-p", &port, "--tls", "--cacert", "/nonexistent/ca.pem", "-n", "10", "-q"];
    args.extend(["-t", "ping"]);
    let out = common::run_bench(&args);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/ca.pem"));
}
