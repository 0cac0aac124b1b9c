//! What the seeded random differential harnesses share: a command with the
//! way its reply is compared, the seeds to run, running a sequence on one
//! connection, sorting a reply whose order is the server's hash order, and
//! describing the first reply that differs.
//!
//! `KVIK_DIFF_SEED=<seed>` (or `<from>..<to>`) runs other seeds than a
//! harness's usual ones.

use super::diff::{run_sequence, show_args};
use super::elements_of;

/// One command of a random sequence, and how its replies are compared
/// (`M`: the harness's own mask).
pub struct Command<M> {
    /// The command and its arguments.
    pub args: Vec<Vec<u8>>,
    /// How the replies are normalised before they are compared.
    pub mask: M,
}

impl<M> Command<M> {
    /// The command as text, for failure messages.
    pub fn show(&self) -> String {
        show_args(&self.args)
    }
}

/// The seeds to run: `KVIK_DIFF_SEED` when set, else `usual`.
pub fn seeds(usual: impl Iterator<Item = u64>) -> Vec<u64> {
    match std::env::var("KVIK_DIFF_SEED") {
        Ok(s) => match s.split_once("..") {
            Some((from, to)) => (from.parse().expect("a seed")..to.parse().expect("a seed")).collect(),
            None => vec![s.parse().expect("KVIK_DIFF_SEED is a seed or a range of seeds")],
        },
        Err(_) => usual.collect(),
    }
}

/// Send every command pipelined on one connection: the replies one by one,
/// and whether the server closed the connection.
pub fn run<M>(port: u16, commands: &[Command<M>]) -> (Vec<Vec<u8>>, bool) {
    let (replies, answer) = run_sequence(port, commands.iter().map(|c| &c.args[..]));
    (replies, answer.closed)
}

/// `reply` with its elements sorted, `group` at a time (2: field–value or
/// member–score pairs kept together); `maps` reads a RESP3 map's pairs as
/// elements. Any other reply as it is.
pub fn sorted(reply: &[u8], group: usize, maps: bool) -> Vec<u8> {
    let Some((mut out, items)) = elements_of(reply, maps) else { return reply.to_vec() };
    let mut groups: Vec<Vec<u8>> = items.chunks(group.max(1)).map(|c| c.concat()).collect();
    groups.sort();
    out.extend(groups.concat());
    out
}

/// The first command whose normalised replies differ (`normalise(i, reply)`
/// for command `i`), described with the `context` commands before it; also
/// a kvik that answered fewer or more commands.
pub fn first_difference<M>(
    seed: u64,
    commands: &[Command<M>],
    (expected, got): (&[Vec<u8>], &[Vec<u8>]),
    kvik_closed: bool,
    context: usize,
    normalise: impl Fn(usize, &[u8]) -> Vec<u8>,
) -> Option<String> {
    for (i, command) in commands.iter().enumerate() {
        let want = normalise(i, &expected[i]);
        let have = got.get(i).map(|r| normalise(i, r));
        if have.as_deref() != Some(want.as_slice()) {
            let before: Vec<String> = commands[i.saturating_sub(context)..i].iter().map(Command::show).collect();
            return Some(format!(
                "seed {seed}, command {i}: {}\n  after: {}\n  redis {}\n  kvik  {}{}",
                command.show(),
                before.join(" | "),
                want.escape_ascii(),
                have.map(|h| h.escape_ascii().to_string()).unwrap_or_else(|| "<no reply>".into()),
                if kvik_closed { " <closed>" } else { "" },
            ));
        }
    }
    (got.len() != expected.len())
        .then(|| format!("seed {seed}: kvik sent {} replies for {} commands", got.len(), commands.len()))
}

/// Fail, listing every seed that differed, unless none did.
pub fn assert_all_matched(failures: &[String], seeds: &[u64]) {
    assert!(
        failures.is_empty(),
        "{} of {} seeds differ from redis-server (rerun one with KVIK_DIFF_SEED=<seed>):\n{}",
        failures.len(),
        seeds.len(),
        failures.join("\n")
    );
}
