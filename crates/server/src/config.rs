//! Server configuration from the command line.
//!
//! Options follow redis-server's command-line form, `--name value`, so that
//! scripts which start Redis can start kvik by changing only the binary name.
//! Anything unrecognised stops startup with a message naming it: a mistyped
//! option silently ignored would leave a server running with a setting its
//! operator did not ask for.

use std::fmt;

/// Everything the server needs to know before it starts listening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Address to listen on (`--bind`); loopback by default so that a server
    /// started without configuration is not reachable from the network.
    pub bind: String,
    /// TCP port (`--port`), 6379 by default like Redis; 0 picks a free port.
    pub port: u16,
    /// Number of event-loop threads (`--threads`), one per core by default.
    pub threads: usize,
    /// Password of the `default` user (`--requirepass`); none by default, as in Redis.
    pub requirepass: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: "127.0.0.1".to_string(),
            port: 6379,
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            requirepass: None,
        }
    }
}

/// Why the command line could not be turned into a [`Config`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// An option kvik does not know.
    UnknownOption(String),
    /// An option given as the last word, without its value.
    MissingValue(String),
    /// An option whose value cannot be used.
    InvalidValue {
        /// The option, as written.
        option: String,
        /// The value, as written.
        value: String,
        /// What a valid value looks like.
        expected: &'static str,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::UnknownOption(o) => write!(f, "unknown option '{o}'"),
            ConfigError::MissingValue(o) => write!(f, "option '{o}' needs a value"),
            ConfigError::InvalidValue { option, value, expected } => {
                write!(f, "invalid value '{value}' for option '{option}': expected {expected}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Build a configuration from command-line words (without the program name).
    pub fn from_args<I, S>(args: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut config = Config::default();
        let mut words = args.into_iter().map(Into::into);
        while let Some(option) = words.next() {
            let name = match option.strip_prefix("--") {
                Some(name) if !name.is_empty() => name.to_ascii_lowercase(),
                _ => return Err(ConfigError::UnknownOption(option)),
            };
            let known = matches!(name.as_str(), "port" | "bind" | "threads" | "requirepass");
            if !known {
                return Err(ConfigError::UnknownOption(option));
            }
            let Some(value) = words.next() else {
                return Err(ConfigError::MissingValue(option));
            };
            let invalid =
                |expected| ConfigError::InvalidValue { option: option.clone(), value: value.clone(), expected };
            match name.as_str() {
                "port" => config.port = value.parse().map_err(|_| invalid("a port number 0-65535"))?,
                "bind" => {
                    if value.is_empty() {
                        return Err(invalid("an address"));
                    }
                    config.bind = value.clone();
                }
                // An empty password means none, as in redis.conf.
                "requirepass" => config.requirepass = (!value.is_empty()).then(|| value.clone()),
                _ => {
                    config.threads = match value.parse::<usize>() {
                        Ok(n) if (1..=1024).contains(&n) => n,
                        _ => return Err(invalid("a thread count 1-1024")),
                    }
                }
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_listen_on_loopback_6379() {
        let c = Config::from_args(Vec::<String>::new()).unwrap();
        assert_eq!(c.bind, "127.0.0.1");
        assert_eq!(c.port, 6379);
        assert!(c.threads >= 1);
    }

    #[test]
    fn options_take_the_following_word() {
        let c = Config::from_args(["--port", "7000", "--bind", "0.0.0.0", "--THREADS", "4"]).unwrap();
        assert_eq!(c, Config { bind: "0.0.0.0".into(), port: 7000, threads: 4, requirepass: None });
    }

    #[test]
    fn unknown_option_is_named() {
        let e = Config::from_args(["--port", "1", "--maxmemry", "1gb"]).unwrap_err();
        assert_eq!(e.to_string(), "unknown option '--maxmemry'");
        let e = Config::from_args(["port"]).unwrap_err();
        assert_eq!(e, ConfigError::UnknownOption("port".into()));
    }

    #[test]
    fn bad_or_missing_values_are_refused() {
        assert_eq!(Config::from_args(["--port"]).unwrap_err(), ConfigError::MissingValue("--port".into()));
        let e = Config::from_args(["--port", "70000"]).unwrap_err();
        assert_eq!(e.to_string(), "invalid value '70000' for option '--port': expected a port number 0-65535");
        assert!(Config::from_args(["--threads", "0"]).is_err());
    }
}
