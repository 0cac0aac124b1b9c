//! The network side: the acceptor and the event loops ([`listener`]), one
//! client connection ([`connection`], RESP and RESPB alike) and a RESPB
//! connection's channels ([`mux`]), with what they use to go fast: the
//! frame scan that loads keys ahead ([`read_ahead`]), the pacing of replies
//! ([`reply_pacing`]), the byte counters ([`net_meter`]) and the channel map
//! ([`id_map`]). The top of the server: nothing below imports it (the
//! sockets it listens on are bound by [`crate::sockets`]).

pub mod connection;
pub mod id_map;
pub mod listener;
pub mod mux;
pub mod net_meter;
pub mod read_ahead;
pub mod reply_pacing;
