//! The function libraries (`FUNCTION LOAD`), server-wide, by name.
//!
//! The registry keeps each library's code and what it registered (names,
//! descriptions, flags), which is all `FUNCTION LIST`, `FCALL`'s checks,
//! the RDB file and `FUNCTION DUMP` need. The code runs in each event
//! loop's own Lua state: a loop that finds the generation moved on since
//! it last installed the libraries installs them all again before its
//! next `FCALL`, so a change made on one connection reaches every loop.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kvik_script::Registered;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Functions {
    libraries: Mutex<Libraries>,
    generation: AtomicU64,
}

/// One library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    pub name: Vec<u8>,
    /// The code as it was loaded, its `#!lua` line included.
    pub code: Arc<[u8]>,
    pub functions: Vec<Registered>,
}

/// The libraries, and which library each function name belongs to.
/// Function names are matched without regard to case, as Redis matches
/// them (`FCALL GET_IT` runs `get_it`); library names are not.
#[derive(Debug, Default)]
pub struct Libraries {
    by_name: BTreeMap<Vec<u8>, Arc<Library>>,
    /// By the function name in lowercase.
    owner: HashMap<Vec<u8>, Vec<u8>>,
}

impl Functions {
    /// Moves on at every change: a loop that installed an earlier
    /// generation installs the libraries again.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Every library, in name order.
    pub fn all(&self) -> Vec<Arc<Library>> {
        self.lock().by_name.values().cloned().collect()
    }

    /// Whether there is a library `name`.
    pub fn contains(&self, name: &[u8]) -> bool {
        self.lock().by_name.contains_key(name)
    }

    /// The flags of the function `name`, if there is one.
    pub fn flags_of(&self, name: &[u8]) -> Option<u8> {
        // Folded on the stack: FCALL asks this on every call.
        let mut folded = [0u8; 64];
        let key: std::borrow::Cow<'_, [u8]> = match folded.get_mut(..name.len()) {
            Some(buf) => {
                buf.copy_from_slice(name);
                buf.make_ascii_lowercase();
                std::borrow::Cow::Borrowed(buf)
            }
            None => std::borrow::Cow::Owned(name.to_ascii_lowercase()),
        };
        let l = self.lock();
        let lib = l.by_name.get(l.owner.get(&*key)?)?;
        lib.functions.iter().find(|f| f.name.eq_ignore_ascii_case(name)).map(|f| f.flags)
    }

    /// Every library's code, taken while `at` runs with the registry held
    /// (a snapshot takes its place in the order of changes there, so that
    /// a library change is in the snapshot or after it).
    pub fn codes_at(&self, at: impl FnOnce()) -> Vec<Arc<[u8]>> {
        let l = self.lock();
        at();
        l.by_name.values().map(|lib| Arc::clone(&lib.code)).collect()
    }

    /// How many libraries and functions there are.
    pub fn counts(&self) -> (usize, usize) {
        let l = self.lock();
        (l.by_name.len(), l.owner.len())
    }

    /// The bytes the libraries' code and names take.
    pub fn code_bytes(&self) -> usize {
        let l = self.lock();
        l.by_name.values().map(|lib| lib.code.len() + lib.name.len()).sum::<usize>()
            + l.owner.keys().map(Vec::len).sum::<usize>()
    }

    /// The libraries, to change; the generation moves on when the edit
    /// ends if anything changed.
    pub fn edit(&self) -> Edit<'_> {
        Edit { generation: &self.generation, libraries: self.lock(), changed: false }
    }

    fn lock(&self) -> MutexGuard<'_, Libraries> {
        self.libraries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The libraries held for a change (see [`Functions::edit`]).
pub struct Edit<'a> {
    generation: &'a AtomicU64,
    libraries: MutexGuard<'a, Libraries>,
    changed: bool,
}

impl Edit<'_> {
    /// The library `name`.
    pub fn get(&self, name: &[u8]) -> Option<&Arc<Library>> {
        self.libraries.by_name.get(name)
    }

    /// Every library, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Library>> {
        self.libraries.by_name.values()
    }

    /// Add `lib`, replacing the library of its name when `replace`;
    /// Redis's error when its name is taken or one of its functions
    /// belongs to another library. Nothing changes on an error.
    pub fn insert(&mut self, lib: Library, replace: bool) -> Result<(), Vec<u8>> {
        if !replace && self.libraries.by_name.contains_key(&lib.name) {
            return Err(already_exists(&lib.name));
        }
        for f in &lib.functions {
            if self.libraries.owner.get(&f.name.to_ascii_lowercase()).is_some_and(|owner| *owner != lib.name) {
                return Err([b"ERR Function ".as_slice(), &f.name, b" already exists"].concat());
            }
        }
        self.remove(&lib.name);
        for f in &lib.functions {
            self.libraries.owner.insert(f.name.to_ascii_lowercase(), lib.name.clone());
        }
        self.libraries.by_name.insert(lib.name.clone(), Arc::new(lib));
        self.changed = true;
        Ok(())
    }

    /// Take the library `name` out.
    pub fn remove(&mut self, name: &[u8]) -> Option<Arc<Library>> {
        let lib = self.libraries.by_name.remove(name)?;
        for f in &lib.functions {
            self.libraries.owner.remove(&f.name.to_ascii_lowercase());
        }
        self.changed = true;
        Some(lib)
    }

    /// Take every library out.
    pub fn clear(&mut self) {
        self.libraries.by_name.clear();
        self.libraries.owner.clear();
        self.changed = true;
    }
}

impl Drop for Edit<'_> {
    fn drop(&mut self) {
        if self.changed {
            self.generation.fetch_add(1, Ordering::Release);
        }
    }
}

/// Redis's error for a library name that is taken.
pub fn already_exists(name: &[u8]) -> Vec<u8> {
    [b"ERR Library '".as_slice(), name, b"' already exists"].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(name: &str, functions: &[&str]) -> Library {
        Library {
            name: name.as_bytes().to_vec(),
            code: Arc::from(name.as_bytes()),
            functions: functions
                .iter()
                .map(|f| Registered { name: f.as_bytes().to_vec(), description: None, flags: 0 })
                .collect(),
        }
    }

    #[test]
    fn names_stay_unique_across_libraries() {
        let f = Functions::default();
        let g0 = f.generation();
        f.edit().insert(lib("a", &["f1", "f2"]), false).expect("new");
        assert!(f.generation() > g0);
        assert_eq!(f.edit().insert(lib("a", &["f3"]), false), Err(b"ERR Library 'a' already exists".to_vec()));
        assert_eq!(f.edit().insert(lib("b", &["f2"]), false), Err(b"ERR Function f2 already exists".to_vec()));
        let g1 = f.generation();
        f.edit().insert(lib("a", &["f2", "f9"]), true).expect("replaced");
        assert_eq!(f.counts(), (1, 2));
        f.edit().insert(lib("b", &["f1"]), false).expect("f1 is free again");
        assert_eq!(f.edit().insert(lib("c", &["F1"]), false), Err(b"ERR Function F1 already exists".to_vec()));
        assert_eq!(f.flags_of(b"F1"), Some(0));
        assert!(f.generation() > g1);
        assert_eq!(f.edit().remove(b"a").map(|l| l.name.clone()), Some(b"a".to_vec()));
        assert_eq!(f.counts(), (1, 1));
        let g2 = f.generation();
        assert!(f.edit().remove(b"nope").is_none());
        assert_eq!(f.generation(), g2, "nothing changed");
    }
}
