//! [`ServerState`]: what every connection of the server shares.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use kvik_acl::Defaults;
use tokio::sync::watch;

use crate::config::{find_option, parse_output_limits, Config, OutputLimit};
use crate::events::{parse_flags, Hub};
use crate::keyspace::{Keyspace, Policy};
use crate::metrics::stats::Stats;
use crate::registries::blocking::Blocking;
use crate::registries::clients::{ClientIds, ClientRegistry};
use crate::registries::pause::Pause;
use crate::registries::pubsub::PubSub;
use crate::registries::tracking::Tracking;
use crate::registries::watch::WatchRegistry;
use crate::types::hash::HashLimits;

/// Default number of keyspace shards: many more than cores, so that commands
/// from different threads rarely meet on one lock.
pub const DEFAULT_SHARDS: usize = 256;

/// Number of databases (`SELECT 0` to `SELECT 15`), as Redis's default.
pub const DEFAULT_DATABASES: usize = 16;

/// State shared by all connections and threads.
#[derive(Debug)]
pub struct ServerState {
    /// Client id allocation.
    pub ids: ClientIds,
    /// All the data.
    pub keyspace: Keyspace,
    /// The running configuration; `CONFIG SET` writes it, everything else reads it.
    config: RwLock<Config>,
    /// The file the configuration was loaded from, for `CONFIG REWRITE`.
    pub config_file: Option<PathBuf>,
    /// Number of accepted connections, checked against `maxclients` when accepting.
    pub connected: AtomicUsize,
    /// Connected clients, for CLIENT LIST/KILL/INFO and MONITOR.
    pub clients: Arc<ClientRegistry>,
    /// Counters for INFO and the slow log.
    pub stats: Stats,
    /// `CLIENT PAUSE` state, checked before every command.
    pub pause: Pause,
    /// Pub/sub subscriptions of every client.
    pub pubsub: Arc<PubSub>,
    /// Who hears of key changes: keyspace notification flags and consumers.
    pub changes: Arc<Hub>,
    /// Client-side caching: who may have which key cached.
    pub tracking: Arc<Tracking>,
    /// Clients blocked by BLPOP, XREAD BLOCK and the like.
    pub blocking: Blocking,
    /// Keys clients `WATCH`.
    pub watches: Arc<WatchRegistry>,
    /// The TCP port the server listens on, for INFO.
    pub port: AtomicU16,
    /// Listening sockets `CONFIG SET port` opened, for the acceptor to take.
    pub rebind: crate::sockets::Rebind,
    /// The TLS configuration new connections on `tls-port` get, and that port's new sockets.
    pub tls: crate::tls::TlsContext,
    /// Set to true once the server is to stop; every loop watches it.
    shutdown: watch::Sender<bool>,
    /// The options connections read on every batch, copied out of `config`
    /// so that reading them touches no lock shared between cores.
    pub limits: ConnectionLimits,
    /// Background saves (`BGSAVE`, the save points).
    pub saver: crate::registries::saves::Background,
    /// Every change, in an order that replays (for the append-only file).
    pub journal: crate::registries::journal::Journal,
    /// The replication stream and the replicas.
    pub replication: crate::registries::replication::Replication,
    /// The append-only file's writer and files.
    pub append_only: crate::registries::append_only::AppendOnly,
    /// Scripts by SHA-1 (`EVAL`, `SCRIPT LOAD`).
    pub scripts: crate::registries::scripts::Scripts,
    pub functions: crate::registries::functions::Functions,
    /// ACL users and the security log.
    pub acl: crate::registries::acl::Acl,
    /// The state itself, for the threads a command starts (the
    /// append-only file's writer, when `CONFIG SET appendonly yes` turns
    /// it on); set by [`ServerState::remember_self`].
    this: std::sync::OnceLock<std::sync::Weak<ServerState>>,
}

/// Configuration read on every batch of every connection, as atomics kept
/// in step with the configuration by [`ServerState::update_config`].
#[derive(Debug, Default)]
pub struct ConnectionLimits {
    /// `proto-max-bulk-len`.
    pub proto_max_bulk_len: AtomicUsize,
    /// `client-query-buffer-limit`.
    pub query_buffer_limit: AtomicUsize,
    /// `respb-max-channels`.
    pub respb_max_channels: AtomicUsize,
    /// `timeout`, in seconds (0: never).
    pub idle_timeout: AtomicU64,
    /// Whether `requirepass` is set, so clients must authenticate.
    pub auth_required: AtomicBool,
    /// `maxmemory` in bytes (0: no limit); checked before every command.
    pub maxmemory: AtomicUsize,
    /// `maxmemory-policy`, as [`Policy::index`].
    pub maxmemory_policy: AtomicU8,
    /// `maxmemory-samples`.
    pub maxmemory_samples: AtomicUsize,
    /// `client-output-buffer-limit` for normal clients: hard limit in bytes.
    pub output_hard: AtomicU64,
    /// … soft limit in bytes.
    pub output_soft: AtomicU64,
    /// … seconds allowed above the soft limit.
    pub output_soft_seconds: AtomicU64,
    /// `hash-max-listpack-entries`, read by every hash write.
    pub hash_max_listpack_entries: AtomicUsize,
    /// `hash-max-listpack-value`.
    pub hash_max_listpack_value: AtomicUsize,
    /// `zset-max-listpack-entries`, read by every sorted-set write.
    pub zset_max_listpack_entries: AtomicUsize,
    /// `zset-max-listpack-value`.
    pub zset_max_listpack_value: AtomicUsize,
    /// `set-max-intset-entries`, read by every SADD.
    pub set_max_intset_entries: AtomicUsize,
    /// `slowlog-log-slower-than` in microseconds (negative: the slow log is off).
    pub slowlog_slower_than: AtomicI64,
    /// `slowlog-max-len`.
    pub slowlog_max_len: AtomicUsize,
    /// `latency-monitor-threshold` in microseconds (0: the monitor is off).
    pub latency_threshold_us: AtomicU64,
    /// The shortest duration either of the two above wants to see
    /// (`u64::MAX` when both are off): every command compares its duration
    /// with this one number.
    pub notable_us: AtomicU64,
    /// `latency-tracking`: whether each command's duration goes into its
    /// histogram.
    pub latency_tracking: AtomicBool,
}

/// Apply the ACL options, and `requirepass` as the default user's
/// password when it is new (`before` is its value until now; `None` at
/// startup): a password set by `ACL SETUSER default` stays until
/// `requirepass` itself is set again, as in Redis.
fn configure_acl(acl: &crate::registries::acl::Acl, limits: &ConnectionLimits, config: &Config, before: Option<&str>) {
    acl.configure(config.usize("acllog-max-len"), config.get("acl-pubsub-default") == "allchannels");
    let password = config.get("requirepass");
    if before == Some(password) {
        return;
    }
    let rule = if password.is_empty() { b"nopass".to_vec() } else { [b">", password.as_bytes()].concat() };
    acl.update(&limits.auth_required, |users| {
        let default = users.default_user();
        let changed = default.with_rules([&b"resetpass"[..], &rule], Defaults::default());
        if let Ok(user) = changed {
            users.put(user);
        }
    });
}

/// The value of option `name`, or `default` while the option is not in
/// [`crate::config::OPTIONS`] (an option another change adds).
fn option_or<'a>(config: &'a Config, name: &str, default: &'a str) -> &'a str {
    find_option(name).map_or(default, |i| config.value(i))
}

impl ConnectionLimits {
    fn load_from(&self, config: &Config) {
        self.proto_max_bulk_len.store(config.usize("proto-max-bulk-len"), Ordering::Relaxed);
        self.query_buffer_limit.store(config.usize("client-query-buffer-limit"), Ordering::Relaxed);
        self.respb_max_channels.store(config.usize("respb-max-channels"), Ordering::Relaxed);
        self.idle_timeout.store(u64::try_from(config.int("timeout")).unwrap_or(0), Ordering::Relaxed);
        self.maxmemory.store(config.usize("maxmemory"), Ordering::Relaxed);
        self.maxmemory_policy.store(Policy::from_name(config.get("maxmemory-policy")).index(), Ordering::Relaxed);
        self.maxmemory_samples.store(config.usize("maxmemory-samples").max(1), Ordering::Relaxed);
        let [normal, ..] = parse_output_limits(config.get("client-output-buffer-limit"));
        self.output_hard.store(normal.hard, Ordering::Relaxed);
        self.output_soft.store(normal.soft, Ordering::Relaxed);
        self.output_soft_seconds.store(normal.soft_seconds, Ordering::Relaxed);
        self.hash_max_listpack_entries.store(config.usize("hash-max-listpack-entries"), Ordering::Relaxed);
        self.hash_max_listpack_value.store(config.usize("hash-max-listpack-value"), Ordering::Relaxed);
        self.zset_max_listpack_entries.store(config.usize("zset-max-listpack-entries"), Ordering::Relaxed);
        self.zset_max_listpack_value.store(config.usize("zset-max-listpack-value"), Ordering::Relaxed);
        self.set_max_intset_entries.store(config.usize("set-max-intset-entries"), Ordering::Relaxed);
        let slower_than = config.int("slowlog-log-slower-than");
        let latency_us = u64::try_from(config.int("latency-monitor-threshold")).unwrap_or(0).saturating_mul(1000);
        self.slowlog_slower_than.store(slower_than, Ordering::Relaxed);
        self.slowlog_max_len.store(config.usize("slowlog-max-len"), Ordering::Relaxed);
        self.latency_threshold_us.store(latency_us, Ordering::Relaxed);
        let slowlog_us = u64::try_from(slower_than).unwrap_or(u64::MAX);
        let monitor_us = if latency_us == 0 { u64::MAX } else { latency_us };
        self.notable_us.store(slowlog_us.min(monitor_us), Ordering::Relaxed);
        self.latency_tracking.store(option_or(config, "latency-tracking", "yes") == "yes", Ordering::Relaxed);
    }

    /// The shortest command duration, in microseconds, that the slow log
    /// or the latency monitor records.
    #[inline]
    pub fn notable_us(&self) -> u64 {
        self.notable_us.load(Ordering::Relaxed)
    }

    /// `slowlog-log-slower-than` now, in microseconds (negative: off).
    pub fn slowlog_slower_than(&self) -> i64 {
        self.slowlog_slower_than.load(Ordering::Relaxed)
    }

    /// `slowlog-max-len` now.
    pub fn slowlog_max_len(&self) -> usize {
        self.slowlog_max_len.load(Ordering::Relaxed)
    }

    /// `latency-monitor-threshold` now, in microseconds (0: off).
    pub fn latency_threshold_us(&self) -> u64 {
        self.latency_threshold_us.load(Ordering::Relaxed)
    }

    /// Whether command durations go into the histograms now.
    #[inline]
    pub fn latency_tracking(&self) -> bool {
        self.latency_tracking.load(Ordering::Relaxed)
    }

    /// When hashes written now leave the small encoding.
    pub fn hash_limits(&self) -> HashLimits {
        HashLimits {
            max_entries: self.hash_max_listpack_entries.load(Ordering::Relaxed),
            max_value: self.hash_max_listpack_value.load(Ordering::Relaxed),
        }
    }

    /// The output buffer limits of normal clients now.
    pub fn output_limit(&self) -> OutputLimit {
        OutputLimit {
            hard: self.output_hard.load(Ordering::Relaxed),
            soft: self.output_soft.load(Ordering::Relaxed),
            soft_seconds: self.output_soft_seconds.load(Ordering::Relaxed),
        }
    }

    /// `maxmemory` now (0: no limit).
    pub fn maxmemory(&self) -> usize {
        self.maxmemory.load(Ordering::Relaxed)
    }

    /// `maxmemory-policy` now.
    pub fn maxmemory_policy(&self) -> Policy {
        Policy::from_index(self.maxmemory_policy.load(Ordering::Relaxed))
    }

    /// `maxmemory-samples` now.
    pub fn maxmemory_samples(&self) -> usize {
        self.maxmemory_samples.load(Ordering::Relaxed)
    }

    /// Whether clients must authenticate now.
    pub fn auth_required(&self) -> bool {
        self.auth_required.load(Ordering::Relaxed)
    }

    /// `proto-max-bulk-len` now.
    pub fn proto_max_bulk_len(&self) -> usize {
        self.proto_max_bulk_len.load(Ordering::Relaxed)
    }

    /// `respb-max-channels` now.
    pub fn respb_max_channels(&self) -> usize {
        self.respb_max_channels.load(Ordering::Relaxed)
    }

    /// `client-query-buffer-limit` now.
    pub fn query_buffer_limit(&self) -> usize {
        self.query_buffer_limit.load(Ordering::Relaxed)
    }

    /// `timeout` now, in seconds.
    pub fn idle_timeout(&self) -> u64 {
        self.idle_timeout.load(Ordering::Relaxed)
    }
}

/// Copy the pubsub class of `client-output-buffer-limit` to the registry:
/// a subscriber further behind than its hard limit, or than its soft limit
/// for longer than its seconds, is cut off.
fn load_pubsub_limit(pubsub: &PubSub, config: &Config) {
    let [_, _, limit] = parse_output_limits(config.get("client-output-buffer-limit"));
    let bytes = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    pubsub.set_limit(crate::registries::pubsub::QueueLimit {
        hard: bytes(limit.hard),
        soft: bytes(limit.soft),
        soft_seconds: limit.soft_seconds,
    });
}

/// Copy `lfu-log-factor`, `lfu-decay-time` and whether the policy is an LFU
/// one to where the keyspace reads them.
fn load_lfu_tuning(keyspace: &Keyspace, config: &Config) {
    let read = |name: &str| u32::try_from(config.int(name)).unwrap_or(0);
    keyspace.lfu_tuning().set(read("lfu-log-factor"), read("lfu-decay-time"));
    keyspace.lfu_tuning().set_lfu_policy(Policy::from_name(config.get("maxmemory-policy")).lfu());
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState::new(Config::default(), None)
    }
}

impl ServerState {
    /// State for a server running `config`, loaded from `config_file` if any.
    /// The database count is read here: it cannot change while running.
    pub fn new(config: Config, config_file: Option<PathBuf>) -> Self {
        let databases = config.usize("databases").max(1);
        let loops = config.threads();
        let limits = ConnectionLimits::default();
        limits.load_from(&config);
        let keyspace = Keyspace::new(DEFAULT_SHARDS, databases);
        load_lfu_tuning(&keyspace, &config);
        let pubsub = Arc::new(PubSub::default());
        load_pubsub_limit(&pubsub, &config);
        let changes = Arc::new(Hub::default());
        changes.set_flags(parse_flags(config.get("notify-keyspace-events")).unwrap_or(0));
        let tracking = Arc::new(Tracking::default());
        tracking.set_max_keys(config.usize("tracking-table-max-keys"));
        let acl = crate::registries::acl::Acl::default();
        configure_acl(&acl, &limits, &config, None);
        tracking.attach_hub(Arc::clone(&changes));
        ServerState {
            changes,
            tracking,
            blocking: Blocking::new(keyspace.blocked_gate()),
            limits,
            ids: ClientIds::default(),
            keyspace,
            config: RwLock::new(config),
            config_file,
            connected: AtomicUsize::new(0),
            clients: Arc::default(),
            stats: Stats::default(),
            pause: Pause::default(),
            pubsub,
            watches: Arc::default(),
            port: AtomicU16::new(0),
            rebind: crate::sockets::Rebind::default(),
            tls: crate::tls::TlsContext::default(),
            saver: Default::default(),
            journal: Default::default(),
            replication: Default::default(),
            append_only: Default::default(),
            scripts: crate::registries::scripts::Scripts::new(loops),
            functions: crate::registries::functions::Functions::default(),
            acl,
            this: std::sync::OnceLock::new(),
            shutdown: watch::Sender::new(false),
        }
    }

    /// Read the running configuration. A poisoned lock still holds a valid
    /// configuration (values are replaced whole), so it is read anyway.
    pub fn config(&self) -> RwLockReadGuard<'_, Config> {
        self.config.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The encoding limits a value loaded from a file or a RESTORE payload
    /// is fitted to, as the configuration says now.
    pub fn load_limits(&self) -> kvik_persist::rdb::value::LoadLimits {
        let config = self.config();
        kvik_persist::rdb::value::LoadLimits {
            hash: self.limits.hash_limits(),
            set_max_intset_entries: self.limits.set_max_intset_entries.load(Ordering::Relaxed),
            zset_max_entries: self.limits.zset_max_listpack_entries.load(Ordering::Relaxed),
            zset_max_value: self.limits.zset_max_listpack_value.load(Ordering::Relaxed),
            stream: kvik_store::types::stream::NodeLimits {
                max_entries: u64::try_from(config.int("stream-node-max-entries")).unwrap_or(0),
                max_bytes: config.usize("stream-node-max-bytes"),
            },
        }
    }

    /// `rdbcompression`: whether strings in payloads and snapshots are
    /// LZF-compressed where that saves space.
    pub fn rdb_compression(&self) -> bool {
        self.config().get("rdbcompression") == "yes"
    }

    /// Let the state hand out owning references to itself ([`ServerState::shared`]).
    pub fn remember_self(self: &Arc<Self>) {
        let _ = self.this.set(Arc::downgrade(self));
    }

    /// An owning reference to this state, once [`ServerState::remember_self`] ran.
    pub fn shared(&self) -> Option<Arc<ServerState>> {
        self.this.get().and_then(std::sync::Weak::upgrade)
    }

    /// Change the running configuration with `f`.
    pub fn update_config<R>(&self, f: impl FnOnce(&mut Config) -> R) -> R {
        let mut guard = self.config.write().unwrap_or_else(|e| e.into_inner());
        let password_before = guard.get("requirepass").to_string();
        let result = f(&mut guard);
        self.limits.load_from(&guard);
        configure_acl(&self.acl, &self.limits, &guard, Some(&password_before));
        load_lfu_tuning(&self.keyspace, &guard);
        load_pubsub_limit(&self.pubsub, &guard);
        self.tracking.set_max_keys(guard.usize("tracking-table-max-keys"));
        self.tracking.enforce_max_keys(&self.clients, self.pubsub.limit());
        // Redis trims the slow log after each command it offers the log, the
        // CONFIG SET that lowered slowlog-max-len among them, unless the log is off.
        if self.limits.slowlog_slower_than() >= 0 {
            self.stats.trim_slowlog(self.limits.slowlog_max_len());
        }
        result
    }

    /// The percentiles `INFO latencystats` reports
    /// (`latency-tracking-info-percentiles`, Redis's `50 99 99.9` while the
    /// option is not registered).
    pub fn latency_percentiles(&self) -> Vec<f64> {
        let config = self.config();
        let value = option_or(&config, "latency-tracking-info-percentiles", "50 99 99.9");
        crate::metrics::histogram::parse_percentiles(value).unwrap_or_default()
    }

    /// `used_memory`: the data estimate and the clients' buffers
    /// (`mem_clients_normal`), the one figure INFO reports and `maxmemory`
    /// is checked against.
    #[inline]
    pub fn used_memory(&self) -> usize {
        self.keyspace.used_memory() + self.clients.memory()
    }

    /// Free memory for a command when over `maxmemory`, by the configured
    /// policy; false when the server stays over the limit (then commands
    /// that may add data are refused). Redis does this before every command,
    /// whether or not the command itself adds data.
    ///
    /// The limit is compared with [`ServerState::used_memory`], client
    /// buffers included, as Redis counts them; only keys can be evicted, so
    /// the data is brought down to what the buffers leave of the limit. When
    /// the buffers alone pass it, every key goes and writes are refused,
    /// as in Redis.
    ///
    /// `None` when the server is within the limit and nothing was done;
    /// otherwise eviction ran, and its expiry and eviction events are to be
    /// announced ([`crate::effects::changes::enforce_maxmemory`] does both).
    pub fn evict_to_maxmemory(&self) -> Option<bool> {
        let limit = self.limits.maxmemory();
        if limit == 0 {
            return None;
        }
        let clients = self.clients.memory();
        if self.keyspace.used_memory() + clients <= limit {
            return None;
        }
        // A replica keeps what its master keeps (replica-ignore-maxmemory):
        // the master's evictions reach it as DELs.
        if self.replication.is_replica() && self.config().get("replica-ignore-maxmemory") == "yes" {
            return None;
        }
        let room = limit.saturating_sub(clients);
        let freed = self.keyspace.free_memory(room, self.limits.maxmemory_policy(), self.limits.maxmemory_samples());
        Some(freed && self.keyspace.used_memory() + clients <= limit)
    }

    /// Ask the whole server to stop (signal or `SHUTDOWN`).
    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Whether a stop was asked for.
    pub fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// A receiver that changes when a stop is asked for.
    pub fn shutdown_watch(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Take a client slot if `maxclients` leaves one: for an accepted
    /// connection, or a RESPB channel after its connection's first.
    pub fn admit_client(&self) -> bool {
        let max = self.config().usize("maxclients");
        let mut current = self.connected.load(Ordering::Relaxed);
        loop {
            if current >= max {
                return false;
            }
            match self.connected.compare_exchange(current, current + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => current = now,
            }
        }
    }

    /// Give back `n` slots [`ServerState::admit_client`] took.
    pub fn release_clients(&self, n: usize) {
        if n > 0 {
            self.connected.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Current number of connected clients.
    pub fn client_count(&self) -> usize {
        self.connected.load(Ordering::Relaxed)
    }
}
