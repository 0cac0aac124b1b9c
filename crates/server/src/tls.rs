//! TLS for client connections: the `tls-*` options made into the rustls
//! server configuration that new connections on `tls-port` handshake
//! with, and its replacement when `CONFIG SET` changes them.
//!
//! As in Redis, TLS is configured when `tls-port` is not 0, at startup
//! (a bad or missing certificate stops the server with the reason) and
//! again on every `CONFIG SET` of a `tls-*` option, which rereads the
//! certificate, key and CA files: that is how certificates are rotated
//! without a restart. A configuration that does not build is refused
//! whole, leaving the old one (and the old option values) in place.
//! Connections keep the configuration they were accepted with; only new
//! ones see a new certificate.
//!
//! The translation of Redis's option values to rustls lives in
//! `kvik-tls` (shared with the clients); this module owns what only the
//! server has: client authentication (`tls-auth-clients`), the session
//! cache (`tls-session-caching`, `-size`, `-timeout`) and the listening
//! sockets of `tls-port`. Below the network layer: the listener reads the
//! configuration from here for each connection it accepts.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use kvik_tls::files;
use kvik_tls::rustls::server::{NoServerSessionStorage, StoresServerSessions, WebPkiClientVerifier};
use kvik_tls::rustls::ServerConfig;

use crate::config::Config;
use crate::sockets::Rebind;

/// What `CONFIG SET` answers when the new TLS settings do not build
/// (the reason goes to the log), Redis's text.
pub const UPDATE_FAILED: &str = "Unable to update TLS configuration. Check server logs.";

/// The TLS configuration new connections handshake with, and the sockets
/// `CONFIG SET tls-port` opens for the acceptor.
#[derive(Debug, Default)]
pub struct TlsContext {
    current: RwLock<Option<Arc<ServerConfig>>>,
    /// Listening sockets for a new `tls-port`.
    pub rebind: Rebind,
}

impl TlsContext {
    /// The configuration for a connection accepted now; `None` while TLS
    /// has not been configured.
    pub fn current(&self) -> Option<Arc<ServerConfig>> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Serve new connections with `config`.
    pub fn install(&self, config: Arc<ServerConfig>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(config);
    }
}

/// Whether the configuration asks for TLS (kvik has no replication or
/// cluster links, so only `tls-port` does).
pub fn enabled(config: &Config) -> bool {
    config.int("tls-port") != 0
}

/// The `tls-port` configured.
pub fn port(config: &Config) -> u16 {
    u16::try_from(config.int("tls-port")).unwrap_or(0)
}

fn non_empty(value: &str) -> Option<&Path> {
    Some(value).filter(|v| !v.is_empty()).map(Path::new)
}

/// Build the server configuration the `tls-*` options of `config`
/// describe; the error is the line Redis logs for the same mistake (with
/// rustls's reason where Redis would give OpenSSL's).
pub fn build(config: &Config) -> Result<Arc<ServerConfig>, String> {
    let cert_file = non_empty(config.get("tls-cert-file")).ok_or("No tls-cert-file configured!")?;
    let key_file = non_empty(config.get("tls-key-file")).ok_or("No tls-key-file configured!")?;
    let ca_file = non_empty(config.get("tls-ca-cert-file"));
    let ca_dir = non_empty(config.get("tls-ca-cert-dir"));
    let auth = config.get("tls-auth-clients");
    if auth != "no" && ca_file.is_none() && ca_dir.is_none() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication \
                    or tls-auth-clients are enabled!"
            .into());
    }
    let versions = kvik_tls::suites::protocol_versions(config.get("tls-protocols"))?;
    let tls13 = kvik_tls::suites::tls13_suites(config.get("tls-ciphersuites"))
        .map_err(|e| format!("Failed to configure ciphersuites: {}: {e}", config.get("tls-ciphersuites")))?;
    let tls12 = kvik_tls::suites::tls12_suites(config.get("tls-ciphers"))
        .map_err(|e| format!("Failed to configure ciphers: {}: {e}", config.get("tls-ciphers")))?;
    let provider = kvik_tls::suites::provider(tls13, tls12);
    let chain = files::load_certs(cert_file)
        .map_err(|e| format!("Failed to load certificate: {}: {e}", cert_file.display()))?;
    let pass = config.get("tls-key-file-pass");
    let key = files::load_key(key_file, Some(pass))
        .map_err(|e| format!("Failed to load private key: {}: {e}", key_file.display()))?;
    let roots = if ca_file.is_some() || ca_dir.is_some() {
        let roots = files::load_roots(ca_file, ca_dir)
            .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
        if roots.is_empty() && auth != "no" {
            return Err("Failed to configure CA certificate(s) file/directory: no CA certificate found".into());
        }
        Some(Arc::new(roots))
    } else {
        None
    };
    let verifier = match (auth, roots) {
        ("no", _) | (_, None) => WebPkiClientVerifier::no_client_auth(),
        (mode, Some(roots)) => {
            let builder = WebPkiClientVerifier::builder_with_provider(roots, Arc::clone(&provider));
            let builder = if mode == "optional" { builder.allow_unauthenticated() } else { builder };
            builder.build().map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?
        }
    };
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure protocols and ciphers: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| match e {
            kvik_tls::rustls::Error::InconsistentKeys(_) => {
                format!("Failed to load private key: {}: the key does not match the certificate", key_file.display())
            }
            e => format!("Failed to load certificate: {}: {}", cert_file.display(), files::describe(&e)),
        })?;
    server.ignore_client_order = config.flag("tls-prefer-server-ciphers");
    if config.flag("tls-session-caching") {
        let size = config.usize("tls-session-cache-size");
        let timeout = Duration::from_secs(u64::try_from(config.int("tls-session-cache-timeout")).unwrap_or(0));
        server.session_storage = Arc::new(SessionCache::new(size, timeout));
    } else {
        server.session_storage = Arc::new(NoServerSessionStorage {});
        server.send_tls13_tickets = 0;
    }
    Ok(Arc::new(server))
}

/// Whether `CONFIG SET` of `names` touches TLS: then the configuration
/// before it is kept, for `CONFIG SET` to return to when the new one does not build.
pub fn touched<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    names.any(|n| n.len() > 4 && n.as_bytes()[..4].eq_ignore_ascii_case(b"tls-"))
}

/// Resumable TLS sessions (TLS 1.2 session ids, TLS 1.3 tickets that name
/// a cached session): at most `max` of them (0: no limit, as OpenSSL
/// reads `tls-session-cache-size 0`), each resumable for `timeout`.
#[derive(Debug)]
struct SessionCache {
    max: usize,
    timeout: Duration,
    sessions: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    by_id: HashMap<Vec<u8>, (Vec<u8>, Instant)>,
    /// Ids in the order stored, with the time stored (an id stored again
    /// appears twice; the older entry is skipped when it comes up).
    order: VecDeque<(Vec<u8>, Instant)>,
}

impl SessionCache {
    fn new(max: usize, timeout: Duration) -> SessionCache {
        SessionCache { max, timeout, sessions: Mutex::new(Sessions::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Sessions {
    /// Drop the oldest entry; false when there is none.
    fn evict_oldest(&mut self) -> bool {
        let Some((id, stored)) = self.order.pop_front() else { return false };
        if self.by_id.get(&id).is_some_and(|(_, at)| *at == stored) {
            self.by_id.remove(&id);
        }
        true
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let now = Instant::now();
        let mut s = self.lock();
        while s.order.front().is_some_and(|(_, at)| now.duration_since(*at) >= self.timeout) {
            s.evict_oldest();
        }
        while self.max > 0 && s.by_id.len() >= self.max && !s.by_id.contains_key(&key) {
            if !s.evict_oldest() {
                break;
            }
        }
        s.order.push_back((key.clone(), now));
        s.by_id.insert(key, (value, now));
        // Sessions taken for a resumption leave their ids behind in the
        // order; sweep those once they outnumber the live ones.
        if s.order.len() > 2 * s.by_id.len() + 64 {
            let Sessions { by_id, order } = &mut *s;
            order.retain(|(id, at)| by_id.get(id).is_some_and(|(_, stored)| stored == at));
        }
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let s = self.lock();
        let (value, at) = s.by_id.get(key)?;
        (at.elapsed() < self.timeout).then(|| value.clone())
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut s = self.lock();
        let (value, at) = s.by_id.remove(key)?;
        (at.elapsed() < self.timeout).then_some(value)
    }

    fn can_cache(&self) -> bool {
        !self.timeout.is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cache_keeps_its_size_and_forgets_old_sessions() {
        let cache = SessionCache::new(2, Duration::from_secs(300));
        for id in [b"a", b"b", b"c"] {
            assert!(cache.put(id.to_vec(), id.to_vec()));
        }
        assert_eq!(cache.get(b"a"), None, "the oldest went for the third");
        assert_eq!(cache.get(b"c"), Some(b"c".to_vec()));
        assert_eq!(cache.take(b"b"), Some(b"b".to_vec()));
        assert_eq!(cache.get(b"b"), None);
        let expired = SessionCache::new(0, Duration::ZERO);
        expired.put(b"x".to_vec(), b"x".to_vec());
        assert_eq!(expired.get(b"x"), None);
        assert!(!expired.can_cache());
    }

    #[test]
    fn touched_spots_tls_options_in_any_case() {
        assert!(touched(["maxclients", "TLS-cert-file"].into_iter()));
        assert!(
            !touched(["port", "tls", "tl\u{e9}-x"].into_iter()),
            "names are client bytes: no slicing inside a character"
        );
    }

    #[test]
    fn missing_settings_get_redis_lines() {
        let (config, _) = Config::from_args(["--tls-port", "7000"]).expect("config");
        assert_eq!(build(&config).unwrap_err(), "No tls-cert-file configured!");
        let (config, _) =
            Config::from_args(["--tls-port", "7000", "--tls-cert-file", "/nonexistent/c", "--tls-key-file", "k"])
                .expect("config");
        assert!(build(&config).unwrap_err().starts_with("Either tls-ca-cert-file or tls-ca-cert-dir"));
        let (config, _) = Config::from_args([
            "--tls-port",
            "7000",
            "--tls-cert-file",
            "/nonexistent/c",
            "--tls-key-file",
            "k",
            "--tls-auth-clients",
            "no",
        ])
        .expect("config");
        assert!(build(&config).unwrap_err().starts_with("Failed to load certificate: /nonexistent/c: "));
    }
}
