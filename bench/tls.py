"""TLS, kvik-server against redis-server in the same run: GET and SET
throughput over TLS, and TLS handshakes per second.

Each cell: REPEATS rounds, the servers taking turns (the order rotating);
each round starts the server fresh (`--save ''`, a plain port for
control and `--tls-port`; kvik with `--threads THREADS`) with the same
certificates, made once for the run by openssl: an RSA 2048 CA, a server
and a client certificate it signed. tls-auth-clients stays at its
default (yes), so every client presents its certificate.

Cells:
  set / get at -P 1 and -P 16: `redis-benchmark --tls -c 50 -P <depth>
      -n <requests> -r 100000 -t set` then `-t get` on the same server
      (GET finds the keys SET wrote)
  handshake: `redis-benchmark --tls -c 50 -k 0 -n HANDSHAKES PING`: with
      -k 0 every request is sent on a new connection, so requests/s is
      connections + TLS handshakes + one PING per second

Reported: requests/s (redis-benchmark's), the server's CPU time over the
run (utime + stime from /proc/PID/stat) and requests per server-CPU-second,
and how busy the load generator was (its CPU time ÷ the run's wall time).
Where the load generator is busy ≥ 90% the throughput ratio measures it;
requests per server-CPU-second is then the figure to judge.

    python3 bench/tls.py KVIK_BIN OUT_MD META WORKDIR

Environment: SERVERS ["kvik redis"], REQUESTS [200000] (× 4 at -P 16),
HANDSHAKES [5000], REPEATS [3], THREADS [2], COMMAND.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aof import stop  # noqa: E402
from cells import fmt, measure, median, meta_lines  # noqa: E402
from server_report import free_port, wait_ready  # noqa: E402

# (name, depth)
CELLS = [("set", 1), ("get", 1), ("set", 16), ("get", 16), ("handshake", 1)]


def make_pki(d):
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    with open(os.path.join(d, "leaf.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
            "-days", "2", "-subj", "/CN=bench CA")
    for leaf in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", leaf + ".key", "-out", leaf + ".csr",
                "-subj", "/CN=" + leaf)
        openssl("x509", "-req", "-in", leaf + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", leaf + ".crt", "-days", "2", "-extfile", "leaf.ext")
    return {name: os.path.join(d, name) for name in
            ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")}


def server_args(kind, kvik_bin, port, tls_port, pki, threads):
    tls = ["--tls-port", str(tls_port), "--tls-cert-file", pki["server.crt"], "--tls-key-file", pki["server.key"],
           "--tls-ca-cert-file", pki["ca.crt"]]
    if kind == "kvik":
        return [kvik_bin, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--threads", str(threads)] + tls
    program = {"redis": "redis-server", "valkey": "valkey-server"}[kind]
    return [program, "--bind", "127.0.0.1", "--port", str(port), "--save", ""] + tls


def bench(proc, tls_port, pki, args, requests):
    """One redis-benchmark run over TLS (see cells.measure)."""
    tls = ["-p", str(tls_port), "--tls", "--cacert", pki["ca.crt"], "--cert", pki["client.crt"],
           "--key", pki["client.key"], "-c", "50"]
    return measure(proc.pid, tls + args, requests)


def run_round(kind, kvik_bin, pki, requests, handshakes, threads):
    """Every cell on one fresh server of `kind`: {cell: result}."""
    port, tls_port = free_port(), free_port()
    proc = subprocess.Popen(server_args(kind, kvik_bin, port, tls_port, pki, threads),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_ready(port, 60):
        proc.kill()
        raise SystemExit("%s did not start" % kind)
    got = {}
    try:
        for name, depth in CELLS:
            if name == "handshake":
                n = handshakes
                args = ["-k", "0", "-n", str(n), "PING"]
            else:
                n = requests * (4 if depth > 1 else 1)
                args = ["-P", str(depth), "-n", str(n), "-r", "100000", "-t", name]
            got[(name, depth)] = bench(proc, tls_port, pki, args, n)
    finally:
        stop(proc, port)
    return got


def main(argv):
    if len(argv) != 5:
        raise SystemExit(__doc__)
    kvik_bin, out_md, meta, workdir = argv[1:5]
    servers = os.environ.get("SERVERS", "kvik redis").split()
    requests = int(os.environ.get("REQUESTS", "200000"))
    handshakes = int(os.environ.get("HANDSHAKES", "5000"))
    repeats = int(os.environ.get("REPEATS", "3"))
    threads = int(os.environ.get("THREADS", "2"))
    pki = make_pki(workdir)
    results = {}
    for r in range(repeats):
        order = servers[r % len(servers):] + servers[:r % len(servers)]
        for kind in order:
            for cell, got in run_round(kind, kvik_bin, pki, requests, handshakes, threads).items():
                results.setdefault((cell, kind), []).append(got)
                print("round %d %s %s -P %d: %s rps, %.2f s CPU, client busy %.0f%%" % (
                    r + 1, kind, cell[0], cell[1], fmt(got["rps"]), got["server_cpu"],
                    100 * (got["client_busy"] or 0)), flush=True)

    def med(cell, kind, field):
        return median(results, (cell, kind), field)

    lines = ["# TLS: throughput and handshakes", ""] + meta_lines(meta)
    lines += [
        "Command: `%s`. `redis-benchmark --tls --cacert … --cert … --key … -c 50`, medians of %d rounds; kvik with "
        "`--threads %d`; RSA 2048 certificates, tls-auth-clients yes. handshake: `-k 0 PING`, a new connection and "
        "TLS handshake per request. See bench/tls.py." % (os.environ.get("COMMAND", "bench/tls.sh"), repeats, threads),
        "",
        "| test | -P | server | requests/s | server CPU s | requests per CPU-s | load generator busy |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for cell in CELLS:
        for kind in servers:
            name = "%s-server" % kind + (" --threads %d" % threads if kind == "kvik" else "")
            lines.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                cell[0], cell[1], name, fmt(med(cell, kind, "rps")), fmt(med(cell, kind, "server_cpu"), "{:.2f}"),
                fmt(med(cell, kind, "per_cpu")), fmt(med(cell, kind, "client_busy"), "{:.0%}")))
    if "kvik" in servers and "redis" in servers:
        lines += ["", "| test | -P | kvik ÷ redis, requests/s | kvik ÷ redis, per server-CPU-second | "
                  "load generator busy (kvik, redis) |", "|---|---:|---:|---:|---:|"]
        for cell in CELLS:
            def ratio(field):
                k, r = med(cell, "kvik", field), med(cell, "redis", field)
                return "%.2f×" % (k / r) if k and r else "—"
            lines.append("| %s | %d | %s | %s | %s, %s |" % (
                cell[0], cell[1], ratio("rps"), ratio("per_cpu"), fmt(med(cell, "kvik", "client_busy"), "{:.0%}"),
                fmt(med(cell, "redis", "client_busy"), "{:.0%}")))
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s" % out_md)


if __name__ == "__main__":
    main(sys.argv)
