//! `COMMAND` and its subcommands, answered from the command table.
//!
//! Client libraries and cluster proxies read `COMMAND` / `COMMAND INFO` to
//! learn arities, flags and key positions, and tools read `COMMAND DOCS`, so
//! the replies follow Redis 7.0's layout field for field, from the same facts
//! the dispatcher checks requests against.

use kvik_protocol::commands::{
    id, lookup, lookup_subcommand, AclCategories, ArgSpec, BeginSearch, CommandFlags, CommandSpec, FindKeys,
    KeySpecFlags, Source, COMMANDS,
};
use kvik_protocol::ReplySink;

use super::{implemented, Ctx, ReplyTarget, SYNTAX_ERROR};
use crate::keyspace::glob;

handlers! {
    COMMAND(c) => all_info(c),
    COMMAND_COUNT(c) => {
        let count = i64::try_from(listed().count()).unwrap_or(i64::MAX);
        c.reply(|s| s.integer(count));
    },
    COMMAND_INFO(c) => info(c),
    COMMAND_DOCS(c) => docs(c),
    COMMAND_LIST(c) => command_list(c),
    COMMAND_GETKEYS(c) => getkeys(c, false),
    COMMAND_GETKEYSANDFLAGS(c) => getkeys(c, true),
    COMMAND_HELP(c) => super::help(c, COMMAND_HELP),
}

/// The top-level commands kvik runs, in table order. The table also
/// describes commands kvik does not run; listing those would promise
/// clients commands that answer "unknown command".
fn listed() -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS.iter().filter(|spec| implemented(spec))
}

/// A command kvik runs, by name as [`find`] takes it.
fn find_listed(name: &[u8]) -> Option<&'static CommandSpec> {
    find(name).filter(|spec| implemented(spec))
}

/// `COMMAND`: the `COMMAND INFO` entry of every command kvik runs.
fn all_info<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    c.reply(|s| {
        s.array(listed().count());
        for spec in listed() {
            command_info(s, spec);
        }
    });
}

/// `COMMAND INFO [name ...]`: nil for a name kvik does not run, as Redis
/// answers for a name it does not know.
fn info<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let req = c.req;
    if req.argc() == 2 {
        return all_info(c);
    }
    c.reply(|s| {
        s.array(req.argc() - 2);
        for i in 2..req.argc() {
            match find_listed(req.arg(i)) {
                Some(spec) => command_info(s, spec),
                None => s.null(),
            }
        }
    });
}

/// `COMMAND DOCS [name ...]`: names kvik does not run are left out, as
/// Redis leaves out names it does not know.
fn docs<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let req = c.req;
    let specs: Vec<&CommandSpec> = if req.argc() == 2 {
        listed().collect()
    } else {
        (2..req.argc()).filter_map(|i| find_listed(req.arg(i))).collect()
    };
    c.reply(|s| {
        s.map(specs.len());
        for spec in specs {
            s.bulk(spec.name.as_bytes());
            command_docs(s, spec);
        }
    });
}

/// A command or `container|sub` subcommand by name, ignoring case.
pub fn find(name: &[u8]) -> Option<&'static CommandSpec> {
    match name.iter().position(|&b| b == b'|') {
        Some(bar) => {
            let container = lookup(&name[..bar])?;
            lookup_subcommand(container, &name[bar + 1..])
        }
        None => lookup(name),
    }
}

fn statuses<'n>(s: &mut dyn ReplySink, names: impl Iterator<Item = &'n str>) {
    let names: Vec<&str> = names.collect();
    s.set(names.len());
    for n in names {
        s.simple(n.as_bytes());
    }
}

/// One command's `COMMAND INFO` entry: name, arity, flags, key triple,
/// ACL categories, tips, key specs, subcommands.
fn command_info(s: &mut dyn ReplySink, spec: &CommandSpec) {
    s.array(10);
    s.bulk(spec.name.as_bytes());
    s.integer(i64::from(spec.arity));
    let mut flags = spec.flags;
    if spec.movable_keys {
        flags = flags.union(kvik_protocol::commands::CommandFlags::MOVABLEKEYS);
    }
    statuses(s, flags.names());
    s.integer(i64::from(spec.first_key));
    s.integer(i64::from(spec.last_key));
    s.integer(i64::from(spec.step));
    statuses(s, spec.acl_categories.names());
    s.set(spec.tips.len());
    for tip in spec.tips {
        s.bulk(tip.as_bytes());
    }
    s.set(spec.key_specs.len());
    for ks in spec.key_specs {
        s.map(3 + usize::from(ks.notes.is_some()));
        if let Some(notes) = ks.notes {
            s.bulk(b"notes");
            s.bulk(notes.as_bytes());
        }
        s.bulk(b"flags");
        statuses(s, ks.flags.names());
        s.bulk(b"begin_search");
        s.map(2);
        s.bulk(b"type");
        match ks.begin_search {
            BeginSearch::Unknown => {
                s.bulk(b"unknown");
                s.bulk(b"spec");
                s.map(0);
            }
            BeginSearch::Index(i) => {
                s.bulk(b"index");
                s.bulk(b"spec");
                s.map(1);
                s.bulk(b"index");
                s.integer(i64::from(i));
            }
            BeginSearch::Keyword { keyword, start_from } => {
                s.bulk(b"keyword");
                s.bulk(b"spec");
                s.map(2);
                s.bulk(b"keyword");
                s.bulk(keyword.as_bytes());
                s.bulk(b"startfrom");
                s.integer(i64::from(start_from));
            }
        }
        s.bulk(b"find_keys");
        s.map(2);
        s.bulk(b"type");
        match ks.find_keys {
            FindKeys::Unknown => {
                s.bulk(b"unknown");
                s.bulk(b"spec");
                s.map(0);
            }
            FindKeys::Range { last_key, key_step, limit } => {
                s.bulk(b"range");
                s.bulk(b"spec");
                s.map(3);
                s.bulk(b"lastkey");
                s.integer(i64::from(last_key));
                s.bulk(b"keystep");
                s.integer(i64::from(key_step));
                s.bulk(b"limit");
                s.integer(i64::from(limit));
            }
            FindKeys::Keynum { keynum_index, first_key, key_step } => {
                s.bulk(b"keynum");
                s.bulk(b"spec");
                s.map(3);
                s.bulk(b"keynumidx");
                s.integer(i64::from(keynum_index));
                s.bulk(b"firstkey");
                s.integer(i64::from(first_key));
                s.bulk(b"keystep");
                s.integer(i64::from(key_step));
            }
        }
    }
    let subs = reported_subcommands(spec);
    s.set(subs.len());
    for sub in subs {
        command_info(s, sub);
    }
}

/// One command's `COMMAND DOCS` map, fields in Redis's order, absent ones left out.
fn command_docs(s: &mut dyn ReplySink, spec: &CommandSpec) {
    let module = spec.group == "module";
    let len = 1
        + usize::from(!spec.summary.is_empty())
        + usize::from(!spec.since.is_empty())
        + usize::from(!spec.complexity.is_empty())
        + usize::from(module)
        + usize::from(!spec.doc_flags.is_empty())
        + usize::from(spec.deprecated_since.is_some())
        + usize::from(spec.replaced_by.is_some())
        + usize::from(!spec.history.is_empty())
        + usize::from(!spec.arguments.is_empty())
        + usize::from(!reported_subcommands(spec).is_empty());
    s.map(len);
    if !spec.summary.is_empty() {
        s.bulk(b"summary");
        s.bulk(spec.summary.as_bytes());
    }
    if !spec.since.is_empty() {
        s.bulk(b"since");
        s.bulk(spec.since.as_bytes());
    }
    s.bulk(b"group");
    s.bulk(spec.group.as_bytes());
    if !spec.complexity.is_empty() {
        s.bulk(b"complexity");
        s.bulk(spec.complexity.as_bytes());
    }
    if module {
        s.bulk(b"module");
        s.bulk(b"");
    }
    if !spec.doc_flags.is_empty() {
        s.bulk(b"doc_flags");
        statuses(s, spec.doc_flags.names());
    }
    if let Some(v) = spec.deprecated_since {
        s.bulk(b"deprecated_since");
        s.bulk(v.as_bytes());
    }
    if let Some(v) = spec.replaced_by {
        s.bulk(b"replaced_by");
        s.bulk(v.as_bytes());
    }
    if !spec.history.is_empty() {
        s.bulk(b"history");
        s.set(spec.history.len());
        for (version, change) in spec.history {
            s.array(2);
            s.bulk(version.as_bytes());
            s.bulk(change.as_bytes());
        }
    }
    if !spec.arguments.is_empty() {
        s.bulk(b"arguments");
        arguments(s, spec.arguments);
    }
    let subs = reported_subcommands(spec);
    if !subs.is_empty() {
        s.bulk(b"subcommands");
        s.map(subs.len());
        for sub in subs {
            s.bulk(sub.name.as_bytes());
            command_docs(s, sub);
        }
    }
}

fn arguments(s: &mut dyn ReplySink, args: &[ArgSpec]) {
    s.array(args.len());
    for a in args {
        let nested = !a.children.is_empty()
            || matches!(a.kind, kvik_protocol::commands::ArgKind::Oneof | kvik_protocol::commands::ArgKind::Block);
        let len = 2
            + usize::from(a.key_spec_index.is_some())
            + usize::from(a.token.is_some())
            + usize::from(a.summary.is_some())
            + usize::from(a.since.is_some())
            + usize::from(a.deprecated_since.is_some())
            + usize::from(!a.flags.is_empty())
            + usize::from(nested);
        s.map(len);
        s.bulk(b"name");
        s.bulk(a.name.as_bytes());
        s.bulk(b"type");
        s.bulk(a.kind.wire_name().as_bytes());
        if let Some(i) = a.key_spec_index {
            s.bulk(b"key_spec_index");
            s.integer(i64::from(i));
        }
        if let Some(t) = a.token {
            s.bulk(b"token");
            s.bulk(t.as_bytes());
        }
        if let Some(v) = a.summary {
            s.bulk(b"summary");
            s.bulk(v.as_bytes());
        }
        if let Some(v) = a.since {
            s.bulk(b"since");
            s.bulk(v.as_bytes());
        }
        if let Some(v) = a.deprecated_since {
            s.bulk(b"deprecated_since");
            s.bulk(v.as_bytes());
        }
        if !a.flags.is_empty() {
            s.bulk(b"flags");
            statuses(s, a.flags.names());
        }
        if nested {
            s.bulk(b"arguments");
            arguments(s, a.children);
        }
    }
}

/// The subcommands a container reports: those kvik runs and, for a Redis
/// 7.0 command, Redis 7.0 has, so its COMMAND INFO / DOCS entry reads as
/// Redis 7.0's does.
fn reported_subcommands(spec: &CommandSpec) -> Vec<&'static CommandSpec> {
    spec.subcommands
        .iter()
        .filter(|sub| implemented(sub) && (spec.source != Source::Redis70 || sub.source == Source::Redis70))
        .collect()
}

/// Every command and subcommand kvik runs, depth first.
fn all_specs() -> Vec<&'static CommandSpec> {
    let mut out = Vec::new();
    for spec in listed() {
        out.push(spec);
        out.extend(spec.subcommands.iter().filter(|sub| implemented(sub)));
    }
    out
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]`.
fn command_list<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let names: Vec<&str> = match c.argc() {
        2 => all_specs().into_iter().map(|s| s.name).collect(),
        5 if c.arg(2).eq_ignore_ascii_case(b"filterby") => {
            let (kind, value) = (c.arg(3).to_ascii_lowercase(), c.arg(4));
            match kind.as_slice() {
                b"module" => Vec::new(),
                b"aclcat" => {
                    let mut cat = b"@".to_vec();
                    cat.extend(value.iter().map(u8::to_ascii_lowercase));
                    let cat = std::str::from_utf8(&cat).ok().and_then(AclCategories::from_name);
                    match cat {
                        Some(cat) => {
                            all_specs().into_iter().filter(|s| s.acl_categories.contains(cat)).map(|s| s.name).collect()
                        }
                        None => Vec::new(),
                    }
                }
                b"pattern" => all_specs()
                    .into_iter()
                    .filter(|s| glob::matches(value, s.name.as_bytes(), true))
                    .map(|s| s.name)
                    .collect(),
                _ => return c.error(SYNTAX_ERROR),
            }
        }
        _ => return c.error(SYNTAX_ERROR),
    };
    c.reply(|s| {
        s.array(names.len());
        for n in names {
            s.bulk(n.as_bytes());
        }
    });
}

/// `COMMAND GETKEYS command [arg ...]` and `COMMAND GETKEYSANDFLAGS`: the
/// keys the command's key specs find in the given arguments.
fn getkeys<T: ReplyTarget>(c: &mut Ctx<'_, T>, with_flags: bool) {
    let req = c.req;
    let args: Vec<&[u8]> = (2..req.argc()).map(|i| req.arg(i)).collect();
    let Some(mut spec) = args.first().and_then(|n| lookup(n)) else {
        return c.error(b"ERR Invalid command specified");
    };
    if !spec.subcommands.is_empty() && args.len() >= 2 {
        if let Some(sub) = lookup_subcommand(spec, args[1]) {
            spec = sub;
        }
    }
    if spec.key_specs.is_empty() {
        return c.error(b"ERR The command has no key arguments");
    }
    if !spec.arity_ok(args.len()) {
        return c.error(b"ERR Invalid number of arguments specified for command");
    }
    let keys = find_keys(spec, &args).unwrap_or_default();
    if keys.is_empty() {
        if spec.flags.contains(CommandFlags::NO_MANDATORY_KEYS) {
            return c.reply(|s| s.array(0));
        }
        return c.error(b"ERR Invalid arguments specified for command");
    }
    c.reply(|s| {
        s.array(keys.len());
        for (i, flags) in &keys {
            if with_flags {
                s.array(2);
                s.bulk(args[*i]);
                statuses(s, flags.names());
            } else {
                s.bulk(args[*i]);
            }
        }
    });
}

/// Positions of the keys of `req`, a request for `spec`, found by its key
/// specs (none when the request is malformed).
pub(super) fn key_positions(spec: &CommandSpec, req: super::Request<'_>) -> Vec<usize> {
    let args: Vec<&[u8]> = (0..req.argc()).map(|i| req.arg(i)).collect();
    find_keys(spec, &args).unwrap_or_default().into_iter().map(|(i, _)| i).collect()
}

/// Positions of the keys in `args` (the command name at 0) and their flags,
/// as Redis finds them (see [`kvik_protocol::commands::keys`]); `None` when
/// the request is malformed.
pub(super) fn find_keys(spec: &CommandSpec, args: &[&[u8]]) -> Option<Vec<(usize, KeySpecFlags)>> {
    let mut keys = Vec::new();
    let walked = kvik_protocol::commands::keys::for_each_key(
        spec,
        args.len(),
        |i| args[i],
        |i, flags| {
            keys.push((i, flags));
            true
        },
    );
    walked.ok().map(|()| keys)
}

/// Redis 7.0's `COMMAND HELP` text.
const COMMAND_HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
];

/// Whether `spec` never touches the keyspace: it has no keys and belongs
/// to a group that works on the connection, pub/sub or the transaction.
pub(super) fn keyless(spec: &CommandSpec) -> bool {
    spec.key_specs.is_empty() && matches!(spec.group, "connection" | "pubsub" | "transactions")
}

/// Whether `spec` runs a script (EVAL and its kin).
pub(super) fn runs_script(spec: &CommandSpec) -> bool {
    matches!(spec.id, id::EVAL | id::EVALSHA | id::EVAL_RO | id::EVALSHA_RO | id::FCALL | id::FCALL_RO)
}

/// Whether the key specs of `spec` find every key it touches.
pub(super) fn keys_known(spec: &CommandSpec) -> bool {
    let complete = |ks: &kvik_protocol::commands::KeySpec| {
        !ks.flags.contains(KeySpecFlags::INCOMPLETE)
            && ks.begin_search != BeginSearch::Unknown
            && ks.find_keys != FindKeys::Unknown
    };
    // SORT's BY and GET patterns name keys no spec can describe; the table
    // gives SORT and SORT_RO an unknown spec for them, so they reserve all.
    !spec.key_specs.is_empty() && spec.key_specs.iter().all(complete)
}
