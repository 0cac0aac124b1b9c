//! Accepting connections.
//!
//! For now each connection gets its own thread with blocking I/O: simple,
//! correct, and enough for tests and tools. The event-loop-per-core design
//! replaces this module's insides; [`Server`] keeps its shape so `main` and
//! the tests do not change when it does.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::config::Config;
use crate::connection;
use crate::state::ServerState;

/// A bound listening socket and the state shared by all its connections.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    state: Arc<ServerState>,
}

impl Server {
    /// Bind to `config.bind:config.port`. Binding is separate from serving so
    /// that startup errors (address in use) are reported before anything runs.
    pub fn bind(config: &Config) -> io::Result<Server> {
        let listener = TcpListener::bind((config.bind.as_str(), config.port))?;
        let state = ServerState::default();
        state.auth.set(config.requirepass.as_ref().map(|p| p.as_bytes().to_vec()));
        state.port.store(listener.local_addr()?.port(), std::sync::atomic::Ordering::Relaxed);
        Ok(Server { listener, state: Arc::new(state) })
    }

    /// The address actually bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accept connections until the listening socket fails.
    ///
    /// A failed accept (out of file descriptors, a connection reset before
    /// it was accepted) is logged and retried after a short pause instead of
    /// stopping the server: established clients must keep being served.
    pub fn serve(self) -> io::Result<()> {
        loop {
            match self.listener.accept() {
                Ok((stream, _peer)) => self.spawn(stream),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("kvik-server: accept failed: {e}");
                    thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    fn spawn(&self, stream: TcpStream) {
        // Replies are written once per batch; delaying them for coalescing only adds latency.
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&self.state);
        let spawned = thread::Builder::new().name("kvik-conn".into()).spawn(move || connection::serve(stream, &state));
        if let Err(e) = spawned {
            eprintln!("kvik-server: cannot start a connection thread: {e}");
        }
    }
}
