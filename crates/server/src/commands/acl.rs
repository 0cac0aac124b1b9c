//! `ACL`: users and their rules (SETUSER, GETUSER, DELUSER, USERS, LIST,
//! WHOAMI, CAT, DRYRUN), the ACL file (SAVE, LOAD), the security log (LOG)
//! and passwords (GENPASS). The rules themselves are `kvik-acl`'s; the
//! users live in `registries::acl`.

use kvik_acl::rules::{has_spaces, merge_selectors};
use kvik_acl::{describe, Denied, User, Users};
use kvik_protocol::commands::{lookup, lookup_subcommand, AclCategories, CommandFlags};
use kvik_protocol::number::parse_i64;

use super::{Ctx, Outcome, ReplyTarget};
use crate::state::ServerState;

handlers! {
    ACL_SETUSER(c) => setuser(c),
    ACL_GETUSER(c) => getuser(c),
    ACL_DELUSER(c) => deluser(c),
    ACL_USERS(c) => list(c, true),
    ACL_LIST(c) => list(c, false),
    ACL_WHOAMI(c) => whoami(c),
    ACL_CAT(c) => cat(c),
    ACL_GENPASS(c) => genpass(c),
    ACL_LOG(c) => log(c),
    ACL_SAVE(c) => save(c),
    ACL_LOAD(c) => load(c),
    ACL_DRYRUN(c) => dryrun(c),
    ACL_HELP(c) => super::help(c, HELP),
}

const NO_ACL_FILE: &[u8] = b"ERR This Redis instance is not configured to use an ACL file. You may want to specify \
users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) \
in order to store users in the Redis configuration.";

/// `ACL SETUSER name rule…`: every rule applies, or none.
fn setuser<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let name = c.arg(2);
    if has_spaces(name) {
        return c.error(b"ERR Usernames can't contain spaces or null characters");
    }
    let args: Vec<&[u8]> = (3..c.argc()).map(|i| c.arg(i)).collect();
    let ops = match merge_selectors(args.iter().copied()) {
        Ok(ops) => ops,
        Err(at) => {
            let shown = String::from_utf8_lossy(args.get(at).copied().unwrap_or_default());
            let text = format!("ERR Unmatched parenthesis in acl selector starting at '{shown}'.");
            return c.error(text.as_bytes());
        }
    };
    let state = c.state;
    let defaults = state.acl.defaults();
    let before = state.acl.user(name);
    let base = before.as_deref().cloned().unwrap_or_else(|| User::new(name, defaults));
    let user = match base.with_rules(ops.iter().map(Vec::as_slice), defaults) {
        Ok(user) => user,
        Err((op, e)) => {
            let text = format!("ERR Error in ACL SETUSER modifier '{}': {}", String::from_utf8_lossy(op), e.message());
            return c.error(text.as_bytes());
        }
    };
    let lost_channels = before.as_deref().is_some_and(|old| channels_narrowed(old, &user));
    state.acl.update(&state.limits.auth_required, |users| users.put(user));
    if lost_channels {
        // Subscribers of channels the user may no longer use are dropped,
        // as Redis drops them, rather than left listening.
        close_clients_of(c, name, true);
    }
    c.ok();
}

/// Whether `new` may use fewer channels than `old`: some pattern of the old
/// rules is not among the new ones.
fn channels_narrowed(old: &User, new: &User) -> bool {
    let Some(now) = new.channel_patterns() else { return false };
    match old.channel_patterns() {
        None => true,
        Some(was) => was.iter().any(|p| !now.contains(p)),
    }
}

/// Close the connections logged in as `name` (only those subscribed to
/// something, when `subscribers_only`). The caller's own connection closes
/// after its reply.
fn close_clients_of<T: ReplyTarget>(c: &mut Ctx<'_, T>, name: &[u8], subscribers_only: bool) {
    let me = c.session.id;
    let mut close_me = false;
    c.state.clients.each(|h| {
        let (theirs, subscribed) = {
            let info = h.info();
            (info.user == name, info.subscriptions.iter().any(|&n| n > 0))
        };
        if !theirs || (subscribers_only && !subscribed) {
            return;
        }
        if h.id == me {
            close_me = true;
        } else {
            h.kill();
            c.state.blocking.abandon(h.id);
        }
    });
    if close_me {
        c.outcome = Outcome::Close;
    }
}

/// `ACL DELUSER name…`: how many existed; their clients are disconnected.
fn deluser<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if (2..c.argc()).any(|i| c.arg(i) == b"default") {
        return c.error(b"ERR The 'default' user cannot be removed");
    }
    let names: Vec<Vec<u8>> = (2..c.argc()).map(|i| c.arg(i).to_vec()).collect();
    let state = c.state;
    let removed: Vec<&Vec<u8>> =
        state.acl.update(&state.limits.auth_required, |users| names.iter().filter(|n| users.remove(n)).collect());
    for name in &removed {
        close_clients_of(c, name, false);
    }
    c.reply(|s| s.integer(removed.len() as i64));
}

/// `ACL GETUSER name`.
fn getuser<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(user) = c.state.acl.user(c.arg(2)) else { return c.reply(|s| s.null()) };
    let flags = describe::flags(&user);
    let selectors = user.selectors();
    c.reply(|s| {
        s.map(6);
        s.bulk(b"flags");
        s.set(flags.len());
        for flag in &flags {
            s.bulk(flag.as_bytes());
        }
        s.bulk(b"passwords");
        s.array(user.password_hashes().len());
        for hash in user.password_hashes() {
            s.bulk(hash);
        }
        if let Some(root) = selectors.first() {
            write_selector(s, root);
        }
        s.bulk(b"selectors");
        s.array(selectors.len().saturating_sub(1));
        for selector in selectors.iter().skip(1) {
            s.map(3);
            write_selector(s, selector);
        }
    });
}

fn write_selector(s: &mut dyn kvik_protocol::reply::ReplySink, selector: &kvik_acl::Selector) {
    s.bulk(b"commands");
    s.bulk(&describe::command_rules(selector));
    s.bulk(b"keys");
    s.bulk(&describe::key_patterns(selector));
    s.bulk(b"channels");
    s.bulk(&describe::channel_patterns(selector));
}

/// `ACL LIST` (rules) and `ACL USERS` (names).
fn list<T: ReplyTarget>(c: &mut Ctx<'_, T>, names_only: bool) {
    let lines: Vec<Vec<u8>> = {
        let users = c.state.acl.users();
        users
            .iter()
            .map(|u| {
                if names_only {
                    u.name().to_vec()
                } else {
                    [&b"user "[..], u.name(), b" ", &describe::user_rules(u)].concat()
                }
            })
            .collect()
    };
    c.reply(|s| {
        s.array(lines.len());
        for line in &lines {
            s.bulk(line);
        }
    });
}

/// `ACL WHOAMI`.
fn whoami<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    match c.session.user.as_ref().map(|u| u.name().to_vec()) {
        Some(name) => c.reply(|s| s.bulk(&name)),
        None => c.reply(|s| s.null()),
    }
}

/// `ACL CAT [category]`: the categories, or the commands kvik runs in one.
fn cat<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() == 2 {
        let names: Vec<&str> = kvik_acl::rules::categories().map(|(n, _)| n).collect();
        return c.reply(|s| {
            s.array(names.len());
            for n in &names {
                s.bulk(n.as_bytes());
            }
        });
    }
    if c.argc() > 3 {
        return super::unknown_subcommand_syntax(c);
    }
    let Some(category) = kvik_acl::rules::category(c.arg(2)) else {
        let shown = String::from_utf8_lossy(&c.arg(2)[..c.arg(2).len().min(128)]).into_owned();
        return c.error(format!("ERR Unknown category '{shown}'").as_bytes());
    };
    let names = commands_in(category);
    c.reply(|s| {
        s.array(names.len());
        for n in &names {
            s.bulk(n.as_bytes());
        }
    });
}

/// The commands and subcommands kvik runs in `category`.
fn commands_in(category: AclCategories) -> Vec<&'static str> {
    kvik_protocol::commands::COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()))
        .filter(|s| !s.flags.contains(CommandFlags::MODULE) && s.acl_categories.contains(category))
        .filter(|s| super::implemented(s))
        .map(|s| s.name)
        .collect()
}

/// The most bits `ACL GENPASS` gives.
const GENPASS_MAX_BITS: i64 = 4096;

/// `ACL GENPASS [bits]`: random hex digits from the system's generator.
fn genpass<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 3 {
        return super::unknown_subcommand_syntax(c);
    }
    let bits = if c.argc() == 3 {
        match parse_i64(c.arg(2)) {
            Some(n) => n,
            None => return c.error(b"ERR value is not an integer or out of range"),
        }
    } else {
        256
    };
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        let text = format!(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to \
             {GENPASS_MAX_BITS}"
        );
        return c.error(text.as_bytes());
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut raw = vec![0u8; chars.div_ceil(2)];
    if let Err(e) = fill_random(&mut raw) {
        return c.error(format!("ERR cannot read random bytes: {e}").as_bytes());
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hex: Vec<u8> =
        raw.iter().flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]).take(chars).collect();
    c.reply(|s| s.bulk(&hex));
}

fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

/// `ACL LOG [count | RESET]`.
fn log<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 3 {
        return super::unknown_subcommand_syntax(c);
    }
    let mut count = 10usize;
    if c.argc() == 3 {
        if c.arg(2).eq_ignore_ascii_case(b"reset") {
            c.state.acl.reset_log();
            return c.ok();
        }
        match parse_i64(c.arg(2)) {
            Some(n) => count = usize::try_from(n).unwrap_or(0),
            None => return c.error(b"ERR value is not an integer or out of range"),
        }
    }
    let entries = c.state.acl.entries(count);
    let now_ms = u64::try_from(crate::keyspace::now_ms()).unwrap_or(0);
    c.reply(|s| {
        s.array(entries.len());
        for e in &entries {
            let (reason, context, age) = e.fields(now_ms);
            s.map(7);
            s.bulk(b"count");
            s.integer(i64::try_from(e.count).unwrap_or(i64::MAX));
            s.bulk(b"reason");
            s.bulk(reason.as_bytes());
            s.bulk(b"context");
            s.bulk(context.as_bytes());
            s.bulk(b"object");
            s.bulk(&e.object);
            s.bulk(b"username");
            s.bulk(&e.username);
            s.bulk(b"age-seconds");
            s.double(age);
            s.bulk(b"client-info");
            s.bulk(&e.client_info);
        }
    });
}

/// The ACL file, when `aclfile` names one.
fn acl_file(state: &ServerState) -> Option<String> {
    let config = state.config();
    let file = config.get("aclfile");
    (!file.is_empty()).then(|| file.to_string())
}

/// `ACL SAVE`: the users, written to a new file that then replaces the old.
fn save<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(file) = acl_file(c.state) else { return c.error(NO_ACL_FILE) };
    let text = c.state.acl.users().to_file();
    match write_replacing(&file, &text) {
        Ok(()) => c.ok(),
        Err(e) => {
            crate::log!(Warning, "Saving the ACL file {file}: {e}");
            c.error(
                b"ERR There was an error trying to save the ACLs. Please check the server logs for more information",
            )
        }
    }
}

/// Write `text` to a temporary file beside `path`, flush it to disk, and
/// rename it over `path`: a crash leaves the old file or the new one.
pub fn write_replacing(path: &str, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `ACL LOAD`: the file's users replace the current ones, all or nothing;
/// clients logged in as any other user than `default` are disconnected.
fn load<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(file) = acl_file(c.state) else { return c.error(NO_ACL_FILE) };
    let users = match read_acl_file(c.state, &file) {
        Ok(users) => users,
        Err(e) => return c.error(format!("ERR {e}").as_bytes()),
    };
    let old: Vec<Vec<u8>> = c.state.acl.users().iter().map(|u| u.name().to_vec()).filter(|n| n != b"default").collect();
    let state = c.state;
    state.acl.update(&state.limits.auth_required, |current| *current = users);
    for name in &old {
        close_clients_of(c, name, false);
    }
    c.ok();
}

/// The users of the ACL file `file`, or Redis's description of what is
/// wrong with it.
pub fn read_acl_file(state: &ServerState, file: &str) -> Result<Users, String> {
    let text =
        std::fs::read(file).map_err(|e| format!("Error loading ACLs, opening file '{file}': {}", io_reason(&e)))?;
    Users::from_file(&text, file, state.acl.defaults())
}

/// An I/O error as C's `strerror` words it.
fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// `ACL DRYRUN user command [arg…]`: whether the user could run it, without
/// running it.
fn dryrun<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(user) = c.state.acl.user(c.arg(2)) else {
        let text = format!("ERR User '{}' not found", String::from_utf8_lossy(c.arg(2)));
        return c.error(text.as_bytes());
    };
    let argc = c.argc() - 3;
    let req = c.req;
    let arg = |i: usize| req.arg(i + 3);
    let Some(mut spec) = lookup(arg(0)) else {
        let text = format!("ERR Command '{}' not found", String::from_utf8_lossy(arg(0)));
        return c.error(text.as_bytes());
    };
    if !spec.subcommands.is_empty() {
        match (argc >= 2).then(|| lookup_subcommand(spec, arg(1))).flatten() {
            Some(sub) => spec = sub,
            None => {
                let text = format!("ERR Command '{}' not found", String::from_utf8_lossy(arg(0)));
                return c.error(text.as_bytes());
            }
        }
    }
    if !spec.arity_ok(argc) {
        let text = format!("ERR wrong number of arguments for '{}' command", spec.name);
        return c.error(text.as_bytes());
    }
    let text = match kvik_acl::check(&user, spec, argc, arg) {
        Ok(()) => return c.ok(),
        Err(Denied::Command) => format!("This user has no permissions to run the '{}' command", spec.name),
        Err(Denied::Key(at)) => {
            format!("This user has no permissions to access the '{}' key", String::from_utf8_lossy(arg(at)))
        }
        Err(Denied::Channel(at)) => {
            format!("This user has no permissions to access the '{}' channel", String::from_utf8_lossy(arg(at)))
        }
    };
    c.reply(|s| s.bulk(text.as_bytes()));
}

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
];

/// Load the users the configuration declares (`user` lines) or the ACL
/// file it names, at startup (first fixing which commands rules may
/// name); Redis's texts for what stops the start.
pub fn load_users(state: &ServerState) -> Result<(), String> {
    // Before any rule is read: rules name the commands kvik knows.
    kvik_acl::rules::set_known(super::known_to_acl);
    let (declared, file) = {
        let config = state.config();
        (config.users().to_vec(), config.get("aclfile").to_string())
    };
    if !file.is_empty() && !declared.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is \
                    invalid. This setup is very likely to lead to configuration errors and security holes, please \
                    define either an ACL file or declare users directly in your redis.conf, but not both."
            .into());
    }
    if !declared.is_empty() {
        let users = declared_users(state, &declared)?;
        state.acl.update(&state.limits.auth_required, |current| *current = users);
    }
    if !file.is_empty() {
        let users =
            read_acl_file(state, &file).map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        state.acl.update(&state.limits.auth_required, |current| *current = users);
    }
    Ok(())
}

/// The users of `user name rule…` lines (each given as its words after
/// `user`), on top of the default user.
fn declared_users(state: &ServerState, declared: &[Vec<String>]) -> Result<Users, String> {
    let defaults = state.acl.defaults();
    let mut users = state.acl.users().clone();
    let mut seen: Vec<&str> = Vec::new();
    for words in declared {
        let Some((name, rules)) = words.split_first() else { continue };
        if seen.contains(&name.as_str()) {
            let why = kvik_acl::RuleError::Duplicate.message();
            return Err(format!("Error in user declaration '{name}': {why}"));
        }
        seen.push(name);
        if has_spaces(name.as_bytes()) {
            return Err("Spaces not allowed in ACL usernames".into());
        }
        let ops = merge_selectors(rules.iter().map(|r| r.as_bytes()))
            .map_err(|at| format!("Error in user declaration '{}': Unmatched parenthesis", rules[at]))?;
        let base = if name == "default" {
            let reset = users.default_user().with_rules([&b"reset"[..]], defaults);
            reset.map_err(|(_, e)| e.message().to_string())?
        } else {
            User::new(name.as_bytes(), defaults)
        };
        let user = base.with_rules(ops.iter().map(Vec::as_slice), defaults).map_err(|(op, e)| {
            let op = String::from_utf8_lossy(op);
            format!("Error loading ACL rule '{op}' for the user named '{name}': {}", e.message())
        })?;
        if !user.enabled() {
            crate::log!(
                Notice,
                "The user '{name}' is disabled (there is no 'on' modifier in the user description). Make sure this \
                 is not a configuration error."
            );
        }
        users.put(user);
    }
    Ok(users)
}
