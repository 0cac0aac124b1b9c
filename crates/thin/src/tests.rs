use super::*;
use std::cell::Cell;
use std::rc::Rc;

/// A boxed value that counts its drops (and its clones through the count
/// of live values).
#[derive(Debug)]
struct Counted {
    value: u64,
    drops: Rc<Cell<usize>>,
}

impl Clone for Counted {
    fn clone(&self) -> Counted {
        Counted { value: self.value, drops: Rc::clone(&self.drops) }
    }
}

impl PartialEq for Counted {
    fn eq(&self, other: &Counted) -> bool {
        self.value == other.value
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

fn counted(value: u64) -> (Thin<Counted>, Rc<Cell<usize>>) {
    let drops = Rc::new(Cell::new(0));
    (Thin::new_boxed(Counted { value, drops: Rc::clone(&drops) }), drops)
}

fn bytes(b: &[u8]) -> Thin<u64> {
    Thin::try_from_bytes(b).expect("short enough")
}

#[test]
fn a_thin_pointer_is_one_word_and_so_is_an_option_of_one() {
    assert_eq!(std::mem::size_of::<Thin<u64>>(), std::mem::size_of::<usize>());
    assert_eq!(std::mem::size_of::<Option<Thin<[u64; 4]>>>(), std::mem::size_of::<usize>());
}

#[test]
fn byte_strings_of_every_prefix_form_read_back() {
    for len in [0, 1, 3, 64, 253, 254, 255, 256, 1000, 70_000] {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let t = bytes(&data);
        assert!(!t.is_boxed());
        assert_eq!(t.bytes(), Some(&data[..]), "len {len}");
        assert_eq!(t.view(), View::Bytes(&data[..]));
        assert_eq!(t.boxed(), None);
        assert_eq!(t.heap_size(), len + if len < 255 { 1 } else { 5 });
    }
}

#[test]
fn bytes_change_in_place_without_touching_the_length() {
    let mut t = bytes(b"hello");
    t.bytes_mut().expect("bytes")[0] = b'j';
    assert_eq!(t.bytes(), Some(&b"jello"[..]));
    let ViewMut::Bytes(b) = t.view_mut() else { panic!("not bytes") };
    b.copy_from_slice(b"world");
    assert_eq!(t.bytes(), Some(&b"world"[..]));
    let mut empty = bytes(b"");
    assert_eq!(empty.bytes_mut(), Some(&mut [][..]));
    assert!(empty.boxed_mut().is_none());
}

#[test]
fn building_in_place_writes_the_prefix_for_the_final_length() {
    // Exactly as announced, fewer, and more: across the one/five-byte
    // prefix boundary both ways.
    for (capacity, written) in [(10, 10), (10, 3), (10, 0), (10, 300), (300, 300), (300, 20), (0, 254), (0, 255)] {
        let t: Thin<u64> = Thin::try_build(capacity, |out| out.extend((0..written).map(|i| i as u8))).expect("fits");
        let want: Vec<u8> = (0..written).map(|i| i as u8).collect();
        assert_eq!(t.bytes(), Some(&want[..]), "capacity {capacity}, written {written}");
    }
    // A closure that breaks the rule and truncates the prefix away gets an
    // empty string, nothing worse.
    let t: Thin<u64> = Thin::try_build(4, Vec::clear).expect("fits");
    assert_eq!(t.bytes(), Some(&[][..]));
}

#[test]
fn strings_longer_than_the_prefix_allows_are_refused() {
    assert_eq!(TooLong(5).to_string(), format!("5 bytes do not fit a thin pointer (at most {MAX_LEN})"));
    if cfg!(target_pointer_width = "64") {
        // vec! of zeros is a calloc: 4 GiB of address space whose pages are
        // never touched, since the length is refused before any copy.
        let too_long = vec![0u8; MAX_LEN + 1];
        assert_eq!(Thin::<u64>::seal(too_long, 0).err(), Some(TooLong(MAX_LEN + 1)));
        let at_most = vec![0u8; 10];
        assert_eq!(Thin::<u64>::seal(at_most, 0).map(|t| t.heap_size()), Ok(11));
    }
}

#[test]
fn boxed_values_are_borrowed_changed_and_given_back() {
    let (mut t, drops) = counted(7);
    assert!(t.is_boxed());
    assert_eq!(t.boxed().map(|c| c.value), Some(7));
    assert_eq!(t.bytes(), None);
    assert_eq!(t.bytes_mut(), None);
    t.boxed_mut().expect("boxed").value = 8;
    let ViewMut::Boxed(c) = t.view_mut() else { panic!("not boxed") };
    c.value += 1;
    assert_eq!(t.heap_size(), std::mem::size_of::<Counted>());
    let b = t.into_box().expect("boxed");
    assert_eq!((b.value, drops.get()), (9, 0));
    let again = Thin::from(b);
    assert_eq!(again.boxed().map(|c| c.value), Some(9));
    drop(again);
    assert_eq!(drops.get(), 1);
    let t = bytes(b"abc");
    let t = t.into_box().expect_err("bytes come back");
    assert_eq!(t.bytes(), Some(&b"abc"[..]));
}

#[test]
fn clones_own_their_copies_and_each_is_dropped_once() {
    let (t, drops) = counted(3);
    let c = t.clone();
    assert_eq!(t, c);
    assert_ne!(t.boxed().map(|v| v as *const Counted), c.boxed().map(|v| v as *const Counted));
    drop(t);
    assert_eq!(drops.get(), 1);
    assert_eq!(c.boxed().map(|v| v.value), Some(3));
    drop(c);
    assert_eq!(drops.get(), 2);

    let long = vec![b'x'; 600];
    for data in [&b""[..], b"abc", &long] {
        let t = bytes(data);
        let mut c = t.clone();
        assert_eq!(t, c);
        if let Some(b) = c.bytes_mut().and_then(|b| b.first_mut()) {
            *b = b'y';
            assert_ne!(t, c);
        }
        assert_eq!(t.bytes(), Some(data));
    }
}

#[test]
fn equality_compares_contents_and_kinds() {
    let (a, _) = counted(1);
    let (b, _) = counted(1);
    let (c, _) = counted(2);
    assert!(a == b && a != c);
    let x: Thin<Counted> = Thin::try_from_bytes(b"1").expect("fits");
    assert!(x != a);
    assert!(a != x);
    assert_eq!(x, Thin::try_from_bytes(b"1").expect("fits"));
    assert_eq!(format!("{x:?}"), "Bytes([49])");
    assert!(format!("{a:?}").starts_with("Boxed(Counted { value: 1"));
}

#[test]
fn edits_grow_and_shrink_strings_across_the_prefix_forms() {
    let mut t = bytes(b"key");
    let n = t.edit_vec(|v, at| {
        assert_eq!((at, &v[at..]), (1, &b"key"[..]));
        v.extend_from_slice(&[b'z'; 300]);
        v.len()
    });
    assert_eq!(n, Some(1 + 303));
    assert_eq!(t.bytes().map(<[u8]>::len), Some(303));
    assert_eq!(t.heap_size(), 5 + 303);
    t.edit_vec(|v, at| {
        assert_eq!(at, 5);
        v.truncate(at + 2);
    });
    assert_eq!(t.bytes(), Some(&b"ke"[..]));
    t.edit_vec(|v, at| v[at] = b'K');
    assert_eq!(t.bytes(), Some(&b"Ke"[..]));
    t.edit_vec(|v, _| v.clear());
    assert_eq!(t.bytes(), Some(&[][..]));
    let (mut boxed, drops) = counted(1);
    assert_eq!(boxed.edit_vec(|_, _| unreachable!("not bytes")), None::<()>);
    drop(boxed);
    assert_eq!(drops.get(), 1);
}

#[test]
fn a_panic_inside_an_edit_leaves_a_valid_string() {
    let mut t = bytes(b"abc");
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        t.edit_vec(|v, _| {
            v.extend_from_slice(&[b'd'; 400]);
            panic!("edit failed");
        })
    }));
    assert!(caught.is_err());
    let got = t.bytes().expect("bytes");
    assert_eq!((&got[..3], got.len()), (&b"abc"[..], 403));
}

#[test]
fn the_mark_is_kept_through_changes_and_left_out_of_copies() {
    let mut t = bytes(b"key");
    assert!(!t.is_marked(), "a new Thin is unmarked");
    t.set_marked(true);
    assert_eq!((t.is_marked(), t.bytes(), t.is_boxed()), (true, Some(&b"key"[..]), false));
    // Growing across the prefix forms moves the allocation.
    t.edit_vec(|v, _| v.extend_from_slice(&[b'z'; 600]));
    assert_eq!((t.is_marked(), t.bytes().map(<[u8]>::len), t.addr() % 4), (true, Some(603), 0));
    t.bytes_mut().expect("bytes")[0] = b'K';
    assert_eq!(&t.bytes().expect("bytes")[..3], b"Key");
    assert!(!t.clone().is_marked(), "a copy is a new Thin");
    t.set_marked(false);
    assert!(!t.is_marked());
    t.set_marked(true);
    drop(t);

    let (mut boxed, drops) = counted(7);
    boxed.set_marked(true);
    assert_eq!((boxed.is_marked(), boxed.is_boxed()), (true, true));
    assert_eq!(boxed.boxed().map(|c| c.value), Some(7));
    boxed.boxed_mut().expect("boxed").value = 8;
    boxed.set_marked(false);
    assert_eq!((boxed.is_marked(), boxed.boxed().map(|c| c.value)), (false, Some(8)));
    boxed.set_marked(true);
    let inner = boxed.into_box().map_err(|_| "boxed").expect("boxed");
    assert_eq!(inner.value, 8);
    drop(inner);
    assert_eq!(drops.get(), 1, "a marked box is freed once");
}

#[test]
fn thin_pointers_move_between_threads() {
    let t: Thin<String> = Thin::new_boxed("boxed".to_owned());
    let b: Thin<String> = Thin::try_from_bytes(b"bytes").expect("fits");
    let (t, b) = std::thread::spawn(move || (t, b)).join().expect("thread");
    assert_eq!((t.boxed().map(String::as_str), b.bytes()), (Some("boxed"), Some(&b"bytes"[..])));
    let shared = std::sync::Arc::new(b);
    let s2 = std::sync::Arc::clone(&shared);
    std::thread::spawn(move || assert_eq!(s2.bytes(), Some(&b"bytes"[..]))).join().expect("thread");
}

#[test]
fn many_values_of_both_kinds_are_freed() {
    // Under valgrind this is the leak check for a realistic mix.
    let drops = Rc::new(Cell::new(0));
    let mut all: Vec<Thin<Counted>> = Vec::new();
    for i in 0..1000u64 {
        if i % 3 == 0 {
            all.push(Thin::new_boxed(Counted { value: i, drops: Rc::clone(&drops) }));
        } else {
            let len = (i as usize * 7) % 600;
            all.push(Thin::try_build(len, |v| v.resize(v.len() + len, i as u8)).expect("fits"));
        }
    }
    for t in all.iter_mut().skip(1).step_by(5) {
        t.edit_vec(|v, _| v.push(1));
    }
    for t in all.iter_mut().step_by(2) {
        t.set_marked(true);
    }
    let copies = all.clone();
    drop(all);
    assert_eq!(drops.get(), 334);
    drop(copies);
    assert_eq!(drops.get(), 668);
}
