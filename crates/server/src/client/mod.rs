//! One logical client: its session ([`session`]: database, protocol,
//! name, subscriptions, tracking, MULTI, watches), authentication
//! ([`auth`]), the queue of an open MULTI ([`transaction`]) and where the
//! client comes from ([`peer`]). Below the
//! commands, which run on a session, and above the shared state.

pub mod auth;
pub mod peer;
pub mod session;
pub mod transaction;
