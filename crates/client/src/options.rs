//! [`Options`]: where to connect, which protocol to speak, and the limits.

use std::path::PathBuf;
use std::time::Duration;

/// The wire protocol a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// RESP2, what every Redis-compatible server speaks by default.
    Resp2,
    /// RESP3, switched to with `HELLO 3` on connect.
    Resp3,
    /// RESPB/1, kvik's binary protocol, after the `D3 C1` handshake.
    Respb,
}

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// `host:port`, resolved on each connect.
    Tcp(String),
    /// A unix domain socket path.
    Unix(PathBuf),
}

/// How to connect and what to allow. Build with [`Options::tcp`] or
/// [`Options::unix`] and adjust the public fields or the `with_*` methods.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where to connect.
    pub address: Address,
    /// The protocol to speak.
    pub protocol: Protocol,
    /// Longest wait for the TCP connect plus the setup commands.
    pub connect_timeout: Duration,
    /// Longest wait for each reply; `None` waits forever (blocking commands).
    pub request_timeout: Option<Duration>,
    /// ACL user for `AUTH` (`None`: the default user).
    pub username: Option<Vec<u8>>,
    /// Password for `AUTH`; no `AUTH` is sent when `None`.
    pub password: Option<Vec<u8>>,
    /// Database to `SELECT` after connecting (each mux channel too).
    pub db: Option<u32>,
    /// Most bytes one reply may take on the wire; a longer reply fails with
    /// [`Error::ReplyTooLarge`](crate::Error::ReplyTooLarge) and drops the
    /// connection, so a broken or hostile server cannot exhaust memory.
    pub max_reply_bytes: usize,
    /// Deepest nesting of aggregates accepted in a reply.
    pub max_reply_depth: usize,
    /// Mux only: most channels one [`MuxConnection`](crate::MuxConnection) opens.
    pub max_channels: usize,
    /// Mux only: push messages buffered per channel before further ones are
    /// dropped (and counted) rather than holding up every other channel.
    pub push_capacity: usize,
    /// Mux only: requests queued for the writer task before senders wait.
    pub writer_queue: usize,
    /// Speak TLS with this configuration (TCP only); `None`: plain TCP.
    pub tls: Option<kvik_tls::client::ClientTls>,
}

impl Options {
    /// Options for a TCP server at `host:port`, RESP2, no auth, generous limits.
    pub fn tcp(addr: impl Into<String>) -> Options {
        Options::new(Address::Tcp(addr.into()))
    }

    /// Options for a server on a unix socket.
    pub fn unix(path: impl Into<PathBuf>) -> Options {
        Options::new(Address::Unix(path.into()))
    }

    fn new(address: Address) -> Options {
        Options {
            address,
            protocol: Protocol::Resp2,
            connect_timeout: Duration::from_secs(5),
            request_timeout: None,
            username: None,
            password: None,
            db: None,
            // Redis's largest string (512 MiB) plus room for its framing.
            max_reply_bytes: 512 * 1024 * 1024 + 64 * 1024,
            max_reply_depth: 128,
            max_channels: 1024,
            push_capacity: 1024,
            writer_queue: 4096,
            tls: None,
        }
    }

    /// Speak `protocol`.
    pub fn with_protocol(mut self, protocol: Protocol) -> Options {
        self.protocol = protocol;
        self
    }

    /// Authenticate with `password` (and `username`, for an ACL user).
    pub fn with_auth(mut self, username: Option<&str>, password: &str) -> Options {
        self.username = username.map(|u| u.as_bytes().to_vec());
        self.password = Some(password.as_bytes().to_vec());
        self
    }

    /// `SELECT db` on connect.
    pub fn with_db(mut self, db: u32) -> Options {
        self.db = Some(db);
        self
    }

    /// Fail requests whose reply takes longer than `timeout`.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Options {
        self.request_timeout = Some(timeout);
        self
    }

    /// Give up connecting after `timeout`.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Options {
        self.connect_timeout = timeout;
        self
    }

    /// Refuse replies longer than `bytes`.
    pub fn with_max_reply_bytes(mut self, bytes: usize) -> Options {
        self.max_reply_bytes = bytes;
        self
    }

    /// Connect over TLS, configured by `tls` (built once, shared by every connection).
    pub fn with_tls(mut self, tls: kvik_tls::client::ClientTls) -> Options {
        self.tls = Some(tls);
        self
    }

    /// Open at most `max` mux channels.
    pub fn with_max_channels(mut self, max: usize) -> Options {
        self.max_channels = max;
        self
    }

    /// The setup commands to send after connecting, in order, each with the
    /// name used in [`Error::Setup`](crate::Error::Setup). RESP3 authenticates
    /// inside `HELLO 3`; RESP2 and RESPB send `AUTH`.
    pub(crate) fn setup_commands(&self, protocol: Protocol) -> Vec<(&'static str, Vec<Vec<u8>>)> {
        let mut cmds = Vec::new();
        if protocol == Protocol::Resp3 {
            let mut hello = vec![b"HELLO".to_vec(), b"3".to_vec()];
            if let Some(pass) = &self.password {
                // `HELLO 3 AUTH <user> <pass>` always names the user.
                let user = self.username.clone().unwrap_or_else(|| b"default".to_vec());
                hello.extend([b"AUTH".to_vec(), user, pass.clone()]);
            }
            cmds.push(("HELLO", hello));
        } else if let Some(pass) = &self.password {
            let mut auth = vec![b"AUTH".to_vec()];
            auth.extend(self.username.clone());
            auth.push(pass.clone());
            cmds.push(("AUTH", auth));
        }
        if let Some(db) = self.db {
            cmds.push(("SELECT", vec![b"SELECT".to_vec(), db.to_string().into_bytes()]));
        }
        cmds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(cmds: &[(&'static str, Vec<Vec<u8>>)]) -> Vec<String> {
        cmds.iter().map(|(_, args)| String::from_utf8_lossy(&args.join(&b' ')).into_owned()).collect()
    }

    #[test]
    fn resp2_sends_auth_then_select() {
        let o = Options::tcp("h:1").with_auth(None, "pw").with_db(3);
        assert_eq!(texts(&o.setup_commands(Protocol::Resp2)), ["AUTH pw", "SELECT 3"]);
        let o = Options::tcp("h:1").with_auth(Some("alice"), "pw");
        assert_eq!(texts(&o.setup_commands(Protocol::Respb)), ["AUTH alice pw"]);
    }

    #[test]
    fn resp3_authenticates_inside_hello() {
        let o = Options::tcp("h:1");
        assert_eq!(texts(&o.setup_commands(Protocol::Resp3)), ["HELLO 3"]);
        let o = Options::tcp("h:1").with_auth(None, "pw").with_db(1);
        assert_eq!(texts(&o.setup_commands(Protocol::Resp3)), ["HELLO 3 AUTH default pw", "SELECT 1"]);
        let o = Options::tcp("h:1").with_auth(Some("bob"), "pw");
        assert_eq!(texts(&o.setup_commands(Protocol::Resp3)), ["HELLO 3 AUTH bob pw"]);
    }

    #[test]
    fn nothing_to_send_by_default() {
        assert!(Options::unix("/tmp/s").setup_commands(Protocol::Resp2).is_empty());
    }
}
