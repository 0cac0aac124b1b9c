#!/usr/bin/env python3
"""Dump a running server's command facts (COMMAND INFO + COMMAND DOCS) as JSON.

Usage:
    python3 spec/commands/dump.py --host 127.0.0.1 --port 6379 \
        --label redis-7.0 --out spec/commands/redis-7.0.json

The script speaks RESP3 itself (stdlib only): it sends `HELLO 3`, then
`COMMAND INFO` and `COMMAND DOCS` with no arguments (every command), and
merges the two replies per command. Output is deterministic: commands and
subcommands are ordered by name, object keys are sorted, and list orders
(flags, ACL categories, tips, arguments, history) are kept exactly as the
server sends them because a later COMMAND reply must reproduce them.

Example of starting a throwaway server for this:
    redis-server --port 46379 --bind 127.0.0.1 --save '' --appendonly no &
"""

import argparse
import json
import socket
import sys


class RespReader:
    """Incremental RESP2/RESP3 reader over a socket file object."""

    def __init__(self, sock):
        self.f = sock.makefile("rb")

    def line(self):
        data = self.f.readline()
        if not data.endswith(b"\r\n"):
            raise EOFError("connection closed mid-reply")
        return data[:-2]

    def read(self):
        head = self.line()
        kind, rest = head[:1], head[1:]
        if kind in (b"+",):
            return rest.decode()
        if kind == b"-":
            raise RuntimeError("server error: " + rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"(":
            return int(rest)
        if kind == b",":
            return float(rest)
        if kind == b"#":
            return rest == b"t"
        if kind == b"_":
            return None
        if kind in (b"$", b"=", b"!"):
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            text = data[:-2].decode()
            if kind == b"!":
                raise RuntimeError("server error: " + text)
            return text
        if kind in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return None
            return [self.read() for _ in range(n)]
        if kind == b"%":
            n = int(rest)
            out = {}
            for _ in range(n):
                k = self.read()
                out[k] = self.read()
            return out
        if kind == b"|":
            n = int(rest)
            for _ in range(n * 2):
                self.read()
            return self.read()
        raise RuntimeError("unknown RESP type byte %r" % kind)


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def call(sock, reader, *args):
    sock.sendall(encode(*args))
    return reader.read()


def norm_key_spec(spec):
    """Key specs come as maps already; keep them, sorted by JSON dump."""
    return spec


def norm_info(entry):
    """Turn one COMMAND INFO array into a named object (recursing into subcommands)."""
    name, arity, flags, first, last, step, acl, tips, key_specs, subs = entry[:10]
    return {
        "name": name,
        "arity": arity,
        "flags": list(flags),
        "first_key": first,
        "last_key": last,
        "step": step,
        "acl_categories": list(acl),
        "tips": list(tips),
        "key_specs": [norm_key_spec(s) for s in key_specs],
        "subcommands": sorted((norm_info(s) for s in subs), key=lambda c: c["name"]),
    }


def norm_args(args):
    out = []
    for a in args or []:
        a = dict(a)
        if "flags" in a:
            a["flags"] = list(a["flags"])
        if "arguments" in a:
            a["arguments"] = norm_args(a["arguments"])
        out.append(a)
    return out


def norm_docs(doc):
    d = dict(doc)
    subs = d.pop("subcommands", None) or {}
    if "arguments" in d:
        d["arguments"] = norm_args(d["arguments"])
    if "doc_flags" in d:
        d["doc_flags"] = list(d["doc_flags"])
    if "history" in d:
        d["history"] = [list(h) for h in d["history"]]
    return d, {k: norm_docs(v) for k, v in subs.items()}


def attach_docs(info, docs):
    """Attach the docs for `info["name"]` (and its subcommands) to the info object."""
    entry = docs.get(info["name"])
    if entry is None:
        info["docs"] = None
        sub_docs = {}
    else:
        info["docs"], sub_docs = entry
    for sub in info["subcommands"]:
        attach_docs(sub, sub_docs)
    return info


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=6379)
    p.add_argument("--label", required=True, help="source label, e.g. redis-7.0")
    p.add_argument("--out", required=True)
    a = p.parse_args()

    sock = socket.create_connection((a.host, a.port))
    reader = RespReader(sock)
    hello = call(sock, reader, "HELLO", "3")
    info = call(sock, reader, "COMMAND", "INFO")
    docs_raw = call(sock, reader, "COMMAND", "DOCS")
    sock.close()

    docs = {k: norm_docs(v) for k, v in docs_raw.items()}
    commands = sorted((norm_info(e) for e in info if e is not None), key=lambda c: c["name"])
    for c in commands:
        attach_docs(c, docs)

    doc = {
        "source": a.label,
        "server": hello.get("server"),
        "version": hello.get("version"),
        "commands": commands,
    }
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print("%s: %d commands" % (a.out, len(commands)), file=sys.stderr)


if __name__ == "__main__":
    main()
