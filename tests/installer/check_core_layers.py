#!/usr/bin/env python3
"""Fails when a file or an object of core reaches above its layer.

core is built as one static library per layer (core/CMakeLists.txt), each linking the layers it
builds on. The build writes a manifest, one line per layer:

    name;dir,dir;stem,stem;below,below;path/to/libdtlab_core_name.a

(a layer owns the files of its directories, or the files of its stems, "spec/spec_json" for
spec_json.h and .cc; a stem named by a layer belongs to it whatever its directory). A layer may
use its own files and those of the layers below it, transitively. Two checks:

- includes: every `#include "core/..."` of a file of a layer names a header of that layer or of
  one below it;
- symbols: every symbol an archive's objects use and do not define themselves, where another
  layer's archive defines it (strongly: not an inline function's or a template's weak copy),
  is defined in a layer below. This finds what includes cannot: a function declared in a low
  header and defined in a higher layer's source.

usage: check_core_layers.py MANIFEST REPO_ROOT [NM]
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"(core/[^"]+)"')
SOURCES = (".h", ".cc")
# Not in any layer: the CUDA plugin's sources (a library of its own, loaded at run time) and the
# headers standing in for Gloo's missing ones.
OUTSIDE = re.compile(r"^core/(backend/cuda/|comm/nccl_|comm/gloo_missing/)")
STRONG = set("TDBRGS")  # defined here, not weak (W, V), not common or unique
MAX_REPORTED = 20


def read_manifest(path):
    layers = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        name, dirs, stems, below, archive = line.split(";")
        split = lambda text: [x for x in text.split(",") if x]
        layers[name] = {"dirs": split(dirs), "stems": split(stems), "below": split(below),
                        "archive": archive}
    return layers


def reachable(layers):
    """Each layer with every layer it may use: itself and those below, transitively."""
    out = {}

    def visit(name, seen):
        if name in seen:
            return
        seen.add(name)
        for below in layers[name]["below"]:
            if below not in layers:
                sys.exit(f"manifest: layer {name} builds on unknown layer {below}")
            visit(below, seen)

    for name in layers:
        seen = set()
        visit(name, seen)
        out[name] = seen
    return out


def layer_of(relpath, layers):
    stem = os.path.splitext(relpath)[0][len("core/"):]
    for name, layer in layers.items():
        if stem in layer["stems"]:
            return name
    directory = os.path.dirname(stem)
    for name, layer in layers.items():
        if directory in layer["dirs"]:
            return name
    return None


def check_includes(root, layers, allowed):
    problems = []
    for directory, _, names in os.walk(os.path.join(root, "core")):
        for n in sorted(names):
            if not n.endswith(SOURCES):
                continue
            path = os.path.relpath(os.path.join(directory, n), root)
            if OUTSIDE.match(path):
                continue
            layer = layer_of(path, layers)
            if layer is None:
                problems.append(f"{path}: in no layer (add its directory to core/CMakeLists.txt)")
                continue
            with open(os.path.join(root, path), errors="replace") as text:
                for number, line in enumerate(text, 1):
                    match = INCLUDE.match(line)
                    if not match or OUTSIDE.match(match.group(1)):
                        continue
                    target = layer_of(match.group(1), layers)
                    if target is not None and target not in allowed[layer]:
                        problems.append(f"{path}:{number}: layer {layer} includes "
                                        f"{match.group(1)} of layer {target}, which is not below it")
    return problems


def symbols(nm, archive):
    """(defined: {symbol}, strong: {symbol}, undefined: {symbol: object})"""
    result = subprocess.run([nm, "-A", "-g", archive], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{nm} -A -g {archive} failed: {result.stderr.strip()}")
    defined, strong, undefined = set(), set(), {}
    for line in result.stdout.splitlines():
        # archive:object.o: [address] TYPE symbol
        head, _, rest = line.rpartition(": ")
        fields = rest.split()
        if len(fields) < 2:
            continue
        kind, name = fields[-2], fields[-1]
        if kind == "U":
            undefined.setdefault(name, head.rpartition(":")[2] or head)
        else:
            defined.add(name)
            if kind in STRONG:
                strong.add(name)
    return defined, strong, undefined


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
        return out.stdout.splitlines() if out.returncode == 0 else names
    except OSError:
        return names


def check_symbols(nm, layers, allowed):
    tables = {name: symbols(nm, layer["archive"]) for name, layer in layers.items()}
    owner = {}
    for name, (_, strong, _) in tables.items():
        for symbol in strong:
            owner.setdefault(symbol, name)
    found = []
    for name, (defined, _, undefined) in tables.items():
        for symbol, obj in sorted(undefined.items()):
            if symbol in defined:
                continue
            above = owner.get(symbol)
            if above is not None and above not in allowed[name]:
                found.append((name, obj, symbol, above))
    readable = demangle([f[2] for f in found])
    return [f"layer {name} ({obj}) uses {text}, defined in layer {above}, which is not below it"
            for (name, obj, _, above), text in zip(found, readable)]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    layers = read_manifest(sys.argv[1])
    allowed = reachable(layers)
    problems = check_includes(sys.argv[2], layers, allowed)
    problems += check_symbols(sys.argv[3] if len(sys.argv) == 4 else "nm", layers, allowed)
    for p in problems[:MAX_REPORTED]:
        print(p)
    if len(problems) > MAX_REPORTED:
        print(f"... and {len(problems) - MAX_REPORTED} more")
    if problems:
        print(f"{len(problems)} use(s) across layers; the layers are in core/CMakeLists.txt")
        return 1
    print(f"{len(layers)} layers; every include and every symbol used reaches only downward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
