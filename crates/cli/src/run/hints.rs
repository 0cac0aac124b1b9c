//! Argument hints and `help <command>` text, built from the command table's
//! documented argument trees (the same facts `COMMAND DOCS` serves).
//!
//! A usage line is written the way Redis's documentation writes it:
//! `key value [NX|XX] [GET] [EX seconds|PX milliseconds|...]`: optional
//! arguments in brackets, alternatives joined by `|`, repeatable ones
//! followed by `[name ...]`.

use kvik_protocol::commands::{self, ArgFlags, ArgKind, ArgSpec, CommandSpec};

/// The usage text of one argument.
fn usage_of(arg: &ArgSpec) -> String {
    let value = match arg.kind {
        ArgKind::PureToken => String::new(),
        ArgKind::Oneof => arg.children.iter().map(usage_of).collect::<Vec<_>>().join("|"),
        ArgKind::Block => arg.children.iter().map(usage_of).collect::<Vec<_>>().join(" "),
        _ => arg.display.unwrap_or(arg.name).to_string(),
    };
    let one = match (arg.token, value.is_empty()) {
        (Some(t), true) => t.to_string(),
        (Some(t), false) => format!("{t} {value}"),
        (None, _) => value.clone(),
    };
    let text = if arg.flags.contains(ArgFlags::MULTIPLE_TOKEN) {
        format!("{one} [{one} ...]")
    } else if arg.flags.contains(ArgFlags::MULTIPLE) {
        format!("{one} [{value} ...]")
    } else {
        one
    };
    if arg.flags.contains(ArgFlags::OPTIONAL) {
        format!("[{text}]")
    } else {
        text
    }
}

/// The arguments of a command as one usage line (empty for none).
pub fn usage(spec: &CommandSpec) -> String {
    spec.arguments.iter().map(usage_of).collect::<Vec<_>>().join(" ")
}

/// The command or subcommand the typed words name.
fn spec_for(words: &[&str]) -> Option<(&'static CommandSpec, usize)> {
    let top = commands::lookup(words.first()?.as_bytes())?;
    if top.subcommands.is_empty() {
        return Some((top, 1));
    }
    match words.get(1).and_then(|w| commands::lookup_subcommand(top, w.as_bytes())) {
        Some(sub) => Some((sub, 2)),
        None => Some((top, 1)),
    }
}

/// The grey text shown after what has been typed: the arguments still to
/// come, one word dropped per argument already typed. `None` when there is
/// nothing to show.
pub fn hint(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (spec, used) = spec_for(&words)?;
    let all = if spec.subcommands.is_empty() {
        usage(spec)
    } else {
        spec.subcommands.iter().map(|s| s.short_name().to_ascii_uppercase()).collect::<Vec<_>>().join("|")
    };
    if !line.ends_with(char::is_whitespace) {
        // Hint after a finished command name only, not inside an argument.
        return (words.len() == used && !all.is_empty()).then(|| format!(" {all}"));
    }
    let mut rest = all.as_str();
    for _ in used..words.len() {
        rest = rest.split_once(' ')?.1;
    }
    (!rest.is_empty()).then(|| rest.to_string())
}

/// `help <command>`: usage, summary, version and group.
pub fn help(words: &[&str]) -> String {
    let Some((spec, _)) = spec_for(words) else {
        return match words.first() {
            Some(w) => format!("\n  No help for '{w}'.\n\n"),
            None => format!("kvik-cli {}\nType: \"help <command>\" for help on <command>\n", env!("CARGO_PKG_VERSION")),
        };
    };
    let name = spec.name.replace('|', " ").to_ascii_uppercase();
    format!(
        "\n  {name} {}\n  summary: {}\n  since: {}\n  group: {}\n\n",
        usage(spec),
        spec.summary,
        spec.since,
        spec.group
    )
}

/// Command names starting with `prefix` (any case), for tab completion.
pub fn complete(prefix: &str) -> Vec<String> {
    let lower = prefix.to_ascii_lowercase();
    let upper = prefix.bytes().next().is_some_and(|b| b.is_ascii_uppercase());
    commands::COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(&lower))
        .map(|c| if upper { c.name.to_ascii_uppercase() } else { c.name.to_string() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lines_follow_the_documentation_style() {
        let set = commands::lookup(b"set").unwrap();
        let u = usage(set);
        assert!(u.starts_with("key value [NX|XX] [GET] [EX seconds|PX milliseconds|"), "{u}");
        assert_eq!(usage(commands::lookup(b"del").unwrap()), "key [key ...]");
        assert_eq!(usage(commands::lookup(b"ping").unwrap()), "[message]");
        assert_eq!(usage(commands::lookup(b"mset").unwrap()), "key value [key value ...]");
    }

    #[test]
    fn hints_drop_what_is_typed() {
        assert_eq!(hint("get").as_deref(), Some(" key"));
        assert_eq!(hint("get ").as_deref(), Some("key"));
        assert_eq!(hint("get k "), None);
        assert_eq!(hint("get k"), None);
        assert_eq!(hint("SET k ").as_deref().map(|h| h.starts_with("value [NX|XX]")), Some(true));
        assert_eq!(hint("nosuchcommand "), None);
        assert_eq!(hint(""), None);
        assert!(hint("client ").unwrap().contains("LIST"));
        assert_eq!(hint("client kill ").as_deref().map(|h| h.is_empty()), Some(false));
    }

    #[test]
    fn help_names_summary_and_group() {
        let h = help(&["get"]);
        assert!(h.contains("  GET key\n  summary: "), "{h}");
        assert!(h.contains("  group: string\n"), "{h}");
        assert!(help(&["client", "list"]).contains("CLIENT LIST"));
        assert!(help(&["nope"]).contains("No help for 'nope'"));
    }

    #[test]
    fn completion_keeps_the_case_typed() {
        assert!(complete("hge").contains(&"hget".to_string()));
        assert!(complete("HGE").contains(&"HGETALL".to_string()));
    }
}
