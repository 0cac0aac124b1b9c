//! The parsed form of a request: a command name followed by its arguments, exactly
//! as RESP would carry them.
//!
//! Both decoders (RESP and RESPB) produce this one form, so everything above the
//! protocol layer sees a single shape. Arguments are not copied: an [`ArgRef`]
//! points either into the caller's read buffer (the bytes a client sent) or into
//! a small scratch buffer owned by [`CommandArgs`] for bytes that had to be made
//! (numbers RESPB sent in binary, unescaped inline arguments, option tokens).
//! A [`CommandArgs`] is reused from command to command, so steady-state decoding
//! allocates nothing.

use crate::commands::CommandId;

/// Which buffer an [`ArgRef`] points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// The caller's input buffer.
    Input,
    /// The scratch buffer of the [`CommandArgs`].
    Scratch,
    /// The static command name set with [`CommandArgs::push_name`].
    Name,
}

/// Location of one argument: a byte range in the input buffer, the scratch
/// buffer, or the static command name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgRef {
    start: usize,
    len: usize,
    src: Source,
}

impl ArgRef {
    /// Length of the argument in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length argument.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A decoded command: `args[0]` is the command name, the rest its arguments.
///
/// Input ranges are relative to the buffer that was handed to the decoder; read
/// them back with [`CommandArgs::get`] passing that same buffer.
#[derive(Debug, Default, Clone)]
pub struct CommandArgs {
    refs: Vec<ArgRef>,
    scratch: Vec<u8>,
    /// The command name when a decoder knows it statically (RESPB opcodes).
    name: &'static [u8],
    /// The command's table id when a decoder knows it (a RESPB opcode's),
    /// so the server need not look the name up.
    command: Option<CommandId>,
}

impl CommandArgs {
    /// An empty argument list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forget all arguments, keeping the capacity for the next command.
    #[inline]
    pub fn clear(&mut self) {
        self.refs.clear();
        self.scratch.clear();
        self.command = None;
    }

    /// Record the table id of the command, when the decoder knows it from
    /// the frame; it must be what looking up argument 0 by name finds.
    #[inline]
    pub fn set_command(&mut self, id: Option<CommandId>) {
        self.command = id;
    }

    /// The table id recorded by [`CommandArgs::set_command`] since the last clear.
    #[inline]
    pub fn command(&self) -> Option<CommandId> {
        self.command
    }

    /// Number of arguments, the command name included.
    #[inline]
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// Bytes of memory the list keeps for reuse (what it grew to hold).
    pub fn retained_bytes(&self) -> usize {
        self.refs.capacity() * size_of::<ArgRef>() + self.scratch.capacity()
    }

    /// True when no argument has been pushed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// The raw reference of argument `i`.
    #[inline]
    pub fn arg_ref(&self, i: usize) -> Option<ArgRef> {
        self.refs.get(i).copied()
    }

    /// Append the command name a decoder knows without reading it (a RESPB
    /// opcode's name): no bytes are copied. At most one per command.
    #[inline]
    pub fn push_name(&mut self, name: &'static str) {
        debug_assert!(!self.refs.iter().any(|r| r.src == Source::Name), "a second static name");
        self.name = name.as_bytes();
        self.refs.push(ArgRef { start: 0, len: name.len(), src: Source::Name });
    }

    /// Append an argument that lives in the input buffer at `start..start + len`.
    #[inline]
    pub fn push_input(&mut self, start: usize, len: usize) {
        self.refs.push(ArgRef { start, len, src: Source::Input });
    }

    /// Append an argument by copying `bytes` into the scratch buffer.
    #[inline]
    pub fn push_owned(&mut self, bytes: &[u8]) {
        let start = self.scratch.len();
        self.scratch.extend_from_slice(bytes);
        self.refs.push(ArgRef { start, len: bytes.len(), src: Source::Scratch });
    }

    /// Append an argument whose bytes are written by `fill` into the scratch buffer.
    ///
    /// This is how numbers are formatted without an intermediate allocation.
    #[inline]
    pub fn push_with(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        let start = self.scratch.len();
        fill(&mut self.scratch);
        let len = self.scratch.len() - start;
        self.refs.push(ArgRef { start, len, src: Source::Scratch });
    }

    /// Drop arguments from index `len` on (used when a decoder backs out).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        self.refs.truncate(len);
    }

    /// Insert an argument copied into the scratch buffer at position `at`.
    ///
    /// Used by the RESPB decoder for the rare tokens that RESP places before the
    /// binary field that governs them; shifting a handful of references is cheap.
    pub fn insert_owned(&mut self, at: usize, bytes: &[u8]) {
        let start = self.scratch.len();
        self.scratch.extend_from_slice(bytes);
        let r = ArgRef { start, len: bytes.len(), src: Source::Scratch };
        self.refs.insert(at.min(self.refs.len()), r);
    }

    /// Replace argument `i` with bytes written by `fill` into the scratch buffer.
    pub fn replace_with(&mut self, i: usize, fill: impl FnOnce(&mut Vec<u8>)) {
        let start = self.scratch.len();
        fill(&mut self.scratch);
        let len = self.scratch.len() - start;
        if let Some(r) = self.refs.get_mut(i) {
            *r = ArgRef { start, len, src: Source::Scratch };
        }
    }

    /// Put `prefix` in front of argument `i`, which must live in the scratch buffer.
    ///
    /// Returns false (changing nothing) for an argument in the input buffer.
    pub fn prefix_owned(&mut self, i: usize, prefix: &[u8]) -> bool {
        let Some(old) = self.refs.get(i).copied().filter(|r| r.src == Source::Scratch) else {
            return false;
        };
        let start = self.scratch.len();
        self.scratch.extend_from_slice(prefix);
        self.scratch.extend_from_within(old.start..old.start + old.len);
        self.refs[i] = ArgRef { start, len: prefix.len() + old.len, src: Source::Scratch };
        true
    }

    /// Move every input-buffer reference up by `by` bytes.
    ///
    /// Used when a sub-slice was decoded (a RESPB passthrough frame's RESP text)
    /// and the references must point into the enclosing buffer.
    pub fn shift_input(&mut self, by: usize) {
        for r in self.refs.iter_mut().filter(|r| r.src == Source::Input) {
            r.start += by;
        }
    }

    /// Shift every input-buffer reference down by `by` bytes.
    ///
    /// A resumable decoder calls this when its caller discarded `by` bytes that
    /// preceded the current frame.
    pub fn rebase_input(&mut self, by: usize) {
        for r in self.refs.iter_mut().filter(|r| r.src == Source::Input) {
            debug_assert!(r.start >= by);
            r.start -= by;
        }
    }

    /// Bytes of argument `i`, reading input references from `input`.
    ///
    /// Returns `None` when `i` is out of range or the reference does not fit
    /// `input` (a caller passing a different buffer than the decoder saw).
    #[inline]
    pub fn get<'a>(&'a self, input: &'a [u8], i: usize) -> Option<&'a [u8]> {
        let r = self.refs.get(i)?;
        let src: &'a [u8] = match r.src {
            Source::Input => input,
            Source::Scratch => &self.scratch,
            Source::Name => self.name,
        };
        src.get(r.start..r.start + r.len)
    }

    /// Iterate over all arguments as byte slices.
    pub fn iter<'a>(&'a self, input: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        (0..self.refs.len()).map(move |i| self.get(input, i).unwrap_or(&[]))
    }

    /// Copy the arguments out (tests, tools and cold paths).
    pub fn to_vec(&self, input: &[u8]) -> Vec<Vec<u8>> {
        self.iter(input).map(<[u8]>::to_vec).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_input_and_scratch_arguments() {
        let input = b"GETkey";
        let mut a = CommandArgs::new();
        a.push_input(0, 3);
        a.push_input(3, 3);
        a.push_with(|s| s.extend_from_slice(b"42"));
        a.push_owned(b"EX");
        assert_eq!(a.to_vec(input), vec![b"GET".to_vec(), b"key".to_vec(), b"42".to_vec(), b"EX".to_vec()]);
        assert_eq!(a.get(input, 4), None);
        a.clear();
        assert!(a.is_empty());
    }

    #[test]
    fn out_of_range_reference_is_none_not_panic() {
        let mut a = CommandArgs::new();
        a.push_input(10, 5);
        assert_eq!(a.get(b"short", 0), None);
    }

    #[test]
    fn rebase_moves_only_input_references() {
        let mut a = CommandArgs::new();
        a.push_input(8, 2);
        a.push_owned(b"x");
        a.rebase_input(8);
        assert_eq!(a.to_vec(b"ab"), vec![b"ab".to_vec(), b"x".to_vec()]);
    }
}
