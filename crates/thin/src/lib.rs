//! [`Thin`]: a one-word owning pointer to either a byte string or a boxed
//! value.
//!
//! The keyspace keeps one element per key in its hash table. A `Box<[u8]>`
//! is two words (pointer and length), so a table of them costs 16 bytes a
//! slot plus the control byte; at the table's usual load of about half that
//! is some 35 bytes per key before the key holds anything. A [`Thin`] is
//! one word: the length of a byte string moves into its allocation, in
//! front of the bytes, and a boxed value is told apart from a byte string
//! by the lowest bit of the pointer.
//!
//! # Layout and invariants
//!
//! A `Thin<T>` holds a non-null pointer `ptr` and owns what it points to:
//!
//! * **Bytes** (bit 0 of `ptr` clear): `ptr` is the start of a live
//!   allocation made by the global allocator as a `Box<[u8]>` (layout:
//!   size `p + n`, alignment 1) holding a length prefix of `p` bytes and
//!   then the `n` payload bytes. The prefix is one byte `n` when
//!   `n < 255`, else the byte 255 and `n` as a little-endian `u32` (`p` is
//!   1 or 5). `n` is at most [`MAX_LEN`]; longer strings are refused
//!   ([`TooLong`]). The one-byte form keeps the cost of the length to one
//!   byte for the short strings that are most keys: glibc hands out chunks
//!   in 16-byte steps, and every byte of prefix moves some sizes into the
//!   next step.
//! * **Boxed** (bit 0 of `ptr` set): `ptr` with bit 0 cleared is a pointer
//!   obtained from `Box::<T>::into_raw`. `T` must be aligned to at least 2
//!   (checked at compile time when a `Thin<T>` is boxed), so that bit is
//!   free in every such pointer.
//!
//! * **Mark** (bit 1 of `ptr`): one bit of the owner's own, kept through
//!   every change in place ([`Thin::edit_vec`]) and cleared in a new
//!   `Thin`. It means nothing here; the keyspace uses it to tell the keys a
//!   background snapshot has written from those it has not (`kvik-store`'s
//!   `keyspace::snapshot`), so that the mark costs no byte per key. `T`
//!   must be aligned to at least 4 so that the bit is free in a box's
//!   pointer.
//!
//! A byte string's allocation has alignment 1, so nothing in the type
//! system keeps its address a multiple of 4. Every allocator in practice
//! (glibc, musl, jemalloc, mimalloc) returns blocks aligned to 8 or 16; the
//! address is still checked whenever a byte string is adopted, and one with
//! either low bit set aborts the process rather than be mistaken for a box
//! or a mark.
//! Alignment 1 is what makes the allocation a valid `Vec<u8>` buffer, so
//! [`Thin::edit_vec`] can grow a byte string in place (a `realloc`) and
//! [`Thin::try_build`] can write one without copying it afterwards.
//!
//! Every `unsafe` block below relies only on these invariants, which every
//! constructor establishes and every method keeps; each block says how.
//!
//! # Checking the unsafe code
//!
//! The unit tests cover every operation (empty and long strings, the
//! switch between the two prefix forms, clones and drops counted with a
//! counting `T`, a panic inside an edit). Run them under valgrind, which
//! reports leaks, double frees and reads outside an allocation:
//!
//! ```text
//! cargo test -p kvik-thin --no-run --message-format=json   # prints the test binary's path
//! valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
//!     <path>/kvik_thin-<hash> --test-threads=1
//! ```
//!
//! and, where a nightly toolchain with Miri is at hand, `cargo +nightly
//! miri test -p kvik-thin`.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::{self, NonNull};

/// The longest byte string a [`Thin`] holds: its length must fit the
/// 4-byte prefix.
pub const MAX_LEN: usize = u32::MAX as usize;

// MAX_LEN must be representable, and lengths read back as usize.
const _: () = assert!(usize::BITS >= 32);

/// First prefix byte announcing a 4-byte length.
const LONG: u8 = u8::MAX;
/// Bit 0 of the pointer: set for a boxed value.
const BOXED: usize = 1;
/// Bit 1 of the pointer: the owner's mark (see "Layout and invariants").
const MARK: usize = 2;
/// The bits of the pointer that are not part of the address.
const TAGS: usize = BOXED | MARK;

/// A byte string longer than [`MAX_LEN`], refused; it holds the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong(pub usize);

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes do not fit a thin pointer (at most {MAX_LEN})", self.0)
    }
}

impl std::error::Error for TooLong {}

/// An owning pointer of one word to either a byte string or a boxed `T`
/// (see the crate docs for the layout).
pub struct Thin<T> {
    /// See "Layout and invariants" in the crate docs.
    ptr: NonNull<u8>,
    /// A `Thin<T>` may own a `T` and drops it.
    _owns: PhantomData<T>,
}

// SAFETY: a Thin owns its allocation exclusively, like a Box<[u8]> (Send
// and Sync) or a Box<T> (Send when T is, Sync when T is); nothing is shared
// between two Thins, and `&Thin` gives only shared access.
unsafe impl<T: Send> Send for Thin<T> {}
// SAFETY: as above; `&Thin<T>` hands out only `&[u8]` and `&T`.
unsafe impl<T: Sync> Sync for Thin<T> {}

/// What a [`Thin`] holds, borrowed.
#[derive(Debug, PartialEq)]
pub enum View<'a, T> {
    /// The byte string.
    Bytes(&'a [u8]),
    /// The boxed value.
    Boxed(&'a T),
}

/// What a [`Thin`] holds, borrowed for a change. A byte string keeps its
/// length; [`Thin::edit_vec`] changes it.
#[derive(Debug)]
pub enum ViewMut<'a, T> {
    /// The byte string.
    Bytes(&'a mut [u8]),
    /// The boxed value.
    Boxed(&'a mut T),
}

/// The allocation of a [`Thin`] back in a safe owner.
enum Owned<T> {
    /// The whole allocation of a byte string: prefix and payload.
    Bytes(Box<[u8]>),
    Boxed(Box<T>),
}

/// Bytes of the prefix for a payload of `len` bytes.
fn prefix_len(len: usize) -> usize {
    if len < usize::from(LONG) {
        1
    } else {
        5
    }
}

/// Append the prefix for a payload of `len` bytes (the 4-byte form with
/// `u32::MAX` for a longer one, which [`Thin::seal`] then refuses).
#[inline]
fn push_prefix(out: &mut Vec<u8>, len: usize) {
    match u8::try_from(len) {
        Ok(n) if n < LONG => out.push(n),
        _ => {
            out.push(LONG);
            out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
        }
    }
}

impl<T> Thin<T> {
    /// Holds `value` in a box of its own.
    pub fn new_boxed(value: T) -> Thin<T> {
        Thin::from_box(Box::new(value))
    }

    /// Holds the boxed `value` (no new allocation).
    pub fn from_box(value: Box<T>) -> Thin<T> {
        const { assert!(std::mem::align_of::<T>() >= 4, "Thin<T> needs bits 0 and 1 of a Box<T> pointer free") };
        // Box::leak gives a valid, non-null, aligned pointer that we now own.
        let ptr = NonNull::from(Box::leak(value)).cast::<u8>();
        // T's alignment is at least 4, so bits 0 and 1 are clear and can
        // carry the tags; map_addr keeps the pointer's provenance.
        Thin { ptr: ptr.map_addr(|a| a | BOXED), _owns: PhantomData }
    }

    /// A copy of `bytes`, or [`TooLong`] past [`MAX_LEN`].
    pub fn try_from_bytes(bytes: &[u8]) -> Result<Thin<T>, TooLong> {
        Thin::try_build(bytes.len(), |out| out.extend_from_slice(bytes))
    }

    /// A byte string written by `fill` straight into its allocation:
    /// `fill` gets a vector already holding the length prefix, with room
    /// for `capacity` more bytes, and appends the payload (it may append
    /// more or fewer than `capacity`). [`TooLong`] when the payload ends up
    /// longer than [`MAX_LEN`].
    ///
    /// `fill` must leave the bytes before the vector's length at the call
    /// alone; the prefix is rewritten from the final length anyway, so
    /// breaking that rule garbles the string but nothing else.
    pub fn try_build(capacity: usize, fill: impl FnOnce(&mut Vec<u8>)) -> Result<Thin<T>, TooLong> {
        let start = prefix_len(capacity);
        let mut out = Vec::with_capacity(start.saturating_add(capacity));
        // The prefix for the announced length, usually the final one.
        push_prefix(&mut out, capacity);
        fill(&mut out);
        Thin::seal(out, start)
    }

    /// A byte string from `out`, whose payload starts at `start` (the bytes
    /// before it are replaced by the prefix; missing ones are added).
    #[inline]
    fn seal(mut out: Vec<u8>, start: usize) -> Result<Thin<T>, TooLong> {
        // The common case, every SET of a short string: a one-byte prefix
        // that stays one byte.
        match out.len().checked_sub(start).and_then(|len| u8::try_from(len).ok()) {
            Some(n) if start == 1 && n < LONG => out[0] = n,
            _ => return Thin::seal_slow(out, start),
        }
        Ok(Thin::adopt(out.into_boxed_slice()))
    }

    /// [`Thin::seal`] of the other cases.
    #[cold]
    fn seal_slow(mut out: Vec<u8>, start: usize) -> Result<Thin<T>, TooLong> {
        if out.len() < start {
            out.resize(start, 0);
        }
        let len = out.len() - start;
        let long = u32::try_from(len).map_err(|_| TooLong(len))?.to_le_bytes();
        match (start, prefix_len(len)) {
            (1, 1) => out[0] = long[0],
            (5, 5) => {
                out[0] = LONG;
                out[1..5].copy_from_slice(&long);
            }
            _ => {
                let mut prefix = Vec::with_capacity(5);
                push_prefix(&mut prefix, len);
                out.splice(..start, prefix);
            }
        }
        Ok(Thin::adopt(out.into_boxed_slice()))
    }

    /// Take ownership of `whole`, a prefix and its payload.
    #[inline]
    fn adopt(whole: Box<[u8]>) -> Thin<T> {
        if whole.as_ptr().addr() & TAGS != 0 {
            // Never seen with a real allocator (see the crate docs). An
            // abort rather than a panic: this may run while an edit's
            // `Refill` puts a string back, where unwinding would leave a
            // stale pointer behind.
            eprintln!("kvik-thin: the allocator returned an address that is not a multiple of 4 for a byte string");
            std::process::abort();
        }
        Thin { ptr: NonNull::from(Box::leak(whole)).cast::<u8>(), _owns: PhantomData }
    }

    /// The address of the allocation this pointer owns, for a prefetch
    /// hint: a number, never turned back into a pointer.
    #[inline]
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr().addr() & !TAGS
    }

    /// The owner's mark (see "Layout and invariants"); clear in a new `Thin`.
    #[inline]
    pub fn is_marked(&self) -> bool {
        self.ptr.addr().get() & MARK != 0
    }

    /// Set or clear the owner's mark.
    #[inline]
    pub fn set_marked(&mut self, marked: bool) {
        // Only bit 1 changes: the address and the boxed tag stay, so every
        // invariant above still holds; map_addr keeps the provenance, and
        // the address stays non-zero because it was a real allocation's.
        self.ptr = self.ptr.map_addr(|a| {
            let bits = if marked { a.get() | MARK } else { a.get() & !MARK };
            std::num::NonZeroUsize::new(bits).unwrap_or(a)
        });
    }

    /// True when this holds a boxed value rather than bytes.
    #[inline]
    pub fn is_boxed(&self) -> bool {
        self.ptr.addr().get() & BOXED != 0
    }

    /// The allocation's start, untagged.
    #[inline]
    fn base(&self) -> *mut u8 {
        self.ptr.as_ptr().map_addr(|a| a & !TAGS)
    }

    /// The boxed value's pointer, untagged. Only meaningful when boxed.
    #[inline]
    fn boxed_ptr(&self) -> *mut T {
        self.base().cast::<T>()
    }

    /// Where the payload of a byte string starts, and its length. Only
    /// for bytes.
    #[inline]
    fn header(&self) -> (usize, usize) {
        debug_assert!(!self.is_boxed());
        let p = self.base();
        // SAFETY: a byte string's allocation starts with its prefix, at
        // least one initialized byte (invariant), which we may read through
        // &self.
        let first = unsafe { *p };
        if first != LONG {
            return (1, usize::from(first));
        }
        let mut len = [0u8; 4];
        // SAFETY: a first byte of 255 is followed by four more prefix
        // bytes in the same allocation (invariant); `len` is a separate
        // local array, so the ranges do not overlap.
        unsafe { ptr::copy_nonoverlapping(p.add(1), len.as_mut_ptr(), 4) };
        (5, u32::from_le_bytes(len) as usize)
    }

    /// What this holds, borrowed.
    #[inline]
    pub fn view(&self) -> View<'_, T> {
        if self.is_boxed() {
            // SAFETY: the untagged pointer came from Box::into_raw and we
            // own the box (invariant): valid and aligned, and &self keeps
            // it alive and unchanged for the borrow.
            View::Boxed(unsafe { &*self.boxed_ptr() })
        } else {
            let (start, len) = self.header();
            // SAFETY: the payload is `len` initialized bytes at `start` of
            // the allocation (invariant), alive and unchanged while &self
            // is borrowed.
            View::Bytes(unsafe { std::slice::from_raw_parts(self.base().add(start), len) })
        }
    }

    /// What this holds, borrowed for a change.
    #[inline]
    pub fn view_mut(&mut self) -> ViewMut<'_, T> {
        if self.is_boxed() {
            // SAFETY: as in `view`; &mut self makes the access exclusive.
            ViewMut::Boxed(unsafe { &mut *self.boxed_ptr() })
        } else {
            let (start, len) = self.header();
            // SAFETY: as in `view`; &mut self makes the access exclusive,
            // and the slice leaves out the prefix, so it cannot be broken.
            ViewMut::Bytes(unsafe { std::slice::from_raw_parts_mut(self.base().add(start), len) })
        }
    }

    /// The byte string, if this holds one.
    #[inline]
    pub fn bytes(&self) -> Option<&[u8]> {
        match self.view() {
            View::Bytes(b) => Some(b),
            View::Boxed(_) => None,
        }
    }

    /// The byte string for a change in place, if this holds one.
    #[inline]
    pub fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match self.view_mut() {
            ViewMut::Bytes(b) => Some(b),
            ViewMut::Boxed(_) => None,
        }
    }

    /// The boxed value, if this holds one.
    #[inline]
    pub fn boxed(&self) -> Option<&T> {
        match self.view() {
            View::Boxed(v) => Some(v),
            View::Bytes(_) => None,
        }
    }

    /// The boxed value for a change, if this holds one.
    #[inline]
    pub fn boxed_mut(&mut self) -> Option<&mut T> {
        match self.view_mut() {
            ViewMut::Boxed(v) => Some(v),
            ViewMut::Bytes(_) => None,
        }
    }

    /// The box, or this back when it holds bytes.
    pub fn into_box(self) -> Result<Box<T>, Thin<T>> {
        if !self.is_boxed() {
            return Err(self);
        }
        match Thin::into_owned(self) {
            Owned::Boxed(b) => Ok(b),
            Owned::Bytes(_) => unreachable!("checked boxed above"),
        }
    }

    /// Bytes this owns on the heap: the prefix and payload of a byte
    /// string, `size_of::<T>()` for a boxed value (not what `T` owns).
    pub fn heap_size(&self) -> usize {
        match self.view() {
            View::Bytes(b) => prefix_len(b.len()) + b.len(),
            View::Boxed(_) => std::mem::size_of::<T>(),
        }
    }

    /// Change a byte string in its own allocation, which may grow or
    /// shrink (a `realloc`, often in place): `edit` gets the whole
    /// allocation as a vector and where the payload starts in it, and
    /// changes or extends the payload. `None` (and `edit` is not called)
    /// when this holds a boxed value.
    ///
    /// `edit` must leave the bytes before the payload alone; the prefix is
    /// rewritten from the final length anyway, so breaking that rule
    /// garbles the string but nothing else. If `edit` panics, the string
    /// keeps whatever it had written so far.
    ///
    /// # Panics
    ///
    /// When `edit` leaves a payload longer than [`MAX_LEN`]; the string is
    /// cut to that length first.
    pub fn edit_vec<R>(&mut self, edit: impl FnOnce(&mut Vec<u8>, usize) -> R) -> Option<R> {
        if self.is_boxed() {
            return None;
        }
        let (start, _) = self.header();
        let marked = self.is_marked();
        // SAFETY: `reclaim` hands ownership of the allocation to `whole`;
        // `self` still points at it but is not used again until `Refill`
        // (on every path, unwinding included) overwrites it with a new
        // pointer without dropping the stale one.
        let Owned::Bytes(whole) = (unsafe { self.reclaim() }) else { unreachable!("checked bytes above") };
        let mut refill = Refill { thin: self, out: whole.into_vec(), start, marked };
        let result = edit(&mut refill.out, start);
        let len = refill.out.len().saturating_sub(start);
        drop(refill);
        assert!(len <= MAX_LEN, "{}", TooLong(len));
        Some(result)
    }

    /// The allocation, back in a safe owner, consuming this.
    fn into_owned(this: Thin<T>) -> Owned<T> {
        let this = ManuallyDrop::new(this);
        // SAFETY: `this` is never dropped or used again, so the allocation
        // has exactly one owner afterwards.
        unsafe { this.reclaim() }
    }

    /// Rebuild the owner of the allocation from the pointer.
    ///
    /// # Safety
    ///
    /// The caller must not use or drop `self` afterwards (only overwrite
    /// it without dropping it), or the allocation is freed twice.
    unsafe fn reclaim(&self) -> Owned<T> {
        if self.is_boxed() {
            // SAFETY: the untagged pointer came from Box::into_raw of a
            // Box<T> we own (invariant); the caller gives up `self`.
            Owned::Boxed(unsafe { Box::from_raw(self.boxed_ptr()) })
        } else {
            let (start, len) = self.header();
            let whole = ptr::slice_from_raw_parts_mut(self.base(), start + len);
            // SAFETY: the allocation is a Box<[u8]> of exactly prefix +
            // payload bytes starting at `ptr` (invariant), so this rebuilds
            // that box with its original layout; the caller gives up `self`.
            Owned::Bytes(unsafe { Box::from_raw(whole) })
        }
    }
}

/// Puts a byte string edited as a vector back into its [`Thin`] when
/// dropped, so a panic in the edit neither leaks nor frees twice.
struct Refill<'a, T> {
    /// The Thin whose allocation `out` now owns; stale until refilled.
    thin: &'a mut Thin<T>,
    /// The allocation: prefix, then payload from `start`.
    out: Vec<u8>,
    start: usize,
    /// The stale Thin's mark, which the new one keeps.
    marked: bool,
}

impl<T> Drop for Refill<'_, T> {
    fn drop(&mut self) {
        let mut out = std::mem::take(&mut self.out);
        out.truncate(self.start.saturating_add(MAX_LEN));
        let mut fresh = match Thin::seal(out, self.start) {
            Ok(thin) => thin,
            Err(_) => unreachable!("cut to MAX_LEN above"),
        };
        fresh.set_marked(self.marked);
        // The stale Thin's allocation was handed to `out` by `reclaim`:
        // forgetting it, not dropping it, is what keeps it freed once.
        std::mem::forget(std::mem::replace(self.thin, fresh));
    }
}

impl<T> Drop for Thin<T> {
    fn drop(&mut self) {
        // SAFETY: `self` is being dropped and is not used again.
        drop(unsafe { self.reclaim() });
    }
}

impl<T> From<Box<T>> for Thin<T> {
    fn from(value: Box<T>) -> Thin<T> {
        Thin::from_box(value)
    }
}

impl<T: Clone> Clone for Thin<T> {
    fn clone(&self) -> Thin<T> {
        match self.view() {
            View::Bytes(b) => match Thin::try_from_bytes(b) {
                Ok(thin) => thin,
                Err(_) => unreachable!("a held string is at most MAX_LEN"),
            },
            View::Boxed(v) => Thin::new_boxed(v.clone()),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Thin<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.view() {
            View::Bytes(b) => f.debug_tuple("Bytes").field(&b).finish(),
            View::Boxed(v) => f.debug_tuple("Boxed").field(v).finish(),
        }
    }
}

impl<T: PartialEq> PartialEq for Thin<T> {
    fn eq(&self, other: &Thin<T>) -> bool {
        self.view() == other.view()
    }
}

impl<T: Eq> Eq for Thin<T> {}

#[cfg(test)]
mod tests;
