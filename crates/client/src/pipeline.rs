//! [`Pipeline`]: many commands encoded into one buffer, sent with one write.

use crate::codec::write_request;
use crate::options::Protocol;

/// Commands queued for one round trip.
///
/// Each [`add`](Self::add) appends the encoded command to a single buffer;
/// nothing else is allocated per command, and [`clear`](Self::clear) keeps the
/// buffer's capacity, so a benchmark can reuse one pipeline forever.
#[derive(Debug, Clone)]
pub struct Pipeline {
    protocol: Protocol,
    buf: Vec<u8>,
    count: usize,
}

impl Pipeline {
    /// An empty pipeline for connections speaking `protocol`.
    pub fn new(protocol: Protocol) -> Pipeline {
        Pipeline { protocol, buf: Vec::new(), count: 0 }
    }

    /// Queue one command (name first).
    pub fn add<A: AsRef<[u8]>>(&mut self, args: &[A]) -> &mut Pipeline {
        write_request(self.protocol, args, 0, &mut self.buf);
        self.count += 1;
        self
    }

    /// Forget the queued commands, keeping the buffer.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.count = 0;
    }

    /// Commands queued.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The protocol the commands were encoded for.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The encoded commands, as they go on the wire.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_share_one_buffer_and_clear_keeps_it() {
        let mut p = Pipeline::new(Protocol::Resp2);
        p.add(&["SET", "a", "1"]).add(&[b"GET".as_slice(), b"a"]);
        assert_eq!(p.len(), 2);
        assert_eq!(p.bytes(), b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
        let cap = p.bytes().len();
        p.clear();
        assert!(p.is_empty() && p.bytes().is_empty() && p.buf.capacity() >= cap);
    }

    #[test]
    fn respb_pipelines_hold_frames_on_mux_zero() {
        let mut p = Pipeline::new(Protocol::Respb);
        p.add(&["GET", "k"]);
        assert_eq!(p.bytes(), [0, 0, 0, 0, 0, 1, b'k']);
    }
}
