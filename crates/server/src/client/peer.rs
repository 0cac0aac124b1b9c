//! Where a connection comes from: its addresses and descriptor as `CLIENT
//! LIST` shows them, and whether it is local as Redis judges it.

use std::io;
use std::os::fd::AsRawFd;

use tokio::net::{TcpStream, UnixStream};

/// Where a connection comes from, as `CLIENT LIST` shows it.
#[derive(Debug, Clone, Default)]
pub struct Peer {
    /// The client's address (`addr=`).
    pub addr: String,
    /// The server's end (`laddr=`).
    pub laddr: String,
    /// The socket's file descriptor (`fd=`).
    pub fd: i32,
    /// Whether the client is on this machine as Redis judges it (a unix
    /// socket, or TCP from 127.0.0.1 or ::1), for `enable-debug-command local`.
    pub local: bool,
}

impl Peer {
    /// A TCP client.
    pub fn tcp(stream: &TcpStream) -> Peer {
        let show = |a: io::Result<std::net::SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        let local = stream
            .peer_addr()
            .is_ok_and(|a| a.ip() == std::net::Ipv4Addr::LOCALHOST || a.ip() == std::net::Ipv6Addr::LOCALHOST);
        Peer { addr: show(stream.peer_addr()), laddr: show(stream.local_addr()), fd: stream.as_raw_fd(), local }
    }

    /// A unix socket client: both ends shown as the socket's path with port 0, as Redis shows them.
    pub fn unix(stream: &UnixStream) -> Peer {
        let path =
            stream.local_addr().ok().and_then(|a| a.as_pathname().map(|p| p.display().to_string())).unwrap_or_default();
        let addr = format!("{path}:0");
        Peer { laddr: addr.clone(), addr, fd: stream.as_raw_fd(), local: true }
    }
}
