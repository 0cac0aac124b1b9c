//! Listening sockets: binding the configured addresses (Redis's `bind`
//! rules: `-` for an address that may be missing, IPv6 only on v6
//! addresses, `tcp-backlog`), and handing new ones to the acceptor when
//! `CONFIG SET port` moves the server ([`Rebind`]). Below the state, which
//! holds the [`Rebind`], and the listener, which accepts on the sockets.

use std::io;
use std::net::{IpAddr, SocketAddr};

use socket2::{Domain, Socket, Type};

use crate::config::Config;

/// `*` and `::*` are Redis's spellings of "every address".
fn parse_bind(address: &str) -> Option<IpAddr> {
    match address {
        "*" => Some(IpAddr::from([0, 0, 0, 0])),
        "::*" => Some(IpAddr::from([0u16; 8])),
        other => other.parse().ok(),
    }
}

/// A listening socket on `ip` and `port`, with `backlog` (`tcp-backlog`)
/// connections waiting to be accepted at most.
fn bind_tcp(ip: IpAddr, port: u16, backlog: i32) -> io::Result<std::net::TcpListener> {
    let addr = SocketAddr::new(ip, port);
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if ip.is_ipv6() {
        // Leave IPv4 to its own listener, as Redis does with `bind * -::*`.
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Listening sockets opened by `CONFIG SET port`, handed to the acceptor,
/// which drops the old ones and accepts on these from then on. Clients
/// already connected stay.
#[derive(Debug, Default)]
pub struct Rebind {
    next: std::sync::Mutex<Option<Vec<std::net::TcpListener>>>,
    ready: tokio::sync::Notify,
}

impl Rebind {
    /// Open listening sockets for `port` on every `bind` address of
    /// `config`, for [`Rebind::hand_over`]; none for port 0.
    pub fn open(config: &Config, port: u16) -> io::Result<Vec<std::net::TcpListener>> {
        if port == 0 {
            return Ok(Vec::new());
        }
        let backlog = i32::try_from(config.int("tcp-backlog")).unwrap_or(i32::MAX);
        bind_all(&config.bind_addresses(), port, backlog)
    }

    /// Give the acceptor `listeners` in place of the ones it has.
    pub fn hand_over(&self, listeners: Vec<std::net::TcpListener>) {
        *self.next.lock().unwrap_or_else(|e| e.into_inner()) = Some(listeners);
        self.ready.notify_one();
    }

    /// Wait for listeners handed over.
    pub async fn take(&self) -> Vec<std::net::TcpListener> {
        loop {
            if let Some(listeners) = self.next.lock().unwrap_or_else(|e| e.into_inner()).take() {
                return listeners;
            }
            self.ready.notified().await;
        }
    }
}

/// Listening sockets on `port` for each of `addresses` (`-` before one
/// that may be missing on this machine).
pub fn bind_all(addresses: &[String], port: u16, backlog: i32) -> io::Result<Vec<std::net::TcpListener>> {
    let mut tcp = Vec::new();
    for address in addresses {
        // A leading `-` marks an address that may be missing on this machine.
        let (optional, address) = match address.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, address.as_str()),
        };
        let Some(ip) = parse_bind(address) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid bind address '{address}'")));
        };
        match bind_tcp(ip, port, backlog) {
            Ok(listener) => tcp.push(listener),
            Err(_) if optional => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("cannot listen on {address}:{port}: {e}"))),
        }
    }
    Ok(tcp)
}
