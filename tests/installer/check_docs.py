#!/usr/bin/env python3
"""Fails when the repository's documentation points at something that is not there.

Over README.md and every other .md file of the repository (docs/, the folders' READMEs):

- links: every relative link or image ([text](path), ![alt](path)) names a file or folder that
  exists (its #anchor aside);
- commands: every `dtlab-cli COMMAND ...` line in a fenced code block names a command whose
  help (`dtlab-cli help COMMAND`) exists, and each --flag on the line is one that help lists;
  every `installer/dev.sh COMMAND` names a command dev.sh has.

usage: check_docs.py REPO_ROOT DTLAB_CLI
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*```")
CLI = re.compile(r"(?:^|[\s$/])dtlab-cli\s+([a-z][a-z-]*)(.*)$")
DEV = re.compile(r"installer/dev\.sh\s+([a-z][a-z-]*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
SKIP_DIRS = {".git", "node_modules"}


def markdown_files(root):
    for directory, names, files in os.walk(root):
        names[:] = [n for n in names if n not in SKIP_DIRS and not n.startswith("build")]
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(directory, f)


def dev_commands(root):
    text = open(os.path.join(root, "installer", "dev.sh")).read()
    return set(re.findall(r"^\s+([a-z][a-z-]*)\)", text, re.M))


class Cli:
    def __init__(self, program):
        self.program = program
        self.helps = {}

    def help(self, command):
        if command not in self.helps:
            out = subprocess.run([self.program, "help", command], capture_output=True, text=True)
            text = out.stdout + out.stderr
            self.helps[command] = text if out.returncode == 0 and text.strip() else None
        return self.helps[command]


def check_file(path, root, cli, dev):
    problems = []
    rel = os.path.relpath(path, root)
    in_code = False
    for number, line in enumerate(open(path, errors="replace"), 1):
        if FENCE.match(line):
            in_code = not in_code
            continue
        if not in_code:
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a URL, or an anchor on this page
                file_part = target.split("#", 1)[0]
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    problems.append(f"{rel}:{number}: link to {target}: no such file")
            continue
        code = line.split("  #", 1)[0]  # a trailing comment is prose
        match = CLI.search(code)
        if match:
            command, rest = match.group(1), match.group(2)
            text = cli.help(command)
            if text is None:
                problems.append(f"{rel}:{number}: dtlab-cli has no command '{command}'")
            else:
                for flag in FLAG.findall(rest):
                    if flag == "--help":  # every command has it
                        continue
                    if not re.search(re.escape(flag) + r"(?![\w-])", text):
                        problems.append(
                            f"{rel}:{number}: dtlab-cli {command} has no flag {flag} "
                            f"(dtlab-cli help {command})")
        for command in DEV.findall(code):
            if command not in dev:
                problems.append(f"{rel}:{number}: installer/dev.sh has no command '{command}'")
    return problems


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, program = sys.argv[1], sys.argv[2]
    cli = Cli(program)
    dev = dev_commands(root)
    problems = []
    files = list(markdown_files(root))
    for path in files:
        problems += check_file(path, root, cli, dev)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in the documentation")
        return 1
    print(f"{len(files)} Markdown files: every relative link resolves, every documented "
          f"command and flag exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
