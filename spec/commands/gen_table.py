#!/usr/bin/env python3
"""Generate crates/protocol/src/commands/table.rs from commands.json.

Usage (from the repository root):
    python3 spec/commands/gen_table.py            # write table.rs and run rustfmt on it
    python3 spec/commands/gen_table.py --check    # exit 1 if table.rs is out of date

Inputs:
    spec/commands/commands.json   merged facts (see merge.py)
    spec/respb/opcodes.csv        RESPB/1 opcode assignments
The generated file records the FNV-1a 64 hash of commands.json and of
opcodes.csv; a Rust test recomputes both so a stale table fails `cargo test`.

Flag, ACL category and key-spec flag names are emitted as bits; the bit order
is the order servers print them in, and this script refuses input whose lists
are not in that order, so rebuilding the lists from bits reproduces the
server's reply exactly.
"""

import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMMANDS_JSON = os.path.join(HERE, "commands.json")
OPCODES_CSV = os.path.join(ROOT, "spec", "respb", "opcodes.csv")
OUT = os.path.join(ROOT, "crates", "protocol", "src", "commands", "table.rs")

# Order = the order servers print them in COMMAND INFO. Must match mod.rs.
COMMAND_FLAGS = [
    "write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
    "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking",
    "fast", "no_auth", "no_mandatory_keys", "no_async_loading", "no_multi",
    "movablekeys", "allow_busy",
]
ACL_CATEGORIES = [
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
    "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
    "blocking", "dangerous", "connection", "transaction", "scripting",
    "json", "bloom", "search",
]
KEY_SPEC_FLAGS = [
    "RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key",
    "incomplete", "variable_flags",
]
DOC_FLAGS = ["deprecated", "syscmd"]
ARG_FLAGS = ["optional", "multiple", "multiple_token"]
ARG_KINDS = {
    "string": "String", "integer": "Integer", "double": "Double", "key": "Key",
    "pattern": "Pattern", "unix-time": "UnixTime", "pure-token": "PureToken",
    "oneof": "Oneof", "block": "Block",
}
SOURCES = {"redis-7.0": "Redis70", "valkey-8.0": "Valkey80", "extra": "Extra"}
NOT_COMMANDS = ("Response", "Control", "Special")


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def rs_str(s):
    return json.dumps(s, ensure_ascii=False)


def rs_opt_str(s):
    return "None" if s is None else "Some(%s)" % rs_str(s)


def bits(names, order, typ, what, prefix=""):
    """Emit `Type::A.union(Type::B)` after checking `names` follow `order`."""
    idx = []
    for n in names:
        key = n[len(prefix):] if prefix and n.startswith(prefix) else n
        if key not in order:
            sys.exit("unknown %s %r" % (what, n))
        idx.append(order.index(key))
    if idx != sorted(idx):
        sys.exit("%s out of server order: %r" % (what, names))
    if not idx:
        return "%s::NONE" % typ
    out = "%s::%s" % (typ, order[idx[0]].upper())
    for i in idx[1:]:
        out += ".union(%s::%s)" % (typ, order[i].upper())
    return out


def load_opcodes():
    ops = {}
    with open(OPCODES_CSV, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["section"].startswith(NOT_COMMANDS):
                continue
            name = row["command"].lower()
            value = int(row["opcode"], 16)
            module = "Module" in row["section"]
            if name in ops:
                sys.exit("opcodes.csv names %s twice" % name)
            ops[name] = ("RespbOpcode::Module(0x%08X)" if module else "RespbOpcode::Core(0x%04X)") % value
    return ops


class S:
    """A Rust struct literal, printed one field per line like rustfmt does."""

    def __init__(self, name, fields):
        self.name = name
        self.fields = fields


class L:
    """A `&[...]` slice literal."""

    def __init__(self, items):
        self.items = items


def render(node, indent=0):
    pad = "    " * (indent + 1)
    if isinstance(node, S):
        body = "".join("%s%s: %s,\n" % (pad, k, render(v, indent + 1)) for k, v in node.fields)
        return "%s {\n%s%s}" % (node.name, body, "    " * indent)
    if isinstance(node, L):
        if not node.items:
            return "&[]"
        if all(isinstance(i, str) for i in node.items):
            flat = "&[%s]" % ", ".join(node.items)
            if len(flat) <= 60:
                return flat
        body = "".join("%s%s,\n" % (pad, render(i, indent + 1)) for i in node.items)
        return "&[\n%s%s]" % (body, "    " * indent)
    return node


def key_spec(ks):
    bs = ks["begin_search"]
    if bs["type"] == "index":
        begin = "BeginSearch::Index(%d)" % bs["spec"]["index"]
    elif bs["type"] == "keyword":
        begin = S("BeginSearch::Keyword", [
            ("keyword", rs_str(bs["spec"]["keyword"])),
            ("start_from", str(bs["spec"]["startfrom"]))])
    else:
        begin = "BeginSearch::Unknown"
    fk = ks["find_keys"]
    if fk["type"] == "range":
        s = fk["spec"]
        find = S("FindKeys::Range", [
            ("last_key", str(s["lastkey"])), ("key_step", str(s["keystep"])),
            ("limit", str(s["limit"]))])
    elif fk["type"] == "keynum":
        s = fk["spec"]
        find = S("FindKeys::Keynum", [
            ("keynum_index", str(s["keynumidx"])), ("first_key", str(s["firstkey"])),
            ("key_step", str(s["keystep"]))])
    else:
        find = "FindKeys::Unknown"
    return S("KeySpec", [
        ("notes", rs_opt_str(ks.get("notes"))),
        ("flags", bits(ks["flags"], KEY_SPEC_FLAGS, "KeySpecFlags", "key spec flag")),
        ("begin_search", begin),
        ("find_keys", find),
    ])


def arg(a):
    kind = ARG_KINDS.get(a["type"])
    if kind is None:
        sys.exit("unknown argument type %r" % a["type"])
    ksi = a.get("key_spec_index")
    return S("ArgSpec", [
        ("name", rs_str(a["name"])),
        ("kind", "ArgKind::" + kind),
        ("token", rs_opt_str(a.get("token"))),
        ("flags", bits(a.get("flags", []), ARG_FLAGS, "ArgFlags", "argument flag")),
        ("display", rs_opt_str(a.get("display_text"))),
        ("key_spec_index", "None" if ksi is None else "Some(%d)" % ksi),
        ("summary", rs_opt_str(a.get("summary"))),
        ("since", rs_opt_str(a.get("since"))),
        ("deprecated_since", rs_opt_str(a.get("deprecated_since"))),
        ("children", L([arg(c) for c in a.get("arguments", [])])),
    ])


def const_name(name):
    """The Rust constant naming a command's id: `client|no-evict` -> `CLIENT_NO_EVICT`."""
    return "".join(ch if ch.isalnum() else "_" for ch in name.upper())


def number_ids(commands):
    """Dense ids in table order, each command followed by its subcommands."""
    ids = {}
    for c in commands:
        ids[c["name"]] = len(ids)
        for s in c["subcommands"]:
            ids[s["name"]] = len(ids)
    consts = [const_name(n) for n in ids]
    if len(set(consts)) != len(consts):
        sys.exit("two command names map to the same id constant")
    if len(ids) > 0xFFFF:
        sys.exit("too many commands for a 16-bit id")
    return ids


def command(c, ops, container, ids):
    docs = c.get("docs") or {}
    name = c["name"]
    op = None if container else ops.get(name)
    history = [
        "(%s, %s)" % (rs_str(v), rs_str(d)) for v, d in docs.get("history", [])
    ]
    return S("CommandSpec", [
        ("name", rs_str(name)),
        ("id", "id::%s" % const_name(name)),
        ("container", rs_opt_str(container)),
        ("arity", str(c["arity"])),
        ("flags", bits(c["flags"], COMMAND_FLAGS, "CommandFlags", "command flag")),
        ("first_key", str(c["first_key"])),
        ("last_key", str(c["last_key"])),
        ("step", str(c["step"])),
        ("movable_keys", "true" if "movablekeys" in c["flags"] else "false"),
        ("acl_categories", bits(c["acl_categories"], ACL_CATEGORIES, "AclCategories",
                                "ACL category", "@")),
        ("tips", L([rs_str(t) for t in c["tips"]])),
        ("key_specs", L([key_spec(k) for k in c["key_specs"]])),
        ("group", rs_str(docs.get("group", ""))),
        ("summary", rs_str(docs.get("summary", ""))),
        ("since", rs_str(docs.get("since", ""))),
        ("complexity", rs_str(docs.get("complexity", ""))),
        ("doc_flags", bits(docs.get("doc_flags", []), DOC_FLAGS, "DocFlags", "doc flag")),
        ("deprecated_since", rs_opt_str(docs.get("deprecated_since"))),
        ("replaced_by", rs_opt_str(docs.get("replaced_by"))),
        ("history", L(history)),
        ("arguments", L([arg(a) for a in docs.get("arguments", [])])),
        ("subcommands", L([command(s, ops, name, ids) for s in c["subcommands"]])),
        ("respb_opcode", "None" if op is None else "Some(%s)" % op),
        ("source", "Source::" + SOURCES[c["source"]]),
    ])


def generate():
    with open(COMMANDS_JSON, "rb") as f:
        raw = f.read()
    with open(OPCODES_CSV, "rb") as f:
        raw_ops = f.read()
    doc = json.loads(raw)
    ops = load_opcodes()
    commands = doc["commands"]
    names = [c["name"] for c in commands]
    if names != sorted(names):
        sys.exit("commands.json is not sorted by name")
    missing = sorted(set(ops) - set(names))
    if missing:
        sys.exit("opcodes.csv names commands missing from commands.json: %s" % missing)

    ids = number_ids(commands)
    with open(os.path.abspath(__file__), "rb") as f:
        raw_gen = f.read()

    core, module = [], []
    for i, name in enumerate(names):
        if name in ops:
            (module if "Module" in ops[name] else core).append((ops[name], i))
    key = lambda t: int(t[0].split("(")[1].rstrip(")"), 16)
    core.sort(key=key)
    module.sort(key=key)

    lines = [
        "// Generated by spec/commands/gen_table.py from spec/commands/commands.json",
        "// and spec/respb/opcodes.csv. Do not edit by hand: edit the inputs and rerun.",
        "",
        "use super::*;",
        "",
        "/// FNV-1a 64 of the commands.json this table was generated from; a test",
        "/// recomputes it so a table that lags its source fails the build's tests.",
        "pub const COMMANDS_JSON_FNV1A64: u64 = 0x%016x;" % fnv1a64(raw),
        "",
        "/// FNV-1a 64 of the opcodes.csv this table was generated from.",
        "pub const OPCODES_CSV_FNV1A64: u64 = 0x%016x;" % fnv1a64(raw_ops),
        "",
        "/// FNV-1a 64 of the gen_table.py that wrote this table.",
        "pub const GEN_TABLE_PY_FNV1A64: u64 = 0x%016x;" % fnv1a64(raw_gen),
        "",
        "/// Number of commands and subcommands; ids run from 0 to this, exclusive.",
        "pub const COMMAND_COUNT: usize = %d;" % len(ids),
        "",
        "/// The id of every command and subcommand, named after it",
        "/// (`CLIENT_NO_EVICT` for `client|no-evict`), for matching on ids.",
        "pub mod id {",
        "    use super::CommandId;",
        "",
    ] + [
        "    /// `%s`.\n    pub const %s: CommandId = CommandId(%d);" % (n, const_name(n), i)
        for n, i in ids.items()
    ] + [
        "}",
        "",
        "/// Every command, sorted by name so lookups can binary-search.",
        "pub static COMMANDS: &[CommandSpec] = %s;" % render(
            L([command(c, ops, None, ids) for c in commands])),
        "",
        "/// Core RESPB opcodes with the index of their command in `COMMANDS`, sorted by opcode.",
        "pub(super) static CORE_OPCODES: &[(u16, u16)] = %s;" % render(
            L(["(0x%04X, %d)" % (key(t), t[1]) for t in core])),
        "",
        "/// Module RESPB opcodes with the index of their command in `COMMANDS`, sorted by opcode.",
        "pub(super) static MODULE_OPCODES: &[(u32, u16)] = %s;" % render(
            L(["(0x%08X, %d)" % (key(t), t[1]) for t in module])),
        "",
    ]
    src = "\n".join(lines)
    try:
        out = subprocess.run(
            ["rustfmt", "--edition", "2021", "--emit", "stdout"],
            input=src.encode(), capture_output=True, check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("rustfmt failed: %s" % e)
    return out


def main():
    out = generate()
    if "--check" in sys.argv[1:]:
        with open(OUT, "rb") as f:
            if f.read() != out:
                sys.exit("%s is out of date; rerun spec/commands/gen_table.py" % OUT)
        return
    with open(OUT, "wb") as f:
        f.write(out)
    print("wrote %s" % OUT, file=sys.stderr)


if __name__ == "__main__":
    main()
