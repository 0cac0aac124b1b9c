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

/// Runs one command read from a file, as the server's own client; the
/// error names a command the server does not know, which stops the load.
/// (The commands live above this module; the server passes their runner
/// in.)
pub type Replay = fn(&ServerState, &CommandArgs, &mut Session) -> Result<(), String>;

/// Replay `dir`/`appenddirname` into the (empty) keyspace; `Ok(None)` when
/// there is no manifest (a first start with `appendonly yes`). The error
/// is the text to log before exiting.
pub fn load(
    state: &ServerState,
    replay: Replay,
    install: crate::persistence::loading::InstallFunctions,
) -> Result<Option<Loaded>, String> {
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
    let mut replayer = Replayer::new(state, replay);
    let mut loaded = Loaded::default();
    let last = files.len().saturating_sub(1);
    for (i, f) in files.iter().enumerate() {
        let path = dir.join(&f.name);
        let bytes = std::fs::read(&path).map_err(|e| format!("Can't read the AOF file {}: {e}", f.name))?;
        if bytes.starts_with(b"REDIS") {
            crate::log!(Notice, "Reading RDB base file on AOF loading...");
            let keys = crate::persistence::loading::load_rdb(state, &path, true, install)?;
            loaded.base_keys = keys.map_or(0, |k| k.keys);
            crate::log!(Notice, "RDB is base AOF");
            continue;
        }
        let stopped = if kvik_persist::aof::manifest::is_respb(&f.name) {
            replayer.respb(&bytes, &f.name)?
        } else {
            replayer.resp(&bytes, &f.name)?
        };
        if let Some(valid_up_to) = replayer.whole_up_to(stopped, &f.name) {
            truncate(state, &path, &f.name, valid_up_to, i == last)?;
            loaded.truncated = true;
        }
        crate::log!(Notice, "DB loaded from incr file {}: {:.3} seconds", f.name, started.elapsed().as_secs_f64());
    }
    loaded.commands = replayer.commands;
    crate::log!(Notice, "DB loaded from append only file: {:.3} seconds", started.elapsed().as_secs_f64());
    Ok(Some(loaded))
}

/// The files' commands run one after the other, as one client of the
/// server's own runs them.
struct Replayer<'a> {
    state: &'a ServerState,
    replay: Replay,
    session: Session,
    /// Commands run.
    commands: u64,
    /// Where the open `MULTI` began in the file being read.
    before_multi: Option<usize>,
}

impl<'a> Replayer<'a> {
    fn new(state: &'a ServerState, replay: Replay) -> Replayer<'a> {
        let mut session = Session::new(0);
        session.authenticated = true;
        Replayer { state, replay, session, commands: 0, before_multi: None }
    }

    /// Run one command, read at `offset` of its file.
    fn run(&mut self, args: &CommandArgs, offset: usize) -> Result<(), String> {
        if args.get(&[], 0).is_some_and(|n| n.eq_ignore_ascii_case(b"multi")) {
            self.before_multi = Some(offset);
        }
        (self.replay)(self.state, args, &mut self.session)?;
        if self.session.multi.is_none() {
            self.before_multi = None;
        }
        self.commands += 1;
        Ok(())
    }

    /// Where the file just read is whole, when not to its end: where it
    /// `stopped` (a command cut short), or before a `MULTI` whose `EXEC`
    /// never came — that transaction ran nothing and goes with the cut.
    /// The next file starts outside any transaction.
    fn whole_up_to(&mut self, stopped: Option<usize>, name: &str) -> Option<usize> {
        let open = self.before_multi.take().filter(|_| self.session.multi.is_some());
        self.session.multi = None;
        if open.is_some() {
            crate::log!(Warning, "Revert incomplete MULTI/EXEC transaction in AOF file {name}");
        }
        open.or(stopped)
    }

    /// Replay a file of RESP commands; where it stopped short, if it did.
    fn resp(&mut self, bytes: &[u8], name: &str) -> Result<Option<usize>, String> {
        let ending = read::<String>(bytes, |cmd| {
            let mut args = CommandArgs::new();
            for a in cmd.args {
                args.push_owned(a);
            }
            self.run(&args, cmd.span.start)
        });
        match ending {
            Ok(Ending::Whole) => Ok(None),
            Ok(Ending::Truncated { valid_up_to }) => Ok(Some(valid_up_to)),
            Err(ReadError::Format(e)) => Err(format!(
                "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest> ({e})"
            )),
            Err(ReadError::Command { error, .. }) => {
                Err(format!("Unknown command '{error}' reading the append only file {name}"))
            }
        }
    }

    /// Replay a file of RESPB frames (`aof-format respb`), each command
    /// frame decoded as a RESPB connection decodes it; where a frame was
    /// cut short at the end, if one was.
    fn respb(&mut self, bytes: &[u8], name: &str) -> Result<Option<usize>, String> {
        use kvik_protocol::respb::{Decoded, Frame, RespbDecoder};
        let mut decoder = RespbDecoder::default();
        let (mut args, mut owned) = (CommandArgs::new(), CommandArgs::new());
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            match decoder.decode(rest, &mut args) {
                Ok(Decoded::NeedMore { .. }) => return Ok(Some(at)),
                Ok(Decoded::Frame { frame, consumed }) => {
                    if let Frame::Command { .. } = frame {
                        owned.clear();
                        for i in 0..args.len() {
                            owned.push_owned(args.get(rest, i).unwrap_or(&[]));
                        }
                        self.run(&owned, at)
                            .map_err(|cmd| format!("Unknown command '{cmd}' reading the append only file {name}"))?;
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
        Ok(None)
    }
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
