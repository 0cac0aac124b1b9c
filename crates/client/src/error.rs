//! [`Error`]: everything that can go wrong between the caller and the server.
//!
//! An error *reply* from the server (`-ERR …`, `WRONGTYPE …`) is not an
//! [`Error`]: it is a successful round trip that returned
//! [`Value::Error`](kvik_protocol::Value::Error). This type is for failures of
//! the transport, the protocol or the client's own limits, and says whether the
//! connection is still usable ([`Error::is_connection_error`]).

use std::fmt;
use std::io;
use std::time::Duration;

/// A client-side failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Connecting, reading or writing failed at the operating-system level.
    Io(io::Error),
    /// The server did not accept the connection (or finish the handshake) in time.
    ConnectTimeout(Duration),
    /// No reply came within the request timeout.
    Timeout(Duration),
    /// The server closed the connection, or it failed while the request was
    /// pending; whether the command ran is unknown.
    ConnectionLost(String),
    /// The connection failed earlier (a timeout, a protocol error) and cannot
    /// be used any more; open a new one (the [`Client`](crate::Client) does).
    Broken(String),
    /// The server sent bytes that are not a valid reply; the connection is dropped.
    Protocol(String),
    /// A reply would need more than the configured number of bytes.
    ReplyTooLarge {
        /// The configured limit ([`Options::max_reply_bytes`](crate::Options::max_reply_bytes)).
        limit: usize,
    },
    /// The server refused the RESPB handshake (it does not speak that version)
    /// or answered it with something else.
    Handshake([u8; 4]),
    /// A step of connection setup (`HELLO`, `AUTH`, `SELECT`) got an error reply.
    Setup {
        /// The command that failed.
        step: &'static str,
        /// The server's error text.
        message: String,
    },
    /// The server answered a mux control frame (`MUX_CREATE`) with an error,
    /// for example because the connection has too many channels.
    Rejected(String),
    /// This client already has as many channels open as it allows.
    ChannelLimit {
        /// The configured limit.
        max: usize,
    },
    /// The channel was closed while the request was pending.
    ChannelClosed,
    /// The call cannot work as asked (for example a subscribe command sent as
    /// an ordinary request, whose confirmations arrive as pushes).
    Usage(&'static str),
    /// The [`Client`](crate::Client) gave up reconnecting.
    ReconnectFailed {
        /// Connection attempts made.
        attempts: u32,
        /// The last attempt's failure.
        last: Box<Error>,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// True when the connection that produced this error is unusable, so a
    /// caller (or the [`Client`](crate::Client)) should open a new one.
    pub fn is_connection_error(&self) -> bool {
        matches!(
            self,
            Error::Io(_)
                | Error::Timeout(_)
                | Error::ConnectionLost(_)
                | Error::Broken(_)
                | Error::Protocol(_)
                | Error::ReplyTooLarge { .. }
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::ConnectTimeout(d) => write!(f, "could not connect within {d:?}"),
            Error::Timeout(d) => write!(f, "no reply within {d:?}"),
            Error::ConnectionLost(why) => write!(f, "connection lost: {why}"),
            Error::Broken(why) => write!(f, "connection unusable after an earlier failure: {why}"),
            Error::Protocol(why) => write!(f, "invalid reply from the server: {why}"),
            Error::ReplyTooLarge { limit } => write!(f, "reply larger than the limit of {limit} bytes"),
            Error::Handshake(answer) => write!(f, "RESPB handshake refused (answer {answer:02X?})"),
            Error::Setup { step, message } => write!(f, "{step} failed: {message}"),
            Error::Rejected(msg) => write!(f, "server refused the channel: {msg}"),
            Error::ChannelLimit { max } => write!(f, "no more than {max} channels may be open on one connection"),
            Error::ChannelClosed => f.write_str("channel closed while the request was pending"),
            Error::Usage(msg) => f.write_str(msg),
            Error::ReconnectFailed { attempts, last } => {
                write!(f, "gave up reconnecting after {attempts} attempts: {last}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::ReconnectFailed { last, .. } => Some(last.as_ref()),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_errors_are_told_apart_from_usage_errors() {
        assert!(Error::Timeout(Duration::from_millis(5)).is_connection_error());
        assert!(Error::ConnectionLost("eof".into()).is_connection_error());
        assert!(!Error::ChannelLimit { max: 3 }.is_connection_error());
        assert!(!Error::Setup { step: "AUTH", message: "WRONGPASS".into() }.is_connection_error());
    }

    #[test]
    fn messages_name_the_cause() {
        let e = Error::ReconnectFailed { attempts: 4, last: Box::new(Error::ConnectTimeout(Duration::from_secs(1))) };
        assert_eq!(e.to_string(), "gave up reconnecting after 4 attempts: could not connect within 1s");
        assert_eq!(
            Error::Handshake([0xD3, 0xC1, 0, 0]).to_string(),
            "RESPB handshake refused (answer [D3, C1, 00, 00])"
        );
    }
}
