#!/usr/bin/env python3
"""Import circles between the top-level modules of each crate: exit 1 naming every one.

A module of one concern (`campaign`, `nemesis`, `runtime`, `node`, ...) may use another,
or be used by it, not both: a circle means neither can be read, changed or tested
without the other. Shared pieces move down to a module both use (`html`,
`nemesis_format`, `routing`). Counted: `crate::<module>` paths outside comments in every
file of `<crate>/src/<module>` (or `<module>.rs`), test modules included.

    scripts/check-import-circles.py     # from the repository root
"""
import os
import re
import sys

CRATES = ["cluster", "simulator"]
ROOTS = {"lib", "main", "bin"}


def edges_of(src):
    edges = {}
    for directory, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(directory, name)
            parts = os.path.relpath(path, src).split(os.sep)
            top = parts[0][:-3] if len(parts) == 1 else parts[0]
            if top in ROOTS:
                continue
            with open(path, encoding="utf-8") as file:
                code = "\n".join(line for line in file if not line.lstrip().startswith("//"))
            used = set(re.findall(r"crate::([a-z_][a-z0-9_]*)", code))
            for group in re.findall(r"crate::\{([^}]*)\}", code):
                used.update(re.findall(r"(?:^|,)\s*([a-z_][a-z0-9_]*)", group))
            for other in used - {top}:
                edges.setdefault(top, {}).setdefault(other, set()).add("/".join(parts))
    return edges


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    circles = 0
    for crate in CRATES:
        edges = edges_of(os.path.join(root, crate, "src"))
        for a in sorted(edges):
            for b in sorted(edges[a]):
                if a < b and a in edges.get(b, {}):
                    circles += 1
                    print(f"{crate}: {a} <-> {b}")
                    print(f"    {a} -> {b}: {', '.join(sorted(edges[a][b]))}")
                    print(f"    {b} -> {a}: {', '.join(sorted(edges[b][a]))}")
    if circles:
        print(f"import circles: {circles} (move what both need down to a module both can use)")
        return 1
    print("import circles: none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
