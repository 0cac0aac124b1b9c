//! Client side of RESP requests: a command written as one multibulk.
//!
//! Servers parse requests (see [`request`](super::request)); clients, the CLI
//! and the benchmark write them. The function appends to a caller's buffer so
//! a pipeline of commands is built in one allocation and sent in one write.

use crate::number::write_u64;

/// Append `args` (command name first) to `out` as a RESP multibulk request:
/// `*<n>\r\n` then `$<len>\r\n<bytes>\r\n` per argument.
pub fn write_command<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    let payload: usize = args.iter().map(|a| a.as_ref().len() + 16).sum();
    out.reserve(payload + 16);
    write_command_header(args.len(), out);
    for a in args {
        write_argument(a.as_ref(), out);
    }
}

/// The start of a request of `argc` arguments (`*<n>\r\n`), for a writer
/// that has its arguments one at a time; [`write_argument`] each follows.
pub fn write_command_header(argc: usize, out: &mut Vec<u8>) {
    out.push(b'*');
    write_u64(out, argc as u64);
    out.extend_from_slice(b"\r\n");
}

/// One argument of a request: `$<len>\r\n<bytes>\r\n`.
pub fn write_argument(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'$');
    write_u64(out, arg.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::request::{Progress, RequestLimits, RequestParser};
    use crate::CommandArgs;

    #[test]
    fn writes_multibulk() {
        let mut out = Vec::new();
        write_command(&["SET", "k", ""], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }

    #[test]
    fn server_parser_reads_back_binary_arguments() {
        let args: [&[u8]; 3] = [b"SET", b"k\r\n\0", &[0xFF; 300]];
        let mut out = Vec::new();
        write_command(&args, &mut out);
        write_command(&["PING"], &mut out);
        let mut parser = RequestParser::new(RequestLimits::default());
        let mut parsed = CommandArgs::new();
        let Ok(Progress::Done(consumed)) = parser.parse(&out, &mut parsed) else {
            panic!("first command not parsed");
        };
        assert_eq!(parsed.to_vec(&out), args.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
        assert!(consumed < out.len());
    }
}
