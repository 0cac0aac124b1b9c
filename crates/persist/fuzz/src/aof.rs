//! The append-only file's readers: any input is a list of commands (whole
//! or cut short) or refused as damaged, and never a panic; the commands
//! read, written again, read back the same. A manifest is refused or parses
//! to files that render to a manifest parsing to the same files.

use kvik_persist::aof::commands::{self, Ending, ReadError};
use kvik_persist::aof::manifest::Manifest;

/// The commands of `data` and how it ended, or `None` when it is damaged.
fn commands_of(data: &[u8]) -> Option<(Vec<Vec<Vec<u8>>>, Ending)> {
    let mut got = Vec::new();
    let ending = commands::read(data, |c| {
        assert!(c.span.end <= data.len() && c.span.start < c.span.end, "a command lies inside the input");
        got.push(c.args.iter().map(|a| a.to_vec()).collect());
        Ok::<(), ()>(())
    });
    match ending {
        Ok(ending) => Some((got, ending)),
        Err(ReadError::Format(e)) => {
            assert!(e.offset <= data.len(), "an error lies inside the input");
            None
        }
        Err(ReadError::Command { .. }) => unreachable!("the callback accepts every command"),
    }
}

/// Panics when a property of the command reader is broken for `data`.
pub fn check_commands(data: &[u8]) {
    let Some((got, ending)) = commands_of(data) else { return };
    if let Ending::Truncated { valid_up_to } = ending {
        assert!(valid_up_to < data.len());
        let (whole, _) = commands_of(&data[..valid_up_to]).expect("the whole part reads");
        assert_eq!(whole, got, "the whole part holds every command read");
    }
    let mut again = Vec::new();
    for args in &got {
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        commands::put(&mut again, &args);
    }
    let (back, ending) = commands_of(&again).expect("what kvik writes reads");
    assert_eq!((back, ending), (got, Ending::Whole), "written again, read the same");
}

/// Panics when a property of the manifest reader is broken for `data`.
pub fn check_manifest(data: &[u8]) {
    let Ok(manifest) = Manifest::parse(data) else { return };
    let text = manifest.render();
    if manifest.base.is_none() && manifest.history.is_empty() && manifest.incr.is_empty() {
        // Only comments: nothing to render, and an empty manifest is refused.
        assert!(text.is_empty());
        return;
    }
    // A name whose escapes make its line longer than a manifest's lines may
    // be renders to a manifest no server reads back (Redis's too); the
    // server keeps `appendfilename` short enough that this never happens.
    if text.split(|&b| b == b'\n').any(|line| line.len() + 1 > kvik_persist::aof::manifest::MAX_LINE) {
        return;
    }
    let back = Manifest::parse(&text).expect("a rendered manifest parses");
    assert_eq!(back, manifest, "rendered, parsed the same");
}
