//! The script cache: every script `EVAL` ran or `SCRIPT LOAD` loaded, by
//! the SHA-1 of its body, for every thread.
//!
//! The bodies are server-wide, so a script loaded on one connection runs by
//! `EVALSHA` on any; each event loop compiles a body in its own Lua state
//! the first time it runs it. `SCRIPT FLUSH` empties the cache and moves
//! the generation on, which tells every loop to drop what it compiled
//! before it runs anything again.
//!
//! Also the scripts running now, one slot per event loop (a loop runs one
//! script at a time): who runs it and its [`Watch`], through which
//! `SCRIPT KILL` and `SHUTDOWN NOSAVE` reach it from other threads, and
//! which says when it has run past `busy-reply-threshold`. Commands that
//! need a busy script's shards are then answered `BUSY` instead of
//! waiting, and new connections go to loops that are not busy.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kvik_script::Watch;

/// See the module documentation.
#[derive(Debug)]
pub struct Scripts {
    bodies: Mutex<HashMap<[u8; 40], Arc<[u8]>>>,
    generation: AtomicU64,
    /// Scripts past `busy-reply-threshold` now, server-wide.
    busy_total: Arc<AtomicUsize>,
    /// One per event loop, and a last one for any other thread.
    slots: Box<[RunSlot]>,
    /// cjson's settings, the same for every loop's scripts.
    cjson: Arc<kvik_script::CjsonSettings>,
}

/// The script an event loop runs, if any.
#[derive(Debug)]
pub struct RunSlot {
    /// The client running it (0: none).
    client: AtomicU64,
    watch: Arc<Watch>,
    /// The function running, when it is one (`FCALL`): what `FUNCTION
    /// STATS` shows, and which `KILL` stops it.
    function: Mutex<FunctionSlot>,
}

/// A function run, as `FUNCTION STATS` shows it.
#[derive(Debug, Clone)]
pub struct FunctionRun {
    pub name: Vec<u8>,
    /// The command that runs it, its arguments included.
    pub command: Vec<Vec<u8>>,
    pub started: Instant,
}

/// A function call as it starts: its name and the command's arguments.
#[derive(Debug, Clone, Copy)]
pub struct FunctionCall<'a> {
    pub name: &'a [u8],
    /// `FCALL`, the name and `numkeys` as sent.
    pub head: [&'a [u8]; 3],
    pub keys: &'a [&'a [u8]],
    pub args: &'a [&'a [u8]],
}

/// The function a slot runs, in buffers kept from run to run (a call
/// writes into them; nothing is allocated once they have grown).
#[derive(Debug, Default)]
struct FunctionSlot {
    /// Since when a function runs (`None`: none does).
    started: Option<Instant>,
    name: Vec<u8>,
    /// The command's arguments end to end, and where each ends.
    command: Vec<u8>,
    ends: Vec<usize>,
}

impl FunctionSlot {
    fn set(&mut self, call: &FunctionCall<'_>) {
        self.name.clear();
        self.name.extend_from_slice(call.name);
        self.command.clear();
        self.ends.clear();
        for arg in call.head.iter().chain(call.keys).chain(call.args) {
            self.command.extend_from_slice(arg);
            self.ends.push(self.command.len());
        }
        self.started = Some(Instant::now());
    }

    fn run(&self) -> Option<FunctionRun> {
        let started = self.started?;
        let mut from = 0;
        let command = self
            .ends
            .iter()
            .map(|&end| {
                let arg = self.command[from..end].to_vec();
                from = end;
                arg
            })
            .collect();
        Some(FunctionRun { name: self.name.clone(), command, started })
    }
}

impl RunSlot {
    /// This slot's watch, for the run that starts.
    pub fn watch(&self) -> &Arc<Watch> {
        &self.watch
    }
}

/// What `SCRIPT KILL` or `FUNCTION KILL` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Kill {
    /// No script is busy.
    NotBusy,
    /// A busy script has written: it cannot be stopped.
    Unkillable,
    /// The busy scripts are of the other kind (functions for `SCRIPT
    /// KILL`, scripts for `FUNCTION KILL`).
    OtherKind,
    /// Every busy script was told to stop.
    Killed,
}

/// Redis's answers to a command while a script is busy, and while a
/// function is.
pub const BUSY_SCRIPT: &[u8] =
    b"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub const BUSY_FUNCTION: &[u8] =
    b"BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

impl Scripts {
    /// The cache and run slots for a server of `loops` event loops.
    pub fn new(loops: usize) -> Scripts {
        let busy_total = Arc::new(AtomicUsize::new(0));
        let slots = (0..=loops)
            .map(|_| RunSlot {
                client: AtomicU64::new(0),
                watch: Arc::new(Watch::new(Arc::clone(&busy_total))),
                function: Mutex::default(),
            })
            .collect();
        Scripts { bodies: Mutex::default(), generation: AtomicU64::new(0), busy_total, slots, cjson: Arc::default() }
    }

    /// The slot of loop `index` (any other thread shares the last one).
    pub fn slot(&self, index: Option<usize>) -> &RunSlot {
        let last = self.slots.len() - 1;
        &self.slots[index.unwrap_or(last).min(last)]
    }

    /// A script of `client` starts in `slot` (`function`: the function
    /// it is, if it is one).
    pub fn started(&self, slot: &RunSlot, client: u64, function: Option<FunctionCall<'_>>) {
        if let Some(call) = function {
            lock(&slot.function).set(&call);
        }
        slot.client.store(client, Ordering::Relaxed);
    }

    /// The script in `slot` ended.
    pub fn ended(&self, slot: &RunSlot, function: bool) {
        if function {
            lock(&slot.function).started = None;
        }
        slot.client.store(0, Ordering::Relaxed);
        if slot.watch.busy.swap(false, Ordering::Relaxed) {
            self.busy_total.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether any script is past `busy-reply-threshold`: one relaxed
    /// load, which every command pays.
    #[inline]
    pub fn any_busy(&self) -> bool {
        self.busy_total.load(Ordering::Relaxed) > 0
    }

    /// Whether `client` runs a script that is past the threshold.
    pub fn busy_client(&self, client: u64) -> bool {
        client != 0
            && self
                .slots
                .iter()
                .any(|s| s.client.load(Ordering::Relaxed) == client && s.watch.busy.load(Ordering::Relaxed))
    }

    /// Whether loop `index` runs a busy script (new connections go elsewhere).
    pub fn loop_busy(&self, index: usize) -> bool {
        self.slots.get(index).is_some_and(|s| s.watch.busy.load(Ordering::Relaxed))
    }

    /// `SCRIPT KILL` (`functions` false) or `FUNCTION KILL` (true): stop
    /// every busy run of that kind, if none has written.
    pub fn kill(&self, functions: bool) -> Kill {
        let busy: Vec<&RunSlot> = self.slots.iter().filter(|s| s.watch.busy.load(Ordering::Relaxed)).collect();
        if busy.is_empty() {
            return Kill::NotBusy;
        }
        if busy.iter().any(|s| s.watch.wrote.load(Ordering::Relaxed)) {
            return Kill::Unkillable;
        }
        let ours: Vec<&&RunSlot> = busy.iter().filter(|s| lock(&s.function).started.is_some() == functions).collect();
        if ours.is_empty() {
            return Kill::OtherKind;
        }
        ours.iter().for_each(|s| s.watch.kill.store(true, Ordering::Relaxed));
        Kill::Killed
    }

    /// What a command that must wait for a busy run is answered: Redis's
    /// text for a busy function when one is, else for a busy script.
    pub fn busy_reply(&self) -> &'static [u8] {
        let function_busy =
            self.slots.iter().any(|s| s.watch.busy.load(Ordering::Relaxed) && lock(&s.function).started.is_some());
        if function_busy {
            BUSY_FUNCTION
        } else {
            BUSY_SCRIPT
        }
    }

    /// The function running longest now, if any (`FUNCTION STATS`).
    pub fn running_function(&self) -> Option<FunctionRun> {
        self.slots.iter().filter_map(|s| lock(&s.function).run()).min_by_key(|run| run.started)
    }

    /// Wait, at most `limit`, until no script runs (after [`Scripts::halt_all`]).
    pub fn wait_idle(&self, limit: std::time::Duration) {
        let deadline = std::time::Instant::now() + limit;
        while self.slots.iter().any(|s| s.client.load(Ordering::Relaxed) != 0) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// `SHUTDOWN NOSAVE`: stop every script, written or not.
    pub fn halt_all(&self) {
        self.slots.iter().for_each(|s| s.watch.halt.store(true, Ordering::Relaxed));
    }

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

    /// cjson's settings, for a loop's engine.
    pub fn cjson(&self) -> &Arc<kvik_script::CjsonSettings> {
        &self.cjson
    }

    /// Forget every script (`SCRIPT FLUSH`), and what scripts set of
    /// cjson's settings.
    pub fn flush(&self) {
        self.cjson.reset();
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
        lock(&self.bodies)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
