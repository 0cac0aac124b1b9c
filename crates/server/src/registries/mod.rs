//! What clients share, one registry each: the client list ([`clients`]),
//! pub/sub ([`pubsub`]), client-side caching ([`tracking`]), `WATCH`
//! ([`watch`]), clients waiting in blocking commands ([`blocking`]) and
//! `CLIENT PAUSE` ([`pause`]), background saves ([`saves`]), the script cache ([`scripts`]), the function libraries ([`functions`]), the replication stream and its replicas ([`replication`]). The state holds one of each; none of them
//! imports the state.

pub mod acl;
pub mod append_only;
pub mod blocking;
pub mod clients;
pub mod functions;
pub mod journal;
pub mod pause;
pub mod pubsub;
pub mod replication;
pub mod saves;
pub mod scripts;
pub mod tracking;
pub mod watch;
