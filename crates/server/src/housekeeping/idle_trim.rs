//! Giving back the buffers of connections that have gone quiet.
//!
//! A connection's read buffer, reply buffer and argument list keep their
//! capacity from one request to the next, so that a steady stream of
//! requests allocates nothing. Kept for good, they make every connection
//! cost its largest request and reply: after one 512 MiB `SET` and a `GET`
//! of it, an idle connection would hold a gigabyte. Redis resizes its
//! query buffer from its client cron; in kvik the acceptor's once-a-second
//! sampling looks over the clients ([`request_trims`]) and asks each that
//! ran no command for [`IDLE_TRIM`] while its buffers hold more than an
//! idle connection keeps to give them back. The connection does so the
//! next time it waits for input with nothing partly read, keeping only a
//! small read buffer, so an idle connection holds little more than its
//! session whatever it did before.
//!
//! The request comes as a raise of a signal the connection polls only when
//! no input is there, so a busy connection pays one flag test per wait and
//! the loop threads keep no timer (a timer in a loop's wheel costs a clock
//! reading and a wheel walk every time the loop parks).

use std::time::{Duration, Instant};

use crate::registries::clients::ClientRegistry;

/// How long a client runs no command before its buffers go back (as
/// Redis's client cron treats a client idle for two seconds).
pub const IDLE_TRIM: Duration = Duration::from_secs(2);

/// Bytes of buffers an idle connection keeps: its small read buffer.
pub const IDLE_HELD_BYTES: usize = 512;

/// Ask each client that has been idle for [`IDLE_TRIM`] at `now` and
/// holds more than [`IDLE_HELD_BYTES`] to give its buffers back.
pub fn request_trims(clients: &ClientRegistry, now: Instant) {
    clients.each(|client| {
        let idle = now.saturating_duration_since(client.last_active());
        if idle >= IDLE_TRIM && client.buffers.figures().held > IDLE_HELD_BYTES {
            client.request_trim();
        }
    });
}
