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

/// `CONFIG GET pattern [pattern ...]`: every matching name once, as a map
/// (a flat array in RESP2). A glob reaches an option under each of its
/// names that matches (`CONFIG GET *` lists `slave-priority` beside
/// `replica-priority`), an exact name as the client spelled it, as Redis
/// does. Options come in registry order (Redis uses its hash table's order,
/// which has no meaning).
fn get<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mut found: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut add = |index: usize, key: &[u8]| {
        if !found.iter().any(|(_, seen)| seen.eq_ignore_ascii_case(key)) {
            found.push((index, key.to_vec()));
        }
    };
    for i in 2..c.argc() {
        let pattern = c.arg(i);
        if is_glob(pattern) {
            for (index, spec) in OPTIONS.iter().enumerate() {
                for name in std::iter::once(spec.name).chain(spec.alias) {
                    if glob::matches(pattern, name.as_bytes(), true) {
                        add(index, name.as_bytes());
                    }
                }
            }
        } else if let Some(index) = std::str::from_utf8(pattern).ok().and_then(find_option) {
            add(index, pattern);
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
    let old_port = c.state.config().port();
    // More clients than the open-files limit can hold are refused, as Redis
    // refuses them, once the limit could not be raised for them.
    if let Some((_, value)) = borrowed.iter().rev().find(|(n, _)| n.eq_ignore_ascii_case("maxclients")) {
        if let Some(wanted) = value.parse::<u64>().ok().filter(|n| *n > c.state.config().usize("maxclients") as u64) {
            if let Err(possible) = crate::supervision::fit_open_files(wanted) {
                let text = format!(
                    "ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with {possible}"
                );
                return c.error(text.as_bytes());
            }
        }
    }
    let asked = |name: &str| borrowed.iter().rev().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v);
    let tls_before = crate::tls::touched(borrowed.iter().map(|(n, _)| *n)).then(|| c.state.config().clone());
    let result = c.state.update_config(|config| config.set_many(&borrowed));
    if let (Ok(()), Some(before)) = (&result, tls_before) {
        let first = borrowed.iter().map(|(n, _)| *n).find(|n| crate::tls::touched(std::iter::once(*n))).unwrap_or("");
        if let Err(text) = apply_tls_config_set(c.state, before, first) {
            return c.error(text.as_bytes());
        }
    }
    if result.is_ok() {
        if let Err(e) = apply_append_only(c.state, &asked) {
            // As Redis: the file could not be turned on, the setting stays off.
            let _ = c.state.update_config(|config| config.set_many(&[("appendonly", "no")]));
            let text = format!("ERR CONFIG SET failed (possibly related to argument 'appendonly') - {e}");
            return c.error(text.as_bytes());
        }
    }
    if result.is_ok() && c.state.config().port() != old_port {
        if let Err(e) = rebind(c.state, old_port) {
            return c.error(e.as_bytes());
        }
    }
    match result {
        Ok(()) => {
            // The flags come from the value as given: Redis prints `A`
            // without the `n` it may hold, so the stored text can lose it.
            let events = borrowed.iter().rev().find(|(n, _)| n.eq_ignore_ascii_case("notify-keyspace-events"));
            if let Some(flags) = events.and_then(|(_, v)| crate::effects::changes::parse_flags(v)) {
                c.state.changes.set_flags(flags);
            }
            // A lower limit applies at once, as in Redis, not at the next write.
            crate::effects::changes::enforce_maxmemory(c.state);
            crate::replication::update_refusals(c.state);
            let oom = {
                let config = c.state.config();
                crate::log::apply_level(&config);
                let touched = borrowed.iter().any(|(n, _)| n.to_ascii_lowercase().starts_with("oom-score-adj"));
                if touched {
                    crate::supervision::apply_oom_score(&config)
                } else {
                    Ok(())
                }
            };
            match oom {
                Ok(()) => c.ok(),
                Err(e) => {
                    crate::log!(Warning, "{e}");
                    c.error(b"ERR Failed to set current oom_score_adj. Check server logs.")
                }
            }
        }
        Err(e) => {
            let text = e.reply_text();
            c.error(text.as_bytes());
        }
    }
}

/// What a `CONFIG SET` of the append-only settings changes at once:
/// `appendonly yes` turns the file on (its base written by a background
/// rewrite), `appendonly no` stops the writer (after it wrote and flushed
/// what it had), `appendfsync` and `aof-timestamp-enabled` apply from the
/// writer's next round. The error says why the file could not be turned on.
fn apply_append_only<'a>(
    state: &crate::state::ServerState,
    asked: &impl Fn(&str) -> Option<&'a str>,
) -> Result<(), String> {
    let config = state.config();
    let (on, fsync, stamps) = (
        config.get("appendonly") == "yes",
        config.get("appendfsync").to_string(),
        config.get("aof-timestamp-enabled") == "yes",
    );
    drop(config);
    if asked("appendonly").is_some() && !on && state.append_only.enabled() {
        crate::persistence::aof::stop(state);
        crate::log!(Notice, "Background append only file stopped by CONFIG SET appendonly no");
    }
    if asked("appendfsync").is_some() {
        crate::persistence::aof::set_fsync(state, crate::registries::append_only::Fsync::parse(&fsync));
    }
    if asked("aof-timestamp-enabled").is_some() {
        state.append_only.timestamps.store(stamps, std::sync::atomic::Ordering::Relaxed);
    }
    if asked("appendonly").is_some() && on && !state.append_only.enabled() {
        crate::persistence::aof::rewrite::turn_on(state)?;
    }
    Ok(())
}

/// Listen on the port `CONFIG SET` just changed, as Redis 7.0 does: the new
/// sockets open before the old ones close, and clients stay connected. When
/// the new port cannot be had, the old one stays, in the configuration too.
fn rebind(state: &crate::state::ServerState, old_port: u16) -> Result<(), String> {
    let port = state.config().port();
    let opened = crate::sockets::Rebind::open(&state.config(), port);
    match opened {
        Ok(listeners) => {
            let bound = listeners.first().and_then(|l| l.local_addr().ok()).map_or(port, |a| a.port());
            state.port.store(bound, std::sync::atomic::Ordering::Relaxed);
            state.rebind.hand_over(listeners);
            crate::log!(Notice, "Listening on port {port} from now on");
            Ok(())
        }
        Err(e) => {
            crate::log!(Warning, "Unable to listen on port {port}: {e}");
            let old = old_port.to_string();
            let _ = state.update_config(|config| config.set_many(&[("port", old.as_str())]));
            Err("ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.".into())
        }
    }
}

/// `CONFIG REWRITE`: write the running configuration into the file the
/// server was started with.
fn rewrite<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(path) = c.state.config_file.clone() else {
        return c.error(b"ERR The server is running without a config file");
    };
    let users: Vec<String> = if c.state.config().get("aclfile").is_empty() {
        let users = c.state.acl.users();
        users
            .iter()
            .map(|u| {
                let rules = kvik_acl::describe::user_rules(u);
                format!("user {} {}", String::from_utf8_lossy(u.name()), String::from_utf8_lossy(&rules))
            })
            .collect()
    } else {
        Vec::new()
    };
    let result = c.state.config().rewrite(&path, &users);
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

/// After `CONFIG SET` changed TLS options (`first` the first one named):
/// build the new configuration and open a new `tls-port`. On failure the
/// configuration goes back to `before` and the error is the reply.
fn apply_tls_config_set(
    state: &crate::state::ServerState,
    before: crate::config::Config,
    first: &str,
) -> Result<(), String> {
    let (on, new_port, old_port) = {
        let config = state.config();
        (crate::tls::enabled(&config), crate::tls::port(&config), crate::tls::port(&before))
    };
    let fail = |reason: &str| {
        state.update_config(|config| *config = before.clone());
        format!("ERR CONFIG SET failed (possibly related to argument '{first}') - {reason}")
    };
    let built = if on {
        // The read guard must be gone before `fail` takes the write lock.
        let built = crate::tls::build(&state.config());
        match built {
            Ok(built) => Some(built),
            Err(e) => {
                crate::log!(Warning, "{e}");
                return Err(fail(crate::tls::UPDATE_FAILED));
            }
        }
    } else {
        None
    };
    if new_port != old_port {
        let opened = crate::sockets::Rebind::open(&state.config(), new_port);
        match opened {
            Ok(listeners) => {
                state.tls.rebind.hand_over(listeners);
                if new_port != 0 {
                    crate::log!(Notice, "Listening for TLS on port {new_port} from now on");
                }
            }
            Err(e) => {
                crate::log!(Warning, "Unable to listen on TLS port {new_port}: {e}");
                return Err(fail("Unable to listen on this port. Check server logs."));
            }
        }
    }
    if let Some(built) = built {
        state.tls.install(built);
    }
    Ok(())
}
