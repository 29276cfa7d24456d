#!/usr/bin/env bash
# Remakes the documentation's pictures (docs/images) from projects it records here, so that no
# picture in the docs is older than the program: the specs in docs/pictures run on local nodes,
# then `dtlab --screenshot` renders each page, `dtlab-cli report` the report (headless Chromium
# for its HTML, pdftoppm for a page of its PDF).
#
#   installer/docs_pictures.sh [--out DIR] [--build DIR] [--keep-projects DIR]
#
# --out: where the pictures go (default docs/images); --build: the build tree with app/dtlab and
# app/dtlab-cli (default $DTLAB_BUILD_DIR, else build); --keep-projects: keep the recorded
# projects there (default: a temporary folder, removed at the end).
# At the end it checks the pictures against the docs: every images/NAME.png a Markdown page of
# the repository shows was made, and every picture made is shown somewhere; exit 1 otherwise.
# `installer/dev.sh docs` runs it (after regenerating docs/reference); the test
# installer_docs_pictures runs it into a temporary folder.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/docs/images"
build="${DTLAB_BUILD_DIR:-$root/build}"
keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --keep-projects) keep="$2"; shift 2 ;;
    *) echo "docs_pictures.sh: unknown argument '$1' (--out DIR, --build DIR, --keep-projects DIR)" >&2
       exit 2 ;;
  esac
done

cli="$build/app/dtlab-cli"
gui="$build/app/dtlab"
for program in "$cli" "$gui"; do
  [ -x "$program" ] || { echo "docs_pictures.sh: no $program (build first)" >&2; exit 2; }
done
for tool in chromium pdftoppm python3; do
  command -v "$tool" >/dev/null ||
    { echo "docs_pictures.sh: $tool is missing (installer/dev.sh deps installs it)" >&2; exit 2; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
projects="${keep:-$work/Documents/DTLab}"
mkdir -p "$out" "$projects"
# The window renders off screen with the docs' own settings: a fresh profile, no keyring.
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" QT_QPA_PLATFORM=offscreen
unset DBUS_SESSION_BUS_ADDRESS
mkdir -p "$HOME"

specs="$root/docs/pictures"
made=()
log() { printf '[docs_pictures] %s\n' "$*" >&2; }

record() {  # record PROJECT SPEC [run flags...]: a fresh project with the spec's runs
  local project="$projects/$1.dtlab" spec="$specs/$2"
  shift 2
  rm -f "$project"
  log "recording $(basename "$spec") into $project"
  "$cli" run "$spec" --quiet --project "$project" "$@" >/dev/null 2>"$work/run.log" ||
    { cat "$work/run.log" >&2; exit 1; }
}

run_id() {  # run_id PROJECT VARIANT: the number of the project's run of that variant
  "$cli" project list "$projects/$1.dtlab" --json | python3 -c '
import json, sys
runs = [r for r in json.load(sys.stdin)["runs"] if r["name"].endswith("/" + sys.argv[1])]
if not runs: sys.exit("no run of variant " + sys.argv[1])
print(runs[-1]["id"])' "$2"
}

shot() {  # shot NAME PROJECT [dtlab flags...]: NAME.png of a page of the project
  local name="$1" project="$projects/$2.dtlab"
  shift 2
  "$gui" "$project" --screenshot "$out/$name.png" "$@" >/dev/null 2>"$work/gui.log" ||
    { log "$name.png failed:"; cat "$work/gui.log" >&2; exit 1; }
  made+=("$name")
  log "made $name.png"
}

# Three nodes, one at 0.4 of the others' speed, every strategy: the explorer, a run's page, the
# hybrid switching, a replay, the editors and the comparison.
record three_nodes three_nodes.json
"$cli" project add "$projects/three_nodes.dtlab" "$specs/three_nodes.json" >/dev/null
shot explorer three_nodes --size 1400x900
shot run three_nodes --page run --run "$(run_id three_nodes speed_proportional)" --size 1400x900
shot run_hybrid three_nodes --page run --run "$(run_id three_nodes adaptive)"
shot replay three_nodes --page run --run "$(run_id three_nodes async_ps)" --replay 300
shot dataset three_nodes --page dataset
shot experiment three_nodes --page experiment --size 1500x900
shot topology_local three_nodes --page topology --size 1400x900
shot compare three_nodes --page compare --tab runs --chart loss --smooth 0.6 --size 1500x1200

# A cluster of remote daemons, named by address (never run: the editor only shows it).
rm -f "$projects/lab_cluster.dtlab"
"$cli" project add "$projects/lab_cluster.dtlab" "$specs/remote.json" >/dev/null
shot topology lab_cluster --page topology

# Repetitions under a straggler: the execution's statistics, its seed table and its report.
record straggler_repeats repeats.json
shot compare_execution straggler_repeats --page compare --tab statistics --chart loss --size 1600x1150
shot seed_table straggler_repeats --page compare --tab seed --size 1600x1000
"$cli" report "$projects/straggler_repeats.dtlab" -o "$work/report.html" >/dev/null
"$cli" report "$projects/straggler_repeats.dtlab" -o "$work/report.pdf" >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --user-data-dir="$work/chromium" --window-size=1280,1000 \
  --screenshot="$out/report_html.png" "file://$work/report.html" >/dev/null 2>&1
[ -s "$out/report_html.png" ] || { log "chromium made no picture of the report"; exit 1; }
made+=(report_html)
log "made report_html.png"
# The PDF's third page: the first charts of the comparison.
pdftoppm -png -r 80 -f 3 -l 3 -singlefile "$work/report.pdf" "$out/report_pdf"
made+=(report_pdf)
log "made report_pdf.png"

# One node and two: calibrated, then predicted at scale.
record scale scale.json
"$cli" calibrate "$projects/scale.dtlab" >/dev/null
shot predict scale --page predict --size 1400x860

# Every picture the docs show was made here, and every one made is shown.
python3 - "$root" "${made[@]}" <<'EOF'
import os, re, sys
root, made = sys.argv[1], set(sys.argv[2:])
shown = set()
for directory, names, files in os.walk(root):
    names[:] = [n for n in names if n != ".git" and not n.startswith("build")]
    for f in files:
        if f.endswith(".md"):
            text = open(os.path.join(directory, f), errors="replace").read()
            shown |= set(re.findall(r"images/([A-Za-z0-9_-]+)\.png", text))
problems = [f"docs show images/{n}.png, which this script does not make" for n in sorted(shown - made)]
problems += [f"made {n}.png, which no page shows" for n in sorted(made - shown)]
for p in problems:
    print("docs_pictures.sh:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
log "${#made[@]} pictures in $out"
