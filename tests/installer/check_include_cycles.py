#!/usr/bin/env python3
"""Fails on an include cycle between the modules of core, remote, ui and app.

A module is a header and its source files (x.h with x.cc, x.cu). Module a depends on module b
when a file of a includes a header of b ("core/..." includes, resolved from the repository root). A cycle is a set of modules that
depend on each other (a strongly connected component of more than one).

Cycles that are known and still to be broken are listed in the baseline file, one per line (the
modules separated by spaces). The check fails on any cycle not listed, naming one include of
each dependency around it, and on a listed cycle that is gone or changed, so that the list only
ever shrinks.

usage: check_include_cycles.py REPO_ROOT BASELINE
"""
import os
import re
import sys

TOPS = ("core", "remote", "ui", "app")
SOURCES = (".h", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(path):
    return os.path.splitext(path)[0]


def include_graph(root):
    files = []
    for top in TOPS:
        for directory, _, names in os.walk(os.path.join(root, top)):
            files += [
                os.path.relpath(os.path.join(directory, n), root)
                for n in names
                if n.endswith(SOURCES)
            ]
    known = set(files)
    edges = {}  # module -> {module: "file includes header"}
    for path in files:
        source = module_of(path)
        edges.setdefault(source, {})
        with open(os.path.join(root, path), errors="replace") as text:
            for line in text:
                match = INCLUDE.match(line)
                if not match or match.group(1) not in known:
                    continue
                target = module_of(match.group(1))
                if target != source:
                    edges[source].setdefault(target, path + " includes " + match.group(1))
    return edges


def cycles(edges):
    """Tarjan's strongly connected components of more than one module, iteratively."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def loop_through(component, edges):
    """The shortest closed path from the component's first module, as the includes that make it."""
    start = min(component)
    parent, frontier = {}, [start]
    while frontier:
        following = []
        for a in frontier:
            for b in sorted(edges[a]):
                if b == start:
                    path = [a]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    path.reverse()
                    return [edges[x][y] for x, y in zip(path, path[1:] + [start])]
                if b in component and b not in parent:
                    parent[b] = a
                    following.append(b)
        frontier = following
    return []


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, baseline_path = sys.argv[1], sys.argv[2]
    baseline = set()
    with open(baseline_path) as baseline_file:
        for line in baseline_file:
            line = line.split("#", 1)[0].strip()
            if line:
                baseline.add(frozenset(line.split()))
    edges = include_graph(root)
    found = cycles(edges)
    failed = False
    for component in sorted(found, key=lambda c: (-len(c), sorted(c))):
        if component in baseline:
            print("known cycle of %d modules, still to break: %s" % (len(component), min(component)))
            continue
        failed = True
        print("NEW include cycle of %d modules:" % len(component))
        for include in loop_through(component, edges):
            print("  " + include)
        print("  (break it; a cycle that must stay a while goes into %s as the line:)" % baseline_path)
        print("  " + " ".join(sorted(component)))
    for listed in sorted(baseline - set(found), key=sorted):
        failed = True
        print("the listed cycle of %s is gone or changed: update %s to what this check prints"
              % (" ".join(sorted(listed)), baseline_path))
        current = [c for c in found if c & listed]
        for c in current:
            print("  now: " + " ".join(sorted(c)))
    print("%d modules, %d cycles (%d known)" % (len(edges), len(found), len(set(found) & baseline)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
