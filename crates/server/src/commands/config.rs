//! `CONFIG GET | SET | RESETSTAT | REWRITE | HELP`: reading and changing the
//! running configuration with Redis's replies and error texts.

use crate::config::{find_option, OPTIONS};
use crate::keyspace::glob;

use super::{Ctx, ReplyTarget};

handlers! {
    CONFIG_GET(c) => get(c),
    CONFIG_SET(c) => set(c),
    CONFIG_RESETSTAT(c) => {
        c.state.stats.reset();
        c.state.keyspace.reset_lookup_counts();
        c.ok();
    },
    CONFIG_REWRITE(c) => rewrite(c),
    CONFIG_HELP(c) => help(c),
}

/// Whether `pattern` uses glob syntax, as opposed to naming one option.
fn is_glob(pattern: &[u8]) -> bool {
    pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// `CONFIG GET pattern [pattern ...]`: every matching option once, as a map
/// (a flat array in RESP2). An exact name is reported as the client spelled
/// it, a glob match under the option's own name, as Redis does. Options come
/// in registry order (Redis uses its hash table's order, which has no meaning).
fn get<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mut found: Vec<(usize, Vec<u8>)> = Vec::new();
    for i in 2..c.argc() {
        let pattern = c.arg(i);
        if is_glob(pattern) {
            for (index, spec) in OPTIONS.iter().enumerate() {
                let key = if glob::matches(pattern, spec.name.as_bytes(), true) {
                    spec.name
                } else if let Some(alias) = spec.alias.filter(|a| glob::matches(pattern, a.as_bytes(), true)) {
                    alias
                } else {
                    continue;
                };
                if !found.iter().any(|(seen, _)| *seen == index) {
                    found.push((index, key.as_bytes().to_vec()));
                }
            }
        } else if let Some(index) = std::str::from_utf8(pattern).ok().and_then(find_option) {
            if !found.iter().any(|(seen, _)| *seen == index) {
                found.push((index, pattern.to_vec()));
            }
        }
    }
    let values: Vec<(Vec<u8>, String)> = {
        let config = c.state.config();
        found.into_iter().map(|(index, key)| (key, config.value(index).to_string())).collect()
    };
    c.reply(|s| {
        s.map(values.len());
        for (key, value) in &values {
            s.bulk(key);
            s.bulk(value.as_bytes());
        }
    });
}

/// `CONFIG SET name value [name value ...]`: all or nothing.
fn set<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if !c.argc().is_multiple_of(2) {
        return c.error(super::SYNTAX_ERROR);
    }
    let mut pairs = Vec::with_capacity(c.argc() / 2 - 1);
    for i in (2..c.argc()).step_by(2) {
        let name = String::from_utf8_lossy(c.arg(i)).into_owned();
        let value = String::from_utf8_lossy(c.arg(i + 1)).into_owned();
        pairs.push((name, value));
    }
    let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    match c.state.update_config(|config| config.set_many(&borrowed)) {
        Ok(()) => {
            // The flags come from the value as given: Redis prints `A`
            // without the `n` it may hold, so the stored text can lose it.
            let events = borrowed.iter().rev().find(|(n, _)| n.eq_ignore_ascii_case("notify-keyspace-events"));
            if let Some(flags) = events.and_then(|(_, v)| crate::changes::parse_flags(v)) {
                c.state.changes.set_flags(flags);
            }
            // A lower limit applies at once, as in Redis, not at the next write.
            c.state.enforce_maxmemory();
            c.ok()
        }
        Err(e) => {
            let text = e.reply_text();
            c.error(text.as_bytes());
        }
    }
}

/// `CONFIG REWRITE`: write the running configuration into the file the
/// server was started with.
fn rewrite<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(path) = c.state.config_file.clone() else {
        return c.error(b"ERR The server is running without a config file");
    };
    let result = c.state.config().rewrite(&path);
    match result {
        Ok(()) => c.ok(),
        Err(e) => {
            let text = format!("ERR Rewriting config file: {e}");
            c.error(text.as_bytes());
        }
    }
}

/// `CONFIG HELP`, Redis's text.
fn help<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    const LINES: &[&[u8]] = &[
        b"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"GET <pattern>",
        b"    Return parameters matching the glob-like <pattern> and their values.",
        b"SET <directive> <value>",
        b"    Set the configuration <directive> to <value>.",
        b"RESETSTAT",
        b"    Reset statistics reported by the INFO command.",
        b"REWRITE",
        b"    Rewrite the configuration file.",
        b"HELP",
        b"    Prints this help.",
    ];
    c.reply(|s| {
        s.array(LINES.len());
        for line in LINES {
            s.simple(line);
        }
    });
}
