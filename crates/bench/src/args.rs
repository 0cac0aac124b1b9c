//! Command-line options, spelled and defaulted as redis-benchmark 7.0 spells
//! them, plus kvik's own (`--respb`, `--mux`, `--json`, `--runtime`).
//!
//! Parsing is strict where redis-benchmark silently reads garbage as 0
//! (`-c abc`): a benchmark that quietly runs with the wrong settings is worse
//! than one that refuses to start.

use std::fmt;
use std::path::PathBuf;

/// Largest `-r`: the placeholder is replaced by 12 decimal digits.
pub const MAX_KEYSPACE: u64 = 1_000_000_000_000;
/// Largest `-d`, as redis-benchmark caps it (1 GiB).
pub const MAX_DATA_SIZE: usize = 1024 * 1024 * 1024;
/// Most logical clients in one run.
pub const MAX_CLIENTS: usize = 1_000_000;
/// Deepest pipeline per logical client.
pub const MAX_PIPELINE: usize = 1_000_000;
/// Most OS threads.
pub const MAX_THREADS: usize = 1024;
/// Most mux channels on one connection (RESPB mux ids are 16 bits; 0 is not used).
pub const MAX_MUX: usize = u16::MAX as usize;

/// The wire protocol spoken to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// RESP2 (the default).
    Resp2,
    /// RESP3 after `HELLO 3` (`-3`).
    Resp3,
    /// RESPB/1 after the `D3 C1` handshake (`--respb`, implied by `--mux`).
    Respb,
}

impl Wire {
    /// The name used in `--json` output.
    pub fn name(self) -> &'static str {
        match self {
            Wire::Resp2 => "resp2",
            Wire::Resp3 => "resp3",
            Wire::Respb => "respb",
        }
    }
}

/// How `--threads` runs its event loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeKind {
    /// One current-thread tokio runtime per OS thread, each driving its share
    /// of the connections (no work stealing, no cross-thread wakeups).
    PerThread,
    /// One multi-thread tokio runtime with `--threads` workers (the default:
    /// on a quick local run against redis-server, -c 50 -P 1 --threads 2, it
    /// did about 1.8x the requests per second of `PerThread`, whose threads
    /// cannot take over each other's connections when one is descheduled;
    /// at -P 16 the two were within noise).
    Multi,
}

/// Everything a run needs to know.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub host: String,
    pub port: u16,
    pub socket: Option<PathBuf>,
    pub password: Option<String>,
    pub user: Option<String>,
    pub clients: usize,
    pub requests: u64,
    pub data_size: usize,
    pub dbnum: u32,
    pub wire: Wire,
    pub threads: usize,
    pub runtime: RuntimeKind,
    pub keepalive: bool,
    /// `-r`: replace `__rand_int__` with numbers below this.
    pub keyspace: Option<u64>,
    pub pipeline: usize,
    pub quiet: bool,
    pub csv: bool,
    pub json: bool,
    pub loop_forever: bool,
    /// Decimal places of latencies in the full report.
    pub precision: usize,
    /// `-t`, lower-cased, without empty entries.
    pub tests: Option<Vec<String>>,
    pub show_errors: bool,
    /// Logical clients per TCP connection (1: no mux).
    pub mux: usize,
    /// A command given on the command line instead of the test suite.
    pub command: Vec<String>,
    /// `--tls`.
    pub tls: bool,
    /// `--sni`, `--cacert`, `--cacertdir`, `--insecure`, `--cert`, `--key`,
    /// `--tls-ciphers`, `--tls-ciphersuites`.
    pub tls_options: kvik_client::ClientTlsOptions,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            host: "127.0.0.1".into(),
            port: 6379,
            socket: None,
            password: None,
            user: None,
            clients: 50,
            requests: 100_000,
            data_size: 3,
            dbnum: 0,
            wire: Wire::Resp2,
            threads: 0,
            runtime: RuntimeKind::Multi,
            keepalive: true,
            keyspace: None,
            pipeline: 1,
            quiet: false,
            csv: false,
            json: false,
            loop_forever: false,
            precision: 3,
            tests: None,
            show_errors: false,
            mux: 1,
            command: Vec::new(),
            tls: false,
            tls_options: kvik_client::ClientTlsOptions::default(),
        }
    }
}

impl Config {
    /// TCP connections the run opens: one per client, or one per `mux` clients.
    pub fn connections(&self) -> usize {
        self.clients.div_ceil(self.mux)
    }

    /// Channels on connection `i` (the last one takes the remainder).
    pub fn channels_on(&self, i: usize) -> usize {
        let full = self.clients / self.mux;
        if i < full {
            self.mux
        } else {
            self.clients - full * self.mux
        }
    }

    /// `host:port` or the socket path, for messages.
    pub fn server_name(&self) -> String {
        match &self.socket {
            Some(p) => p.display().to_string(),
            None => format!("{}:{}", self.host, self.port),
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Run(Box<Config>),
    Help,
    Version,
    /// `--wire-sizes`: print the RESP / RESPB byte-count tables and exit.
    WireSizes,
}

/// A command line that cannot be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgError {
    /// An option redis-benchmark does not know, or one missing its value.
    Invalid(String),
    /// A value that is not a number in range.
    BadValue { option: String, value: String, why: &'static str },
    /// A redis-benchmark option this tool does not implement.
    Unsupported(String),
    /// Options that contradict each other.
    Conflict(&'static str),
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::Invalid(opt) => write!(f, "Invalid option \"{opt}\" or option argument missing"),
            ArgError::BadValue { option, value, why } => write!(f, "Invalid value \"{value}\" for {option}: {why}"),
            ArgError::Unsupported(opt) => write!(f, "Option \"{opt}\" is not supported by kvik-benchmark"),
            ArgError::Conflict(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ArgError {}

/// Parse the arguments after the program name.
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Parsed, ArgError> {
    let mut cfg = Config::default();
    let mut respb = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_ref();
        if !arg.starts_with('-') || arg == "-" {
            cfg.command = args[i..].iter().map(|a| a.as_ref().to_string()).collect();
            break;
        }
        let mut value = || -> Result<&str, ArgError> {
            i += 1;
            args.get(i).map(|v| v.as_ref()).ok_or_else(|| ArgError::Invalid(arg.to_string()))
        };
        match arg {
            "--help" => return Ok(Parsed::Help),
            "--version" | "-v" => return Ok(Parsed::Version),
            "--wire-sizes" => return Ok(Parsed::WireSizes),
            "-h" => cfg.host = value()?.to_string(),
            "-p" => cfg.port = number(arg, value()?, 0, u64::from(u16::MAX))? as u16,
            "-s" => cfg.socket = Some(PathBuf::from(value()?)),
            "-a" => cfg.password = Some(value()?.to_string()),
            "--user" => cfg.user = Some(value()?.to_string()),
            "-u" => parse_uri(value()?, &mut cfg)?,
            "-c" => cfg.clients = number(arg, value()?, 1, MAX_CLIENTS as u64)? as usize,
            "-n" => cfg.requests = number(arg, value()?, 1, u64::MAX / 2)?,
            "-d" => cfg.data_size = number(arg, value()?, 1, MAX_DATA_SIZE as u64)? as usize,
            "--dbnum" => cfg.dbnum = number(arg, value()?, 0, u64::from(u32::MAX))? as u32,
            "-3" => cfg.wire = Wire::Resp3,
            "--threads" => cfg.threads = number(arg, value()?, 0, MAX_THREADS as u64)? as usize,
            "-k" => cfg.keepalive = number(arg, value()?, 0, 1)? == 1,
            "-r" => cfg.keyspace = Some(number(arg, value()?, 1, MAX_KEYSPACE)?),
            "-P" => cfg.pipeline = number(arg, value()?, 1, MAX_PIPELINE as u64)? as usize,
            "-q" => cfg.quiet = true,
            "--csv" => cfg.csv = true,
            "--json" => cfg.json = true,
            "-l" => cfg.loop_forever = true,
            "-e" => cfg.show_errors = true,
            "--precision" => cfg.precision = number(arg, value()?, 0, 4)? as usize,
            "-t" => cfg.tests = Some(test_list(value()?)),
            "--respb" => respb = true,
            "--mux" => {
                cfg.mux = number(arg, value()?, 1, MAX_MUX as u64)? as usize;
                respb = true;
            }
            "--runtime" => {
                cfg.runtime = match value()? {
                    "per-thread" => RuntimeKind::PerThread,
                    "multi" => RuntimeKind::Multi,
                    v => {
                        return Err(ArgError::BadValue {
                            option: arg.into(),
                            value: v.into(),
                            why: "expected per-thread or multi",
                        })
                    }
                }
            }
            "--cluster" | "--enable-tracking" | "-I" | "-x" => return Err(ArgError::Unsupported(arg.to_string())),
            "--tls" => cfg.tls = true,
            "--insecure" => cfg.tls_options.insecure = true,
            "--sni" => cfg.tls_options.sni = Some(value()?.to_string()),
            "--cacert" => cfg.tls_options.cacert = Some(PathBuf::from(value()?)),
            "--cacertdir" => cfg.tls_options.cacertdir = Some(PathBuf::from(value()?)),
            "--cert" => cfg.tls_options.cert = Some(PathBuf::from(value()?)),
            "--key" => cfg.tls_options.key = Some(PathBuf::from(value()?)),
            "--tls-ciphers" => cfg.tls_options.ciphers = Some(value()?.to_string()),
            "--tls-ciphersuites" => cfg.tls_options.ciphersuites = Some(value()?.to_string()),
            _ => return Err(ArgError::Invalid(arg.to_string())),
        }
        i += 1;
    }
    if respb {
        if cfg.wire == Wire::Resp3 {
            return Err(ArgError::Conflict("-3 and --respb/--mux name different protocols"));
        }
        cfg.wire = Wire::Respb;
    }
    if cfg.mux > 1 && !cfg.keepalive {
        return Err(ArgError::Conflict("--mux needs keep alive (-k 1): channels are not reconnected"));
    }
    if cfg.user.is_some() && cfg.password.is_none() {
        return Err(ArgError::Conflict("--user needs -a"));
    }
    Ok(Parsed::Run(Box::new(cfg)))
}

fn number(option: &str, value: &str, min: u64, max: u64) -> Result<u64, ArgError> {
    let bad = |why| ArgError::BadValue { option: option.into(), value: value.into(), why };
    let n: u64 = value.parse().map_err(|_| bad("not a whole number"))?;
    if n < min || n > max {
        return Err(bad("out of range"));
    }
    Ok(n)
}

/// `-t set,GET, lpush` → `["set", "get", "lpush"]`.
fn test_list(s: &str) -> Vec<String> {
    s.split(',').map(|t| t.trim().to_ascii_lowercase()).filter(|t| !t.is_empty()).collect()
}

/// `redis://[[user]:password@]host[:port][/db]`, as redis-benchmark's `-u`.
fn parse_uri(uri: &str, cfg: &mut Config) -> Result<(), ArgError> {
    let bad = || ArgError::BadValue {
        option: "-u".into(),
        value: uri.into(),
        why: "expected redis://[user:pass@]host[:port][/db]",
    };
    let rest = uri.strip_prefix("redis://").ok_or_else(bad)?;
    let (auth, rest) = match rest.rsplit_once('@') {
        Some((a, r)) => (Some(a), r),
        None => (None, rest),
    };
    if let Some(auth) = auth {
        match auth.split_once(':') {
            Some((user, pass)) => {
                if !user.is_empty() {
                    cfg.user = Some(user.to_string());
                }
                cfg.password = Some(pass.to_string());
            }
            None => cfg.password = Some(auth.to_string()),
        }
    }
    let (hostport, db) = match rest.split_once('/') {
        Some((h, d)) => (h, Some(d)),
        None => (rest, None),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hostport, None),
    };
    if !host.is_empty() {
        cfg.host = host.to_string();
    }
    if let Some(p) = port {
        cfg.port = p.parse().map_err(|_| bad())?;
    }
    if let Some(d) = db.filter(|d| !d.is_empty()) {
        cfg.dbnum = d.parse().map_err(|_| bad())?;
    }
    Ok(())
}

/// The `--help` text: redis-benchmark's options that are implemented, then kvik's.
pub const USAGE: &str = "\
Usage: kvik-benchmark [OPTIONS] [COMMAND ARGS...]

Options:
 -h <hostname>      Server hostname (default 127.0.0.1)
 -p <port>          Server port (default 6379)
 -s <socket>        Server socket (overrides host and port)
 -a <password>      Password for Redis Auth
 --user <username>  Used to send ACL style 'AUTH username pass'. Needs -a.
 -u <uri>           Server URI.
 -c <clients>       Number of parallel connections (default 50)
 -n <requests>      Total number of requests (default 100000)
 -d <size>          Data size of SET/GET value in bytes (default 3)
 --dbnum <db>       SELECT the specified db number (default 0)
 -3                 Start session in RESP3 protocol mode.
 --threads <num>    Enable multi-thread mode.
 -k <boolean>       1=keep alive 0=reconnect (default 1)
 -r <keyspacelen>   Use random keys for SET/GET/INCR, random values for SADD,
                    random members and scores for ZADD.
                    __rand_int__ inside an argument is replaced with a 12 digits
                    number in the range from 0 to keyspacelen-1, changing every
                    time a command is executed.
 -P <numreq>        Pipeline <numreq> requests. Default 1 (no pipeline).
 --tls              Establish a secure TLS connection.
 --sni <host>       Server name indication for TLS.
 --cacert <file>    CA Certificate file to verify with.
 --cacertdir <dir>  Directory where trusted CA certificates are stored.
                    If neither cacert nor cacertdir are specified, the default
                    system-wide trusted root certs configuration will apply.
 --insecure         Allow insecure TLS connection by skipping cert validation.
 --cert <file>      Client certificate to authenticate with.
 --key <file>       Private key file to authenticate with.
 --tls-ciphers <list> Sets the list of preferred ciphers (TLSv1.2): OpenSSL
                    names of the suites rustls has (DEFAULT, HIGH, !NAME too).
 --tls-ciphersuites <list> Sets the list of preferred ciphersuites (TLSv1.3).
 -e                 Show server error replies (at most one per second) on stderr.
 -q                 Quiet. Just show query/sec values
 --precision        Number of decimal places to display in latency output (default 3)
 --csv              Output in CSV format
 -l                 Loop. Run the tests forever
 -t <tests>         Only run the comma separated list of tests. The test
                    names are the same as the ones produced as output.
                    The -t option is ignored if a specific command is supplied
                    on the command line.
 --help             Output this help and exit.
 --version          Output version and exit.

kvik options:
 --respb            Speak RESPB/1 (binary frames after the D3 C1 handshake).
 --mux <n>          Multiplex <n> logical clients as RESPB channels on each
                    connection (-c 1000 --mux 100 opens 10 connections); each
                    keeps its own pipeline of -P requests. Implies --respb.
 --json             One JSON object per test on stdout (for scripts).
 --runtime <kind>   With --threads: multi (one multi-thread runtime, default)
                    or per-thread (a current-thread runtime per thread).
 --wire-sizes       Print the bytes typical requests and replies take in RESP
                    and RESPB (computed by the codecs, as Markdown) and exit.

Tests: ping_inline ping_mbulk (or ping) set get incr lpush rpush lpop rpop sadd
hset spop zadd zpopmin lrange_100 lrange_300 lrange_500 lrange_600 (or lrange) mset

Error replies are counted in the reports (--csv: on stderr). A test whose every
reply is an error fails the run (exit status 1) after its report, as does
--respb against a server that does not speak RESPB.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Config {
        match parse(args).unwrap() {
            Parsed::Run(c) => *c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_match_redis_benchmark() {
        let c = run(&[]);
        assert_eq!((c.host.as_str(), c.port, c.clients, c.requests, c.data_size), ("127.0.0.1", 6379, 50, 100_000, 3));
        assert_eq!((c.pipeline, c.keepalive, c.keyspace, c.threads, c.mux), (1, true, None, 0, 1));
        assert_eq!((c.wire, c.runtime), (Wire::Resp2, RuntimeKind::Multi));
        assert_eq!(c.connections(), 50);
    }

    #[test]
    fn reads_every_option() {
        let c = run(&[
            "-h",
            "localhost",
            "-p",
            "7000",
            "-a",
            "pw",
            "--user",
            "bob",
            "-c",
            "7",
            "-n",
            "1234",
            "-d",
            "16",
            "--dbnum",
            "3",
            "--threads",
            "2",
            "-k",
            "0",
            "-r",
            "1000",
            "-P",
            "16",
            "-q",
            "--csv",
            "--json",
            "-l",
            "-e",
            "--precision",
            "2",
            "-t",
            "SET, get,,lrange",
            "--runtime",
            "per-thread",
        ]);
        assert_eq!(c.host, "localhost");
        assert_eq!(c.port, 7000);
        assert_eq!((c.password.as_deref(), c.user.as_deref()), (Some("pw"), Some("bob")));
        assert_eq!((c.clients, c.requests, c.data_size, c.dbnum, c.threads), (7, 1234, 16, 3, 2));
        assert!(!c.keepalive && c.quiet && c.csv && c.json && c.loop_forever && c.show_errors);
        assert_eq!((c.keyspace, c.pipeline, c.precision), (Some(1000), 16, 2));
        assert_eq!(c.tests, Some(vec!["set".to_string(), "get".into(), "lrange".into()]));
        assert_eq!(c.runtime, RuntimeKind::PerThread);
    }

    #[test]
    fn mux_implies_respb_and_splits_clients_into_connections() {
        let c = run(&["-c", "1000", "--mux", "100"]);
        assert_eq!((c.wire, c.connections(), c.channels_on(0), c.channels_on(9)), (Wire::Respb, 10, 100, 100));
        let c = run(&["-c", "250", "--mux", "100"]);
        assert_eq!((c.connections(), c.channels_on(1), c.channels_on(2)), (3, 100, 50));
        assert_eq!(run(&["--respb"]).wire, Wire::Respb);
        assert_eq!(run(&["-3"]).wire, Wire::Resp3);
    }

    #[test]
    fn a_trailing_command_replaces_the_suite() {
        let c = run(&["-n", "10", "lpush", "mylist", "__rand_int__"]);
        assert_eq!(c.command, ["lpush", "mylist", "__rand_int__"]);
        assert_eq!(c.requests, 10);
    }

    #[test]
    fn uri_sets_host_port_auth_and_db() {
        let c = run(&["-u", "redis://alice:secret@example:6390/4"]);
        assert_eq!((c.host.as_str(), c.port, c.dbnum), ("example", 6390, 4));
        assert_eq!((c.user.as_deref(), c.password.as_deref()), (Some("alice"), Some("secret")));
        assert!(parse(&["-u", "http://x"]).is_err());
    }

    #[test]
    fn errors_name_the_option() {
        assert_eq!(parse(&["--foo"]), Err(ArgError::Invalid("--foo".into())));
        assert_eq!(parse(&["-c"]), Err(ArgError::Invalid("-c".into())));
        assert!(matches!(parse(&["-c", "abc"]), Err(ArgError::BadValue { .. })));
        assert!(matches!(parse(&["-c", "0"]), Err(ArgError::BadValue { .. })));
        assert!(matches!(parse(&["-k", "2"]), Err(ArgError::BadValue { .. })));
        assert!(matches!(parse(&["-r", "0"]), Err(ArgError::BadValue { .. })));
        assert!(matches!(parse(&["-p", "70000"]), Err(ArgError::BadValue { .. })));
        assert!(matches!(parse(&["--mux", "65536"]), Err(ArgError::BadValue { .. })));
        assert!(matches!(parse(&["--runtime", "x"]), Err(ArgError::BadValue { .. })));
        assert!(matches!(parse(&["-3", "--respb"]), Err(ArgError::Conflict(_))));
        assert!(matches!(parse(&["--mux", "4", "-k", "0"]), Err(ArgError::Conflict(_))));
        assert!(matches!(parse(&["--user", "u"]), Err(ArgError::Conflict(_))));
        assert!(matches!(parse(&["--cluster"]), Err(ArgError::Unsupported(_))));
        let c = run(&["--tls", "--cacert", "ca.pem", "--cert", "c.pem", "--key", "k.pem", "--sni", "h"]);
        assert!(c.tls && !c.tls_options.insecure);
        assert_eq!(c.tls_options.cacert.as_deref(), Some(std::path::Path::new("ca.pem")));
        assert_eq!(c.tls_options.sni.as_deref(), Some("h"));
        assert_eq!(parse(&["--help"]), Ok(Parsed::Help));
        assert_eq!(parse(&["--version"]), Ok(Parsed::Version));
        assert_eq!(parse(&["-q", "--wire-sizes"]), Ok(Parsed::WireSizes));
        assert_eq!(
            ArgError::Invalid("--foo".into()).to_string(),
            "Invalid option \"--foo\" or option argument missing"
        );
    }
}
