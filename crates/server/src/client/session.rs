//! The state of one logical client.
//!
//! A RESP connection is one session; a RESPB connection holds one session per
//! mux channel. Commands see only a [`Session`], so per-client state (protocol,
//! name, and later the selected database, MULTI and subscriptions) works the
//! same way on both without special cases.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use kvik_protocol::resp::writer::Protocol;

use crate::client::transaction::Multi;
use crate::registries::clients::{ClientHandle, MonitorFeed, Registration};
use crate::registries::pubsub::Subscriptions;
use crate::registries::tracking::ClientTracking;
use crate::registries::watch::Watched;
use crate::signal::Signal;
use crate::state::ServerState;

/// Whether replies are sent (`CLIENT REPLY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyMode {
    /// Every reply is sent.
    #[default]
    On,
    /// No reply is sent until `CLIENT REPLY ON`.
    Off,
    /// The reply of the next command is dropped.
    SkipNext,
}

/// One logical client.
#[derive(Debug)]
pub struct Session {
    /// Client id, as `HELLO` reports it.
    pub id: u64,
    /// The RESP dialect replies are written in; `HELLO` changes it.
    pub protocol: Protocol,
    /// Name set by `HELLO ... SETNAME` (none until then).
    pub name: Option<Vec<u8>>,
    /// The database `SELECT` chose.
    pub db: usize,
    /// Whether the client may run commands while `requirepass` is set: it
    /// sent the password, or it connected while no password was required
    /// (as in Redis, setting a password later does not lock out clients
    /// already connected).
    pub authenticated: bool,
    /// The ACL user the client runs as; `None` for the server's own
    /// sessions (loading the append-only file), which may run anything, as
    /// Redis's client without a user may.
    pub user: Option<Arc<kvik_acl::User>>,
    /// The user generation (`registries::acl`) `user` was read at.
    pub acl_seen: u64,
    /// Whether `user` may run everything, so commands skip the ACL check.
    pub acl_open: bool,
    /// The plan of `user` (`kvik_acl::plan`), which answers most of its
    /// commands before the full check.
    pub acl_plan: Option<Arc<kvik_acl::plan::Plan>>,
    /// Whether the client connected from this machine (see `Peer::local`).
    pub local: bool,
    /// `CLIENT REPLY` state.
    pub reply_mode: ReplyMode,
    /// Set while running the command whose reply `CLIENT REPLY SKIP` drops.
    pub skip_this: bool,
    /// The client's entry in the server's client list, when it has one.
    pub registration: Option<Registration>,
    /// Channels and patterns the client listens to, and its message inbox.
    pub subscriptions: Subscriptions,
    /// The lines `MONITOR` feeds this client, sent by its connection after
    /// the replies already due.
    pub monitor: Option<MonitorFeed>,
    /// `CLIENT TRACKING` settings (client-side caching).
    pub tracking: ClientTracking,
    /// The open `MULTI`, if any.
    pub multi: Option<Multi>,
    /// The keys the client `WATCH`es.
    pub watched: Watched,
    /// The journal record of the running command (or `EXEC`).
    pub effects: crate::effects::propagation::Effects,
    /// Set by `HELLO 3 PROTO RESPB`: the connection speaks RESPB after the reply.
    pub upgrade_respb: bool,
    /// What the client said of itself as a replica (`REPLCONF`), and the
    /// `PSYNC` it sent.
    pub replica: crate::registries::replication::ReplicaConf,
    /// What the client registry last showed of this session, so the
    /// registry's lock is taken only when one of these changed.
    listed: Listed,
}

/// The session fields `CLIENT LIST` shows, as last copied into the registry.
#[derive(Debug, Default, PartialEq)]
struct Listed {
    db: usize,
    resp3: bool,
    name: Option<Vec<u8>>,
    subscriptions: [usize; 3],
}

impl Session {
    /// Whether this is the server's own session (id 0): the link to the
    /// master, or the append-only file's loader. What it runs is obeyed,
    /// never refused (Redis's `mustObeyClient`).
    pub fn is_obeyed(&self) -> bool {
        self.id == 0
    }

    /// A new logical client of `peer`, registered in the client list; it
    /// starts authenticated when no password is required. `wake` is
    /// notified when the client is killed (only clients with a socket of
    /// their own have one).
    pub fn for_peer(state: &ServerState, peer: &crate::client::peer::Peer, wake: Option<Arc<Signal>>) -> Session {
        let mut session = Session::connected(state, peer.addr.clone(), peer.laddr.clone(), peer.fd, wake);
        session.local = peer.local;
        session
    }

    /// Open a transaction (no check that none is open).
    pub fn begin_multi(&mut self) {
        self.multi = Some(Multi::default());
        self.show_queued();
    }

    /// Close the transaction, if any, and forget the watches (`DISCARD`,
    /// `EXEC`, `RESET`). Returns the transaction.
    pub fn discard_multi(&mut self) -> Option<Multi> {
        let multi = self.multi.take();
        self.watched.clear();
        if multi.is_some() {
            self.show_queued();
        }
        multi
    }

    /// Close the transaction, if any, keeping the watches for `EXEC` to
    /// check.
    pub fn take_multi_keeping_watches(&mut self) -> Option<Multi> {
        let multi = self.multi.take();
        if multi.is_some() {
            self.show_queued();
        }
        multi
    }

    /// Copy the queued count into the client list (`multi=`, `flags=x`),
    /// and what the queued commands hold (`multi-mem`, counted in `tot-mem`).
    pub fn show_queued(&self) {
        let count = self.multi.as_ref().map(Multi::len);
        if let Some(handle) = self.handle() {
            handle.info().multi = count;
            handle.show_multi(self.multi.as_ref().map_or(0, Multi::memory));
        }
    }

    /// A fresh client: RESP2, no name, authenticated (no password is set).
    pub fn new(id: u64) -> Self {
        Session {
            id,
            protocol: Protocol::Resp2,
            name: None,
            db: 0,
            authenticated: true,
            user: None,
            acl_seen: 0,
            acl_open: true,
            acl_plan: None,
            local: false,
            reply_mode: ReplyMode::On,
            skip_this: false,
            registration: None,
            monitor: None,
            multi: None,
            watched: Watched::default(),
            subscriptions: Subscriptions::new(id),
            tracking: ClientTracking::new(id),
            upgrade_respb: false,
            replica: Default::default(),
            effects: Default::default(),
            listed: Listed::default(),
        }
    }

    /// A client of a server: listed in its client registry (`addr`, `laddr`
    /// and `fd` as `CLIENT LIST` shows them; `wake` notified when it is
    /// killed), and unauthenticated when the server requires a password.
    pub fn connected(state: &ServerState, addr: String, laddr: String, fd: i32, wake: Option<Arc<Signal>>) -> Self {
        let id = state.ids.next_id();
        let mut session = Session::new(id);
        session.tracking = ClientTracking::attached(id, Arc::clone(&state.tracking), wake.is_some());
        session.subscriptions.set_wake(wake.clone());
        session.authenticated = !state.limits.auth_required();
        session.set_user(state, state.acl.default_user());
        session.registration = Some(state.clients.register(id, addr, laddr, fd, wake));
        state.stats.total_connections.fetch_add(1, Ordering::Relaxed);
        session
    }

    /// Copy the database, protocol and name into the registry entry if any
    /// changed since the last copy.
    ///
    /// Runs after every command, nearly always to find nothing changed: the
    /// comparison is inlined into the caller and the copy kept apart.
    #[inline]
    pub fn publish(&mut self) {
        let resp3 = self.protocol == Protocol::Resp3;
        let subscriptions = self.subscriptions.counts();
        let listed = &self.listed;
        // Counts compared one by one: as a whole array the comparison read
        // the counts back as one wide load right after storing them one by
        // one, a stall on every command.
        let same_counts = listed.subscriptions.iter().zip(subscriptions).all(|(&a, b)| a == b);
        if listed.db != self.db || listed.resp3 != resp3 || !same_counts || listed.name != self.name {
            self.relist(resp3, subscriptions);
        }
    }

    /// [`Session::publish`] once something listed changed.
    #[inline(never)]
    fn relist(&mut self, resp3: bool, subscriptions: [usize; 3]) {
        self.listed = Listed { db: self.db, resp3, name: self.name.clone(), subscriptions };
        self.tracking.sync(resp3, &mut self.subscriptions);
        if let Some(handle) = self.handle() {
            let mut info = handle.info();
            info.db = self.db;
            info.resp = if resp3 { 3 } else { 2 };
            info.name.clone_from(&self.name);
            info.subscriptions = subscriptions;
        }
    }

    /// Run as `user` from now on (logged in, or the rules changed).
    pub fn set_user(&mut self, state: &ServerState, user: Arc<kvik_acl::User>) {
        self.acl_seen = state.acl.generation();
        self.acl_open = user.unrestricted();
        self.acl_plan = user.plan().cloned();
        if let Some(handle) = self.handle() {
            if handle.info().user.as_slice() != user.name() {
                handle.info().user = user.name().to_vec();
            }
        }
        self.user = Some(user);
    }

    /// The registry entry, when the client is registered.
    pub fn handle(&self) -> Option<&Arc<ClientHandle>> {
        self.registration.as_ref().map(|r| &r.handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discard_closes_and_unwatches() {
        let mut session = Session::new(1);
        assert!(session.discard_multi().is_none());
        session.begin_multi();
        assert!(session.multi.is_some());
        assert!(session.discard_multi().is_some());
        assert!(session.multi.is_none());
    }
}
