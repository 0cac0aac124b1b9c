//! Counting what the server does: command and server statistics
//! ([`stats`]) gathered in per-thread lanes ([`stat_lanes`]), the
//! instantaneous rates of `INFO` ([`instant_metrics`]), latency histograms
//! ([`histogram`]) and the latency monitor ([`latency`]).

pub mod histogram;
pub mod instant_metrics;
pub mod latency;
pub mod stat_lanes;
pub mod stats;
