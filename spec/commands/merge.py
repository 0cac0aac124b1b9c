#!/usr/bin/env python3
"""Merge the per-server command dumps and the hand-written overlay into commands.json.

Usage (from the repository root):
    python3 spec/commands/merge.py

Inputs, all in spec/commands/:
    redis-7.0.json   COMMAND INFO + DOCS from redis-server 7.0 (see dump.py)
    valkey-8.0.json  the same from valkey-server 8.0
    extra.json       hand-written facts for commands neither server has
Output:
    commands.json    the single source the Rust command table is generated from

Precedence: Redis 7.0 facts win; Valkey 8.0 adds the commands and subcommands
Redis 7.0 lacks; extra.json adds the rest. Every entry (and subcommand) gets a
"source" field naming where its facts came from. A name in extra.json that a
server already reports is an error, so the overlay never silently shadows
measured facts. Names with "|" in extra.json are subcommands of the container
before the "|".

The merge fails if a command named in spec/respb/opcodes.csv or
spec/respb/valkey_commands.csv is missing from the result: add it to extra.json.
"""

import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESPB = os.path.join(os.path.dirname(HERE), "respb")


def load(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return json.load(f)


def tag(cmd, source):
    cmd = dict(cmd)
    cmd["source"] = source
    cmd["subcommands"] = [tag(s, source) for s in cmd.get("subcommands", [])]
    return cmd


def check_coverage(table):
    """Every command the fact tables name must be in the merged table."""
    wanted = set()
    with open(os.path.join(RESPB, "opcodes.csv"), newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if not row["section"].startswith(("Response", "Control", "Special")):
                wanted.add(row["command"].lower())
    with open(os.path.join(RESPB, "valkey_commands.csv"), newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            wanted.add(row["command"].lower().replace(" ", "|"))
    have = set(table)
    for c in table.values():
        have.update(s["name"] for s in c["subcommands"])
    missing = sorted(wanted - have)
    if missing:
        sys.exit("missing from the merged table (add to extra.json): %s" % missing)


def main():
    redis = load("redis-7.0.json")
    valkey = load("valkey-8.0.json")
    extra = load("extra.json")

    table = {}
    for c in redis["commands"]:
        table[c["name"]] = tag(c, redis["source"])

    for c in valkey["commands"]:
        have = table.get(c["name"])
        if have is None:
            table[c["name"]] = tag(c, valkey["source"])
            continue
        names = {s["name"] for s in have["subcommands"]}
        for s in c["subcommands"]:
            if s["name"] not in names:
                have["subcommands"].append(tag(s, valkey["source"]))

    for c in extra["commands"]:
        name = c["name"]
        if "|" in name:
            container = table.get(name.split("|", 1)[0])
            if container is None:
                sys.exit("extra.json: no container for subcommand %s" % name)
            if any(s["name"] == name for s in container["subcommands"]):
                sys.exit("extra.json: %s is already reported by a server" % name)
            container["subcommands"].append(tag(c, extra["source"]))
        else:
            if name in table:
                sys.exit("extra.json: %s is already reported by a server" % name)
            table[name] = tag(c, extra["source"])

    check_coverage(table)
    commands = sorted(table.values(), key=lambda c: c["name"])
    for c in commands:
        c["subcommands"].sort(key=lambda s: s["name"])

    doc = {
        "sources": {
            redis["source"]: "%s %s" % (redis["server"], redis["version"]),
            valkey["source"]: "%s %s" % (valkey["server"], valkey["version"]),
            extra["source"]: "spec/commands/extra.json",
        },
        "commands": commands,
    }
    out = os.path.join(HERE, "commands.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    subs = sum(len(c["subcommands"]) for c in commands)
    print("%s: %d commands, %d subcommands" % (out, len(commands), subs), file=sys.stderr)


if __name__ == "__main__":
    main()
