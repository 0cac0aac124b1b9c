//! `INFO [section ...]`, in Redis 7.0's layout.
//!
//! Monitoring tools, client libraries and operators' scripts parse this text
//! line by line (`field:value`), so kvik prints the same sections, in the same
//! order, with the same field names. Values kvik does not track (replication
//! offsets, fork statistics) are printed as an idle Redis prints them.
//!
//! Fields left out, because kvik has no true value for them:
//! - `redis_build_id`: no build of kvik has one; `expired_stale_perc`:
//!   Redis's estimate from its expiry cycle's samples, which kvik's cycle
//!   (it walks the keys in deadline order) does not take;
//! - `gcc_version`: kvik is built by rustc, not by a C compiler, and Redis's
//!   `0.0.0` for "not GCC" reads as a version;
//! - the Lua states' memory (`used_memory_lua`, `used_memory_lua_human`,
//!   `used_memory_vm_eval`, `used_memory_vm_functions`,
//!   `used_memory_vm_total`, `used_memory_vm_total_human`): each event
//!   loop has a Lua state of its own, whose memory kvik does not count
//!   yet. What the caches hold is printed: `used_memory_scripts_eval` (the
//!   bodies in the script cache, with their names),
//!   `used_memory_functions` (the libraries' code and the names of the
//!   libraries and functions), `used_memory_scripts` (the two together),
//!   `number_of_cached_scripts`, `number_of_functions`,
//!   `number_of_libraries`.
//!
//! - the memory fields kvik cannot measure with the system allocator, which
//!   keeps no statistics: `used_memory_peak*`, `used_memory_overhead`,
//!   `allocator_*`, `rss_overhead_*`, `mem_fragmentation_ratio` and
//!   `mem_fragmentation_bytes` (a ratio of RSS to a figure that leaves out
//!   the server's own memory would read as fragmentation that is not
//!   there).
//!
//! `used_memory` is what kvik measures of its memory: the running estimate
//! of its data (`used_memory_dataset`) and the bytes its clients' buffers
//! hold (`mem_clients_normal`, the sum of `CLIENT LIST`'s `tot-mem`, kept
//! by each connection as its buffers grow; see [`crate::registries::clients`]). It is
//! the same figure `maxmemory` is checked against
//! ([`ServerState::used_memory`]), so that a server never sits above
//! `maxmemory` by its own INFO without evicting, and client buffers make
//! room for themselves by eviction as in Redis. `used_memory_startup` is
//! what that figure was before any client connected, 0.
//!
//! `client_recent_max_input_buffer` and `client_recent_max_output_buffer`
//! are the largest query buffer and reply buffer a client holds now (by
//! capacity). Redis reports the largest of the last few seconds; kvik's
//! buffers keep their size while the client stays, so the largest now is
//! also the largest of those seconds for every client still connected.
//!
//! `avg_ttl` in the keyspace section is the exact mean time left to the
//! deadlines of a database's keys that have one (Redis gives an estimate
//! its expiry cycle smooths, which starts at 0); `expire_cycle_cpu_milliseconds`
//! is the time the active expiry cycle's ticks have run, on their own
//! thread, and `expired_time_cap_reached_count` the ticks that stopped at
//! their 25 ms budget.
//!
//! `latencystats` gives each command's percentiles
//! (`latency-tracking-info-percentiles`) from its duration histogram
//! ([`crate::metrics::histogram`]: at most 6.25% above the measured durations), and
//! only its header while `latency-tracking` is off, as Redis.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use super::{Ctx, ReplyTarget};
use crate::metrics::stats::unix_micros;
use crate::state::ServerState;
use crate::{KVIK_VERSION, REDIS_VERSION};

/// Every section, in the order Redis prints them.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// Sections left out of the default set.
const NOT_DEFAULT: &[&str] = &["commandstats", "latencystats"];

/// `INFO [section ...]`.
pub fn info<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mut wanted = [false; SECTIONS.len()];
    if c.argc() == 1 {
        select_default(&mut wanted);
    }
    for i in 1..c.argc() {
        let arg = c.arg(i).to_ascii_lowercase();
        match arg.as_slice() {
            b"default" => select_default(&mut wanted),
            b"all" | b"everything" => wanted = [true; SECTIONS.len()],
            name => {
                if let Some(at) = SECTIONS.iter().position(|s| s.as_bytes() == name) {
                    wanted[at] = true;
                }
            }
        }
    }
    let text = render(c.state, &wanted);
    c.reply(|s| s.verbatim(b"txt", text.as_bytes()));
}

fn select_default(wanted: &mut [bool]) {
    for (w, s) in wanted.iter_mut().zip(SECTIONS) {
        if !NOT_DEFAULT.contains(s) {
            *w = true;
        }
    }
}

/// The text of the chosen sections, separated by blank lines.
pub fn render(state: &ServerState, wanted: &[bool]) -> String {
    let mut out = String::new();
    let mut first = true;
    for (name, _) in SECTIONS.iter().zip(wanted).filter(|(_, w)| **w) {
        if !first {
            out.push_str("\r\n");
        }
        first = false;
        section(state, name, &mut out);
    }
    out
}

/// Redis's `bytesToHuman`: `993.59K`, `11.71M`.
pub fn human_bytes(n: u64) -> String {
    let units = [(1u64 << 60, 'E'), (1 << 50, 'P'), (1 << 40, 'T'), (1 << 30, 'G'), (1 << 20, 'M'), (1 << 10, 'K')];
    for (size, unit) in units {
        if n >= size {
            return format!("{:.2}{unit}", n as f64 / size as f64);
        }
    }
    format!("{n}B")
}

/// A random 40-hex-digit id, fixed for the life of the process (`run_id`, `master_replid`).
fn random_hex(slot: &'static OnceLock<String>) -> &'static str {
    slot.get_or_init(crate::registries::replication::hex_id)
}

/// CPU seconds (user, system) of the process (or its children), from `/proc`.
fn cpu_times(path: &str, children: bool) -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string(path) else {
        return (0.0, 0.0);
    };
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime is field 14 of the full line, i.e. index 11 after the name and state.
    let base = if children { 13 } else { 11 };
    let tick = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(base), tick(base + 1))
}

fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn os_line() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        other => other,
    };
    format!("{os} {} {}", release.trim(), std::env::consts::ARCH)
}

/// `used_memory`: the dataset estimate and the client buffers, which
/// `maxmemory` is checked against ([`ServerState::used_memory`]).
pub fn used_memory(state: &ServerState) -> usize {
    state.used_memory()
}

/// Bytes held by the data: the keyspace's running estimate, summed from
/// [`crate::keyspace::db::charge`] over every key. Reading it is one
/// atomic load.
pub fn dataset_bytes(state: &ServerState) -> usize {
    state.keyspace.used_memory()
}

/// `mem_clients_normal`: bytes the clients' buffers hold.
pub fn client_bytes(state: &ServerState) -> usize {
    state.clients.memory()
}

/// `used_memory_dataset_perc`: the data's share of `used_memory`, as
/// Redis prints it (there of the memory above startup, which is 0 here).
fn dataset_percent(dataset: usize, used: usize) -> f64 {
    if used == 0 {
        return 0.0;
    }
    dataset as f64 * 100.0 / used as f64
}

/// The largest query buffer and reply buffer any client holds now.
fn largest_client_buffers(state: &ServerState) -> (usize, usize) {
    state
        .clients
        .snapshot()
        .iter()
        .map(|h| h.buffers.figures())
        .fold((0, 0), |(input, output), f| (input.max(f.qbuf_cap), output.max(f.rbs)))
}

fn section(state: &ServerState, name: &str, out: &mut String) {
    let stats = &state.stats;
    let now_us = unix_micros();
    let uptime = stats.started.elapsed().as_secs();
    let title = match name {
        "cpu" => "CPU".to_string(),
        other => {
            let mut t = other.to_string();
            t[..1].make_ascii_uppercase();
            t
        }
    };
    let _ = write!(out, "# {title}\r\n");
    let mut line = |k: &str, v: &dyn std::fmt::Display| {
        let _ = write!(out, "{k}:{v}\r\n");
    };
    match name {
        "server" => {
            static RUN_ID: OnceLock<String> = OnceLock::new();
            line("redis_version", &REDIS_VERSION);
            line("kvik_version", &KVIK_VERSION);
            line("redis_git_sha1", &"00000000");
            line("redis_git_dirty", &0);
            line("redis_mode", &"standalone");
            line("os", &os_line());
            line("arch_bits", &(usize::BITS));
            line("monotonic_clock", &"POSIX clock_gettime");
            line("multiplexing_api", &"epoll");
            line("atomicvar_api", &"c11-builtin");
            line("process_id", &std::process::id());
            line("process_supervised", &"no");
            line("run_id", &random_hex(&RUN_ID));
            line("tcp_port", &state.port.load(Ordering::Relaxed));
            line("server_time_usec", &now_us);
            line("uptime_in_seconds", &uptime);
            line("uptime_in_days", &(uptime / 86400));
            let hz = state.config().int("hz");
            line("hz", &hz);
            line("configured_hz", &hz);
            line("lru_clock", &((now_us / 1_000_000) & ((1 << 24) - 1)));
            let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
            line("executable", &exe);
            let file = state.config_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
            line("config_file", &file);
            line("io_threads_active", &0);
        }
        "clients" => {
            line("connected_clients", &state.clients.len());
            line("cluster_connections", &0);
            line("maxclients", &state.config().int("maxclients"));
            let (input, output) = largest_client_buffers(state);
            line("client_recent_max_input_buffer", &input);
            line("client_recent_max_output_buffer", &output);
            line("blocked_clients", &(state.blocking.blocked() + state.pause.held_clients()));
            line("tracking_clients", &state.tracking.clients_on());
            line("clients_in_timeout_table", &state.blocking.with_timeout());
        }
        "memory" => {
            // Read once: the dataset and the clients' share add up to `used`.
            let (dataset, clients) = (dataset_bytes(state), client_bytes(state));
            let used = (dataset + clients) as u64;
            let rss = crate::housekeeping::heap_return::resident_bytes();
            let system = total_system_memory();
            line("used_memory", &used);
            line("used_memory_human", &human_bytes(used));
            line("used_memory_rss", &rss);
            line("used_memory_rss_human", &human_bytes(rss));
            line("used_memory_startup", &0);
            line("used_memory_dataset", &dataset);
            line("used_memory_dataset_perc", &format!("{:.2}%", dataset_percent(dataset, used as usize)));
            line("total_system_memory", &system);
            line("total_system_memory_human", &human_bytes(system));
            let (scripts, script_bytes) = state.scripts.usage();
            line("used_memory_scripts_eval", &script_bytes);
            line("number_of_cached_scripts", &scripts);
            let (libraries, functions) = state.functions.counts();
            let function_bytes = state.functions.code_bytes();
            line("number_of_functions", &functions);
            line("number_of_libraries", &libraries);
            line("used_memory_functions", &function_bytes);
            let cached = (script_bytes + function_bytes) as u64;
            line("used_memory_scripts", &cached);
            line("used_memory_scripts_human", &human_bytes(cached));
            let (maxmemory, policy) = {
                let config = state.config();
                (config.usize("maxmemory") as u64, config.get("maxmemory-policy").to_string())
            };
            line("maxmemory", &maxmemory);
            line("maxmemory_human", &human_bytes(maxmemory));
            line("maxmemory_policy", &policy);
            // The stream's buffer is the backlog and what replicas still
            // have to send, one buffer; a replica's connection holds only
            // a slice of it while it sends.
            let stream_bytes = state.replication.backlog().histlen;
            line("mem_not_counted_for_evict", &0);
            line("mem_replication_backlog", &stream_bytes);
            line("mem_total_replication_buffers", &stream_bytes);
            line("mem_clients_slaves", &0);
            line("mem_clients_normal", &clients);
            line("mem_cluster_links", &0);
            line("mem_aof_buffer", &state.journal.queued_bytes());
            line("mem_allocator", &"libc");
            line("active_defrag_running", &0);
            line("lazyfree_pending_objects", &0);
            line("lazyfreed_objects", &0);
        }
        "persistence" => {
            let bg = state.saver.progress();
            line("loading", &0);
            line("async_loading", &0);
            // There is no fork: what a background save costs in memory is
            // the keys it copied before a change (see
            // `persistence::background`), reported where Redis reports
            // the pages copied on write.
            line("current_cow_peak", &if bg.in_progress { bg.copied } else { 0 });
            line("current_cow_size", &if bg.in_progress { bg.copied } else { 0 });
            line("current_cow_size_age", &0);
            let perc = if bg.in_progress && bg.keys_total > 0 {
                bg.keys_done as f64 * 100.0 / bg.keys_total as f64
            } else {
                0.0
            };
            line("current_fork_perc", &format!("{perc:.2}"));
            line("current_save_keys_processed", &if bg.in_progress { bg.keys_done } else { 0 });
            line("current_save_keys_total", &if bg.in_progress { bg.keys_total } else { 0 });
            line("rdb_changes_since_last_save", &stats.dirty());
            line("rdb_bgsave_in_progress", &i32::from(bg.in_progress));
            line("rdb_last_save_time", &stats.lastsave.load(Ordering::Relaxed));
            line("rdb_last_bgsave_status", &if stats.last_save_ok.load(Ordering::Relaxed) { "ok" } else { "err" });
            line("rdb_last_bgsave_time_sec", &bg.last_secs);
            line("rdb_current_bgsave_time_sec", &bg.current_secs);
            line("rdb_saves", &stats.rdb_saves.load(Ordering::Relaxed));
            line("rdb_last_cow_size", &bg.last_copied);
            line("rdb_last_load_keys_expired", &stats.loaded_expired.load(Ordering::Relaxed));
            line("rdb_last_load_keys_loaded", &stats.loaded_keys.load(Ordering::Relaxed));
            let aof = &state.append_only;
            let rw = aof.rewrites.progress();
            line("aof_enabled", &i32::from(aof.enabled()));
            line("aof_rewrite_in_progress", &i32::from(rw.in_progress));
            line("aof_rewrite_scheduled", &i32::from(rw.scheduled));
            line("aof_last_rewrite_time_sec", &rw.last_secs);
            line("aof_current_rewrite_time_sec", &rw.current_secs);
            line("aof_last_bgrewrite_status", &if rw.last_ok { "ok" } else { "err" });
            line("aof_rewrites", &rw.done);
            line("aof_rewrites_consecutive_failures", &rw.consecutive_failures);
            line("aof_last_write_status", &if aof.write_ok() { "ok" } else { "err" });
            // What the rewrite's snapshot copied for changes, as for BGSAVE.
            line("aof_last_cow_size", &rw.last_copied);
            for k in ["module_fork_in_progress", "module_fork_last_cow_size"] {
                line(k, &0);
            }
            if aof.enabled() {
                let (current, base, delayed) = aof.sizes();
                line("aof_current_size", &current);
                line("aof_base_size", &base);
                line("aof_pending_rewrite", &i32::from(rw.scheduled));
                line("aof_buffer_length", &state.journal.queued_bytes());
                // kvik's writer flushes to disk itself: no fsync waits in
                // another thread.
                line("aof_pending_bio_fsync", &0);
                line("aof_delayed_fsync", &delayed);
            }
        }
        "stats" => {
            let ks = &state.keyspace;
            let expired: u64 =
                (0..ks.shard_count()).map(|i| ks.lock(i).dbs().iter().map(|d| d.expired_count()).sum::<u64>()).sum();
            line("total_connections_received", &stats.total_connections.load(Ordering::Relaxed));
            line("total_commands_processed", &stats.total_commands());
            let net = stats.net();
            let rates = stats.rates();
            line("instantaneous_ops_per_sec", &rates.ops_per_sec);
            line("total_net_input_bytes", &net.input_bytes);
            line("total_net_output_bytes", &net.output_bytes);
            line("total_net_repl_input_bytes", &0);
            line("total_net_repl_output_bytes", &0);
            line("instantaneous_input_kbps", &format!("{:.2}", rates.input_kbps));
            line("instantaneous_output_kbps", &format!("{:.2}", rates.output_kbps));
            line("instantaneous_input_repl_kbps", &"0.00");
            line("instantaneous_output_repl_kbps", &"0.00");
            line("rejected_connections", &stats.rejected_connections.load(Ordering::Relaxed));
            let repl = &state.replication;
            line("sync_full", &repl.syncs_full.load(Ordering::Relaxed));
            line("sync_partial_ok", &repl.syncs_partial_ok.load(Ordering::Relaxed));
            line("sync_partial_err", &repl.syncs_partial_err.load(Ordering::Relaxed));
            line("expired_keys", &expired);
            let (cycle_ms, capped) = ks.expire_cycle_stats();
            line("expired_time_cap_reached_count", &capped);
            line("expire_cycle_cpu_milliseconds", &cycle_ms);
            line("evicted_keys", &state.keyspace.evicted_keys());
            for k in ["evicted_clients", "total_eviction_exceeded_time", "current_eviction_exceeded_time"] {
                line(k, &0);
            }
            let (hits, misses) = ks.lookup_counts();
            line("keyspace_hits", &hits);
            line("keyspace_misses", &misses);
            line("pubsub_channels", &state.pubsub.channels(crate::registries::pubsub::Kind::Channel, None).len());
            line("pubsub_patterns", &state.pubsub.numpat());
            line("pubsubshard_channels", &state.pubsub.channels(crate::registries::pubsub::Kind::Shard, None).len());
            for k in [
                "latest_fork_usec",
                "total_forks",
                "migrate_cached_sockets",
                "slave_expires_tracked_keys",
                "active_defrag_hits",
                "active_defrag_misses",
                "active_defrag_key_hits",
                "active_defrag_key_misses",
                "total_active_defrag_time",
                "current_active_defrag_time",
            ] {
                line(k, &0);
            }
            let tracked = state.tracking.totals();
            line("tracking_total_keys", &tracked.keys);
            line("tracking_total_items", &tracked.items);
            line("tracking_total_prefixes", &tracked.prefixes);
            line("unexpected_error_replies", &0);
            line("total_error_replies", &stats.total_error_replies.load(Ordering::Relaxed));
            line("dump_payload_sanitizations", &0);
            line("total_reads_processed", &net.reads);
            line("total_writes_processed", &net.writes);
            for k in [
                "io_threaded_reads_processed",
                "io_threaded_writes_processed",
                "reply_buffer_shrinks",
                "reply_buffer_expands",
            ] {
                line(k, &0);
            }
            // kvik's own: how often a script's run was put back and started
            // over to reserve a shard it had not declared (docs/scripting.md).
            line("script_restarts", &stats.script_restarts.load(Ordering::Relaxed));
        }
        "replication" => {
            let repl = &state.replication;
            let replicas = repl.replicas();
            let now_ms = crate::keyspace::now_ms();
            let config = state.config();
            match repl.upstream() {
                None => line("role", &"master"),
                Some(up) => {
                    use crate::registries::replication::UpstreamState;
                    let link = &repl.link;
                    let link_state = link.state();
                    let ago = |ms: i64| if ms == 0 { -1 } else { (now_ms - ms).max(0) / 1000 };
                    line("role", &"slave");
                    line("master_host", &up.host);
                    line("master_port", &up.port);
                    line("master_link_status", &if link_state == UpstreamState::Connected { "up" } else { "down" });
                    let last_io = if link_state == UpstreamState::Connected {
                        ago(link.last_io_ms.load(Ordering::Relaxed))
                    } else {
                        -1
                    };
                    line("master_last_io_seconds_ago", &last_io);
                    let syncing = link_state == UpstreamState::Sync;
                    line("master_sync_in_progress", &u8::from(syncing));
                    line("slave_read_repl_offset", &link.read_offset.load(Ordering::Relaxed));
                    line("slave_repl_offset", &repl.offset());
                    if syncing {
                        let total = link.sync_total_bytes.load(Ordering::Relaxed);
                        let read = link.sync_read_bytes.load(Ordering::Relaxed);
                        line("master_sync_total_bytes", &total);
                        line("master_sync_read_bytes", &read);
                        let left = if total < 0 { -1 } else { total - i64::try_from(read).unwrap_or(i64::MAX) };
                        line("master_sync_left_bytes", &left);
                        let perc = if total <= 0 { 0.0 } else { read as f64 * 100.0 / total as f64 };
                        line("master_sync_perc", &format!("{perc:.2}"));
                        line("master_sync_last_io_seconds_ago", &ago(link.last_io_ms.load(Ordering::Relaxed)));
                    }
                    if link_state != UpstreamState::Connected {
                        line("master_link_down_since_seconds", &ago(link.down_since_ms.load(Ordering::Relaxed)));
                    }
                    line("slave_priority", &config.int("replica-priority"));
                    line("slave_read_only", &u8::from(config.get("replica-read-only") == "yes"));
                    line("replica_announced", &u8::from(config.get("replica-announced") == "yes"));
                }
            }
            line("connected_slaves", &replicas.len());
            if config.int("min-replicas-to-write") > 0 && config.int("min-replicas-max-lag") > 0 {
                line("min_slaves_good_slaves", &repl.good_replicas_counted());
            }
            for (i, r) in replicas.iter().enumerate() {
                let lag = (now_ms - r.ack_time_ms.load(Ordering::Relaxed)).max(0) / 1000;
                let shown = format!(
                    "ip={},port={},state={},offset={},lag={lag}",
                    r.ip,
                    r.port,
                    r.state().name(),
                    r.ack_offset.load(Ordering::Relaxed)
                );
                line(&format!("slave{i}"), &shown);
            }
            let backlog = repl.backlog();
            let ids = repl.ids();
            line("master_failover_state", &repl.failover().state.name());
            line("master_replid", &ids.replid);
            line("master_replid2", &ids.replid2);
            line("master_repl_offset", &repl.offset());
            line("second_repl_offset", &ids.second_offset);
            line("repl_backlog_active", &u8::from(backlog.active));
            line("repl_backlog_size", &config.int("repl-backlog-size"));
            line("repl_backlog_first_byte_offset", &backlog.first_byte_offset);
            line("repl_backlog_histlen", &backlog.histlen);
        }
        "cpu" => {
            let (user, sys) = cpu_times("/proc/self/stat", false);
            let (cuser, csys) = cpu_times("/proc/self/stat", true);
            let (tuser, tsys) = cpu_times("/proc/thread-self/stat", false);
            line("used_cpu_sys", &format!("{sys:.6}"));
            line("used_cpu_user", &format!("{user:.6}"));
            line("used_cpu_sys_children", &format!("{csys:.6}"));
            line("used_cpu_user_children", &format!("{cuser:.6}"));
            line("used_cpu_sys_main_thread", &format!("{tsys:.6}"));
            line("used_cpu_user_main_thread", &format!("{tuser:.6}"));
        }
        "modules" => {}
        "commandstats" => {
            for (name, s) in stats.commands() {
                let (calls, rejected, failed) = (s.calls.calls, s.rejected, s.failed);
                if calls == 0 && rejected == 0 && failed == 0 {
                    continue;
                }
                let usec = s.calls.usec;
                let per = if calls > 0 { usec as f64 / calls as f64 } else { 0.0 };
                line(
                    &format!("cmdstat_{name}"),
                    &format_args!(
                        "calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rejected},failed_calls={failed}"
                    ),
                );
            }
        }
        "errorstats" => {
            for (code, count) in stats.errors() {
                line(&format!("errorstat_{}", String::from_utf8_lossy(&code)), &format_args!("count={count}"));
            }
        }
        "latencystats" => {
            if !state.limits.latency_tracking() {
                return;
            }
            let percentiles = state.latency_percentiles();
            for (name, s) in stats.commands() {
                if s.calls.tracked() == 0 {
                    continue;
                }
                let mut values = String::new();
                for (i, p) in percentiles.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    let usec = s.calls.percentile(*p) as f64;
                    let _ = write!(values, "{sep}p{}={usec:.3}", crate::metrics::histogram::percentile_name(*p));
                }
                line(&format!("latency_percentiles_usec_{name}"), &values);
            }
        }
        "cluster" => {
            line("cluster_enabled", &0);
        }
        _ => {
            let ks = &state.keyspace;
            let mut keys = vec![0usize; ks.databases()];
            let mut expires = vec![0usize; ks.databases()];
            // Time left summed over the keys with a deadline, for avg_ttl.
            let mut left_ms = vec![0i128; ks.databases()];
            let now = crate::keyspace::now_ms();
            // All shards at once, so that a key moving between shards is
            // counted once (see DBSIZE).
            let mut lock = ks.lock_all();
            for shard in lock.shards() {
                for (db, d) in shard.dbs().iter().enumerate() {
                    if let (Some(k), Some(e), Some(t)) = (keys.get_mut(db), expires.get_mut(db), left_ms.get_mut(db)) {
                        *k += d.len();
                        *e += d.expiring();
                        *t += i128::from(d.avg_ttl_ms(now)) * d.expiring() as i128;
                    }
                }
            }
            drop(lock);
            for (db, ((k, e), t)) in keys.iter().zip(&expires).zip(&left_ms).enumerate() {
                if *k > 0 {
                    let avg = if *e > 0 { *t / *e as i128 } else { 0 };
                    line(&format!("db{db}"), &format_args!("keys={k},expires={e},avg_ttl={avg}"));
                }
            }
        }
    }
}
