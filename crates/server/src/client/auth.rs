//! Logging in (`AUTH`, `HELLO … AUTH`) as an ACL user, and the check a
//! command passes before it runs.
//!
//! A new client runs as `default`, and is logged in from the start when
//! `default` is `on` and `nopass` (no `requirepass`, no password given by
//! `ACL SETUSER`); otherwise it must log in before anything but the few
//! commands the table marks `no_auth`. Each RESPB mux channel is a session
//! of its own, so each logs in on its own.
//!
//! The permission check ([`permitted`]) costs an unrestricted user (the
//! default one, `+@all ~* &*`) one comparison of the users' generation and
//! one flag. A user with limits is answered by its plan
//! ([`kvik_acl::plan`]: a byte per command, and a pattern comparison for a
//! command's one key) and, where the plan cannot say yes, by the full
//! check ([`kvik_acl::check`]), which logs what it refuses (`ACL LOG`).

use kvik_acl::Denied;
use kvik_protocol::commands::CommandSpec;

use crate::client::session::Session;
use crate::registries::acl::{Context, Entry, Reason};
use crate::state::ServerState;

/// Redis's reply to wrong credentials.
pub const WRONGPASS: &[u8] = b"WRONGPASS invalid username-password pair or user is disabled.";
/// Redis's reply to a command sent before authenticating.
pub const NOAUTH: &[u8] = b"NOAUTH Authentication required.";

/// Whether clients must log in before running commands now.
pub fn required(state: &ServerState) -> bool {
    state.limits.auth_required()
}

/// Log `session` in as `user` with `password`; false (and an `ACL LOG`
/// entry naming `command`, the name the client sent) when they do not
/// match or the user is off.
pub fn log_in(
    state: &ServerState,
    session: &mut Session,
    user: &[u8],
    password: &[u8],
    command: &[u8],
    context: Context,
) -> bool {
    match state.acl.user(user).filter(|u| u.password_ok(password)) {
        Some(found) => {
            session.authenticated = true;
            session.set_user(state, found);
            true
        }
        None => {
            let entry = entry(session, Reason::Auth, context, command.to_vec(), user.to_vec());
            state.acl.log(entry);
            false
        }
    }
}

/// Take the new rules of the session's user if they changed since it last
/// looked. A user deleted meanwhile leaves the session as `default`, not
/// logged in (its connection is being closed, as Redis closes it).
#[inline]
pub fn refresh(state: &ServerState, session: &mut Session) {
    if session.acl_seen != state.acl.generation() {
        reread_user(state, session);
    }
}

#[inline(never)]
fn reread_user(state: &ServerState, session: &mut Session) {
    let Some(mine) = session.user.as_ref() else {
        session.acl_seen = state.acl.generation();
        return;
    };
    match state.acl.user(mine.name()) {
        Some(user) => session.set_user(state, user),
        None => {
            session.authenticated = false;
            session.set_user(state, state.acl.default_user());
        }
    }
}

/// Whether the session's user may run `spec` with the request's
/// arguments; the refusal is logged under `context`.
#[inline]
pub fn permitted<'a>(
    state: &ServerState,
    session: &mut Session,
    spec: &'static CommandSpec,
    argc: usize,
    arg: impl Fn(usize) -> &'a [u8] + Copy,
    context: Context,
) -> Result<(), Denied> {
    refresh(state, session);
    if session.acl_open {
        return Ok(());
    }
    // The user's plan answers most requests; what it cannot allow, the
    // full check answers and logs.
    if session.acl_plan.as_deref().is_some_and(|plan| plan.allows(spec, argc, arg)) {
        return Ok(());
    }
    check_restricted(state, session, spec, argc, arg, context)
}

#[inline(never)]
fn check_restricted<'a>(
    state: &ServerState,
    session: &mut Session,
    spec: &'static CommandSpec,
    argc: usize,
    arg: impl Fn(usize) -> &'a [u8] + Copy,
    context: Context,
) -> Result<(), Denied> {
    let Some(user) = session.user.as_deref() else { return Ok(()) };
    let denied = match kvik_acl::check(user, spec, argc, arg) {
        Ok(()) => return Ok(()),
        Err(denied) => denied,
    };
    refused(state, session, spec, arg, context, denied)
}

/// Log a refusal of `spec` (the slow path, apart from the check).
#[inline(never)]
fn refused<'a>(
    state: &ServerState,
    session: &mut Session,
    spec: &'static CommandSpec,
    arg: impl Fn(usize) -> &'a [u8],
    context: Context,
    denied: Denied,
) -> Result<(), Denied> {
    let username = session.user.as_ref().map(|u| u.name().to_vec()).unwrap_or_default();
    let (reason, object) = match denied {
        Denied::Command => (Reason::Command, spec.name.as_bytes().to_vec()),
        Denied::Key(at) => (Reason::Key, arg(at).to_vec()),
        Denied::Channel(at) => (Reason::Channel, arg(at).to_vec()),
    };
    // Redis names the refused command as the client's last one.
    if context == Context::Toplevel || (context == Context::Multi && session.multi.is_some()) {
        if let Some(handle) = session.handle() {
            handle.ran(spec.id, crate::clock::now_mono_us());
        }
    }
    let entry = entry(session, reason, context, object, username);
    state.acl.log(entry);
    Err(denied)
}

/// An `ACL LOG` entry for `session` now.
fn entry(session: &Session, reason: Reason, context: Context, object: Vec<u8>, username: Vec<u8>) -> Entry {
    let mut client_info =
        session.handle().map(|h| crate::registries::clients::list_line(h, session.id, 0, false)).unwrap_or_default();
    if client_info.last() == Some(&b'\n') {
        client_info.pop();
    }
    Entry {
        count: 1,
        reason,
        context,
        object,
        username,
        time_ms: u64::try_from(crate::keyspace::now_ms()).unwrap_or(0),
        client_info,
    }
}

/// Redis's refusal of a command the client sent.
pub fn noperm_text(denied: Denied, spec: &CommandSpec) -> Vec<u8> {
    match denied {
        Denied::Command => {
            format!("NOPERM this user has no permissions to run the '{}' command", spec.name).into_bytes()
        }
        Denied::Key(_) => b"NOPERM this user has no permissions to access one of the keys used as arguments".to_vec(),
        Denied::Channel(_) => {
            b"NOPERM this user has no permissions to access one of the channels used as arguments".to_vec()
        }
    }
}

/// Redis's refusal of a queued command whose permission was taken away
/// before `EXEC`.
pub fn exec_noperm_text(denied: Denied) -> Vec<u8> {
    let reason = match denied {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key(_) => "no permission to touch the specified keys",
        Denied::Channel(_) => "no permission to access one of the channels used as arguments",
    };
    format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This \
         command is no longer allowed for the following reason: {reason}"
    )
    .into_bytes()
}

/// Redis's refusal of a command a script called.
pub fn script_noperm_text(denied: Denied) -> Vec<u8> {
    let what = match denied {
        Denied::Command => "can't run this command or subcommand",
        Denied::Key(_) => "can't access at least one of the keys mentioned in the command arguments",
        Denied::Channel(_) => "can't publish to the channel mentioned in the command",
    };
    format!("ERR The user executing the script {what}").into_bytes()
}
