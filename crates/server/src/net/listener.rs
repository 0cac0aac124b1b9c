//! Listening sockets, the event loops, and the way connections reach them.
//!
//! The server runs `threads` event loops, each a thread with its own
//! single-threaded tokio runtime that owns the connections handed to it: a
//! connection never moves between threads, so its buffers stay in one core's
//! cache and no loop waits on another.
//!
//! One acceptor (on the thread that calls [`Server::serve`]) accepts on every
//! listening socket, TCP and unix alike, and hands each new connection to the
//! loops in turn. Round-robin hand-off was chosen over one `SO_REUSEPORT`
//! listener per loop because it spreads clients evenly whatever their
//! addresses (the kernel's reuseport hash can put several clients of one
//! benchmark on the same loop), works the same for unix sockets, and leaves
//! one place where `maxclients` and protected mode are decided. Accepting is
//! cheap next to serving, so one acceptor does not limit throughput.
//!
//! Connections on `tls-port` are accepted the same way and handshake on
//! the loop they are handed to, so handshakes (the costly part of TLS)
//! spread over the cores as the connections do; the connection code then
//! runs unchanged over the TLS stream, RESPB detection included.
//!
//! The acceptor also watches for SIGTERM, SIGINT and `SHUTDOWN`: it stops
//! accepting, tells every connection to close, and waits for the loops to end.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use socket2::{SockRef, TcpKeepalive};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc;

use kvik_tls::rustls::ServerConfig;
use kvik_tls::tokio_rustls::TlsAcceptor;
use kvik_tls::WriteThrough;

use crate::keyspace::expire::ActiveExpiry;
use crate::net::connection::{self, close_gracefully, ClientStream, Peer};
use crate::signal::Signal;
use crate::sockets::bind_all;
use crate::state::ServerState;

/// An event loop's stack. Scripts run on the loops, and what a script hands
/// to `cjson` or returns may nest 1,000 levels deep (Redis's limits), each
/// level a frame of Rust: the default 2 MiB is not enough for that in every
/// build. Untouched stack costs address space, not memory.
const LOOP_STACK_BYTES: usize = 32 * 1024 * 1024;

/// Reply to a client over `maxclients`.
pub const MAX_CLIENTS_REACHED: &[u8] = b"-ERR max number of clients reached\r\n";

/// Reply to a remote client while protected mode is on, Redis's text.
pub const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Why the server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// SIGTERM arrived.
    Terminate,
    /// SIGINT arrived (Ctrl-C).
    Interrupt,
    /// A client sent `SHUTDOWN`.
    Command,
}

impl StopReason {
    /// The words used in the shutdown log line.
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Terminate => "received SIGTERM",
            StopReason::Interrupt => "received SIGINT",
            StopReason::Command => "SHUTDOWN requested by a client",
        }
    }
}

/// A connection on its way from the acceptor to a loop. Sockets cross the
/// thread boundary as std sockets and are registered with the receiving
/// loop's runtime there.
enum Incoming {
    Tcp(std::net::TcpStream),
    /// On `tls-port`, with the TLS configuration current when it was accepted.
    Tls(std::net::TcpStream, Arc<ServerConfig>),
    Unix(std::os::unix::net::UnixStream),
}

/// Bound listening sockets and the state shared by all their connections.
#[derive(Debug)]
pub struct Server {
    tcp: Vec<std::net::TcpListener>,
    tls: Vec<std::net::TcpListener>,
    unix: Option<(std::os::unix::net::UnixListener, PathBuf)>,
    state: Arc<ServerState>,
}

impl Server {
    /// Open every listening socket the configuration asks for. Binding is
    /// separate from serving so that startup errors (address in use, bad
    /// address) are reported before anything runs.
    pub fn bind(state: Arc<ServerState>) -> io::Result<Server> {
        state.remember_self();
        let (port, addresses, unixsocket, perm, backlog) = {
            let config = state.config();
            let backlog = i32::try_from(config.int("tcp-backlog")).unwrap_or(i32::MAX);
            (
                config.port(),
                config.bind_addresses(),
                config.unixsocket().map(PathBuf::from),
                config.unixsocketperm(),
                backlog,
            )
        };
        // Before any socket listens: a client that finds the server there finds TLS ready.
        configure_tls_at_start(&state).map_err(|e| io::Error::other(format!("Failed to configure TLS: {e}")))?;
        let tcp = if port != 0 { bind_all(&addresses, port, backlog)? } else { Vec::new() };
        let tls_port = crate::tls::port(&state.config());
        let tls = if tls_port != 0 { bind_all(&addresses, tls_port, backlog)? } else { Vec::new() };
        let unix = match unixsocket {
            Some(path) => {
                // A socket file left by an earlier run would make bind fail.
                let _ = std::fs::remove_file(&path);
                let listener = std::os::unix::net::UnixListener::bind(&path).map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot listen on unix socket {}: {e}", path.display()))
                })?;
                if perm != 0 {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(perm))?;
                }
                listener.set_nonblocking(true)?;
                Some((listener, path))
            }
            None => None,
        };
        if tcp.is_empty() && tls.is_empty() && unix.is_none() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "configured to not listen anywhere"));
        }
        if let Some(port) = tcp.first().and_then(|l| l.local_addr().ok()).map(|a| a.port()) {
            state.port.store(port, Ordering::Relaxed);
        }
        Ok(Server { tcp, tls, unix, state })
    }

    /// The TCP addresses actually bound.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.tcp.iter().filter_map(|l| l.local_addr().ok()).collect()
    }

    /// The TLS addresses actually bound (`tls-port`).
    pub fn tls_local_addrs(&self) -> Vec<SocketAddr> {
        self.tls.iter().filter_map(|l| l.local_addr().ok()).collect()
    }

    /// The shared state.
    pub fn state(&self) -> &Arc<ServerState> {
        &self.state
    }

    /// Serve until SIGTERM, SIGINT or `SHUTDOWN`; returns which one, once
    /// every connection is closed and every loop has ended.
    pub fn serve(self) -> io::Result<StopReason> {
        // Keys whose deadline passed are removed even when nobody reads them.
        // `DEBUG SET-ACTIVE-EXPIRE 0` pauses it.
        ActiveExpiry::spawn(
            Arc::downgrade(&self.state),
            |state: &ServerState| state.stats.active_expire.load(Ordering::Relaxed).then_some(&state.keyspace),
            crate::effects::changes::flush_server_events,
        )?;
        // Background saves and the save points.
        crate::persistence::background::spawn(Arc::downgrade(&self.state))?;
        let threads = self.state.config().threads();
        let mut loops = Vec::with_capacity(threads);
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let (tx, rx) = mpsc::unbounded_channel();
            let state = Arc::clone(&self.state);
            let handle = thread::Builder::new().name(format!("kvik-loop-{i}")).stack_size(LOOP_STACK_BYTES).spawn(
                move || {
                    crate::per_thread::with(|t| t.loop_index.set(Some(i)));
                    run_loop(rx, state)
                },
            )?;
            loops.push(tx);
            handles.push(handle);
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (unix, unix_path) = match self.unix {
            Some((listener, path)) => (Some(listener), Some(path)),
            None => (None, None),
        };
        let reason = runtime.block_on(accept_all(self.tcp, self.tls, unix, loops, &self.state));
        // Also when accepting could not start: the loops must not wait forever.
        self.state.request_shutdown();
        // Dropping the runtime closes the listeners and the hand-off channels,
        // which ends the loops once their connections are closed.
        drop(runtime);
        for handle in handles {
            let _ = handle.join();
        }
        if let Some(path) = unix_path {
            let _ = std::fs::remove_file(path);
        }
        reason
    }
}

/// One event loop: serve every connection handed over until the acceptor
/// goes away, then wait for the connections to finish closing.
fn run_loop(mut rx: mpsc::UnboundedReceiver<Incoming>, state: Arc<ServerState>) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            crate::log!(Warning, "Cannot start an event loop: {e}");
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    // The loop's own copy of the shutdown signal: its connections wait on
    // it without touching the server-wide one, which every core would share.
    let stop = Signal::new();
    let raise = Arc::clone(&stop);
    let mut server_stop = state.shutdown_watch();
    local.spawn_local(async move {
        let _ = server_stop.wait_for(|stop| *stop).await;
        raise.raise();
    });
    // Connections waiting for the append-only file wait on this loop's own
    // notifier, which one relay task wakes when the writer moves on.
    // It ends with the loop, at the stop.
    let relay = state.journal.relay();
    let settled = connection::install_settled_notifier();
    let mut relay_stop = state.shutdown_watch();
    local.spawn_local(async move {
        loop {
            tokio::select! {
                () = relay.notified() => settled.notify_waiters(),
                _ = relay_stop.wait_for(|stop| *stop) => return,
            }
        }
    });
    local.block_on(&runtime, async {
        while let Some(incoming) = rx.recv().await {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            tokio::task::spawn_local(async move {
                match incoming {
                    Incoming::Tcp(s) => match TcpStream::from_std(s) {
                        Ok(stream) => {
                            let peer = Peer::tcp(&stream);
                            connection::serve(stream, &state, stop, peer).await
                        }
                        Err(e) => crate::log!(Warning, "Cannot register a connection: {e}"),
                    },
                    Incoming::Tls(s, config) => match TcpStream::from_std(s) {
                        Ok(stream) => serve_tls(stream, config, &state, stop).await,
                        Err(e) => crate::log!(Warning, "Cannot register a connection: {e}"),
                    },
                    Incoming::Unix(s) => match UnixStream::from_std(s) {
                        Ok(stream) => {
                            let peer = Peer::unix(&stream);
                            connection::serve(stream, &state, stop, peer).await
                        }
                        Err(e) => crate::log!(Warning, "Cannot register a connection: {e}"),
                    },
                }
                state.connected.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
    // The acceptor is gone: let the connections see the shutdown and close.
    runtime.block_on(local);
}

/// Handshake with a client on `tls-port`, then serve it as any other.
/// A client that fails the handshake (a plain-text client, no or an
/// untrusted certificate where one is required) is closed, and logged at
/// `verbose` as Redis does. The handshake is bounded by `timeout`, as the
/// client is idle until it completes, and by the server's stop.
async fn serve_tls(
    stream: TcpStream,
    config: Arc<ServerConfig>,
    state: &ServerState,
    stop: Arc<crate::signal::Signal>,
) {
    let peer = Peer::tcp(&stream);
    let idle = state.limits.idle_timeout();
    let handshake = TlsAcceptor::from(config).accept(stream);
    let bounded = async {
        if idle > 0 {
            tokio::time::timeout(Duration::from_secs(idle), handshake)
                .await
                .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "handshake timed out")))
        } else {
            handshake.await
        }
    };
    let accepted = tokio::select! {
        r = bounded => r,
        () = stop.raised() => return,
    };
    match accepted {
        Ok(tls) => connection::serve(WriteThrough::new(tls), state, stop, peer).await,
        Err(e) => {
            static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(1000);
            if LIMIT.allow() {
                crate::log!(
                    Verbose,
                    "Error accepting a client connection: {e} (addr={} laddr={})",
                    peer.addr,
                    peer.laddr
                );
            }
        }
    }
}

/// Hands connections to the loops in turn.
struct Dispatcher {
    loops: Vec<mpsc::UnboundedSender<Incoming>>,
    next: std::cell::Cell<usize>,
}

impl Dispatcher {
    /// Hand `incoming` to the next loop in turn, passing over loops held
    /// by a busy script (they could not read the connection before the
    /// script ends, and it may come to stop the script: `SCRIPT KILL`).
    fn send(&self, incoming: Incoming, state: &ServerState) {
        let n = self.loops.len();
        if n == 0 {
            return;
        }
        let mut i = self.next.get() % n;
        if state.scripts.any_busy() {
            if let Some(free) = (0..n).map(|k| (i + k) % n).find(|&k| !state.scripts.loop_busy(k)) {
                i = free;
            }
        }
        self.next.set(i + 1);
        let _ = self.loops[i].send(incoming);
    }
}

async fn accept_all(
    tcp: Vec<std::net::TcpListener>,
    tls: Vec<std::net::TcpListener>,
    unix: Option<std::os::unix::net::UnixListener>,
    loops: Vec<mpsc::UnboundedSender<Incoming>>,
    state: &Arc<ServerState>,
) -> io::Result<StopReason> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let dispatcher = Dispatcher { loops, next: std::cell::Cell::new(0) };
    let mut tcp_listeners = Vec::with_capacity(tcp.len());
    for l in tcp {
        tcp_listeners.push(TcpListener::from_std(l)?);
    }
    let mut tls_listeners = Vec::with_capacity(tls.len());
    for l in tls {
        tls_listeners.push(TcpListener::from_std(l)?);
    }
    let unix_listener = match unix {
        Some(l) => Some(UnixListener::from_std(l)?),
        None => None,
    };
    crate::log!(Notice, "Ready to accept connections");
    crate::supervision::notify_ready(&state.config());
    let local = tokio::task::LocalSet::new();
    let mut shutdown = state.shutdown_watch();
    local
        .run_until(async {
            let unix_task = async {
                match &unix_listener {
                    Some(l) => accept_unix(l, state, &dispatcher).await,
                    None => std::future::pending().await,
                }
            };
            // TCP accepting starts over on the sockets `CONFIG SET port`
            // hands over; the old ones close as they are dropped.
            let tcp_task = async {
                loop {
                    let next = if tcp_listeners.is_empty() {
                        // Nothing to accept on (port 0) until a port is set again.
                        state.rebind.take().await
                    } else {
                        tokio::select! {
                            () = futures_join_all(tcp_listeners.iter().map(|l| accept_tcp(l, state, &dispatcher, false)).collect()) => continue,
                            next = state.rebind.take() => next,
                        }
                    };
                    tcp_listeners.clear();
                    for l in next {
                        match TcpListener::from_std(l) {
                            Ok(l) => tcp_listeners.push(l),
                            Err(e) => crate::log!(Warning, "Cannot listen on the new port: {e}"),
                        }
                    }
                }
            };
            // The same for `tls-port` and `CONFIG SET tls-port`.
            let tls_task = async {
                loop {
                    let next = if tls_listeners.is_empty() {
                        state.tls.rebind.take().await
                    } else {
                        tokio::select! {
                            () = futures_join_all(tls_listeners.iter().map(|l| accept_tcp(l, state, &dispatcher, true)).collect()) => continue,
                            next = state.tls.rebind.take() => next,
                        }
                    };
                    tls_listeners.clear();
                    for l in next {
                        match TcpListener::from_std(l) {
                            Ok(l) => tls_listeners.push(l),
                            Err(e) => crate::log!(Warning, "Cannot listen on the new TLS port: {e}"),
                        }
                    }
                }
            };
            let sampling = sample_rates(state);
            tokio::pin!(tcp_task, tls_task, unix_task, sampling);
            loop {
                let reason = tokio::select! {
                    () = &mut tcp_task => StopReason::Command,
                    () = &mut tls_task => StopReason::Command,
                    () = &mut unix_task => StopReason::Command,
                    _ = sigterm.recv() => StopReason::Terminate,
                    _ = sigint.recv() => StopReason::Interrupt,
                    _ = shutdown.wait_for(|stop| *stop) => StopReason::Command,
                    () = &mut sampling => StopReason::Command,
                };
                if !stop_on_signal(state, reason) {
                    continue;
                }
                state.request_shutdown();
                return Ok(reason);
            }
        })
        .await
}

/// Whether the server stops for `reason`: a signal first saves the
/// snapshot as `shutdown-on-sigterm` / `shutdown-on-sigint` and the save
/// points say, and a failed save keeps the server running, as in Redis.
fn stop_on_signal(state: &ServerState, reason: StopReason) -> bool {
    let setting = match reason {
        StopReason::Terminate => "shutdown-on-sigterm",
        StopReason::Interrupt => "shutdown-on-sigint",
        // SHUTDOWN got ready itself.
        StopReason::Command => return true,
    };
    let flags = crate::persistence::StopFlags::from_setting(state.config().get(setting));
    crate::log!(Warning, "User requested shutdown...");
    if crate::persistence::prepare_for_stop(state, flags) {
        return true;
    }
    let name = if reason == StopReason::Terminate { "SIGTERM" } else { "SIGINT" };
    crate::log!(
        Warning,
        "{name} received but errors trying to shut down the server, check the logs for more information"
    );
    false
}

/// Sample the totals behind `INFO`'s instantaneous rates, ten times a
/// second, and once a second the memory a reply may take, the clients
/// whose buffers are to go back ([`crate::housekeeping::idle_trim`]), whether freed
/// memory is to go back ([`crate::housekeeping::heap_return`]) and how many replicas
/// are good ([`crate::replication::update_refusals`]) and whether an idle
/// backlog goes ([`crate::replication::free_idle_backlog`]), for as long as the server
/// accepts clients (never ends).
async fn sample_rates(state: &ServerState) {
    let mut tick = tokio::time::interval(crate::metrics::instant_metrics::PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let per_second = (Duration::from_secs(1).as_millis() / crate::metrics::instant_metrics::PERIOD.as_millis()).max(1);
    let mut ticks = 0u128;
    let mut heap = crate::housekeeping::heap_return::HeapReturn::default();
    loop {
        tick.tick().await;
        state.stats.sample_rates();
        if ticks.is_multiple_of(per_second) {
            crate::housekeeping::reply_budget::sample();
            crate::housekeeping::idle_trim::request_trims(&state.clients, Instant::now());
            heap.tick(state.used_memory());
            // Replicas' acknowledgements age: min-replicas-to-write.
            crate::replication::update_refusals(state);
            crate::replication::free_idle_backlog(state);
        }
        ticks += 1;
    }
}

/// Wait for every future of `futures` (accept loops, which run until the
/// server stops), polling them together on this task.
async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: Vec<F>) {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        pinned.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if pinned.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

/// Pause after a failed accept (out of file descriptors, say), so that a
/// persistent failure does not spin; established clients keep being served.
async fn accept_failed(e: &io::Error) {
    static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(1000);
    if LIMIT.allow() {
        crate::log!(Warning, "Accepting client connection: {e}");
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// Count a client turned away for `maxclients` (`rejected_connections`)
/// and log it, at most once a second.
fn refused_over_maxclients(state: &ServerState) {
    state.stats.rejected_connections.fetch_add(1, Ordering::Relaxed);
    static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(1000);
    if LIMIT.allow() {
        crate::log!(Warning, "Refused a connection: the maxclients limit is reached");
    }
}

/// Send `reply` and close, on the acceptor, without holding up accepting.
fn refuse<S: ClientStream + 'static>(mut stream: S, reply: &'static [u8]) {
    tokio::task::spawn_local(async move {
        let _ = stream.write_all(reply).await;
        close_gracefully(&mut stream).await;
    });
}

/// [`refuse`] on `tls-port`: the reply goes over TLS, after the handshake,
/// as Redis sends it; a client that does not complete the handshake
/// within a few seconds just sees the connection close.
fn refuse_tls(stream: TcpStream, state: &ServerState, reply: &'static [u8]) {
    const REFUSAL_HANDSHAKE: Duration = Duration::from_secs(5);
    let Some(config) = state.tls.current() else { return };
    tokio::task::spawn_local(async move {
        let handshake = TlsAcceptor::from(config).accept(stream);
        if let Ok(Ok(tls)) = tokio::time::timeout(REFUSAL_HANDSHAKE, handshake).await {
            let mut tls = WriteThrough::new(tls);
            let _ = tls.write_all(reply).await;
            close_gracefully(&mut tls).await;
        }
    });
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// Accept on `listener` until the server stops; `tls` for `tls-port`.
async fn accept_tcp(listener: &TcpListener, state: &ServerState, dispatcher: &Dispatcher, tls: bool) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                accept_failed(&e).await;
                continue;
            }
        };
        let (protected, keepalive) = {
            let config = state.config();
            (config.flag("protected-mode"), config.int("tcp-keepalive"))
        };
        // As Redis: protection holds while the default user takes any
        // password, however it got that way (no requirepass, or nopass).
        let no_password = protected && state.acl.default_user().nopass();
        if protected && no_password && !is_loopback(peer.ip()) {
            state.stats.rejected_connections.fetch_add(1, Ordering::Relaxed);
            static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(1000);
            if LIMIT.allow() {
                crate::log!(Warning, "Refused a connection from {peer}: protected mode is on and no password is set");
            }
            if tls {
                refuse_tls(stream, state, PROTECTED_MODE_DENIED);
            } else {
                refuse(stream, PROTECTED_MODE_DENIED);
            }
            continue;
        }
        if !state.admit_client() {
            refused_over_maxclients(state);
            if tls {
                refuse_tls(stream, state, MAX_CLIENTS_REACHED);
            } else {
                refuse(stream, MAX_CLIENTS_REACHED);
            }
            continue;
        }
        // Replies are written once per batch; delaying them for coalescing only adds latency.
        let _ = stream.set_nodelay(true);
        if keepalive > 0 {
            let time = Duration::from_secs(u64::try_from(keepalive).unwrap_or(300));
            // Probes as Redis sends them: after `tcp-keepalive` seconds idle, then every third of it.
            let keepalive = TcpKeepalive::new().with_time(time).with_interval((time / 3).max(Duration::from_secs(1)));
            let _ = SockRef::from(&stream).set_tcp_keepalive(&keepalive.with_retries(3));
        }
        let incoming = match stream.into_std() {
            Ok(s) if !tls => Some(Incoming::Tcp(s)),
            Ok(s) => state.tls.current().map(|config| Incoming::Tls(s, config)),
            Err(_) => None,
        };
        match incoming {
            Some(incoming) => dispatcher.send(incoming, state),
            None => {
                state.connected.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

async fn accept_unix(listener: &UnixListener, state: &ServerState, dispatcher: &Dispatcher) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                accept_failed(&e).await;
                continue;
            }
        };
        if !state.admit_client() {
            refused_over_maxclients(state);
            refuse(stream, MAX_CLIENTS_REACHED);
            continue;
        }
        match stream.into_std() {
            Ok(s) => dispatcher.send(Incoming::Unix(s), state),
            Err(_) => {
                state.connected.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// Configure TLS at startup when `tls-port` asks for it.
fn configure_tls_at_start(state: &ServerState) -> Result<(), String> {
    let config = state.config();
    if !crate::tls::enabled(&config) {
        return Ok(());
    }
    let built = crate::tls::build(&config)?;
    state.tls.install(built);
    Ok(())
}
