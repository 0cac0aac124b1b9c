//! The command line, read the way redis-cli reads it: options first, then the
//! command and its arguments. The first word that is not an option ends the
//! options, so `kvik-cli incrby n -1` sends `-1` as an argument; a word that
//! starts with `-` and is no known option is an error, as in redis-cli.
//!
//! Arguments are taken as bytes (`OsString`), so a command can carry any
//! value the shell can pass.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::Duration;

use kvik_client::{ClientTlsOptions, Protocol};

use crate::uri;

/// How replies are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Human style at a terminal, raw otherwise (redis-cli's default).
    Auto,
    /// `--raw`.
    Raw,
    /// `--no-raw`.
    Human,
}

/// Which way `--convert-to` converts a command stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// RESP commands in, RESPB frames out.
    Respb,
    /// RESPB frames in, RESP commands out.
    Resp,
}

/// What the run does.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Send the command in `Config::args` (interactive when there is none).
    Command,
    /// `--pipe`: mass insertion of the RESP commands on stdin.
    Pipe,
    /// `--scan`: print every key (matching `--pattern`).
    Scan,
    /// `--stat`: a line of server statistics per interval.
    Stat,
    /// `--convert-to` / `convert`: stdin to stdout, no server involved.
    Convert(Target),
    /// `--help`.
    Help,
    /// `--version`.
    Version,
}

/// Everything the command line says.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `-h`.
    pub host: String,
    /// `-p`.
    pub port: u16,
    /// `-s`: a unix socket, which overrides host and port.
    pub socket: Option<PathBuf>,
    /// `--user`.
    pub user: Option<Vec<u8>>,
    /// `-a` / `--pass` (or the `KVIKCLI_AUTH` / `REDISCLI_AUTH` variable).
    pub password: Option<Vec<u8>>,
    /// `-n`.
    pub db: Option<u32>,
    /// `--raw` / `--no-raw`.
    pub output: Output,
    /// `-2` / `-3` / `--respb` (`-4`).
    pub protocol: Protocol,
    /// `-r`: how many times to run the command (`None`: once; negative in
    /// redis-cli means forever, kept here as `u64::MAX`).
    pub repeat: Option<u64>,
    /// `-i`: pause between repetitions (and between `--scan`/`--stat` rounds).
    pub interval: Option<Duration>,
    /// `-e`: exit with status 1 when the command gets an error reply.
    pub exit_on_error: bool,
    /// `-x`: read the last argument from stdin.
    pub stdin_last_arg: bool,
    /// `--pipe-timeout`, seconds; 0 waits forever.
    pub pipe_timeout: u64,
    /// `--pattern`.
    pub pattern: Option<Vec<u8>>,
    /// `--count`: the COUNT hint of each SCAN call.
    pub count: Option<u64>,
    /// `--no-auth-warning`.
    pub no_auth_warning: bool,
    /// Whether the password came from `-a`, `--pass` or a `-u` URI, which
    /// others on the machine can see (kvik-cli then warns, as redis-cli does).
    pub password_on_command_line: bool,
    /// `-c`: accepted for compatibility; cluster redirections are not followed.
    pub cluster: bool,
    /// `--tls` (or a `rediss://` URI).
    pub tls: bool,
    /// `--sni`, `--cacert`, `--cacertdir`, `--insecure`, `--cert`, `--key`,
    /// `--tls-ciphers`, `--tls-ciphersuites`.
    pub tls_options: ClientTlsOptions,
    /// The mode.
    pub mode: Mode,
    /// The command and its arguments.
    pub args: Vec<Vec<u8>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            host: "127.0.0.1".into(),
            port: 6379,
            socket: None,
            user: None,
            password: None,
            db: None,
            output: Output::Auto,
            protocol: Protocol::Resp2,
            repeat: None,
            interval: None,
            exit_on_error: false,
            stdin_last_arg: false,
            pipe_timeout: 30,
            pattern: None,
            count: None,
            no_auth_warning: false,
            password_on_command_line: false,
            cluster: false,
            tls: false,
            tls_options: ClientTlsOptions::default(),
            mode: Mode::Command,
            args: Vec::new(),
        }
    }
}

/// Why the command line was refused; the text is what is printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn unrecognized(opt: &str) -> UsageError {
    UsageError(format!("Unrecognized option or bad number of args for: '{opt}'"))
}

/// Parse the arguments after the program name. `env_password` is the
/// password from the environment, used when no `-a` is given.
pub fn parse(argv: Vec<OsString>, env_password: Option<Vec<u8>>) -> Result<Config, UsageError> {
    let mut cfg = Config::default();
    let mut uri_password = None;
    let mut it = argv.into_iter().peekable();
    while let Some(arg) = it.next() {
        let text = arg.to_string_lossy().into_owned();
        if !text.starts_with('-') || text == "-" {
            if text == "convert" && cfg.args.is_empty() {
                let target = it.next().map(|t| t.to_string_lossy().into_owned()).unwrap_or_default();
                cfg.mode = Mode::Convert(parse_target(&target)?);
                if let Some(extra) = it.next() {
                    return Err(UsageError(format!(
                        "convert takes no argument after the target: '{}'",
                        extra.to_string_lossy()
                    )));
                }
                break;
            }
            cfg.args.push(arg.into_vec());
            cfg.args.extend(it.by_ref().map(OsString::into_vec));
            break;
        }
        let mut value = || it.next().ok_or_else(|| unrecognized(&text));
        match text.as_str() {
            "-h" => cfg.host = value()?.to_string_lossy().into_owned(),
            "-p" => cfg.port = number(&value()?, &text)?,
            "-s" => cfg.socket = Some(PathBuf::from(value()?)),
            "-a" | "--pass" => {
                cfg.password = Some(value()?.into_vec());
                cfg.password_on_command_line = true;
            }
            "--user" => cfg.user = Some(value()?.into_vec()),
            "-n" => cfg.db = Some(number(&value()?, &text)?),
            "-u" => {
                let u = uri::parse(&value()?.to_string_lossy()).map_err(|e| UsageError(e.to_string()))?;
                apply_uri(&mut cfg, u, &mut uri_password);
            }
            "--raw" => cfg.output = Output::Raw,
            "--no-raw" => cfg.output = Output::Human,
            "-2" => cfg.protocol = Protocol::Resp2,
            "-3" => cfg.protocol = Protocol::Resp3,
            "-4" | "--respb" => cfg.protocol = Protocol::Respb,
            "-r" => {
                let n: i64 = number(&value()?, &text)?;
                cfg.repeat = Some(if n < 0 { u64::MAX } else { n as u64 });
            }
            "-i" => cfg.interval = Some(seconds(&value()?, &text)?),
            "-e" => cfg.exit_on_error = true,
            "-x" => cfg.stdin_last_arg = true,
            "-c" => cfg.cluster = true,
            "--pipe" => cfg.mode = Mode::Pipe,
            "--pipe-timeout" => cfg.pipe_timeout = number(&value()?, &text)?,
            "--scan" => cfg.mode = Mode::Scan,
            "--pattern" => cfg.pattern = Some(value()?.into_vec()),
            "--count" => cfg.count = Some(number(&value()?, &text)?),
            "--stat" => cfg.mode = Mode::Stat,
            "--convert-to" => cfg.mode = Mode::Convert(parse_target(&value()?.to_string_lossy())?),
            "--no-auth-warning" => cfg.no_auth_warning = true,
            "--tls" => cfg.tls = true,
            "--sni" => cfg.tls_options.sni = Some(value()?.to_string_lossy().into_owned()),
            "--cacert" => cfg.tls_options.cacert = Some(PathBuf::from(value()?)),
            "--cacertdir" => cfg.tls_options.cacertdir = Some(PathBuf::from(value()?)),
            "--insecure" => cfg.tls_options.insecure = true,
            "--cert" => cfg.tls_options.cert = Some(PathBuf::from(value()?)),
            "--key" => cfg.tls_options.key = Some(PathBuf::from(value()?)),
            "--tls-ciphers" => cfg.tls_options.ciphers = Some(value()?.to_string_lossy().into_owned()),
            "--tls-ciphersuites" => cfg.tls_options.ciphersuites = Some(value()?.to_string_lossy().into_owned()),
            "--help" => cfg.mode = Mode::Help,
            "-v" | "--version" => cfg.mode = Mode::Version,
            _ => return Err(unrecognized(&text)),
        }
    }
    if cfg.password.is_none() {
        cfg.password_on_command_line = uri_password.is_some();
        cfg.password = uri_password.or(env_password);
    }
    Ok(cfg)
}

fn apply_uri(cfg: &mut Config, u: uri::Uri, password: &mut Option<Vec<u8>>) {
    if let Some(h) = u.host {
        cfg.host = h;
    }
    if let Some(p) = u.port {
        cfg.port = p;
    }
    if u.user.is_some() {
        cfg.user = u.user;
    }
    if u.password.is_some() {
        *password = u.password;
    }
    if u.db.is_some() {
        cfg.db = u.db;
    }
    if u.tls {
        cfg.tls = true;
    }
}

fn parse_target(t: &str) -> Result<Target, UsageError> {
    match t.to_ascii_lowercase().as_str() {
        "respb" => Ok(Target::Respb),
        "resp" => Ok(Target::Resp),
        _ => Err(UsageError(format!("Unknown conversion target '{t}': use respb or resp"))),
    }
}

fn number<T: std::str::FromStr>(v: &OsString, opt: &str) -> Result<T, UsageError> {
    let s = v.to_string_lossy();
    s.trim().parse().map_err(|_| UsageError(format!("Invalid number '{s}' for option {opt}")))
}

fn seconds(v: &OsString, opt: &str) -> Result<Duration, UsageError> {
    let secs: f64 = number(v, opt)?;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(UsageError(format!("Invalid interval '{}' for option {opt}", v.to_string_lossy())));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `--help`.
pub const HELP: &str = "\
kvik-cli VERSION

Usage: kvik-cli [OPTIONS] [cmd [arg [arg ...]]]
       kvik-cli convert respb|resp < input > output

Connection:
  -h <hostname>      Server host name (default: 127.0.0.1).
  -p <port>          Server port (default: 6379).
  -s <socket>        Unix socket path; overrides -h and -p.
  -a <password>      Password to authenticate with (also read from the
                     KVIKCLI_AUTH or REDISCLI_AUTH environment variable).
  --pass <password>  The same as -a.
  --user <username>  ACL user to authenticate as (with -a).
  -u <uri>           redis://[[user]:password@]host[:port][/db]
                     (rediss:// for TLS)
  -n <db>            Database number to select.
  -2                 Speak RESP2 (the default).
  -3                 Speak RESP3 (HELLO 3).
  -4, --respb        Speak RESPB/1, kvik's binary protocol; replies print as
                     RESP3 replies do.
  --no-auth-warning  Do not warn about a password given on the command line.
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

Output:
  --raw              Print replies raw (the default when stdout is not a
                     terminal).
  --no-raw           Print replies formatted for people even when stdout is
                     not a terminal.
  -e                 Exit with status 1 when the command gets an error reply.

Running commands:
  -r <repeat>        Run the command this many times (-1: until stopped).
  -i <interval>      Wait this many seconds between repetitions (fractions
                     allowed, e.g. -i 0.1); also the pause of --scan and --stat.
  -x                 Read the last argument of the command from stdin.
  -c                 Accepted for compatibility; cluster redirections are not
                     followed.

Modes:
  --pipe             Send the RESP commands read from stdin (mass insertion),
                     then report how many replies and errors came back.
                     With --respb the commands are converted to RESPB frames
                     on the way.
  --pipe-timeout <n> Give up when no reply came for <n> seconds after all data
                     was sent (default 30; 0 waits forever).
  --scan             Print every key, using SCAN.
  --pattern <pat>    Only keys matching this glob pattern (with --scan).
  --count <n>        COUNT hint for each SCAN call (with --scan).
  --stat             Print a line of server statistics (keys, memory,
                     clients, requests, connections) every interval; with -r,
                     that many lines.
  --convert-to <t>   Convert a command stream from stdin to stdout without a
                     server: 'respb' turns RESP commands (an append-only file,
                     --pipe input) into RESPB frames, 'resp' turns RESPB frames
                     back into RESP commands. Byte counts go to stderr.
  convert <t>        The same as --convert-to <t>.
  --help             Print this help.
  --version          Print the version.

Without a command kvik-cli starts an interactive prompt, with history in
~/.kvikcli_history (KVIKCLI_HISTFILE to move it, /dev/null for none) and hints
of each command's arguments.

Examples:
  kvik-cli incr visits
  cat /etc/passwd | kvik-cli -x set passwd
  kvik-cli -r 100 lpush mylist x
  kvik-cli -r 100 -i 1 info | grep used_memory_human:
  kvik-cli --respb get greeting
  kvik-cli convert respb < appendonly.aof > appendonly.respb
";

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    fn ok(line: &str) -> Config {
        parse(args(line), None).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn defaults() {
        let c = ok("");
        assert_eq!((c.host.as_str(), c.port, c.output, c.protocol), ("127.0.0.1", 6379, Output::Auto, Protocol::Resp2));
        assert_eq!(c.mode, Mode::Command);
        assert!(c.args.is_empty());
    }

    #[test]
    fn options_stop_at_the_command() {
        let c = ok("-h example -p 7000 -n 2 --raw incrby n -1");
        assert_eq!((c.host.as_str(), c.port, c.db, c.output), ("example", 7000, Some(2), Output::Raw));
        assert_eq!(c.args, vec![b"incrby".to_vec(), b"n".to_vec(), b"-1".to_vec()]);
        let c = ok("get -p");
        assert_eq!(c.port, 6379);
        assert_eq!(c.args.len(), 2);
    }

    #[test]
    fn protocols_and_modes() {
        assert_eq!(ok("-3 ping").protocol, Protocol::Resp3);
        assert_eq!(ok("-4 ping").protocol, Protocol::Respb);
        assert_eq!(ok("--respb -2").protocol, Protocol::Resp2);
        assert_eq!(ok("--pipe --pipe-timeout 5").mode, Mode::Pipe);
        assert_eq!(ok("--pipe --pipe-timeout 5").pipe_timeout, 5);
        let c = ok("--scan --pattern user:* --count 50");
        assert_eq!((c.mode, c.pattern, c.count), (Mode::Scan, Some(b"user:*".to_vec()), Some(50)));
        assert_eq!(ok("--stat").mode, Mode::Stat);
        assert_eq!(ok("--convert-to respb").mode, Mode::Convert(Target::Respb));
        assert_eq!(ok("convert RESP").mode, Mode::Convert(Target::Resp));
        assert_eq!(ok("--help").mode, Mode::Help);
        assert_eq!(ok("--version").mode, Mode::Version);
    }

    #[test]
    fn repeat_interval_and_flags() {
        let c = ok("-r 3 -i 0.25 -e -x -c set k");
        assert_eq!((c.repeat, c.interval), (Some(3), Some(Duration::from_millis(250))));
        assert!(c.exit_on_error && c.stdin_last_arg && c.cluster);
        assert_eq!(ok("-r -1 ping").repeat, Some(u64::MAX));
    }

    #[test]
    fn auth_from_options_uri_and_environment() {
        let c = ok("--user alice -a pw");
        assert_eq!((c.user, c.password), (Some(b"alice".to_vec()), Some(b"pw".to_vec())));
        let c = ok("-u redis://bob:s%3Ak@h:7001/4");
        assert_eq!((c.host.as_str(), c.port, c.db), ("h", 7001, Some(4)));
        assert_eq!((c.user, c.password), (Some(b"bob".to_vec()), Some(b"s:k".to_vec())));
        assert!(c.password_on_command_line);
        let c = parse(args("ping"), Some(b"env".to_vec())).unwrap();
        assert_eq!(c.password, Some(b"env".to_vec()));
        assert!(!c.password_on_command_line);
        let c = parse(args("-u redis://h:1"), Some(b"env".to_vec())).unwrap();
        assert!(!c.password_on_command_line);
        let c = parse(args("-a cmdline ping"), Some(b"env".to_vec())).unwrap();
        assert_eq!(c.password, Some(b"cmdline".to_vec()));
    }

    #[test]
    fn errors_name_the_option() {
        let e = parse(args("--bogus"), None).unwrap_err();
        assert_eq!(e.0, "Unrecognized option or bad number of args for: '--bogus'");
        assert_eq!(parse(args("-p"), None).unwrap_err().0, "Unrecognized option or bad number of args for: '-p'");
        assert!(parse(args("-p x"), None).unwrap_err().0.contains("Invalid number 'x'"));
        assert!(parse(args("-i -1"), None).is_err());
        assert_eq!(parse(args("-u http://h"), None).unwrap_err().0, "Invalid URI scheme");
        assert!(parse(args("convert json"), None).is_err());
    }

    #[test]
    fn arguments_are_bytes() {
        use std::os::unix::ffi::OsStringExt;
        let raw = OsString::from_vec(vec![0xFF, b'a']);
        let c = parse(vec![OsString::from("set"), OsString::from("k"), raw], None).unwrap();
        assert_eq!(c.args[2], vec![0xFF, b'a']);
    }
}
