#!/usr/bin/env python3
"""The import graph of a Rust crate's modules: its circles and its floors.

    build/layers.py [crates/server/src] [--folders] [--edges] [--floors]

Every file of the crate is a module (`a/b.rs` and `a/b/mod.rs` are
`crate::a::b`). A module depends on another when its text names it:
`crate::x::y` paths (in `use` lines, `use` groups and expressions) and
`super::` paths, each resolved to the longest module prefix that exists.
Test modules (`#[cfg(test)] mod tests { … }` to the end of the file) do not
count: they may reach anything.

It prints:
- the circles: strongly connected sets of modules (more than one module),
  largest first;
- the floors: the longest chain of dependencies between the circles and
  the modules outside them (one floor per link, counting the bottom);
- with `--folders`, the same for the top-level folders of the crate (a file
  directly under `src/` is a folder of its own), so that a layering by
  folders can be checked: no circle, and a count of the imports between
  folders;
- with `--edges`, every dependency inside a circle;
- with `--floors`, the modules of each floor, top first.

The measure is textual, not the compiler's, and counts a module named in a
doc comment link as a dependency; good enough to compare two layouts.
"""

import os
import re
import sys
from collections import defaultdict

PATH = re.compile(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)")
GROUP = re.compile(r"use\s+(crate|super)((?:::[a-z_][a-z0-9_]*)*)::\{([^;]*)\};", re.S)


def modules(src):
    """Module path (tuple) -> file path, for every .rs file under src."""
    found = {}
    for root, _dirs, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            found[tuple(parts)] = os.path.join(root, name)
    return found


def code_of(path):
    text = open(path, encoding="utf-8").read()
    # Drop the test module at the end of the file, and line comments.
    cut = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod tests", text, re.M)
    if cut:
        text = text[: cut.start()]
    return "\n".join(line.split("//", 1)[0] if not line.lstrip().startswith("//!") else "" for line in text.splitlines())


def resolve(module, base, rest, known):
    """The known module a path from `module` names, or None: `crate::x`
    names `x`, `super::x` names `x` beside `module`."""
    parts = list(rest) if base == "crate" else list(module[:-1]) + list(rest)
    while parts:
        if tuple(parts) in known:
            return tuple(parts)
        parts.pop()
    return None


def graph(src):
    known = modules(src)
    edges = defaultdict(set)
    for module, path in known.items():
        code = code_of(path)
        refs = []
        for m in GROUP.finditer(code):
            base, prefix, inner = m.group(1), m.group(2), m.group(3)
            head = [p for p in prefix.split("::") if p]
            for item in re.split(r"[,{}\s]+", inner):
                item = item.strip()
                if item and re.match(r"[a-z_]", item) and item != "self":
                    refs.append((base, head + item.split("::")))
                elif item == "self":
                    refs.append((base, head))
        for m in PATH.finditer(code):
            refs.append((m.group(1), [p for p in m.group(2).split("::") if p]))
        for base, rest in refs:
            target = resolve(module, base, rest, known)
            if target is not None and target != module and target != ():
                edges[module].add(target)
    return known, edges


def sccs(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def floors(nodes, edges, per_floor=None):
    comps = sccs(nodes, edges)
    comp_of = {v: i for i, c in enumerate(comps) for v in c}
    cedges = defaultdict(set)
    for v in nodes:
        for w in edges.get(v, ()):
            if comp_of[v] != comp_of[w]:
                cedges[comp_of[v]].add(comp_of[w])
    depth = {}

    def height(c):
        if c not in depth:
            depth[c] = 1 + max((height(d) for d in cedges[c]), default=0)
        return depth[c]

    if per_floor is not None:
        for c, members in enumerate(comps):
            per_floor.setdefault(height(c), []).extend(members)
    return comps, max((height(c) for c in range(len(comps))), default=0)


def name(module):
    return "::".join(module) or "crate"


def report(title, nodes, edges, show_edges, show_floors=False):
    per_floor = {}
    comps, n_floors = floors(nodes, edges, per_floor)
    circles = sorted((c for c in comps if len(c) > 1), key=len, reverse=True)
    n_edges = sum(len(v) for v in edges.values())
    print(f"{title}: {len(nodes)} modules, {n_edges} imports, {n_floors} floors, {len(circles)} circles")
    if show_floors:
        print_floors(per_floor)
    for c in circles:
        print(f"  circle of {len(c)}: {', '.join(sorted(name(m) for m in c))}")
        if show_edges:
            inside = set(c)
            for v in sorted(c):
                for w in sorted(edges.get(v, ())):
                    if w in inside:
                        print(f"    {name(v)} -> {name(w)}")


def print_floors(per_floor):
    for floor in sorted(per_floor, reverse=True):
        print(f"  floor {floor}: {', '.join(sorted(name(m) for m in per_floor[floor]))}")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    src = args[0] if args else "crates/server/src"
    known, edges = graph(src)
    report("modules", list(known), edges, "--edges" in sys.argv, "--floors" in sys.argv)
    if "--folders" in sys.argv:
        top = lambda m: m[:1] if m else ("crate",)
        fedges = defaultdict(set)
        for v, ws in edges.items():
            for w in ws:
                if top(v) != top(w):
                    fedges[top(v)].add(top(w))
        folders = sorted({top(m) for m in known})
        report("folders", folders, fedges, "--edges" in sys.argv, "--floors" in sys.argv)


if __name__ == "__main__":
    main()
