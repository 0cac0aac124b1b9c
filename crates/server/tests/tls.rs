//! TLS on `tls-port`, checked with the clients people use (redis-cli,
//! redis-benchmark) and with a rustls client for what they cannot show:
//! RESP2, RESP3 and RESPB with mux channels over TLS; `tls-auth-clients`
//! yes / no / optional; a plain-text client and an untrusted CA turned
//! away while the server goes on serving; `CONFIG SET tls-cert-file`
//! giving new connections the new certificate (and an invalid file
//! refused, keeping the old one); session resumption; `tls-protocols`;
//! and startup failing with the reason on a bad certificate or key.
//! Certificates are made at run time (kvik_testkit::pki).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{free_port, start_kvik_with, ServerProcess};
use kvik_protocol::resp::reply_parser::ReplyLimits;
use kvik_protocol::respb::{control_frame, decode_reply, encode_request, handshake, MUX_CREATE};
use kvik_protocol::Value;
use kvik_testkit::pki::Pki;
use kvik_testkit::ScratchDir;
use kvik_tls::rustls::pki_types::ServerName;
use kvik_tls::rustls::{self, ClientConfig, ClientConnection, StreamOwned};

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A server with TLS on a port of its own beside the plain one.
struct TlsServer {
    server: ServerProcess,
    tls_port: u16,
    pki: Pki,
    _dir: ScratchDir,
}

fn start(extra: &[&str]) -> TlsServer {
    let dir = ScratchDir::new("tls-pki");
    let pki = Pki::generate(dir.path());
    start_with_pki(pki, dir, extra)
}

fn start_with_pki(pki: Pki, dir: ScratchDir, extra: &[&str]) -> TlsServer {
    let tls_port = free_port();
    let mut args = pki.server_args(tls_port);
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = start_kvik_with(&refs);
    // Both ports are bound before the server serves; check anyway.
    assert!(common::listens_on(server.pid(), tls_port), "tls-port {tls_port} is not listening");
    TlsServer { server, tls_port, pki, _dir: dir }
}

fn roots(ca: &Path) -> rustls::RootCertStore {
    kvik_tls::files::load_roots(Some(ca), None).expect("CA")
}

/// A rustls client configuration trusting `ca`, with the client
/// certificate when `cert` is given.
fn client_config(ca: &Path, cert: Option<(&Path, &Path)>) -> Arc<ClientConfig> {
    let builder = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots(ca));
    let config = match cert {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                kvik_tls::files::load_certs(cert).expect("cert"),
                kvik_tls::files::load_key(key, None).expect("key"),
            )
            .expect("client cert"),
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

fn full_client(s: &TlsServer) -> Arc<ClientConfig> {
    client_config(&s.pki.ca, Some((&s.pki.client_cert, &s.pki.client_key)))
}

/// Connect and complete the handshake, or say why it failed.
fn tls_connect(port: u16, config: Arc<ClientConfig>) -> Result<Tls, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    let conn =
        ClientConnection::new(config, ServerName::try_from("localhost").expect("name")).map_err(|e| e.to_string())?;
    let mut tls = StreamOwned::new(conn, tcp);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).map_err(|e| e.to_string())?;
    }
    Ok(tls)
}

/// Send `request` and read until `done` says the answer is complete;
/// the error is how the connection failed (TLS 1.3 reports a refused
/// client certificate only at the first read).
fn tls_exchange(tls: &mut Tls, request: &[u8], done: impl Fn(&[u8]) -> bool) -> Result<Vec<u8>, String> {
    tls.write_all(request).and_then(|()| tls.flush()).map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while !done(&got) {
        match tls.read(&mut chunk) {
            Ok(0) => return Err(format!("closed after {:?}", String::from_utf8_lossy(&got))),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(got)
}

fn resp_command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

fn call(tls: &mut Tls, args: &[&str]) -> Result<Vec<u8>, String> {
    tls_exchange(tls, &resp_command(args), common::reply_complete)
}

fn ping_works(port: u16, config: Arc<ClientConfig>) -> Result<(), String> {
    let mut tls = tls_connect(port, config)?;
    match call(&mut tls, &["PING"])? {
        r if r == b"+PONG\r\n" => Ok(()),
        r => Err(format!("PING answered {:?}", String::from_utf8_lossy(&r))),
    }
}

fn run(program: &str, args: &[String]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{program} {args:?} did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn redis_cli(s: &TlsServer, tls: &[String], command: &[&str]) -> Output {
    let mut args = vec!["-p".to_string(), s.tls_port.to_string()];
    args.extend(tls.iter().cloned());
    args.extend(command.iter().map(|c| c.to_string()));
    run("redis-cli", &args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn have_redis_tools(test: &str) -> bool {
    common::redis_available() || {
        assert!(std::env::var_os("CI").is_none(), "{test}: redis-cli and redis-benchmark are needed under CI");
        eprintln!("{test}: skipped, redis-cli is not installed");
        false
    }
}

#[test]
fn redis_cli_speaks_resp2_and_resp3_over_tls_with_a_client_certificate() {
    if !have_redis_tools("redis_cli_over_tls") {
        return;
    }
    let s = start(&[]);
    let tls = s.pki.client_args();
    assert_eq!(stdout(&redis_cli(&s, &tls, &["PING"])), "PONG");
    assert_eq!(stdout(&redis_cli(&s, &tls, &["SET", "greeting", "hello over tls"])), "OK");
    assert_eq!(stdout(&redis_cli(&s, &tls, &["GET", "greeting"])), "hello over tls");
    let hello = stdout(&redis_cli(&s, &tls, &["-3", "HELLO", "3"]));
    assert!(hello.contains("proto") && hello.contains("7.0.15"), "{hello}");
    // The plain port serves the same data.
    let plain = run("redis-cli", &["-p".into(), s.server.port.to_string(), "GET".into(), "greeting".into()]);
    assert_eq!(stdout(&plain), "hello over tls");
    // tls-auth-clients yes (the default): no client certificate, no service.
    let bare = redis_cli(&s, &["--tls".into(), "--cacert".into(), s.pki.ca.display().to_string()], &["PING"]);
    assert_ne!(stdout(&bare), "PONG");
    assert_eq!(stdout(&redis_cli(&s, &tls, &["PING"])), "PONG", "the server goes on serving");
}

#[test]
fn respb_with_mux_channels_over_tls() {
    let s = start(&[]);
    let mut tls = tls_connect(s.tls_port, full_client(&s)).expect("handshake");
    let answer =
        tls_exchange(&mut tls, &handshake::client_hello(1), |got| got.len() >= handshake::LEN).expect("RESPB greeting");
    assert_eq!(answer, [0xD3, 0xC1, 0x01, 0x00]);
    let frames_in = |mut buf: &[u8]| {
        let mut n = 0;
        while let Ok(Some(f)) = decode_reply(buf, &ReplyLimits::DEFAULT) {
            buf = &buf[f.consumed..];
            n += 1;
        }
        n
    };
    let mut request = Vec::new();
    control_frame(MUX_CREATE, 0, 1, &mut request);
    control_frame(MUX_CREATE, 0, 2, &mut request);
    encode_request(&[&b"SELECT"[..], b"3"], 2, &mut request);
    encode_request(&[&b"SET"[..], b"k", b"on db 0"], 1, &mut request);
    encode_request(&[&b"SET"[..], b"k", b"on db 3"], 2, &mut request);
    encode_request(&[&b"GET"[..], b"k"], 1, &mut request);
    encode_request(&[&b"GET"[..], b"k"], 2, &mut request);
    let got = tls_exchange(&mut tls, &request, |got| frames_in(got) >= 7).expect("replies");
    let mut buf = &got[..];
    let mut replies = Vec::new();
    while let Ok(Some(f)) = decode_reply(buf, &ReplyLimits::DEFAULT) {
        buf = &buf[f.consumed..];
        replies.push((f.mux, f.value));
    }
    let gets: Vec<&(u16, Value)> = replies.iter().filter(|(_, v)| matches!(v, Value::Bulk(_))).collect();
    assert_eq!(gets.len(), 2, "{replies:?}");
    for (mux, value) in gets {
        let want: &[u8] = if *mux == 1 { b"on db 0" } else { b"on db 3" };
        assert_eq!(value, &Value::Bulk(want.to_vec()), "channel {mux}");
    }
}

#[test]
fn tls_auth_clients_no_and_optional() {
    let s = start(&["--tls-auth-clients", "optional"]);
    let anonymous = client_config(&s.pki.ca, None);
    ping_works(s.tls_port, Arc::clone(&anonymous)).expect("optional: no certificate is fine");
    ping_works(s.tls_port, full_client(&s)).expect("optional: a trusted certificate is fine");
    let untrusted = client_config(&s.pki.ca, Some((&s.pki.other_client_cert, &s.pki.other_client_key)));
    assert!(ping_works(s.tls_port, untrusted).is_err(), "optional: an untrusted certificate is refused");
    // CONFIG SET switches new connections to "yes", then to "no".
    let mut admin = tls_connect(s.tls_port, full_client(&s)).expect("admin");
    assert_eq!(call(&mut admin, &["CONFIG", "SET", "tls-auth-clients", "yes"]).expect("set"), b"+OK\r\n");
    assert!(ping_works(s.tls_port, Arc::clone(&anonymous)).is_err(), "yes: a certificate is required");
    assert_eq!(call(&mut admin, &["CONFIG", "SET", "tls-auth-clients", "no"]).expect("set"), b"+OK\r\n");
    ping_works(s.tls_port, anonymous).expect("no: no certificate asked for");

    // tls-auth-clients no needs no CA at all.
    let dir = ScratchDir::new("tls-no-ca");
    let pki = Pki::generate(dir.path());
    let tls_port = free_port();
    let cert = pki.server_cert.display().to_string();
    let key = pki.server_key.display().to_string();
    let port = tls_port.to_string();
    let server = start_kvik_with(&[
        "--tls-port",
        &port,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-auth-clients",
        "no",
    ]);
    ping_works(tls_port, client_config(&pki.ca, None)).expect("no CA, no client certificates");
    drop(server);
}

#[test]
fn a_plain_text_client_on_the_tls_port_is_closed_and_the_server_goes_on() {
    let s = start(&[]);
    let mut plain = TcpStream::connect(("127.0.0.1", s.tls_port)).expect("connect");
    plain.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    plain.write_all(b"PING\r\n").expect("write");
    let mut got = Vec::new();
    // The server answers with a TLS alert (or nothing) and closes.
    let _ = plain.read_to_end(&mut got);
    assert!(!got.windows(4).any(|w| w == b"PONG"), "a plain client must get no reply: {got:?}");
    assert!(got.is_empty() || got[0] == 0x15, "only a TLS alert may come back: {got:?}");
    // RESPB's first byte on the TLS port is no better.
    let mut respb = TcpStream::connect(("127.0.0.1", s.tls_port)).expect("connect");
    respb.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    respb.write_all(&handshake::client_hello(1)).expect("write");
    let mut got = Vec::new();
    let _ = respb.read_to_end(&mut got);
    assert!(!got.starts_with(&[0xD3, 0xC1]), "{got:?}");
    ping_works(s.tls_port, full_client(&s)).expect("TLS clients are still served");
    let mut k = common::connect(s.server.port);
    assert_eq!(common::call_text(&mut k, &["PING"]), b"+PONG\r\n");
}

#[test]
fn a_client_that_trusts_another_ca_refuses_the_server() {
    let s = start(&[]);
    let err = ping_works(s.tls_port, client_config(&s.pki.other_ca, Some((&s.pki.client_cert, &s.pki.client_key))))
        .expect_err("the server's certificate is not from this CA");
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    if have_redis_tools("wrong_ca") {
        let mut tls = s.pki.client_args();
        tls[2] = s.pki.other_ca.display().to_string();
        let out = redis_cli(&s, &tls, &["PING"]);
        assert_ne!(stdout(&out), "PONG");
    }
}

#[test]
fn config_set_tls_cert_file_gives_new_connections_the_new_certificate() {
    let s = start(&[]);
    let mut before = tls_connect(s.tls_port, full_client(&s)).expect("first connection");
    assert_eq!(call(&mut before, &["PING"]).expect("ping"), b"+PONG\r\n");
    // Another CA's certificate and key, and that CA for the clients.
    let other_ca = s.pki.other_ca.display().to_string();
    let cert = s.pki.other_server_cert.display().to_string();
    let key = s.pki.other_server_key.display().to_string();
    let reply = call(&mut before, &["CONFIG", "SET", "tls-cert-file", &cert, "tls-key-file", &key]).expect("set");
    assert_eq!(reply, b"+OK\r\n");
    let old_ca = full_client(&s);
    assert!(ping_works(s.tls_port, old_ca).is_err(), "new connections get the new certificate");
    let new_ca = client_config(&s.pki.other_ca, Some((&s.pki.client_cert, &s.pki.client_key)));
    ping_works(s.tls_port, Arc::clone(&new_ca)).expect("the new certificate's CA is trusted");
    assert_eq!(call(&mut before, &["PING"]).expect("old connection"), b"+PONG\r\n", "established ones stay");
    // An invalid file is refused, and the running configuration stays.
    let reply = call(&mut before, &["CONFIG", "SET", "tls-cert-file", "/nonexistent/cert.pem"]).expect("set");
    let text = String::from_utf8_lossy(&reply);
    assert!(
        text.starts_with("-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration"),
        "{text}"
    );
    let got = call(&mut before, &["CONFIG", "GET", "tls-cert-file"]).expect("get");
    assert!(String::from_utf8_lossy(&got).contains(&cert), "{}", String::from_utf8_lossy(&got));
    ping_works(s.tls_port, new_ca).expect("still the new certificate");
    // A CA file change is checked too.
    let reply = call(&mut before, &["CONFIG", "SET", "tls-ca-cert-file", &key]).expect("set");
    assert!(reply.starts_with(b"-ERR CONFIG SET failed"), "{}", String::from_utf8_lossy(&reply));
    let reply = call(&mut before, &["CONFIG", "SET", "tls-ca-cert-file", &other_ca]).expect("set");
    assert_eq!(reply, b"+OK\r\n");
    // tls-port moves as port does: the new one serves, the old one is closed.
    let moved = free_port();
    let reply = call(&mut before, &["CONFIG", "SET", "tls-port", &moved.to_string()]).expect("set");
    assert_eq!(reply, b"+OK\r\n");
    // (Clients are now verified against the other CA too.)
    let new_ca = client_config(&s.pki.other_ca, Some((&s.pki.other_client_cert, &s.pki.other_client_key)));
    let deadline = Instant::now() + Duration::from_secs(5);
    while ping_works(moved, Arc::clone(&new_ca)).is_err() {
        assert!(Instant::now() < deadline, "the new tls-port does not serve");
        std::thread::sleep(Duration::from_millis(20));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(("127.0.0.1", s.tls_port)).is_ok() {
        assert!(Instant::now() < deadline, "the old tls-port still accepts");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The refused options and protocols say why.
    let reply = call(&mut before, &["CONFIG", "SET", "tls-protocols", "TLSv1.1"]).expect("set");
    assert!(reply.starts_with(b"-ERR CONFIG SET failed"), "{}", String::from_utf8_lossy(&reply));
    let reply = call(&mut before, &["CONFIG", "SET", "tls-replication", "yes"]).expect("set");
    assert!(String::from_utf8_lossy(&reply).contains("replication"), "{}", String::from_utf8_lossy(&reply));
}

#[test]
fn sessions_resume_while_caching_is_on_and_protocols_are_honoured() {
    let s = start(&["--tls-protocols", "TLSv1.2"]);
    let config = full_client(&s);
    let first = tls_connect(s.tls_port, Arc::clone(&config)).expect("first");
    assert_eq!(first.conn.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_2));
    drop(first);
    let second = tls_connect(s.tls_port, Arc::clone(&config)).expect("second");
    assert_eq!(second.conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
    drop(second);
    let mut admin = tls_connect(s.tls_port, Arc::clone(&config)).expect("admin");
    assert_eq!(call(&mut admin, &["CONFIG", "SET", "tls-session-caching", "no"]).expect("set"), b"+OK\r\n");
    let fresh = full_client(&s);
    drop(tls_connect(s.tls_port, Arc::clone(&fresh)).expect("primes the client's cache"));
    let third = tls_connect(s.tls_port, fresh).expect("third");
    assert_eq!(third.conn.handshake_kind(), Some(rustls::HandshakeKind::Full));
}

fn start_fails(args: &[String]) -> String {
    let out = run(env!("CARGO_BIN_EXE_kvik-server"), args);
    assert!(!out.status.success(), "kvik-server must not start with {args:?}");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn startup_with_a_bad_certificate_or_key_fails_with_the_reason() {
    let dir = ScratchDir::new("tls-bad");
    let pki = Pki::generate(dir.path());
    let base = |cert: &Path, key: &Path| {
        let mut args = pki.server_args(free_port());
        args[3] = cert.display().to_string();
        args[5] = key.display().to_string();
        args.extend(["--port".to_string(), free_port().to_string(), "--save".into(), String::new()]);
        args
    };
    let missing = start_fails(&base(Path::new("/nonexistent/server.crt"), &pki.server_key));
    assert!(missing.contains("Failed to load certificate: /nonexistent/server.crt"), "{missing}");
    let wrong_key = start_fails(&base(&pki.server_cert, &pki.client_key));
    assert!(wrong_key.contains("Failed to load private key"), "{wrong_key}");
    let not_a_key = start_fails(&base(&pki.server_cert, &pki.server_cert));
    assert!(not_a_key.contains("no private key"), "{not_a_key}");
    let mut old = base(&pki.server_cert, &pki.server_key);
    old.extend(["--tls-protocols".into(), "TLSv1 TLSv1.2".into()]);
    assert!(start_fails(&old).contains("not offered by rustls"));
    let mut ciphers = base(&pki.server_cert, &pki.server_key);
    ciphers.extend(["--tls-ciphers".into(), "AES128-SHA".into()]);
    assert!(start_fails(&ciphers).contains("AES128-SHA"));
    let mut dh = base(&pki.server_cert, &pki.server_key);
    dh.extend(["--tls-dh-params-file".into(), "dh.pem".into()]);
    assert!(start_fails(&dh).contains("Diffie-Hellman"));
}

#[test]
fn an_encrypted_key_is_read_with_tls_key_file_pass() {
    let openssl = Command::new("openssl").arg("version").output().is_ok_and(|o| o.status.success());
    if !openssl {
        assert!(std::env::var_os("CI").is_none(), "openssl is needed under CI (make test installs it)");
        eprintln!("openssl not installed: skipped");
        return;
    }
    let dir = ScratchDir::new("tls-encrypted");
    let pki = Pki::generate(dir.path());
    let encrypted = dir.path().join("server-encrypted.key");
    let made = Command::new("openssl")
        .args(["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:s3cret", "-in"])
        .arg(&pki.server_key)
        .arg("-out")
        .arg(&encrypted)
        .status()
        .expect("openssl");
    assert!(made.success());
    let key = encrypted.display().to_string();
    let mut args = pki.server_args(free_port());
    args[5] = key.clone();
    args.extend(["--port".to_string(), free_port().to_string(), "--save".into(), String::new()]);
    let no_pass = start_fails(&args);
    assert!(no_pass.contains("tls-key-file-pass"), "{no_pass}");
    let mut wrong = args.clone();
    wrong.extend(["--tls-key-file-pass".into(), "wrong".into()]);
    assert!(start_fails(&wrong).contains("cannot decrypt"));
    let s = start_with_pki(pki.clone(), dir, &["--tls-key-file", &key, "--tls-key-file-pass", "s3cret"]);
    ping_works(s.tls_port, full_client(&s)).expect("served with the decrypted key");
}

#[test]
fn redis_benchmark_runs_over_tls() {
    if !have_redis_tools("redis_benchmark_over_tls") {
        return;
    }
    let s = start(&[]);
    let mut args = vec!["-p".to_string(), s.tls_port.to_string()];
    args.extend(s.pki.client_args());
    args.extend(["-n", "2000", "-c", "5", "-P", "4", "-t", "set,get", "-q"].iter().map(|a| a.to_string()));
    let out = run("redis-benchmark", &args);
    let text = stdout(&out);
    assert!(out.status.success(), "{text} {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("SET: ") && text.contains("GET: ") && text.contains("requests per second"), "{text}");
    let mut k = common::connect(s.server.port);
    assert_eq!(common::call_text(&mut k, &["EXISTS", "key:__rand_int__"]), b":1\r\n");
}

#[test]
fn port_0_with_a_tls_port_serves_tls_only() {
    let dir = ScratchDir::new("tls-only");
    let pki = Pki::generate(dir.path());
    let tls_port = free_port();
    let mut args = pki.server_args(tls_port);
    args.extend(["--port", "0", "--save", "", "--dir"].iter().map(|a| a.to_string()));
    args.push(dir.path().display().to_string());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvik-server"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kvik-server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !common::listens_on(child.id(), tls_port) {
        assert!(Instant::now() < deadline, "tls-port does not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let config = client_config(&pki.ca, Some((&pki.client_cert, &pki.client_key)));
    let result = ping_works(tls_port, config);
    let _ = child.kill();
    let _ = child.wait();
    result.expect("PING over TLS with port 0");
}
