#!/usr/bin/env python3
"""Fails when the repository's documentation points at something that is not there.

Over README.md and every other .md file of the repository (docs/, the folders' READMEs):

- links: every relative link or image ([text](path), ![alt](path)) names a file or folder that
  exists (its #anchor aside);
- commands: every `dtlab-cli COMMAND ...` line in a fenced code block still parses: it is run
  as `dtlab-cli --dry-run COMMAND ...`, which parses the arguments with the command's own flags
  (an unknown flag, a missing value, a malformed integer fail, exit 2) and does nothing else;
  every `installer/dev.sh COMMAND` names a command dev.sh has.

How a documented line becomes the arguments of the dry run: lines ending in `\\` are joined
with the next; everything before `dtlab-cli` (a `$ ` prompt, `build/app/`, `srun ...`) and a
`# comment` are dropped; the rest is split as the shell splits it (shlex) and cut at the first
shell operator (`|`, `||`, `&&`, `;`, `&`, a redirection such as `>out`, `2>&1`), as the shell
would hand only that part to dtlab-cli. A line with a substitution or a variable (`$(...)`,
backquotes, `$VAR`) is skipped: what it passes is not on the page. Placeholders such as
`--node HOST:PORT` or `SPEC.json` parse as values and positionals; the dry run opens no file.

A line with a `[` is a synopsis (`[optional parts]`, with `a | b` alternatives inside them, as
in docs/development.md), not a command one can run: run as written, its `|` would be taken for
a pipe and its placeholders (`--threads N`) are no integers. Skipping such lines would leave
their flags unchecked, so they are checked in two parts: the line without its bracketed parts
(nested ones included) must parse, which checks the command, the sub-command and the flags
given outside brackets; and each --flag inside the brackets must be one that the command's
help (`dtlab-cli help COMMAND`) lists, as the check did for every line before the dry run.

usage: check_docs.py REPO_ROOT DTLAB_CLI
"""
import os
import re
import shlex
import subprocess
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*```")
CLI = re.compile(r"(?:^|[\s$/])dtlab-cli\s+([a-z][a-z-]*)(.*)$")
DEV = re.compile(r"installer/dev\.sh\s+([a-z][a-z-]*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
BRACKETED = re.compile(r"\[[^\[\]]*\]")
OPERATOR = re.compile(r"^(\|\|?|&&?|;|\d*[<>]|&>)")
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

    def dry_run(self, args):
        """None when `args` parse, else the first line dtlab-cli said about them."""
        out = subprocess.run([self.program, "--dry-run"] + args, capture_output=True, text=True,
                             timeout=30)
        if out.returncode == 0:
            return None
        said = (out.stderr.strip() or out.stdout.strip() or f"exit {out.returncode}")
        return said.splitlines()[0]


def strip_comment(text):
    """`text` up to an unquoted `#` that starts a word (a shell comment)."""
    quote = None
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i]
    return text


def lines_of(path):
    """(number, line, in_code) of every line, in_code for one in a fenced code block; in a code
    block, a line ending in `\\` comes joined with the next, numbered as its first."""
    in_code = False
    pending, first = "", 0
    for number, line in enumerate(open(path, errors="replace"), 1):
        if FENCE.match(line):
            if pending:
                yield first, pending, True
                pending = ""
            in_code = not in_code
            continue
        if not in_code:
            yield number, line, False
            continue
        body = line.rstrip()
        if not pending:
            first = number
        if body.endswith("\\") and strip_comment(body) == body:
            pending += body[:-1] + " "
            continue
        yield first, pending + body, True
        pending = ""
    if pending:
        yield first, pending, True


def check_command(rel, number, code, cli):
    """Problems of the `dtlab-cli ...` command on a code line (`code`: its comment removed)."""
    match = CLI.search(code)
    if not match:
        return []
    command = match.group(1)
    text = code[match.start(1):]
    if "$" in text or "`" in text:
        return []  # a substitution or a variable: not what dtlab-cli would be given
    problems = []
    if "[" in text:  # a synopsis: its optional flags against the help, the rest parsed
        help_text = cli.help(command)
        if help_text is None:
            return [f"{rel}:{number}: dtlab-cli has no command '{command}'"]
        optional = text
        while BRACKETED.search(text):
            text = BRACKETED.sub(" ", text)
        for flag in FLAG.findall(optional):
            if flag != "--help" and not re.search(re.escape(flag) + r"(?![\w-])", help_text):
                problems.append(f"{rel}:{number}: dtlab-cli {command} has no flag {flag} "
                                f"(dtlab-cli help {command})")
    try:
        words = shlex.split(text)
    except ValueError as e:
        return problems + [f"{rel}:{number}: `dtlab-cli {text.strip()}` cannot be split: {e}"]
    for i, word in enumerate(words):
        if OPERATOR.match(word):
            words = words[:i]
            break
    said = cli.dry_run(words)
    if said is not None:
        problems.append(f"{rel}:{number}: `dtlab-cli {shlex.join(words)}` does not parse: {said}")
    return problems


def check_file(path, root, cli, dev):
    problems = []
    rel = os.path.relpath(path, root)
    for number, line, in_code in lines_of(path):
        if not in_code:
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a URL, or an anchor on this page
                file_part = target.split("#", 1)[0]
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    problems.append(f"{rel}:{number}: link to {target}: no such file")
            continue
        code = strip_comment(line)
        problems += check_command(rel, number, code, cli)
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
          f"command line parses (dtlab-cli --dry-run), every dev.sh command exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
