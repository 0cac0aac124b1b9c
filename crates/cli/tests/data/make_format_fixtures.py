#!/usr/bin/env python3
"""Write format_fixtures.json: replies of a real redis-server and how redis-cli prints them.

For each case the script sends the command itself over a socket (RESP2, or RESP3 after
HELLO 3) to capture the exact reply bytes, then runs redis-cli with --no-raw (the terminal
style) and without it, stdout piped (the raw style), and records both outputs. The unit
tests in src/format/tests.rs parse the reply bytes and check kvik-cli prints the same.

Run (from this directory), with Debian's redis-server and redis-cli 7.0 installed:

    redis-server --port 7461 --save '' --appendonly no --enable-debug-command yes --daemonize yes
    python3 make_format_fixtures.py 7461 > format_fixtures.json
    redis-cli -p 7461 shutdown nosave

Strings in the JSON hold bytes as code points U+0000..U+00FF (latin-1).
"""
import json
import socket
import subprocess
import sys

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 7461

SETUP = [
    ["FLUSHALL"],
    ["SET", "s", "hello"],
    ["SET", "bin", "a\"b\\c\n\r\t\x07\x08\x00\x01\x7f\xff é"],
    ["RPUSH", "l"] + ["e%d" % i for i in range(12)],
    ["HSET", "h", "f1", "v1", "f2", "v2"],
    ["SADD", "st", "m1"],
    ["ZADD", "z", "1.5", "a", "2", "b", "0.1", "c"],
    ["XADD", "x", "1-1", "f", "v", "g", "w"],
    ["XADD", "x", "2-1", "f", "v2"],
]

CASES = [
    ["GET", "s"],
    ["GET", "bin"],
    ["GET", "missing"],
    ["SET", "s", "hello"],
    ["INCR", "n"],
    ["LRANGE", "l", "0", "-1"],
    ["LRANGE", "l", "0", "2"],
    ["LRANGE", "missing", "0", "-1"],
    ["HGETALL", "h"],
    ["HGETALL", "missing"],
    ["SMEMBERS", "st"],
    ["SMEMBERS", "missing"],
    ["ZSCORE", "z", "a"],
    ["ZSCORE", "z", "c"],
    ["ZRANGE", "z", "0", "-1", "WITHSCORES"],
    ["XRANGE", "x", "-", "+"],
    ["XINFO", "STREAM", "x"],
    ["LPOS", "missing", "x"],
    ["GET", "l"],
    ["NOSUCHCOMMAND", "a"],
    ["PING"],
    ["ECHO", ""],
    ["DEBUG", "PROTOCOL", "double"],
    ["DEBUG", "PROTOCOL", "true"],
    ["DEBUG", "PROTOCOL", "false"],
    ["DEBUG", "PROTOCOL", "map"],
    ["DEBUG", "PROTOCOL", "set"],
    ["DEBUG", "PROTOCOL", "verbatim"],
    ["DEBUG", "PROTOCOL", "null"],
    ["EVAL", "return {1, {2, {3, 'x'}}, {}, 'y'}", "0"],
    ["EVAL", "return {double=0.1}", "0"],
    ["EVAL", "return {double=1e300}", "0"],
    ["EVAL", "return {map={a={1,2}, b={map={c='d'}}}}", "0"],
    ["EVAL", "return {map={a={set={1}}}}", "0"],
    ["EVAL", "return {map={a={map={b={1,2}}}}}", "0"],
    ["EVAL", "return {{{map={a={1,2}}}}, {map={a={1}}}}", "0"],
    ["EVAL", "return {map={a={}, b={map={}}, c={set={}}}}", "0"],
    ["EVAL", "return {map={a={{1},2}}}", "0"],
    ["EVAL", "return {1,2,3,4,5,6,7,8,9,{10,11,12,13,14,15,16,17,18,19,20}}", "0"],
]


def encode(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode("latin-1")
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def need(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self.need(len(self.buf) + 1)
        i = self.buf.index(b"\r\n")
        return i + 2

    def reply_len(self, at=0):
        """Bytes taken by the reply starting at offset `at` of the buffer."""
        while True:
            try:
                return self._len(at)
            except IndexError:
                self.need(len(self.buf) + 1)

    def _len(self, at):
        end = self.buf.index(b"\r\n", at) + 2 if b"\r\n" in self.buf[at:] else None
        if end is None:
            raise IndexError
        kind, head = self.buf[at:at + 1], self.buf[at + 1:end - 2]
        if kind in b"$=!" and head != b"-1":
            total = end + int(head) + 2
            if len(self.buf) < total:
                raise IndexError
            return total
        if kind in b"*~>%|" and head != b"-1":
            n = int(head) * (2 if kind in b"%|" else 1)
            pos = end
            for _ in range(n):
                pos = self._len(pos)
            if kind == b"|":
                pos = self._len(pos)
            return pos
        return end

    def take(self):
        n = self.reply_len()
        reply, self.buf = self.buf[:n], self.buf[n:]
        return reply


def capture(proto, args):
    sock = socket.create_connection(("127.0.0.1", PORT))
    rd = Reader(sock)
    if proto == 3:
        sock.sendall(encode(["HELLO", "3"]))
        rd.take()
    sock.sendall(encode(args))
    reply = rd.take()
    sock.close()
    return reply


def cli(extra, args):
    cmd = ["redis-cli", "-p", str(PORT), "-%d" % extra[0]] + extra[1:] + [a for a in args]
    # redis-cli takes its arguments as bytes; pass latin-1 text through os.fsencode.
    res = subprocess.run([c.encode("latin-1") for c in cmd], stdout=subprocess.PIPE, check=False)
    return res.stdout


def main():
    sock = socket.create_connection(("127.0.0.1", PORT))
    rd = Reader(sock)
    for args in SETUP:
        sock.sendall(encode(args))
        rd.take()
    sock.close()
    cases = []
    for proto in (2, 3):
        for args in CASES:
            if args[0] == "INCR":
                # keep the counter stable between runs of this script
                capture(2, ["DEL", "n"])
            reply = capture(proto, args)
            if args[0] == "INCR":
                capture(2, ["DEL", "n"])
            human = cli([proto, "--no-raw"], args)
            if args[0] == "INCR":
                capture(2, ["DEL", "n"])
            raw = cli([proto], args)
            cases.append({
                "proto": proto,
                "args": args,
                "reply": reply.decode("latin-1"),
                "human": human.decode("latin-1"),
                "raw": raw.decode("latin-1"),
            })
    json.dump({"generated_by": "make_format_fixtures.py against redis-server/redis-cli "
               + subprocess.run(["redis-cli", "--version"], stdout=subprocess.PIPE).stdout.decode().strip(),
               "cases": cases}, sys.stdout, indent=1, ensure_ascii=True)
    sys.stdout.write("\n")


main()
