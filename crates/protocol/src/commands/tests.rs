use super::*;
use serde_json::Value as Json;
use std::collections::HashMap;

fn spec_path(rel: &str) -> String {
    format!("{}/../../spec/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn read_spec(rel: &str) -> Vec<u8> {
    std::fs::read(spec_path(rel)).unwrap_or_else(|e| panic!("read spec/{rel}: {e}"))
}

/// Splits one CSV line into fields, honouring double quotes (the fact tables
/// quote fields that contain commas).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn csv_rows(rel: &str) -> Vec<Vec<String>> {
    let text = String::from_utf8(read_spec(rel)).unwrap();
    text.lines().skip(1).filter(|l| !l.is_empty()).map(csv_fields).collect()
}

fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn get(name: &str) -> &'static CommandSpec {
    lookup(name.as_bytes()).unwrap_or_else(|| panic!("{name} missing"))
}

#[test]
fn table_is_up_to_date_with_its_inputs() {
    assert_eq!(
        fnv1a64(&read_spec("commands/commands.json")),
        COMMANDS_JSON_FNV1A64,
        "table.rs is stale: rerun python3 spec/commands/gen_table.py"
    );
    assert_eq!(
        fnv1a64(&read_spec("respb/opcodes.csv")),
        OPCODES_CSV_FNV1A64,
        "table.rs is stale: rerun python3 spec/commands/gen_table.py"
    );
    assert_eq!(
        fnv1a64(&read_spec("commands/gen_table.py")),
        GEN_TABLE_PY_FNV1A64,
        "table.rs is stale: rerun python3 spec/commands/gen_table.py"
    );
}

#[test]
fn every_name_is_found_in_any_case() {
    for spec in COMMANDS {
        assert_eq!(lookup(spec.name.as_bytes()).map(|s| s.name), Some(spec.name));
        let upper = spec.name.to_ascii_uppercase();
        assert_eq!(lookup(upper.as_bytes()).map(|s| s.name), Some(spec.name));
        let mut longer = spec.name.to_string();
        longer.push('x');
        assert!(lookup(longer.as_bytes()).is_none_or(|s| s.name == longer), "{longer}");
        assert!(lookup(&spec.name.as_bytes()[1..]).is_none_or(|s| s.name.len() == spec.name.len() - 1));
    }
    assert!(lookup(b"").is_none());
    assert!(lookup(&[b'g'; 100_000]).is_none());
    // Only letters may differ in case; other bytes must match exactly.
    assert_eq!(lookup(b"GeT").map(|s| s.name), Some("get"));
    assert_eq!(lookup(b"GEORADIUS_RO").map(|s| s.name), Some("georadius_ro"));
    assert_eq!(lookup(b"RESTORE-ASKING").map(|s| s.name), Some("restore-asking"));
    assert!(lookup(b"restore\rasking").is_none());
    assert!(lookup(b"georadius\x7fro").is_none());
    assert!(lookup(b"g\x05t").is_none());
}

#[test]
fn ids_are_dense_and_find_their_command() {
    let mut next = 0;
    for spec in COMMANDS {
        for s in std::iter::once(spec).chain(spec.subcommands) {
            assert_eq!(s.id.index(), next, "{}", s.name);
            assert_eq!(by_id(s.id).map(|f| f.name), Some(s.name));
            next += 1;
        }
    }
    assert_eq!(next, COMMAND_COUNT);
    assert!(by_id(CommandId(COMMAND_COUNT as u16)).is_none());
    assert_eq!(id::CLIENT_NO_EVICT, get("client").subcommands.iter().find(|s| s.name == "client|no-evict").unwrap().id);
}

#[test]
fn table_is_sorted_and_lowercase() {
    for w in COMMANDS.windows(2) {
        assert!(w[0].name < w[1].name, "{} !< {}", w[0].name, w[1].name);
    }
    for c in COMMANDS {
        assert_eq!(c.name, c.name.to_ascii_lowercase());
        assert!(c.container.is_none());
        for w in c.subcommands.windows(2) {
            assert!(w[0].short_name() < w[1].short_name());
        }
        for s in c.subcommands {
            assert_eq!(s.container, Some(c.name));
            assert_eq!(s.name, format!("{}|{}", c.name, s.short_name()));
            assert!(s.respb_opcode.is_none());
        }
    }
}

#[test]
fn lookup_ignores_ascii_case() {
    for name in ["get", "GET", "Get", "gEt"] {
        assert_eq!(get(name).name, "get");
    }
    assert_eq!(get("JSON.SET").name, "json.set");
    assert_eq!(get("restore-asking").name, "restore-asking");
    assert_eq!(get("GEORADIUS_RO").name, "georadius_ro");
    for name in ["", "ge", "gett", "nosuchcommand", "get ", "client|list", "\u{e9}"] {
        assert!(lookup(name.as_bytes()).is_none(), "{name:?} found");
    }
    for c in COMMANDS {
        assert!(std::ptr::eq(get(c.name), c));
        assert!(std::ptr::eq(get(&c.name.to_ascii_uppercase()), c));
    }
}

#[test]
fn lookup_subcommands() {
    let client = get("client");
    assert_eq!(lookup_subcommand(client, b"LIST").map(|c| c.name), Some("client|list"));
    assert_eq!(lookup_subcommand(client, b"list").map(|c| c.name), Some("client|list"));
    let config = get("CONFIG");
    let config_get = lookup_subcommand(config, b"get").map(|c| (c.name, c.arity));
    assert_eq!(config_get, Some(("config|get", -3)));
    assert!(lookup_subcommand(config, b"nope").is_none());
    assert!(lookup_subcommand(get("get"), b"x").is_none());
    for c in COMMANDS {
        for s in c.subcommands {
            let up = s.short_name().to_ascii_uppercase();
            assert!(std::ptr::eq(lookup_subcommand(c, up.as_bytes()).unwrap(), s));
        }
    }
}

#[test]
fn known_facts() {
    let g = get("get");
    assert_eq!((g.arity, g.first_key, g.last_key, g.step), (2, 1, 1, 1));
    assert!(g.flags.contains(CommandFlags::READONLY.union(CommandFlags::FAST)));
    assert!(!g.flags.contains(CommandFlags::WRITE));
    assert_eq!(g.flags.names().collect::<Vec<_>>(), ["readonly", "fast"]);
    assert_eq!(g.acl_categories.names().collect::<Vec<_>>(), ["@read", "@string", "@fast"]);
    assert_eq!(g.respb_opcode, Some(RespbOpcode::Core(0x0000)));
    assert_eq!(g.source, Source::Redis70);
    assert!(g.arity_ok(2) && !g.arity_ok(1) && !g.arity_ok(3));

    let s = get("set");
    assert_eq!(s.arity, -3);
    assert!(s.flags.contains(CommandFlags::WRITE.union(CommandFlags::DENYOOM)));
    assert!(s.arity_ok(3) && s.arity_ok(9) && !s.arity_ok(2));
    assert_eq!(s.history.len(), 4);
    assert_eq!(s.arguments[0].kind, ArgKind::Key);
    assert_eq!(s.arguments[0].key_spec_index, Some(0));

    let m = get("mset");
    assert_eq!((m.first_key, m.last_key, m.step), (1, -1, 2));

    let e = get("eval");
    assert!(e.movable_keys && e.flags.contains(CommandFlags::MOVABLEKEYS));
    assert!(!g.movable_keys);

    let z = get("ZUNIONSTORE");
    assert_eq!((z.arity, z.first_key, z.last_key, z.step), (-4, 1, 1, 1));
    assert!(z.movable_keys);
    assert_eq!(z.key_specs.len(), 2);
    assert_eq!(z.key_specs[0].begin_search, BeginSearch::Index(1));
    assert_eq!(z.key_specs[1].begin_search, BeginSearch::Index(2));
    assert_eq!(z.key_specs[1].find_keys, FindKeys::Keynum { keynum_index: 0, first_key: 1, key_step: 1 });

    assert_eq!(get("waitaof").source, Source::Valkey80);
    let client = get("client");
    let capa = lookup_subcommand(client, b"capa").map(|c| c.source);
    assert_eq!(capa, Some(Source::Valkey80));
    let bf = get("bf.add");
    assert_eq!(bf.source, Source::Extra);
    assert_eq!(bf.group, "module");
    assert!(bf.flags.contains(CommandFlags::MODULE));
    assert_eq!(bf.respb_opcode, Some(RespbOpcode::Module(0x0001_0000)));
}

#[test]
fn respb_opcodes_match_the_fact_table() {
    let mut seen: HashMap<RespbOpcode, String> = HashMap::new();
    let mut commands = 0;
    for row in csv_rows("respb/opcodes.csv") {
        let (section, code, name) = (&row[0], &row[1], &row[2]);
        let value = u32::from_str_radix(code.trim_start_matches("0x"), 16).unwrap();
        let is_command = !["Response", "Control", "Special"].iter().any(|p| section.starts_with(p));
        if !is_command {
            assert!(lookup(name.as_bytes()).is_none(), "{name} is not a command");
            continue;
        }
        commands += 1;
        let op = if section.contains("Module") {
            RespbOpcode::Module(value)
        } else {
            RespbOpcode::Core(u16::try_from(value).unwrap())
        };
        let spec = get(name);
        assert_eq!(spec.respb_opcode, Some(op), "{name}");
        assert!(std::ptr::eq(by_respb_opcode(op).unwrap(), spec), "{name}");
        if let Some(other) = seen.insert(op, name.clone()) {
            panic!("{name} and {other} share opcode {op:?}");
        }
    }
    let with_opcode = COMMANDS.iter().filter(|c| c.respb_opcode.is_some()).count();
    assert_eq!(with_opcode, commands);
    assert!(by_respb_opcode(RespbOpcode::Core(0x7FFF)).is_none());
    assert!(by_respb_opcode(RespbOpcode::Module(0x00FF_0000)).is_none());
}

#[test]
fn every_valkey_command_is_present() {
    for row in csv_rows("respb/valkey_commands.csv") {
        let mut words = row[0].split(' ');
        let top = words.next().unwrap();
        let spec = get(top);
        if let Some(sub) = words.next() {
            assert!(lookup_subcommand(spec, sub.as_bytes()).is_some(), "{top} {sub} missing");
        }
    }
}

fn strs(v: &Json) -> Vec<&str> {
    v.as_array().map(|a| a.iter().filter_map(Json::as_str).collect()).unwrap_or_default()
}

fn opt_str(v: &Json, key: &str) -> Option<String> {
    v.get(key).and_then(Json::as_str).map(str::to_owned)
}

fn check_args(ctx: &str, table: &[ArgSpec], json: &Json) {
    let empty = Vec::new();
    let json = json.as_array().unwrap_or(&empty);
    assert_eq!(table.len(), json.len(), "{ctx}: argument count");
    for (a, j) in table.iter().zip(json) {
        let ctx = format!("{ctx}/{}", a.name);
        assert_eq!(Some(a.name), j["name"].as_str(), "{ctx}");
        assert_eq!(Some(a.kind.wire_name()), j["type"].as_str(), "{ctx}");
        assert_eq!(a.token.map(str::to_owned), opt_str(j, "token"), "{ctx}");
        assert_eq!(a.display.map(str::to_owned), opt_str(j, "display_text"), "{ctx}");
        assert_eq!(a.summary.map(str::to_owned), opt_str(j, "summary"), "{ctx}");
        assert_eq!(a.since.map(str::to_owned), opt_str(j, "since"), "{ctx}");
        let dep = opt_str(j, "deprecated_since");
        assert_eq!(a.deprecated_since.map(str::to_owned), dep, "{ctx}");
        let ksi = j.get("key_spec_index").and_then(Json::as_u64);
        assert_eq!(a.key_spec_index.map(u64::from), ksi, "{ctx}");
        let flags = j.get("flags").map(strs).unwrap_or_default();
        assert_eq!(a.flags.names().collect::<Vec<_>>(), flags, "{ctx}");
        check_args(&ctx, a.children, &j["arguments"]);
    }
}

fn check_key_spec(ctx: &str, k: &KeySpec, j: &Json) {
    assert_eq!(k.notes.map(str::to_owned), opt_str(j, "notes"), "{ctx}");
    assert_eq!(k.flags.names().collect::<Vec<_>>(), strs(&j["flags"]), "{ctx}");
    let bs = &j["begin_search"];
    let spec = &bs["spec"];
    match (k.begin_search, bs["type"].as_str()) {
        (BeginSearch::Index(i), Some("index")) => {
            assert_eq!(spec["index"].as_i64(), Some(i64::from(i)), "{ctx}");
        }
        (BeginSearch::Keyword { keyword, start_from }, Some("keyword")) => {
            assert_eq!(spec["keyword"].as_str(), Some(keyword), "{ctx}");
            assert_eq!(spec["startfrom"].as_i64(), Some(i64::from(start_from)), "{ctx}");
        }
        (BeginSearch::Unknown, Some("unknown")) => {}
        (have, want) => panic!("{ctx}: begin_search {have:?} vs {want:?}"),
    }
    let fk = &j["find_keys"];
    let spec = &fk["spec"];
    let int = |key: &str| spec[key].as_i64().unwrap() as i32;
    let find = match fk["type"].as_str() {
        Some("range") => FindKeys::Range { last_key: int("lastkey"), key_step: int("keystep"), limit: int("limit") },
        Some("keynum") => {
            FindKeys::Keynum { keynum_index: int("keynumidx"), first_key: int("firstkey"), key_step: int("keystep") }
        }
        _ => FindKeys::Unknown,
    };
    assert_eq!(k.find_keys, find, "{ctx}");
}

fn check_command(c: &CommandSpec, j: &Json) {
    let ctx = c.name;
    assert_eq!(Some(c.name), j["name"].as_str());
    assert_eq!(Some(c.source.label()), j["source"].as_str(), "{ctx}");
    assert_eq!(Some(i64::from(c.arity)), j["arity"].as_i64(), "{ctx}");
    assert_eq!(c.flags.names().collect::<Vec<_>>(), strs(&j["flags"]), "{ctx}");
    let keys = (j["first_key"].as_i64(), j["last_key"].as_i64(), j["step"].as_i64());
    let want = (Some(i64::from(c.first_key)), Some(i64::from(c.last_key)), Some(i64::from(c.step)));
    assert_eq!(keys, want, "{ctx}");
    assert_eq!(c.movable_keys, c.flags.contains(CommandFlags::MOVABLEKEYS));
    let acl = c.acl_categories.names().collect::<Vec<_>>();
    assert_eq!(acl, strs(&j["acl_categories"]), "{ctx}");
    assert_eq!(c.tips.to_vec(), strs(&j["tips"]), "{ctx}");
    let specs = j["key_specs"].as_array().unwrap();
    assert_eq!(c.key_specs.len(), specs.len(), "{ctx}");
    for (k, js) in c.key_specs.iter().zip(specs) {
        check_key_spec(ctx, k, js);
    }
    let d = &j["docs"];
    // An empty string in the table stands for a field the server leaves out.
    let text = |key: &str| d.get(key).and_then(Json::as_str).unwrap_or("");
    assert_eq!(c.group, text("group"), "{ctx}");
    assert_eq!(c.summary, text("summary"), "{ctx}");
    assert_eq!(c.since, text("since"), "{ctx}");
    assert_eq!(c.complexity, text("complexity"), "{ctx}");
    let doc_flags = d.get("doc_flags").map(strs).unwrap_or_default();
    assert_eq!(c.doc_flags.names().collect::<Vec<_>>(), doc_flags, "{ctx}");
    let dep = opt_str(d, "deprecated_since");
    assert_eq!(c.deprecated_since.map(str::to_owned), dep, "{ctx}");
    let rep = opt_str(d, "replaced_by");
    assert_eq!(c.replaced_by.map(str::to_owned), rep, "{ctx}");
    let history: Vec<(&str, &str)> = d
        .get("history")
        .and_then(Json::as_array)
        .map(|h| h.iter().map(|p| (p[0].as_str().unwrap(), p[1].as_str().unwrap())).collect())
        .unwrap_or_default();
    assert_eq!(c.history.to_vec(), history, "{ctx}");
    check_args(ctx, c.arguments, &d["arguments"]);
    let subs = j["subcommands"].as_array().unwrap();
    assert_eq!(c.subcommands.len(), subs.len(), "{ctx}");
    for (s, js) in c.subcommands.iter().zip(subs) {
        check_command(s, js);
    }
}

/// Field-by-field comparison with commands.json: catches generator bugs that the
/// staleness hash cannot.
#[test]
fn table_matches_commands_json() {
    let doc: Json = serde_json::from_slice(&read_spec("commands/commands.json")).unwrap();
    let list = doc["commands"].as_array().unwrap();
    assert_eq!(COMMANDS.len(), list.len());
    for (c, j) in COMMANDS.iter().zip(list) {
        check_command(c, j);
    }
}

#[test]
fn bitset_names_round_trip() {
    for &(flag, name) in CommandFlags::ALL {
        assert_eq!(CommandFlags::from_name(name), Some(flag));
    }
    for &(cat, name) in AclCategories::ALL {
        assert_eq!(AclCategories::from_name(name), Some(cat));
    }
    assert!(CommandFlags::from_name("nope").is_none());
    assert!(CommandFlags::NONE.is_empty());
    assert_eq!(format!("{:?}", get("get").flags), r#"{"readonly", "fast"}"#);
}

fn check_arg_shape(c: &CommandSpec, a: &ArgSpec) {
    let ctx = format!("{}/{}", c.name, a.name);
    match a.kind {
        ArgKind::Oneof | ArgKind::Block => assert!(!a.children.is_empty(), "{ctx}"),
        ArgKind::PureToken => {
            assert!(a.token.is_some(), "{ctx}");
            assert!(a.children.is_empty(), "{ctx}");
        }
        _ => assert!(a.children.is_empty(), "{ctx}"),
    }
    if let Some(i) = a.key_spec_index {
        // Keys, and patterns that name keys (SORT ... BY pattern).
        assert!(matches!(a.kind, ArgKind::Key | ArgKind::Pattern), "{ctx}");
        assert!(usize::from(i) < c.key_specs.len(), "{ctx}");
    }
    for child in a.children {
        check_arg_shape(c, child);
    }
}

/// The argument trees drive generated test commands, so they must be well formed:
/// containers have children, tokens exist where needed, key indexes resolve.
#[test]
fn argument_trees_are_well_formed() {
    fn walk(c: &CommandSpec) {
        for a in c.arguments {
            check_arg_shape(c, a);
        }
        for s in c.subcommands {
            walk(s);
        }
    }
    for c in COMMANDS {
        walk(c);
    }
}

/// Repeated and alternating lookups agree with the index, whether or not
/// the name is the one found last: same length, other case, one byte off,
/// unknown, longer than a word.
#[test]
fn the_last_name_found_answers_only_for_its_own_bytes() {
    let names: [&[u8]; 14] = [
        b"get",
        b"get",
        b"set",
        b"GET",
        b"get",
        b"gxt",
        b"ping",
        b"PING",
        b"pinG",
        b"pingx",
        b"lrange",
        b"lrangf",
        b"zrangebyscore",
        b"",
    ];
    for _ in 0..3 {
        for name in names {
            let expected = NameIndex::get().find(name).and_then(|i| COMMANDS.get(usize::from(i)));
            assert_eq!(lookup(name).map(|s| s.name), expected.map(|s| s.name), "{}", String::from_utf8_lossy(name));
            assert_eq!(
                lookup(name).map(|s| s.name),
                expected.map(|s| s.name),
                "{} again",
                String::from_utf8_lossy(name)
            );
        }
    }
    assert_eq!(lookup(b"get").map(|s| s.name), Some("get"));
    assert!(lookup(b"gxt").is_none());
    assert_eq!(lookup(b"sEt").map(|s| s.name), Some("set"));
}

proptest::proptest! {
    /// Names of up to 8 bytes pack to distinct words (for equal lengths).
    #[test]
    fn packed_names_tell_bytes_apart(a in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..=8),
                                     b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..=8)) {
        let (pa, pb) = (LastName::pack(&a), LastName::pack(&b));
        proptest::prop_assert!(pa.is_some() && pb.is_some());
        if a.len() == b.len() {
            proptest::prop_assert_eq!(pa == pb, a == b);
        }
    }

    /// Flipping any one byte of a command name changes its packed word.
    #[test]
    fn one_byte_changes_the_word(pick in 0usize..1000, pos in 0usize..8, flip in 1u8..=255) {
        let short: Vec<&[u8]> = COMMANDS.iter().map(|c| c.name.as_bytes()).filter(|n| n.len() <= 8 && !n.is_empty()).collect();
        let name = short[pick % short.len()];
        let mut other = name.to_vec();
        let at = pos % other.len();
        other[at] ^= flip;
        proptest::prop_assert_ne!(LastName::pack(name), LastName::pack(&other));
    }
}

#[test]
fn names_longer_than_a_word_are_not_packed() {
    assert_eq!(LastName::pack(b"zrangebyscore"), None);
    assert_eq!(LastName::pack(b"123456789"), None);
    assert!(LastName::pack(b"12345678").is_some());
}
