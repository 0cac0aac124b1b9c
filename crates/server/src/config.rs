//! Server configuration: the registry of options, their validation, and
//! loading from a redis.conf-style file and the command line.
//!
//! Options follow redis-server's names, value syntax and error texts, so that
//! scripts, configuration files and tools written for Redis work with kvik by
//! changing only the binary name. Every option has one entry in [`OPTIONS`]:
//! its name, kind of value, default, and whether `CONFIG SET` may change it
//! while the server runs. Values are kept in the canonical text form that
//! `CONFIG GET` reports (memory sizes in bytes, `yes`/`no`, lower-case enum
//! words), and read as numbers through typed accessors.
//!
//! Anything unrecognised stops startup with a message naming it: a mistyped
//! option silently ignored would leave a server running with a setting its
//! operator did not ask for.
//!
//! Every option of Redis 7.0 is known, under each of its names, and falls
//! into one of three classes ([`Support`]): kvik does what Redis does with
//! it; kvik honours only its default and refuses any other value, saying
//! why (persistence, TLS, replication, cluster mode, ACL files: features
//! still to come); or it is a tuning knob whose value no client can
//! observe (defragmentation, rehashing, the background-thread and fsync
//! tuning of files kvik does not write yet), kept and reported, and named
//! once in the startup log when it is set. `docs/config.md` lists the
//! classes.

use std::fmt;
use std::path::{Path, PathBuf};

use kvik_protocol::number::parse_i64;

/// What kind of value an option takes, with the rules that validate it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `yes` or `no`.
    Bool,
    /// A decimal integer within `min..=max`.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// A size with an optional unit (`1mb`, `512k`), stored in bytes.
    Memory {
        /// Smallest accepted value, in bytes.
        min: i64,
        /// Largest accepted value, in bytes.
        max: i64,
    },
    /// One word of a fixed list, matched without regard to case.
    Enum(&'static [&'static str]),
    /// Free text.
    Str,
    /// `save`: pairs of `seconds changes`, or empty for none.
    Save,
    /// `bind`: one or more addresses separated by spaces.
    Bind,
    /// `unixsocketperm`: file permission bits in octal.
    Octal,
    /// `notify-keyspace-events`: event class letters.
    KeyspaceEvents,
    /// `client-output-buffer-limit`: `class hard soft seconds` groups.
    OutputLimits,
    /// `oom-score-adj-values`: three integers from -2000 to 2000.
    OomScores,
    /// `latency-tracking-info-percentiles`: numbers from 0 to 100.
    Percentiles,
    /// `shutdown-on-sigint` / `shutdown-on-sigterm`: `default`, or some of
    /// `save`, `nosave`, `now`, `force`.
    ShutdownFlags,
    /// `replicaof`: `<host> <port>`, or empty for none.
    Replicaof,
}

/// How an option may be changed once the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `CONFIG SET` changes it.
    Runtime,
    /// Fixed at startup (listening sockets, database count).
    Immutable,
    /// Fixed at startup because changing it remotely would let a client
    /// write files where it likes (Redis's protected configs).
    Protected,
}

/// One configuration option.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// The name used in files, on the command line and by `CONFIG`.
    pub name: &'static str,
    /// Another accepted name (Redis's older or differently named spelling).
    pub alias: Option<&'static str>,
    /// The kind of value.
    pub kind: Kind,
    /// The default, in canonical form (`threads` is computed from the machine).
    pub default: &'static str,
    /// Whether `CONFIG SET` may change it.
    pub change: Change,
    /// What kvik does with the option's values.
    pub support: Support,
}

/// What kvik does with an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// What Redis does.
    Full,
    /// Only the default is honoured: another value asks for a feature kvik
    /// does not have yet and is refused with this reason.
    OnlyDefault(&'static str),
    /// A tuning knob with no effect a client can observe in kvik: the value
    /// is kept and reported, and the startup log names it when it is set.
    NoEffect,
}

const NO_TLS_LINKS: &str = "kvik's own links to other servers (to a master, in a cluster) do not use TLS yet";
const NO_TLS_DH: &str = "rustls, kvik's TLS library, has no finite-field Diffie-Hellman: key exchange is always ECDHE";
const NO_CLUSTER: &str = "kvik does not run in cluster mode yet";

const INT_MAX: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;
const LONG_MAX: i64 = i64::MAX;
const MIB: i64 = 1024 * 1024;

const fn opt(name: &'static str, kind: Kind, default: &'static str, change: Change) -> OptionSpec {
    OptionSpec { name, alias: None, kind, default, change, support: Support::Full }
}

/// A runtime option that also answers to its pre-7.0 `ziplist` name.
const fn aliased(name: &'static str, alias: &'static str, kind: Kind, default: &'static str) -> OptionSpec {
    OptionSpec { name, alias: Some(alias), kind, default, change: Change::Runtime, support: Support::Full }
}

/// `spec` under a second name as well (Redis's `slave-*` for `replica-*`).
const fn alias(spec: OptionSpec, alias: &'static str) -> OptionSpec {
    OptionSpec { alias: Some(alias), ..spec }
}

/// An option of which kvik honours only its default, refusing the other
/// values for `why`.
const fn only_default(spec: OptionSpec, why: &'static str) -> OptionSpec {
    OptionSpec { support: Support::OnlyDefault(why), ..spec }
}

/// A tuning knob without an effect a client can observe in kvik.
const fn knob(name: &'static str, kind: Kind, default: &'static str, change: Change) -> OptionSpec {
    OptionSpec { name, alias: None, kind, default, change, support: Support::NoEffect }
}

const BOOL: Kind = Kind::Bool;
const STR: Kind = Kind::Str;

const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}

const fn mem(min: i64, max: i64) -> Kind {
    Kind::Memory { min, max }
}

use Change::{Immutable, Protected, Runtime};

pub use crate::keyspace::evict::MAXMEMORY_POLICIES;

/// Every option kvik knows, with Redis's defaults and ranges, and what kvik
/// does with each ([`Support`]).
pub const OPTIONS: &[OptionSpec] = &[
    // CONFIG SET rebinds (crate::sockets::Rebind).
    opt("port", int(0, 65535), "6379", Runtime),
    opt("bind", Kind::Bind, "* -::*", Immutable),
    opt("unixsocket", Kind::Str, "", Immutable),
    opt("unixsocketperm", Kind::Octal, "0", Immutable),
    OptionSpec {
        name: "threads",
        alias: Some("io-threads"),
        kind: int(1, 1024),
        default: "",
        change: Immutable,
        support: Support::Full,
    },
    opt("databases", int(1, INT_MAX), "16", Immutable),
    opt("timeout", int(0, INT_MAX), "0", Runtime),
    opt("tcp-keepalive", int(0, INT_MAX), "300", Runtime),
    opt("maxclients", int(1, u32::MAX as i64), "10000", Runtime),
    opt("requirepass", Kind::Str, "", Runtime),
    opt("protected-mode", Kind::Bool, "yes", Runtime),
    opt("proto-max-bulk-len", mem(MIB, LONG_MAX), "536870912", Runtime),
    opt("client-query-buffer-limit", mem(MIB, LONG_MAX), "1073741824", Runtime),
    // kvik's own: most RESPB mux channels one connection may have open.
    opt("respb-max-channels", int(1, 65536), "1024", Runtime),
    opt(
        "client-output-buffer-limit",
        Kind::OutputLimits,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        Runtime,
    ),
    opt("maxmemory", mem(0, LONG_MAX), "0", Runtime),
    opt("maxmemory-policy", Kind::Enum(MAXMEMORY_POLICIES), "noeviction", Runtime),
    opt("maxmemory-samples", int(1, INT_MAX), "5", Runtime),
    opt("tracking-table-max-keys", int(0, LONG_MAX), "1000000", Runtime),
    aliased("hash-max-listpack-entries", "hash-max-ziplist-entries", int(0, LONG_MAX), "512"),
    aliased("hash-max-listpack-value", "hash-max-ziplist-value", int(0, LONG_MAX), "64"),
    alias(knob("list-max-listpack-size", int(INT_MIN, INT_MAX), "-2", Runtime), "list-max-ziplist-size"),
    opt("set-max-intset-entries", int(0, LONG_MAX), "512", Runtime),
    knob("set-max-listpack-entries", int(0, LONG_MAX), "128", Runtime),
    aliased("zset-max-listpack-entries", "zset-max-ziplist-entries", int(0, LONG_MAX), "128"),
    aliased("zset-max-listpack-value", "zset-max-ziplist-value", int(0, LONG_MAX), "64"),
    opt("hll-sparse-max-bytes", mem(0, LONG_MAX), "3000", Runtime),
    opt("stream-node-max-entries", int(0, LONG_MAX), "100", Runtime),
    opt("stream-node-max-bytes", mem(0, LONG_MAX), "4096", Runtime),
    opt("notify-keyspace-events", Kind::KeyspaceEvents, "", Runtime),
    opt("appendonly", Kind::Bool, "no", Runtime),
    opt("appendfsync", Kind::Enum(&["everysec", "always", "no"]), "everysec", Runtime),
    // Redis's save points when no configuration names any.
    opt("save", Kind::Save, "3600 1 300 100 60 10000", Runtime),
    opt("dir", Kind::Str, ".", Protected),
    opt("dbfilename", Kind::Str, "dump.rdb", Protected),
    opt("loglevel", Kind::Enum(&["debug", "verbose", "notice", "warning"]), "notice", Runtime),
    opt("logfile", Kind::Str, "", Immutable),
    opt("slowlog-log-slower-than", int(-1, LONG_MAX), "10000", Runtime),
    opt("slowlog-max-len", int(0, LONG_MAX), "128", Runtime),
    opt("latency-monitor-threshold", int(0, LONG_MAX), "0", Runtime),
    // Reported by INFO; kvik's timers do not follow it.
    knob("hz", int(0, INT_MAX), "10", Runtime),
    opt("lfu-log-factor", int(0, INT_MAX), "10", Runtime),
    opt("lfu-decay-time", int(0, INT_MAX), "1", Runtime),
    // DEBUG can stall or crash the server, so Redis refuses it unless this
    // says `yes`, or `local` for clients on the same machine.
    opt("enable-debug-command", Kind::Enum(&["no", "yes", "local"]), "no", Immutable),
    opt("tcp-backlog", int(0, INT_MAX), "511", Immutable),
    // The process and its log.
    opt("daemonize", BOOL, "no", Immutable),
    opt("pidfile", STR, "", Immutable),
    opt("supervised", Kind::Enum(&["upstart", "systemd", "auto", "no"]), "no", Immutable),
    opt("syslog-enabled", BOOL, "no", Immutable),
    opt("syslog-ident", STR, "redis", Immutable),
    opt("syslog-facility", Kind::Enum(SYSLOG_FACILITY_NAMES), "local0", Immutable),
    opt("oom-score-adj", Kind::Enum(&["no", "yes", "relative", "absolute"]), "no", Runtime),
    opt("oom-score-adj-values", Kind::OomScores, "0 200 800", Runtime),
    opt("shutdown-on-sigint", Kind::ShutdownFlags, "default", Runtime),
    opt("shutdown-on-sigterm", Kind::ShutdownFlags, "default", Runtime),
    opt("latency-tracking", BOOL, "yes", Runtime),
    opt("latency-tracking-info-percentiles", Kind::Percentiles, "50 99 99.9", Runtime),
    // Replication (crate::replication): the master to follow and how to reach it.
    alias(opt("replicaof", Kind::Replicaof, "", Immutable), "slaveof"),
    opt("masterauth", STR, "", Runtime),
    opt("masteruser", STR, "", Runtime),
    // Features still to come: only the default, which asks for none of them.
    alias(opt("min-replicas-to-write", int(0, INT_MAX), "0", Runtime), "min-slaves-to-write"),
    alias(opt("min-replicas-max-lag", int(0, INT_MAX), "10", Runtime), "min-slaves-max-lag"),
    only_default(opt("cluster-enabled", BOOL, "no", Immutable), NO_CLUSTER),
    opt("aclfile", STR, "", Immutable),
    // TLS (crate::tls): on when tls-port is not 0; CONFIG SET of any of these rebuilds it.
    opt("tls-port", int(0, 65535), "0", Runtime),
    opt("tls-cert-file", STR, "", Runtime),
    opt("tls-key-file", STR, "", Runtime),
    opt("tls-key-file-pass", STR, "", Runtime),
    only_default(opt("tls-client-cert-file", STR, "", Runtime), NO_TLS_LINKS),
    only_default(opt("tls-client-key-file", STR, "", Runtime), NO_TLS_LINKS),
    only_default(opt("tls-client-key-file-pass", STR, "", Runtime), NO_TLS_LINKS),
    only_default(opt("tls-dh-params-file", STR, "", Runtime), NO_TLS_DH),
    opt("tls-ca-cert-file", STR, "", Runtime),
    opt("tls-ca-cert-dir", STR, "", Runtime),
    opt("tls-protocols", STR, "", Runtime),
    opt("tls-ciphers", STR, "", Runtime),
    opt("tls-ciphersuites", STR, "", Runtime),
    opt("tls-auth-clients", Kind::Enum(&["no", "yes", "optional"]), "yes", Runtime),
    only_default(opt("tls-replication", BOOL, "no", Runtime), NO_TLS_LINKS),
    only_default(opt("tls-cluster", BOOL, "no", Runtime), NO_TLS_LINKS),
    opt("tls-prefer-server-ciphers", BOOL, "no", Runtime),
    opt("tls-session-caching", BOOL, "yes", Runtime),
    opt("tls-session-cache-size", int(0, INT_MAX), "20480", Runtime),
    opt("tls-session-cache-timeout", int(0, INT_MAX), "300", Runtime),
    only_default(opt("maxmemory-clients", STR, "0", Runtime), "kvik does not evict clients by their memory yet"),
    only_default(opt("activedefrag", BOOL, "no", Runtime), "kvik has no active defragmentation"),
    only_default(
        opt("enable-module-command", Kind::Enum(&["no", "yes", "local"]), "no", Immutable),
        "kvik does not load modules",
    ),
    only_default(
        opt("enable-protected-configs", Kind::Enum(&["no", "yes", "local"]), "no", Immutable),
        "kvik keeps dir and dbfilename fixed while it runs",
    ),
    // Tuning knobs: kept and reported, without an effect a client can see.
    knob("active-defrag-cycle-max", int(1, 99), "25", Runtime),
    knob("active-defrag-cycle-min", int(1, 99), "1", Runtime),
    knob("active-defrag-ignore-bytes", mem(1, LONG_MAX), "104857600", Runtime),
    knob("active-defrag-max-scan-fields", int(1, LONG_MAX), "1000", Runtime),
    knob("active-defrag-threshold-lower", int(0, 1000), "10", Runtime),
    knob("active-defrag-threshold-upper", int(0, 1000), "100", Runtime),
    knob("active-expire-effort", int(1, 10), "1", Runtime),
    knob("activerehashing", BOOL, "yes", Runtime),
    knob("dynamic-hz", BOOL, "yes", Runtime),
    knob("lazyfree-lazy-eviction", BOOL, "no", Runtime),
    knob("lazyfree-lazy-expire", BOOL, "no", Runtime),
    knob("lazyfree-lazy-server-del", BOOL, "no", Runtime),
    knob("lazyfree-lazy-user-del", BOOL, "no", Runtime),
    knob("lazyfree-lazy-user-flush", BOOL, "no", Runtime),
    knob("list-compress-depth", int(0, INT_MAX), "0", Runtime),
    knob("maxmemory-eviction-tenacity", int(0, 100), "10", Runtime),
    knob("jemalloc-bg-thread", BOOL, "yes", Runtime),
    knob("io-threads-do-reads", BOOL, "no", Immutable),
    knob("disable-thp", BOOL, "yes", Immutable),
    knob("always-show-logo", BOOL, "no", Immutable),
    knob("set-proc-title", BOOL, "yes", Immutable),
    knob("proc-title-template", STR, "{title} {listen-addr} {server-mode}", Runtime),
    knob("crash-log-enabled", BOOL, "yes", Runtime),
    knob("crash-memcheck-enabled", BOOL, "yes", Runtime),
    knob("ignore-warnings", STR, "", Runtime),
    knob("server_cpulist", STR, "", Immutable),
    knob("bio_cpulist", STR, "", Immutable),
    knob("aof_rewrite_cpulist", STR, "", Immutable),
    knob("bgsave_cpulist", STR, "", Immutable),
    knob("socket-mark-id", int(0, INT_MAX), "0", Runtime),
    knob("bind-source-addr", STR, "", Runtime),
    knob("shutdown-timeout", int(0, INT_MAX), "10", Runtime),
    knob("propagation-error-behavior", Kind::Enum(&["ignore", "panic", "panic-on-replicas"]), "ignore", Runtime),
    alias(opt("busy-reply-threshold", int(0, LONG_MAX), "5000", Runtime), "lua-time-limit"),
    opt("acllog-max-len", int(0, LONG_MAX), "128", Runtime),
    opt("acl-pubsub-default", Kind::Enum(&["allchannels", "resetchannels"]), "resetchannels", Runtime),
    knob("sanitize-dump-payload", Kind::Enum(&["no", "yes", "clients"]), "no", Runtime),
    // Of the files kvik does not write yet, as Redis has them without persistence.
    opt("appendfilename", STR, "appendonly.aof", Immutable),
    opt("appenddirname", STR, "appendonlydir", Immutable),
    opt("aof-load-truncated", BOOL, "yes", Runtime),
    only_default(
        opt("aof-use-rdb-preamble", BOOL, "yes", Runtime),
        "kvik writes the append-only file's base as an RDB file only",
    ),
    opt("aof-timestamp-enabled", BOOL, "no", Runtime),
    // kvik's own: the form of the append-only file's next incremental file.
    opt("aof-format", Kind::Enum(&["resp", "respb"]), "resp", Runtime),
    opt("aof-rewrite-incremental-fsync", BOOL, "yes", Runtime),
    opt("aof-disable-auto-gc", BOOL, "no", Runtime),
    opt("auto-aof-rewrite-percentage", int(0, INT_MAX), "100", Runtime),
    opt("auto-aof-rewrite-min-size", mem(0, LONG_MAX), "67108864", Runtime),
    only_default(
        opt("no-appendfsync-on-rewrite", BOOL, "no", Runtime),
        "kvik flushes the append-only file to disk during rewrites as appendfsync says",
    ),
    opt("rdbcompression", BOOL, "yes", Runtime),
    opt("rdbchecksum", BOOL, "yes", Immutable),
    knob("rdb-del-sync-files", BOOL, "no", Runtime),
    opt("rdb-save-incremental-fsync", BOOL, "yes", Runtime),
    opt("stop-writes-on-bgsave-error", BOOL, "yes", Runtime),
    // Of replication: the master's side is kvik's; the rest is for when
    // kvik is a replica.
    opt("repl-backlog-size", mem(1, LONG_MAX), "1048576", Runtime),
    opt("repl-backlog-ttl", int(0, INT_MAX), "3600", Runtime),
    knob("repl-disable-tcp-nodelay", BOOL, "no", Runtime),
    opt("repl-diskless-load", Kind::Enum(&["disabled", "on-empty-db", "swapdb"]), "disabled", Runtime),
    opt("repl-diskless-sync", BOOL, "yes", Runtime),
    opt("repl-diskless-sync-delay", int(0, INT_MAX), "5", Runtime),
    opt("repl-diskless-sync-max-replicas", int(0, INT_MAX), "0", Runtime),
    alias(opt("repl-ping-replica-period", int(1, INT_MAX), "10", Runtime), "repl-ping-slave-period"),
    opt("repl-timeout", int(1, INT_MAX), "60", Runtime),
    alias(opt("replica-announce-ip", STR, "", Runtime), "slave-announce-ip"),
    alias(opt("replica-announce-port", int(0, 65535), "0", Runtime), "slave-announce-port"),
    opt("replica-announced", BOOL, "yes", Runtime),
    knob("replica-ignore-disk-write-errors", BOOL, "no", Runtime),
    alias(opt("replica-ignore-maxmemory", BOOL, "yes", Runtime), "slave-ignore-maxmemory"),
    alias(knob("replica-lazy-flush", BOOL, "no", Runtime), "slave-lazy-flush"),
    alias(opt("replica-priority", int(0, INT_MAX), "100", Runtime), "slave-priority"),
    alias(opt("replica-read-only", BOOL, "yes", Runtime), "slave-read-only"),
    alias(opt("replica-serve-stale-data", BOOL, "yes", Runtime), "slave-serve-stale-data"),
    // Of cluster mode, for when cluster-enabled can be yes.
    knob("cluster-config-file", STR, "nodes.conf", Immutable),
    knob("cluster-port", int(0, 65535), "0", Immutable),
    knob("cluster-node-timeout", int(0, LONG_MAX), "15000", Runtime),
    knob("cluster-migration-barrier", int(0, INT_MAX), "1", Runtime),
    knob("cluster-allow-replica-migration", BOOL, "yes", Runtime),
    knob("cluster-require-full-coverage", BOOL, "yes", Runtime),
    knob("cluster-allow-reads-when-down", BOOL, "no", Runtime),
    knob("cluster-allow-pubsubshard-when-down", BOOL, "yes", Runtime),
    alias(knob("cluster-replica-no-failover", BOOL, "no", Runtime), "cluster-slave-no-failover"),
    alias(knob("cluster-replica-validity-factor", int(0, INT_MAX), "10", Runtime), "cluster-slave-validity-factor"),
    knob("cluster-announce-ip", STR, "", Runtime),
    knob("cluster-announce-hostname", STR, "", Runtime),
    knob("cluster-announce-port", int(0, 65535), "0", Runtime),
    knob("cluster-announce-bus-port", int(0, 65535), "0", Runtime),
    knob("cluster-announce-tls-port", int(0, 65535), "0", Runtime),
    knob("cluster-link-sendbuf-limit", mem(0, LONG_MAX), "0", Runtime),
    knob("cluster-preferred-endpoint-type", Kind::Enum(&["ip", "hostname", "unknown-endpoint"]), "ip", Runtime),
    // Valkey 8.0's, so that its stock configuration file loads too.
    knob("set-max-listpack-value", int(0, LONG_MAX), "64", Runtime),
    knob("dual-channel-replication-enabled", BOOL, "no", Runtime),
    // kvik's log never shows keys or values, which is what this asks for.
    opt("hide-user-data-from-log", BOOL, "no", Runtime),
    only_default(opt("locale-collate", STR, "", Runtime), "kvik compares strings byte by byte (the C locale)"),
];

/// The names `syslog-facility` takes.
const SYSLOG_FACILITY_NAMES: &[&str] =
    &["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"];

/// `docs/config.md`: every option by what kvik does with it, rendered
/// from [`OPTIONS`] so that the page cannot drift from the registry.
pub fn options_page() -> String {
    let mut out = String::from(
        "# Configuration options\n\n\
         Generated from the option registry (`crates/server/src/config.rs`) by\n\
         `KVIK_WRITE_DOCS=1 cargo test -p kvik-server --lib options_page`; a test fails when it is stale.\n\n\
         kvik knows every option of Redis 7.0, under each of its names. Each one is in one of\n\
         three classes: kvik does what Redis does with it; kvik honours only its default and\n\
         refuses other values, at startup and by `CONFIG SET`, with the reason; or it is a\n\
         tuning knob whose value no client can observe in kvik, kept and reported by `CONFIG\n\
         GET`, and named once in the startup log when it is set.\n",
    );
    out.push_str(
        "\nThe `tls-*` options, what each does and what rustls cannot do, are described in\n\
         [tls.md](tls.md).\n",
    );
    type Section = (&'static str, fn(&Support) -> bool);
    let sections: [Section; 3] = [
        ("Honoured", |s| *s == Support::Full),
        ("Only the default (other values refused)", |s| matches!(s, Support::OnlyDefault(_))),
        ("Kept without effect", |s| *s == Support::NoEffect),
    ];
    out.push_str(
        "\nBesides options, a file (or the command line) may hold `include path` and\n\
         `rename-command name new-name`, as in Redis: the command answers to the new name only\n\
         (`\"\"` disables it), over RESP and RESPB alike, since a RESPB opcode names the command\n\
         itself. `CONFIG REWRITE` keeps these lines. Redis's `user`, `loadmodule` and\n\
         `sentinel` lines stop startup as unknown options.\n",
    );
    for (title, wanted) in sections {
        out.push_str(&format!("\n## {title}\n\n| option | default | `CONFIG SET` | note |\n|---|---|---|---|\n"));
        let mut rows: Vec<&OptionSpec> = OPTIONS.iter().filter(|o| wanted(&o.support)).collect();
        rows.sort_by_key(|o| o.name);
        for o in rows {
            let name = match o.alias {
                Some(a) => format!("`{}` (`{a}`)", o.name),
                None => format!("`{}`", o.name),
            };
            let default = match o.name {
                "threads" => "the number of cores".to_string(),
                "dir" => "the working directory".to_string(),
                _ if o.default.is_empty() => "`\"\"`".to_string(),
                _ => format!("`{}`", o.default),
            };
            let change = match o.change {
                Change::Runtime => "yes",
                Change::Immutable => "no",
                Change::Protected => "no (protected)",
            };
            let note = match o.support {
                Support::OnlyDefault(why) => why,
                _ => "",
            };
            out.push_str(&format!("| {name} | {default} | {change} | {note} |\n"));
        }
    }
    out
}

/// The option called `name` (or by its alias), without regard to case.
pub fn find_option(name: &str) -> Option<usize> {
    OPTIONS
        .iter()
        .position(|o| o.name.eq_ignore_ascii_case(name) || o.alias.is_some_and(|a| a.eq_ignore_ascii_case(name)))
}

/// Why a value was refused; the text is what Redis puts after the dash in
/// `ERR CONFIG SET failed (possibly related to argument 'x') - ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidValue(pub String);

impl fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn invalid(msg: impl Into<String>) -> InvalidValue {
    InvalidValue(msg.into())
}

/// Parse a size with an optional unit as Redis's `memtoull` does: `k`/`m`/`g`
/// are powers of 1000, `kb`/`mb`/`gb` powers of 1024, `b` is bytes.
pub fn parse_memory(text: &str) -> Option<i64> {
    let lower = text.to_ascii_lowercase();
    let digits = lower.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = lower.split_at(digits);
    let multiplier: i64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if number.is_empty() {
        return None;
    }
    number.parse::<i64>().ok()?.checked_mul(multiplier)
}

/// Keyspace event classes in the order Redis prints them, and the letters it accepts.
const EVENT_CLASSES: &str = "g$lshzxetd";
const EVENT_LETTERS: &str = "Ag$lshzxeKEtmdn";

/// Redis's printed form of a `notify-keyspace-events` value: `A` when every
/// class it covers is set (and then `n` is not shown, though it stays on),
/// else the classes and `n`; then `K`, `E` and `m`.
fn canonical_events(value: &str) -> Result<String, InvalidValue> {
    let mut set = [false; 128];
    for c in value.chars() {
        if !EVENT_LETTERS.contains(c) {
            return Err(invalid("Invalid event class character. Use 'Ag$lshzxeKEtmdn'."));
        }
        if c == 'A' {
            EVENT_CLASSES.bytes().for_each(|b| set[usize::from(b)] = true);
        } else {
            set[c as usize] = true;
        }
    }
    let mut out = String::new();
    if EVENT_CLASSES.bytes().all(|b| set[usize::from(b)]) {
        out.push('A');
    } else {
        out.extend(EVENT_CLASSES.chars().chain(['n']).filter(|&c| set[c as usize]));
    }
    out.extend("KEm".chars().filter(|&c| set[c as usize]));
    Ok(out)
}

/// Check `value` against `kind` and return its canonical text.
pub fn canonical(kind: Kind, value: &str) -> Result<String, InvalidValue> {
    let range = |n: i64, min: i64, max: i64| {
        if (min..=max).contains(&n) {
            Ok(n.to_string())
        } else {
            Err(invalid(format!("argument must be between {min} and {max} inclusive")))
        }
    };
    match kind {
        Kind::Bool => {
            if value.eq_ignore_ascii_case("yes") {
                Ok("yes".into())
            } else if value.eq_ignore_ascii_case("no") {
                Ok("no".into())
            } else {
                Err(invalid("argument must be 'yes' or 'no'"))
            }
        }
        Kind::Int { min, max } => {
            let n =
                parse_i64(value.as_bytes()).ok_or_else(|| invalid("argument couldn't be parsed into an integer"))?;
            range(n, min, max)
        }
        Kind::Memory { min, max } => {
            let n = parse_memory(value).ok_or_else(|| invalid("argument must be a memory value"))?;
            range(n, min, max)
        }
        Kind::Enum(words) => words
            .iter()
            .find(|w| w.eq_ignore_ascii_case(value))
            .map(|w| w.to_string())
            .ok_or_else(|| invalid(format!("argument(s) must be one of the following: {}", words.join(", ")))),
        Kind::Str => Ok(value.to_string()),
        Kind::Save => {
            let words: Vec<&str> = value.split_ascii_whitespace().collect();
            if !words.len().is_multiple_of(2) || words.iter().any(|w| parse_i64(w.as_bytes()).is_none_or(|n| n < 0)) {
                return Err(invalid("Invalid save parameters"));
            }
            Ok(words.join(" "))
        }
        Kind::Replicaof => {
            let words: Vec<&str> = value.split_ascii_whitespace().collect();
            match words[..] {
                [] => Ok(String::new()),
                [host, port] if parse_i64(port.as_bytes()).is_some_and(|p| (0..=65535).contains(&p)) => {
                    Ok(format!("{host} {port}"))
                }
                _ => Err(invalid("Invalid master host or port")),
            }
        }
        Kind::Bind => {
            let words: Vec<&str> = value.split_ascii_whitespace().collect();
            if words.is_empty() {
                return Err(invalid("Invalid bind address"));
            }
            Ok(words.join(" "))
        }
        Kind::Octal => match u32::from_str_radix(value, 8) {
            Ok(n) if n <= 0o777 => Ok(format!("{n:o}")),
            _ => Err(invalid("argument couldn't be parsed into an integer")),
        },
        Kind::KeyspaceEvents => canonical_events(value),
        Kind::OutputLimits => output_limits(OPTIONS_OUTPUT_DEFAULT, value),
        Kind::OomScores => {
            let scores: Vec<i64> = value.split_ascii_whitespace().filter_map(|w| parse_i64(w.as_bytes())).collect();
            if scores.len() != 3 || value.split_ascii_whitespace().count() != 3 {
                return Err(invalid("Invalid oom-score-adj-values, should be 3 numbers between -2000 and 2000"));
            }
            if scores.iter().any(|n| !(-2000..=2000).contains(n)) {
                return Err(invalid("Invalid oom-score-adj-values, elements must be between -2000 and 2000."));
            }
            Ok(scores.iter().map(i64::to_string).collect::<Vec<_>>().join(" "))
        }
        Kind::Percentiles => crate::metrics::histogram::canonical_percentiles(value).map_err(invalid),
        Kind::ShutdownFlags => {
            let words: Vec<String> = value.split_ascii_whitespace().map(str::to_ascii_lowercase).collect();
            let known = ["save", "nosave", "now", "force"];
            let ok = words == ["default"] || !words.is_empty() && words.iter().all(|w| known.contains(&w.as_str()));
            if !ok || words.contains(&"save".to_string()) && words.contains(&"nosave".to_string()) {
                return Err(invalid("argument(s) must be one of the following: default, save, nosave, now, force"));
            }
            Ok(words.join(" "))
        }
    }
}

/// The default of `client-output-buffer-limit`, which partial values amend.
const OPTIONS_OUTPUT_DEFAULT: &str = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// Output buffer limits of one client class: close a client whose pending
/// replies exceed `hard` bytes, or stay above `soft` bytes for `soft_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputLimit {
    /// Bytes above which the client is closed at once (0: none).
    pub hard: u64,
    /// Bytes above which the client may stay only `soft_seconds` (0: none).
    pub soft: u64,
    /// Seconds allowed above `soft` (0: the soft limit is off).
    pub soft_seconds: u64,
}

/// The client classes of `client-output-buffer-limit`, as `CONFIG GET` names them.
const OUTPUT_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// The limits of each class in `text` (a canonical value), in [`OUTPUT_CLASSES`] order.
pub fn parse_output_limits(text: &str) -> [OutputLimit; 3] {
    let mut limits = [OutputLimit::default(); 3];
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    for group in words.chunks_exact(4) {
        let class = match group[0] {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => continue,
        };
        let number = |w: &str| parse_memory(w).and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
        limits[class] = OutputLimit { hard: number(group[1]), soft: number(group[2]), soft_seconds: number(group[3]) };
    }
    limits
}

/// `current` amended by the groups in `value`, with Redis's checks and
/// errors; a class not named keeps its limits, as in Redis.
fn output_limits(current: &str, value: &str) -> Result<String, InvalidValue> {
    let words: Vec<&str> = value.split_ascii_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err(invalid("Wrong number of arguments in buffer limit configuration."));
    }
    let mut limits = parse_output_limits(current);
    for group in words.chunks_exact(4) {
        let class = match group[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => return Err(invalid("Invalid client class specified in buffer limit configuration.")),
        };
        let bad = || invalid("Error in hard, soft or soft_seconds setting in buffer limit configuration.");
        let size = |w: &str| parse_memory(w).and_then(|n| u64::try_from(n).ok()).ok_or_else(bad);
        let seconds = parse_i64(group[3].as_bytes()).and_then(|n| u64::try_from(n).ok()).ok_or_else(bad)?;
        limits[class] = OutputLimit { hard: size(group[1])?, soft: size(group[2])?, soft_seconds: seconds };
    }
    Ok(OUTPUT_CLASSES
        .iter()
        .zip(limits)
        .map(|(name, l)| format!("{name} {} {} {}", l.hard, l.soft, l.soft_seconds))
        .collect::<Vec<_>>()
        .join(" "))
}

/// Why a configuration could not be loaded at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// An option kvik does not know.
    UnknownOption(String),
    /// An option given without its value.
    MissingValue(String),
    /// An option whose value cannot be used.
    InvalidValue {
        /// The option, as written.
        option: String,
        /// The value, as written.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// The configuration file could not be read or has a malformed line.
    File {
        /// The file.
        path: String,
        /// Line number (1-based), 0 when the file itself could not be read.
        line: usize,
        /// What went wrong.
        reason: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::UnknownOption(o) => write!(f, "unknown option '{o}'"),
            ConfigError::MissingValue(o) => write!(f, "option '{o}' needs a value"),
            ConfigError::InvalidValue { option, value, reason } => {
                write!(f, "invalid value '{value}' for option '{option}': {reason}")
            }
            ConfigError::File { path, line: 0, reason } => write!(f, "cannot read config file '{path}': {reason}"),
            ConfigError::File { path, line, reason } => write!(f, "{path}:{line}: {reason}"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Why `CONFIG SET` refused a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetError {
    /// No option has that name.
    Unknown(String),
    /// The option exists but refused the value or the change; the option
    /// name and the reason.
    Failed(String, String),
}

impl SetError {
    /// The error reply, as Redis words it (without the leading `-`).
    pub fn reply_text(&self) -> String {
        match self {
            SetError::Unknown(name) => format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'"),
            SetError::Failed(name, reason) => {
                format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")
            }
        }
    }
}

/// The value of every option, in canonical text, indexed like [`OPTIONS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    values: Vec<String>,
    /// `rename-command old new` directives, in order (`new` empty: disabled).
    renames: Vec<(String, String)>,
    /// `user name rule...` directives, in order: the name, then the rules.
    users: Vec<Vec<String>>,
}

/// One core per event loop unless told otherwise.
fn default_threads() -> String {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).to_string()
}

impl Default for Config {
    fn default() -> Self {
        let values = OPTIONS
            .iter()
            .map(|o| match o.name {
                "threads" => default_threads(),
                // Redis reports the working directory it runs in, as an absolute path.
                "dir" => std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| ".".into()),
                _ => o.default.to_string(),
            })
            .collect();
        Config { values, renames: Vec::new(), users: Vec::new() }
    }
}

impl Config {
    /// The canonical value of option `index` of [`OPTIONS`].
    pub fn value(&self, index: usize) -> &str {
        self.values.get(index).map(String::as_str).unwrap_or("")
    }

    /// The canonical value of the option called `name` ("" for an unknown name).
    pub fn get(&self, name: &str) -> &str {
        find_option(name).map(|i| self.value(i)).unwrap_or("")
    }

    /// A numeric option as a number (0 when it is not numeric).
    pub fn int(&self, name: &str) -> i64 {
        parse_i64(self.get(name).as_bytes()).unwrap_or(0)
    }

    /// A numeric option as a count or size (0 when negative).
    pub fn usize(&self, name: &str) -> usize {
        usize::try_from(self.int(name)).unwrap_or(0)
    }

    /// A yes/no option.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name) == "yes"
    }

    /// TCP port; 0 means no TCP listener, as in Redis.
    pub fn port(&self) -> u16 {
        u16::try_from(self.int("port")).unwrap_or(0)
    }

    /// The addresses to listen on, as written (`-` marks an optional one).
    pub fn bind_addresses(&self) -> Vec<String> {
        self.get("bind").split_ascii_whitespace().map(str::to_string).collect()
    }

    /// Move into the `dir` the configuration names, as Redis does at
    /// startup, and record it as the absolute path `CONFIG GET dir` reports.
    pub fn enter_dir(&mut self) -> Result<(), String> {
        let Some(index) = find_option("dir") else { return Ok(()) };
        let dir = self.value(index).to_string();
        std::env::set_current_dir(&dir).map_err(|e| format!("Can't chdir to '{dir}': {e}"))?;
        let here = std::env::current_dir().map_err(|e| format!("Can't read the working directory: {e}"))?;
        if let Some(slot) = self.values.get_mut(index) {
            *slot = here.display().to_string();
        }
        Ok(())
    }

    /// The `rename-command` directives, in the order given.
    pub fn renames(&self) -> &[(String, String)] {
        &self.renames
    }

    /// The `user` directives, in the order given: each the user's name,
    /// then its rules.
    pub fn users(&self) -> &[Vec<String>] {
        &self.users
    }

    /// The names of the tuning knobs ([`Support::NoEffect`]) set to other
    /// than their defaults, for the startup log to name.
    pub fn set_knobs(&self) -> Vec<&'static str> {
        OPTIONS
            .iter()
            .enumerate()
            .filter(|(i, o)| o.support == Support::NoEffect && self.value(*i) != o.default)
            .map(|(_, o)| o.name)
            .collect()
    }

    /// How long a script may run before kvik stops it, if it has not
    /// written (`busy-reply-threshold`, `lua-time-limit`).
    pub fn busy_reply_threshold_ms(&self) -> u64 {
        self.int("busy-reply-threshold").max(0) as u64
    }

    /// Number of event-loop threads.
    pub fn threads(&self) -> usize {
        self.usize("threads").max(1)
    }

    /// Path of the unix socket to listen on, if any.
    pub fn unixsocket(&self) -> Option<&str> {
        Some(self.get("unixsocket")).filter(|p| !p.is_empty())
    }

    /// Permission bits for the unix socket (0: leave the default).
    pub fn unixsocketperm(&self) -> u32 {
        u32::from_str_radix(self.get("unixsocketperm"), 8).unwrap_or(0)
    }

    /// Validate and store `value` for option `index`, whatever its [`Change`].
    /// The master this server replicates now (`REPLICAOF`), as `replicaof`
    /// shows it and `CONFIG REWRITE` writes it; `None`: it is a master.
    pub fn set_replicaof(&mut self, upstream: Option<(&str, u16)>) {
        let value = upstream.map_or_else(String::new, |(host, port)| format!("{host} {port}"));
        if let Some(index) = find_option("replicaof") {
            let _ = self.store(index, &value);
        }
    }

    /// The master `replicaof` names, if any.
    pub fn replicaof(&self) -> Option<(String, u16)> {
        let mut words = self.get("replicaof").split(' ');
        let host = words.next().filter(|h| !h.is_empty())?.to_string();
        let port = words.next()?.parse().ok()?;
        Some((host, port))
    }

    fn store(&mut self, index: usize, value: &str) -> Result<(), InvalidValue> {
        let Some(spec) = OPTIONS.get(index) else {
            return Err(invalid("unknown option"));
        };
        let mut text = match spec.kind {
            // A value naming some classes changes only those.
            Kind::OutputLimits => output_limits(self.value(index), value)?,
            kind => canonical(kind, value)?,
        };
        if spec.name == "hz" {
            // Redis keeps the timer frequency within 1..=500 whatever is asked.
            let hz = parse_i64(text.as_bytes()).unwrap_or(10).clamp(1, 500);
            text = hz.to_string();
        }
        if spec.name == "dbfilename" && text.contains('/') {
            return Err(invalid("dbfilename can't be a path, just a filename"));
        }
        if let Support::OnlyDefault(why) = spec.support {
            if text != spec.default {
                return Err(invalid(why));
            }
        }
        if let Some(slot) = self.values.get_mut(index) {
            *slot = text;
        }
        Ok(())
    }

    /// Apply `CONFIG SET name value [name value ...]`: every pair is checked
    /// before any is applied, so a failed call changes nothing, as in Redis.
    pub fn set_many(&mut self, pairs: &[(&str, &str)]) -> Result<(), SetError> {
        let mut seen = Vec::new();
        for (name, _) in pairs {
            let index = find_option(name).ok_or_else(|| SetError::Unknown((*name).to_string()))?;
            seen.push(index);
        }
        let mut next = self.clone();
        for (i, ((name, value), &index)) in pairs.iter().zip(&seen).enumerate() {
            if seen[..i].contains(&index) {
                return Err(SetError::Failed((*name).to_string(), "duplicate parameter".into()));
            }
            match OPTIONS[index].change {
                Change::Runtime => {}
                Change::Immutable => {
                    return Err(SetError::Failed((*name).to_string(), "can't set immutable config".into()))
                }
                Change::Protected => {
                    return Err(SetError::Failed((*name).to_string(), "can't set protected config".into()))
                }
            }
            next.store(index, value).map_err(|e| SetError::Failed((*name).to_string(), e.0))?;
        }
        *self = next;
        Ok(())
    }

    /// Set one option at startup (any [`Change`] allowed); `words` are the
    /// value's words as written, joined with spaces for multi-word options.
    fn set_startup(&mut self, option: &str, name: &str, words: &[String]) -> Result<(), ConfigError> {
        let index = find_option(name).ok_or_else(|| ConfigError::UnknownOption(option.to_string()))?;
        let multi = matches!(
            OPTIONS[index].kind,
            Kind::Save
                | Kind::Bind
                | Kind::OutputLimits
                | Kind::OomScores
                | Kind::Percentiles
                | Kind::ShutdownFlags
                | Kind::Replicaof
        );
        if words.is_empty() || (!multi && words.len() != 1) {
            return Err(if words.is_empty() {
                ConfigError::MissingValue(option.to_string())
            } else {
                ConfigError::InvalidValue {
                    option: option.to_string(),
                    value: words.join(" "),
                    reason: "wrong number of arguments".into(),
                }
            });
        }
        let value = words.join(" ");
        self.store(index, &value).map_err(|e| ConfigError::InvalidValue {
            option: option.to_string(),
            value: value.clone(),
            reason: e.0,
        })
    }

    /// Build a configuration from command-line words (without the program
    /// name): an optional configuration file first, then `--name value ...`
    /// options, which override the file. Returns the file's path too, for
    /// `CONFIG REWRITE`.
    pub fn from_args<I, S>(args: I) -> Result<(Config, Option<PathBuf>), ConfigError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let words: Vec<String> = args.into_iter().map(Into::into).collect();
        let mut config = Config::default();
        let mut rest = &words[..];
        let mut file = None;
        if let Some(first) = words.first() {
            if !first.starts_with("--") {
                let path = PathBuf::from(first);
                config.load_file(&path)?;
                file = Some(path);
                rest = &words[1..];
            }
        }
        let mut i = 0;
        while i < rest.len() {
            let option = &rest[i];
            let name = match option.strip_prefix("--") {
                Some(name) if !name.is_empty() => name,
                _ => return Err(ConfigError::UnknownOption(option.clone())),
            };
            let mut end = i + 1;
            while end < rest.len() && !rest[end].starts_with("--") {
                end += 1;
            }
            // `--save ""` (or a bare `--save`) gives an empty value, which only
            // free-text options and save accept.
            let values: Vec<String> = rest[i + 1..end].to_vec();
            if name.eq_ignore_ascii_case("rename-command") {
                let [from, to] = &values[..] else {
                    return Err(ConfigError::InvalidValue {
                        option: option.clone(),
                        value: values.join(" "),
                        reason: "wrong number of arguments".into(),
                    });
                };
                config.renames.push((from.clone(), to.clone()));
                i = end;
                continue;
            }
            if name.eq_ignore_ascii_case("user") {
                if values.is_empty() {
                    return Err(ConfigError::InvalidValue {
                        option: option.clone(),
                        value: String::new(),
                        reason: "wrong number of arguments".into(),
                    });
                }
                config.users.push(values);
                i = end;
                continue;
            }
            let bare_save = values.is_empty() && name.eq_ignore_ascii_case("save");
            if bare_save || (values.len() == 1 && values[0].is_empty()) {
                let index = find_option(name).ok_or_else(|| ConfigError::UnknownOption(option.clone()))?;
                config.store(index, "").map_err(|e| ConfigError::InvalidValue {
                    option: option.clone(),
                    value: String::new(),
                    reason: e.0,
                })?;
            } else {
                config.set_startup(option, name, &values)?;
            }
            i = end;
        }
        Ok((config, file))
    }

    /// Apply a redis.conf-style file: one `name value...` per line, `#`
    /// comments, values quoted with `"..."` or `'...'` when they hold spaces.
    pub fn load_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        self.load_file_nested(path, 0)
    }

    /// [`Config::load_file`], `depth` files deep in `include` directives.
    fn load_file_nested(&mut self, path: &Path, depth: usize) -> Result<(), ConfigError> {
        /// Deeper than this, an `include` is taken to include itself.
        const MAX_INCLUDE_DEPTH: usize = 16;
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
            path: shown.clone(),
            line: 0,
            reason: e.to_string(),
        })?;
        let mut save_seen = false;
        for (n, line) in text.lines().enumerate() {
            let file_error = |reason: String| ConfigError::File { path: shown.clone(), line: n + 1, reason };
            // As in Redis, a comment is a line whose first character after
            // blanks is `#`; it is skipped before it is split into words, so
            // its quotes need not balance.
            let trimmed = line.trim_matches([' ', '\t', '\r', '\n']);
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let words = split_config_line(trimmed).ok_or_else(|| file_error("unbalanced quotes".into()))?;
            let Some((name, values)) = words.split_first() else {
                continue;
            };
            if name.eq_ignore_ascii_case("rename-command") {
                let [from, to] = values else {
                    return Err(file_error("wrong number of arguments for rename-command".into()));
                };
                self.renames.push((from.clone(), to.clone()));
                continue;
            }
            if name.eq_ignore_ascii_case("user") {
                if values.is_empty() {
                    return Err(file_error("wrong number of arguments".into()));
                }
                self.users.push(values.to_vec());
                continue;
            }
            if name.eq_ignore_ascii_case("include") {
                let [included] = values else {
                    return Err(file_error("include needs one file name".into()));
                };
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(file_error("includes nested too deeply".into()));
                }
                self.load_file_nested(Path::new(included), depth + 1)?;
                continue;
            }
            let Some(index) = find_option(name) else {
                return Err(file_error(format!("unknown option '{name}'")));
            };
            // Several `save` lines add up, as in redis.conf; the first replaces the default.
            let values = if OPTIONS[index].name == "save" && save_seen && !values.iter().all(String::is_empty) {
                let mut all: Vec<String> = self.value(index).split(' ').map(str::to_string).collect();
                all.retain(|w| !w.is_empty());
                all.extend(values.iter().cloned());
                all
            } else {
                values.to_vec()
            };
            if OPTIONS[index].name == "save" {
                save_seen = true;
            }
            if values.len() == 1 && values[0].is_empty() {
                self.store(index, "").map_err(|e| file_error(format!("invalid value for '{name}': {e}")))?;
            } else {
                self.set_startup(name, name, &values).map_err(|e| file_error(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Rewrite the configuration file at `path` so that it holds the running
    /// configuration: lines of options that changed are replaced in place,
    /// later duplicates dropped, options not yet in the file appended, and
    /// comments and everything else kept.
    ///
    /// `users` are the `user` lines of the running ACL users (none when
    /// they live in an `aclfile`); they replace the file's `user` lines,
    /// where the first of them was or at the end.
    pub fn rewrite(&self, path: &Path, users: &[String]) -> std::io::Result<()> {
        let old = std::fs::read_to_string(path).unwrap_or_default();
        let mut written = vec![false; OPTIONS.len()];
        let mut out = String::new();
        let mut users_written = false;
        for line in old.lines() {
            let name = split_config_line(line).and_then(|w| w.into_iter().next());
            if name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case("user")) {
                if !users_written {
                    users_written = true;
                    users.iter().for_each(|u| {
                        out.push_str(u);
                        out.push('\n');
                    });
                }
                continue;
            }
            match name.as_deref().filter(|n| !n.starts_with('#')).and_then(find_option) {
                Some(index) => {
                    // A master's file loses its `replicaof` line, as Redis's does.
                    let gone = matches!(OPTIONS[index].kind, Kind::Replicaof) && self.replicaof().is_none();
                    if !written[index] && !gone {
                        out.push_str(&self.config_line(index));
                        out.push('\n');
                    }
                    written[index] = true;
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        let defaults = Config::default();
        let mut header = false;
        for (index, spec) in OPTIONS.iter().enumerate() {
            if written[index] || self.value(index) == defaults.value(index) {
                continue;
            }
            if !header {
                out.push_str("# Generated by CONFIG REWRITE\n");
                header = true;
            }
            let _ = spec;
            out.push_str(&self.config_line(index));
            out.push('\n');
        }
        if !users_written {
            for user in users {
                if !header {
                    out.push_str("# Generated by CONFIG REWRITE\n");
                    header = true;
                }
                out.push_str(user);
                out.push('\n');
            }
        }
        let tmp = path.with_extension("kvik-rewrite.tmp");
        std::fs::write(&tmp, out)?;
        std::fs::rename(&tmp, path)
    }

    /// `name value` as a configuration file line, quoting where needed.
    fn config_line(&self, index: usize) -> String {
        let spec = &OPTIONS[index];
        let value = self.value(index);
        match spec.kind {
            // One line per save point, as Redis rewrites them.
            Kind::Save if !value.is_empty() => {
                let words: Vec<&str> = value.split(' ').collect();
                let lines: Vec<String> = words.chunks(2).map(|p| format!("{} {}", spec.name, p.join(" "))).collect();
                lines.join("\n")
            }
            Kind::Bind | Kind::OutputLimits | Kind::Replicaof if !value.is_empty() => format!("{} {value}", spec.name),
            _ => format!("{} {}", spec.name, quote_config_value(value)),
        }
    }
}

/// Quote a value for a configuration file when it is empty or holds
/// characters the line splitter treats specially.
fn quote_config_value(value: &str) -> String {
    let plain =
        !value.is_empty() && value.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\'' && b != b'\\');
    if plain {
        return value.to_string();
    }
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Split one configuration line into words as Redis's `sdssplitargs` does:
/// spaces separate words, `"..."` allows escapes (`\n`, `\"`, `\xHH`), `'...'`
/// is literal except `\'`. `None` for unbalanced quotes or a quote not
/// followed by a space.
pub fn split_config_line(line: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = line.chars().collect();
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i >= chars.len() {
            return Some(words);
        }
        let mut word = String::new();
        match chars[i] {
            '"' => {
                i += 1;
                loop {
                    let c = *chars.get(i)?;
                    i += 1;
                    match c {
                        '"' => break,
                        '\\' => {
                            let e = *chars.get(i)?;
                            i += 1;
                            match e {
                                'n' => word.push('\n'),
                                'r' => word.push('\r'),
                                't' => word.push('\t'),
                                'b' => word.push('\u{8}'),
                                'a' => word.push('\u{7}'),
                                'x' => {
                                    let hex: String = chars.get(i..i + 2)?.iter().collect();
                                    let byte = u8::from_str_radix(&hex, 16).ok()?;
                                    word.push(char::from(byte));
                                    i += 2;
                                }
                                other => word.push(other),
                            }
                        }
                        c => word.push(c),
                    }
                }
                if chars.get(i).is_some_and(|c| !c.is_whitespace()) {
                    return None;
                }
            }
            '\'' => {
                i += 1;
                loop {
                    let c = *chars.get(i)?;
                    i += 1;
                    match c {
                        '\'' => break,
                        '\\' if chars.get(i) == Some(&'\'') => {
                            word.push('\'');
                            i += 1;
                        }
                        c => word.push(c),
                    }
                }
                if chars.get(i).is_some_and(|c| !c.is_whitespace()) {
                    return None;
                }
            }
            _ => {
                while i < chars.len() && !chars[i].is_whitespace() {
                    word.push(chars[i]);
                    i += 1;
                }
            }
        }
        words.push(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Result<Config, ConfigError> {
        Config::from_args(words.iter().copied()).map(|(c, _)| c)
    }

    #[test]
    fn defaults_listen_everywhere_on_6379() {
        // As Redis 7.0: every address, protected mode keeping others out.
        let c = args(&[]).unwrap();
        assert_eq!(c.bind_addresses(), ["*", "-::*"]);
        assert_eq!(c.port(), 6379);
        assert!(c.threads() >= 1);
        assert_eq!(c.get("save"), "3600 1 300 100 60 10000");
        assert_eq!(c.get("appendonly"), "no");
        assert_eq!(c.int("proto-max-bulk-len"), 512 * 1024 * 1024);
    }

    #[test]
    fn options_take_the_following_words() {
        let c = args(&["--port", "7000", "--bind", "0.0.0.0", "::1", "--THREADS", "4", "--save", ""]).unwrap();
        assert_eq!(c.port(), 7000);
        assert_eq!(c.bind_addresses(), ["0.0.0.0", "::1"]);
        assert_eq!(c.threads(), 4);
        assert_eq!(c.get("save"), "");
        assert_eq!(args(&["--io-threads", "2"]).unwrap().threads(), 2);
        assert_eq!(args(&["--maxmemory", "1mb"]).unwrap().get("maxmemory"), "1048576");
        assert_eq!(args(&["--save", "--port", "1"]).unwrap().get("save"), "");
    }

    #[test]
    fn settings_that_ask_for_what_kvik_cannot_do_yet_are_refused() {
        for (words, why) in
            [(&["--save", "60"][..], "Invalid save parameters"), (&["--save", "60 -1"], "Invalid save parameters")]
        {
            let e = args(words).unwrap_err().to_string();
            assert!(e.contains(why), "{words:?}: {e}");
        }
        assert_eq!(args(&["--appendonly", "no", "--save", ""]).unwrap().get("save"), "");
        let mut c = Config::default();
        assert!(c.set_many(&[("save", "900 x")]).is_err());
        assert!(c.set_many(&[("save", "900 1")]).is_ok());
        assert_eq!(c.get("save"), "900 1");
        assert!(args(&["--shutdown-on-sigterm", "save"]).is_ok());
        assert_eq!(args(&["--save", "60", "1"]).unwrap().get("save"), "60 1");
        assert_eq!(c.get("appendonly"), "no");
        assert!(c.set_many(&[("save", ""), ("appendonly", "no")]).is_ok());
    }

    #[test]
    fn save_points_are_rewritten_one_line_each_and_read_back() {
        let path = std::env::temp_dir().join(format!("kvik-config-save-{}.conf", std::process::id()));
        std::fs::write(&path, "port 7000\nsave 900 1\nsave 60 5\n").expect("write");
        let mut c = Config::default();
        c.load_file(&path).expect("load");
        assert_eq!(c.get("save"), "900 1 60 5", "save lines add up");
        c.set_many(&[("save", "100 5 30 7")]).expect("set");
        for _ in 0..2 {
            c.rewrite(&path, &[]).expect("rewrite");
            let text = std::fs::read_to_string(&path).expect("read");
            assert_eq!(text, "port 7000\nsave 100 5\nsave 30 7\n", "{text}");
        }
        let mut back = Config::default();
        back.load_file(&path).expect("load");
        assert_eq!(back.get("save"), "100 5 30 7");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn options_page_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md");
        let text = options_page();
        if std::env::var_os("KVIK_WRITE_DOCS").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == text,
            "docs/config.md is stale: run KVIK_WRITE_DOCS=1 cargo test -p kvik-server --lib options_page"
        );
    }

    #[test]
    fn every_name_is_unique() {
        let mut names: Vec<&str> = OPTIONS.iter().flat_map(|o| std::iter::once(o.name).chain(o.alias)).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "an option name or alias is listed twice");
    }

    #[test]
    fn unknown_option_is_named() {
        let e = args(&["--port", "1", "--maxmemry", "1gb"]).unwrap_err();
        assert_eq!(e.to_string(), "unknown option '--maxmemry'");
    }

    #[test]
    fn bad_or_missing_values_are_refused() {
        assert_eq!(args(&["--port"]).unwrap_err(), ConfigError::MissingValue("--port".into()));
        let e = args(&["--port", "70000"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value '70000' for option '--port': argument must be between 0 and 65535 inclusive"
        );
        assert!(args(&["--threads", "0"]).is_err());
        assert!(args(&["--timeout", "1", "2"]).is_err());
    }

    #[test]
    fn set_many_is_all_or_nothing_with_redis_errors() {
        let mut c = Config::default();
        let e = c.set_many(&[("timeout", "5"), ("foo", "1")]).unwrap_err();
        assert_eq!(e.reply_text(), "ERR Unknown option or number of arguments for CONFIG SET - 'foo'");
        let e = c.set_many(&[("maxclients", "5"), ("timeout", "x")]).unwrap_err();
        assert_eq!(
            e.reply_text(),
            "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
        );
        assert_eq!(c.get("maxclients"), "10000");
        c.set_many(&[("maxmemory", "1MB"), ("appendfsync", "ALWAYS"), ("hz", "1000")]).unwrap();
        assert_eq!((c.get("maxmemory"), c.get("appendfsync"), c.get("hz")), ("1048576", "always", "500"));
        let e = c.set_many(&[("databases", "3")]).unwrap_err();
        assert!(e.reply_text().ends_with("can't set immutable config"));
        let e = c.set_many(&[("timeout", "1"), ("timeout", "2")]).unwrap_err();
        assert!(e.reply_text().ends_with("duplicate parameter"));
    }

    #[test]
    fn output_limits_amend_the_classes_named() {
        let mut c = Config::default();
        c.set_many(&[("client-output-buffer-limit", "normal 1mb 2mb 3 replica 1 2 3")]).unwrap();
        assert_eq!(
            c.get("client-output-buffer-limit"),
            "normal 1048576 2097152 3 slave 1 2 3 pubsub 33554432 8388608 60"
        );
        assert_eq!(parse_output_limits(c.get("client-output-buffer-limit"))[0].soft, 2097152);
        let err = |v: &str| Config::default().set_many(&[("client-output-buffer-limit", v)]).unwrap_err().reply_text();
        assert!(err("normal 1 2").ends_with("- Wrong number of arguments in buffer limit configuration."));
        assert!(err("master 1 2 3").ends_with("- Invalid client class specified in buffer limit configuration."));
        assert!(err("normal 1 2 -3")
            .ends_with("- Error in hard, soft or soft_seconds setting in buffer limit configuration."));
        c.set_many(&[("client-output-buffer-limit", "")]).unwrap();
        assert!(c.get("client-output-buffer-limit").starts_with("normal 1048576 "));
        let c = args(&["--client-output-buffer-limit", "normal", "4mb", "0", "0"]).unwrap();
        assert!(c.get("client-output-buffer-limit").starts_with("normal 4194304 0 0 slave"));
    }

    #[test]
    fn keyspace_events_are_canonical() {
        assert_eq!(canonical_events("KEA").unwrap(), "AKE");
        assert_eq!(canonical_events("Kgx").unwrap(), "gxK");
        assert_eq!(canonical_events("KEtmdn").unwrap(), "tdnKEm", "n among the classes, m last");
        assert_eq!(canonical_events("KEAmn").unwrap(), "AKEm", "A hides n");
        assert_eq!(canonical_events("Ed$").unwrap(), "$dE");
        assert!(canonical_events("q").is_err());
    }

    #[test]
    fn config_lines_split_like_redis() {
        assert_eq!(split_config_line("  save 900 1 ").unwrap(), ["save", "900", "1"]);
        assert_eq!(split_config_line("requirepass \"a b\\x41\"").unwrap(), ["requirepass", "a bA"]);
        assert_eq!(split_config_line("dir 'it\\'s'").unwrap(), ["dir", "it's"]);
        assert_eq!(split_config_line("save \"\"").unwrap(), ["save", ""]);
        assert!(split_config_line("dir \"open").is_none());
    }
}
