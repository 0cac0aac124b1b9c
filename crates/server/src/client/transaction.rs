//! A client's open `MULTI`: the commands queued for its `EXEC`.
//!
//! Queued commands are copies of their arguments, checked when queued (name,
//! arity, authentication, … exactly as if they ran) and run by `EXEC` one
//! after another while it holds the shards they touch (see
//! [`crate::keyspace::Keyspace::reserve`] and `commands::transaction`). A
//! command refused while queuing marks the transaction, and its `EXEC` is
//! then refused with `EXECABORT`.

use kvik_protocol::commands::{CommandFlags, CommandSpec};
use kvik_protocol::CommandArgs;

/// Most commands one transaction may queue.
pub const MAX_QUEUED: usize = 1 << 20;

/// One command waiting for `EXEC`.
#[derive(Debug)]
pub struct Queued {
    /// Its arguments, the name included, owned.
    pub args: CommandArgs,
    /// Its table entry (the subcommand's, for a container).
    pub spec: &'static CommandSpec,
}

/// The state of an open `MULTI`.
#[derive(Debug, Default)]
pub struct Multi {
    queued: Vec<Queued>,
    /// Bytes of argument data queued, bounded like the query buffer.
    bytes: usize,
    /// Bytes the queued copies' argument lists hold (`multi-mem`, with the
    /// queue's own slots).
    held: usize,
    /// A command was refused while queuing: `EXEC` answers `EXECABORT`.
    aborted: bool,
}

/// Why a command could not be queued.
#[derive(Debug, PartialEq, Eq)]
pub struct QueueFull;

impl Multi {
    /// Number of queued commands.
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    /// A command was refused while queuing.
    pub fn abort(&mut self) {
        self.aborted = true;
    }

    /// Whether `EXEC` must answer `EXECABORT`.
    pub fn aborted(&self) -> bool {
        self.aborted
    }

    /// Queue a copy of `args` for `spec`; refused past [`MAX_QUEUED`]
    /// commands or `max_bytes` of arguments.
    pub fn push<'a>(
        &mut self,
        args: impl Iterator<Item = &'a [u8]>,
        spec: &'static CommandSpec,
        max_bytes: usize,
    ) -> Result<(), QueueFull> {
        if self.queued.len() >= MAX_QUEUED {
            return Err(QueueFull);
        }
        let mut owned = CommandArgs::new();
        let mut bytes = 0usize;
        for a in args {
            bytes = bytes.saturating_add(a.len());
            owned.push_owned(a);
        }
        if self.bytes.saturating_add(bytes) > max_bytes {
            return Err(QueueFull);
        }
        self.bytes += bytes;
        self.held += owned.retained_bytes();
        self.queued.push(Queued { args: owned, spec });
        Ok(())
    }

    /// Bytes the queued commands hold: their copied arguments and the
    /// queue's slots, by capacity (`CLIENT LIST`'s `multi-mem`).
    pub fn memory(&self) -> usize {
        self.held + self.queued.capacity() * size_of::<Queued>()
    }

    /// Whether a queued command may add data, which `maxmemory` refuses.
    pub fn may_add_data(&self) -> bool {
        self.any_queued(|spec| spec.flags.contains(CommandFlags::DENYOOM))
    }

    /// Whether `test` holds for a queued command.
    pub fn any_queued(&self, test: impl Fn(&CommandSpec) -> bool) -> bool {
        self.first_queued(test).is_some()
    }

    /// The first queued command `test` holds for (`CLIENT PAUSE WRITE`
    /// holds back an `EXEC` while it holds back one of its commands).
    pub fn first_queued(&self, test: impl Fn(&CommandSpec) -> bool) -> Option<&'static CommandSpec> {
        self.queued.iter().map(|q| q.spec).find(|spec| test(spec))
    }

    /// The queued commands, in order.
    pub fn into_queued(self) -> Vec<Queued> {
        self.queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::commands::lookup;

    #[test]
    fn queue_is_bounded_by_bytes_and_copies_arguments() {
        let set = lookup(b"set").expect("set");
        let mut multi = Multi::default();
        let args: [&[u8]; 3] = [b"SET", b"k", b"v"];
        assert_eq!(multi.push(args.into_iter(), set, 9), Ok(()));
        assert_eq!(multi.push(args.into_iter(), set, 9), Err(QueueFull), "5 + 5 > 9");
        assert_eq!(multi.len(), 1);
        assert!(multi.memory() >= 5, "the copies are counted: {}", multi.memory());
        assert!(multi.may_add_data());
        let queued = multi.into_queued();
        assert_eq!(queued[0].args.get(&[], 2), Some(&b"v"[..]));
    }
}
