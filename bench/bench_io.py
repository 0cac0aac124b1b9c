"""What the benchmark scripts leave in their work directory, read back for
the report scripts: `meta` (key=value lines about the machine and the run)
and `runs.tsv` (one tab-separated line per benchmark run)."""

import os


def read_meta(work):
    """The `meta` file of `work` as a dict."""
    meta = {}
    with open(os.path.join(work, "meta")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    return meta


def read_runs(work, columns):
    """The lines of `runs.tsv` in `work` as dicts keyed by `columns` (none
    when the file is missing); a line with another number of fields is an
    error, not a guess."""
    path = os.path.join(work, "runs.tsv")
    runs = []
    if not os.path.exists(path):
        return runs
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != len(columns):
                raise ValueError("bad runs.tsv line: %r" % line)
            runs.append(dict(zip(columns, parts)))
    return runs
