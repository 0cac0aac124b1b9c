//! The script cache: every script `EVAL` ran or `SCRIPT LOAD` loaded, by
//! the SHA-1 of its body, for every thread.
//!
//! The bodies are server-wide, so a script loaded on one connection runs by
//! `EVALSHA` on any; each event loop compiles a body in its own Lua state
//! the first time it runs it. `SCRIPT FLUSH` empties the cache and moves
//! the generation on, which tells every loop to drop what it compiled
//! before it runs anything again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Scripts {
    bodies: Mutex<HashMap<[u8; 40], Arc<[u8]>>>,
    generation: AtomicU64,
}

impl Scripts {
    /// The body of the script named `sha`.
    pub fn get(&self, sha: &[u8; 40]) -> Option<Arc<[u8]>> {
        self.lock().get(sha).cloned()
    }

    /// Keep `body` under its name `sha`.
    pub fn insert(&self, sha: [u8; 40], body: &[u8]) {
        self.lock().entry(sha).or_insert_with(|| Arc::from(body));
    }

    /// Whether a script named `sha` is kept.
    pub fn contains(&self, sha: &[u8; 40]) -> bool {
        self.lock().contains_key(sha)
    }

    /// Forget every script (`SCRIPT FLUSH`).
    pub fn flush(&self) {
        let mut bodies = self.lock();
        bodies.clear();
        bodies.shrink_to_fit();
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// How many scripts are kept, and the bytes of their bodies.
    pub fn usage(&self) -> (usize, usize) {
        let bodies = self.lock();
        (bodies.len(), bodies.values().map(|b| b.len() + 40).sum())
    }

    /// Moves on at every flush: a loop that compiled scripts in an earlier
    /// generation drops them.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 40], Arc<[u8]>>> {
        self.bodies.lock().unwrap_or_else(|p| p.into_inner())
    }
}
