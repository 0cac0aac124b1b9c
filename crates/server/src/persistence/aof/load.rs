//! Replaying the append-only file when the server starts: the manifest,
//! then its base (an RDB file, or commands) and its incremental files in
//! order, as Redis 7.0 loads them.
//!
//! Commands run as a client of the server's own would, with the journal
//! off and with keys kept past their deadline
//! ([`crate::keyspace::Loading`]): the file was written while they were
//! live. A file that stops in the middle of a command — what a crash
//! during a write leaves — is the valid part of it, when it is the last
//! file and `aof-load-truncated` is on: the file is cut back to the last
//! whole command (before a `MULTI` whose `EXEC` never came), so that what
//! the server appends next follows a whole command. Anything else wrong
//! stops the start with the reason, as Redis does, rather than start with
//! part of the data and overwrite the rest.

use std::fs::OpenOptions;
use std::path::Path;
use std::time::Instant;

use kvik_persist::aof::commands::{read, Ending, ReadError};
use kvik_persist::aof::manifest::{manifest_name, Manifest};
use kvik_protocol::CommandArgs;

use crate::client::session::Session;
use crate::keyspace::Loading;
use crate::state::ServerState;

/// What the load found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Commands replayed.
    pub commands: u64,
    /// Keys the base held.
    pub base_keys: u64,
    /// A file was cut back to its valid part.
    pub truncated: bool,
}

/// Replay `dir`/`appenddirname` into the (empty) keyspace; `Ok(None)` when
/// there is no manifest (a first start with `appendonly yes`). The error
/// is the text to log before exiting.
/// Runs one command read from a file, as the server's own client; the
/// error names a command the server does not know, which stops the load.
/// (The commands live above this module; the server passes their runner
/// in.)
pub type Replay = fn(&ServerState, &CommandArgs, &mut Session) -> Result<(), String>;

pub fn load(state: &ServerState, replay: Replay) -> Result<Option<Loaded>, String> {
    let (dir, name) = super::location(state);
    let manifest_path = dir.join(manifest_name(&name));
    let data = match std::fs::read(&manifest_path) {
        Ok(data) => data,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("Can't open the AOF manifest {}: {e}", manifest_path.display())),
    };
    let manifest = Manifest::parse(&data).map_err(|e| e.to_string())?;
    let files: Vec<_> = manifest.files().collect();
    for f in &files {
        if !dir.join(&f.name).exists() {
            return Err(format!("The AOF file {} doesn't exist", f.name));
        }
    }
    let started = Instant::now();
    let _loading = Loading::start();
    let mut session = Session::new(0);
    session.authenticated = true;
    let mut loaded = Loaded::default();
    let last = files.len().saturating_sub(1);
    for (i, f) in files.iter().enumerate() {
        let path = dir.join(&f.name);
        let bytes = std::fs::read(&path).map_err(|e| format!("Can't read the AOF file {}: {e}", f.name))?;
        if bytes.starts_with(b"REDIS") {
            crate::log!(Notice, "Reading RDB base file on AOF loading...");
            let keys = crate::persistence::loading::load_rdb(state, &path, true)?;
            loaded.base_keys = keys.map_or(0, |k| k.keys);
            crate::log!(Notice, "RDB is base AOF");
            continue;
        }
        let file = if kvik_persist::aof::manifest::is_respb(&f.name) {
            replay_respb_file(state, replay, &bytes, &mut session, &f.name)?
        } else {
            replay_file(state, replay, &bytes, &mut session, &f.name)?
        };
        loaded.commands += file.commands;
        if let Some(valid_up_to) = file.cut_at {
            truncate(state, &path, &f.name, valid_up_to, i == last)?;
            loaded.truncated = true;
        }
        session.multi = None;
        crate::log!(Notice, "DB loaded from incr file {}: {:.3} seconds", f.name, started.elapsed().as_secs_f64());
    }
    crate::log!(Notice, "DB loaded from append only file: {:.3} seconds", started.elapsed().as_secs_f64());
    Ok(Some(loaded))
}

/// One file of commands replayed.
struct Replayed {
    commands: u64,
    /// Where the whole commands end, when the file does not end with one
    /// (or ends inside a transaction).
    cut_at: Option<usize>,
}

fn replay_file(
    state: &ServerState,
    replay: Replay,
    bytes: &[u8],
    session: &mut Session,
    name: &str,
) -> Result<Replayed, String> {
    let mut commands = 0;
    let mut before_multi = None;
    let ending = read::<String>(bytes, |cmd| {
        let mut args = CommandArgs::new();
        for a in cmd.args {
            args.push_owned(a);
        }
        if cmd.args.first().is_some_and(|n| n.eq_ignore_ascii_case(b"multi")) {
            before_multi = Some(cmd.span.start);
        }
        replay(state, &args, session)?;
        if session.multi.is_none() {
            before_multi = None;
        }
        commands += 1;
        Ok(())
    });
    let cut_at = match ending {
        Ok(Ending::Whole) => None,
        Ok(Ending::Truncated { valid_up_to }) => Some(valid_up_to),
        Err(ReadError::Format(e)) => {
            return Err(format!(
                "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest> ({e})"
            ))
        }
        Err(ReadError::Command { error, .. }) => {
            return Err(format!("Unknown command '{error}' reading the append only file {name}"));
        }
    };
    // A transaction without its EXEC ran nothing; it goes with the cut.
    let cut_at = match (before_multi, cut_at) {
        (Some(multi), _) if session.multi.is_some() => {
            crate::log!(Warning, "Revert incomplete MULTI/EXEC transaction in AOF file {name}");
            Some(multi)
        }
        (_, cut) => cut,
    };
    Ok(Replayed { commands, cut_at })
}

/// [`replay_file`] for a file of RESPB frames (`aof-format respb`): each
/// command frame is decoded as a RESPB connection decodes it; a frame cut
/// short at the end is the file's unfinished part.
fn replay_respb_file(
    state: &ServerState,
    replay: Replay,
    bytes: &[u8],
    session: &mut Session,
    name: &str,
) -> Result<Replayed, String> {
    use kvik_protocol::respb::{Decoded, Frame, RespbDecoder};
    let mut decoder = RespbDecoder::default();
    let (mut args, mut owned) = (CommandArgs::new(), CommandArgs::new());
    let (mut at, mut commands, mut before_multi, mut cut_at) = (0, 0, None, None);
    while at < bytes.len() {
        let rest = &bytes[at..];
        match decoder.decode(rest, &mut args) {
            Ok(Decoded::NeedMore { .. }) => {
                cut_at = Some(at);
                break;
            }
            Ok(Decoded::Frame { frame, consumed }) => {
                if let Frame::Command { .. } = frame {
                    owned.clear();
                    for i in 0..args.len() {
                        owned.push_owned(args.get(rest, i).unwrap_or(&[]));
                    }
                    if owned.get(&[], 0).is_some_and(|n| n.eq_ignore_ascii_case(b"multi")) {
                        before_multi = Some(at);
                    }
                    replay(state, &owned, session)
                        .map_err(|cmd| format!("Unknown command '{cmd}' reading the append only file {name}"))?;
                    if session.multi.is_none() {
                        before_multi = None;
                    }
                    commands += 1;
                }
                at += consumed.max(1);
            }
            Err(e) => {
                return Err(format!(
                    "Bad file format reading the append only file {name}: make a backup of your AOF file ({e} at offset {at})"
                ))
            }
        }
    }
    let cut_at = match before_multi {
        Some(multi) if session.multi.is_some() => {
            crate::log!(Warning, "Revert incomplete MULTI/EXEC transaction in AOF file {name}");
            Some(multi)
        }
        _ => cut_at,
    };
    Ok(Replayed { commands, cut_at })
}

/// Cut the file at `path` back to its first `valid_up_to` bytes, when
/// that is allowed: the last file, with `aof-load-truncated yes`.
fn truncate(state: &ServerState, path: &Path, name: &str, valid_up_to: usize, last: bool) -> Result<(), String> {
    let allowed = last && state.config().get("aof-load-truncated") == "yes";
    if !allowed {
        return Err(format!(
            "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
        ));
    }
    crate::log!(Warning, "!!! Warning: short read while loading the AOF file {name}!!!");
    crate::log!(Warning, "!!! Truncating the AOF {name} at offset {valid_up_to} !!!");
    let file =
        OpenOptions::new().write(true).open(path).map_err(|e| format!("Error truncating the AOF file {name}: {e}"))?;
    file.set_len(valid_up_to as u64)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("Error truncating the AOF file {name}: {e}"))?;
    crate::log!(Warning, "AOF {name} loaded anyway because aof-load-truncated is enabled");
    Ok(())
}
