//! kvik-cli over TLS (`--tls`, `--cacert`, `--cert`, `--key`, `--insecure`,
//! `rediss://`) against a kvik-server serving `tls-port`, in RESP2, RESP3
//! and RESPB, with certificates made at run time.

mod common;

use common::{kvik_cli_plain, show, start_kvik};
use kvik_testkit::pki::Pki;
use kvik_testkit::{free_port, ScratchDir};

#[test]
fn kvik_cli_speaks_every_protocol_over_tls() {
    let dir = ScratchDir::new("cli-tls");
    let pki = Pki::generate(dir.path());
    let tls_port = free_port();
    let server_args = pki.server_args(tls_port);
    let refs: Vec<&str> = server_args.iter().map(String::as_str).collect();
    let _server = start_kvik(&refs);
    let port = tls_port.to_string();
    let client = pki.client_args();
    let cli = |extra: &[&str], command: &[&str]| {
        let mut args: Vec<&[u8]> = vec![b"-p", port.as_bytes()];
        args.extend(client.iter().map(|a| a.as_bytes()));
        args.extend(extra.iter().map(|a| a.as_bytes()));
        args.extend(command.iter().map(|a| a.as_bytes()));
        let out = kvik_cli_plain(&args, b"");
        (show(&out.stdout).trim().to_string(), show(&out.stderr))
    };
    assert_eq!(cli(&[], &["PING"]).0, "PONG");
    assert_eq!(cli(&[], &["SET", "k", "over tls"]).0, "OK");
    assert_eq!(cli(&["-3"], &["GET", "k"]).0, "over tls");
    assert_eq!(cli(&["--respb"], &["GET", "k"]).0, "over tls");
    assert_eq!(cli(&["--insecure"], &["PING"]).0, "PONG");
    let uri = format!("rediss://127.0.0.1:{tls_port}");
    let mut args: Vec<&[u8]> = vec![b"-u", uri.as_bytes()];
    args.extend(client[1..].iter().map(|a| a.as_bytes()));
    args.push(b"PING");
    assert_eq!(show(&kvik_cli_plain(&args, b"").stdout).trim(), "PONG", "rediss:// turns TLS on");
    // A CA that did not sign the server's certificate: refused, with the reason.
    let other = pki.other_ca.display().to_string();
    let (out, err) = cli(&["--cacert", &other], &["PING"]);
    assert_ne!(out, "PONG");
    assert!(err.contains("Could not connect"), "{err}");
    let (_, err) = cli(&["--cacert", "/nonexistent/ca.pem"], &["PING"]);
    assert!(err.contains("Could not create a TLS context") && err.contains("/nonexistent/ca.pem"), "{err}");
    let (_, err) = cli(&["--tls-ciphers", "AES128-SHA"], &["PING"]);
    assert!(err.contains("AES128-SHA"), "{err}");
}
