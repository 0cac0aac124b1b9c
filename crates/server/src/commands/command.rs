//! `COMMAND` and its subcommands, answered from the command table.

use super::{Ctx, ReplyTarget};

/// Run a COMMAND subcommand; false when `name` is not one of them.
pub fn dispatch<T: ReplyTarget>(name: &str, c: &mut Ctx<'_, T>) -> bool {
    match name {
        "command|count" => {
            let count = i64::try_from(kvik_protocol::commands::COMMANDS.len()).unwrap_or(i64::MAX);
            c.reply(|s| s.integer(count));
        }
        _ => return false,
    }
    true
}
