#!/usr/bin/env bash
# Tracked folders out of the working tree for device calls, and back after them (models/reports/CUDA-EP.md).
#
# A device call sends the checkout's tree (tracked and untracked-not-ignored files) plus what `carry` names, 64 MiB in
# all; large tracked folders the calls do not need (the loupe-tiny weights and run logs) must leave the tree for them.
# Moving them out alone was not enough once (the tool still found the tree too large), so each folder also leaves the
# index; `back` restores both.
#
#   bash scripts/device/tree-aside.sh out PATH...   move each tracked PATH to .device-carry/aside/PATH (ignored, inside
#                                                   this checkout) and take it out of the index
#   bash scripts/device/tree-aside.sh back          move everything set aside back and restore it in the index
#   bash scripts/device/tree-aside.sh status        what is set aside
#
# `out` refuses the checkout itself, .git, a path outside the checkout, a path that is not tracked, is already aside, or holds changes (staged or not: `back` restores the
# index from HEAD, so a staged change would be lost; commit or stash first). `back` refuses to overwrite a path that
# exists again. Both leave `git status` as it was.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
A=.device-carry/aside
list=$A/LIST
cmd=${1:-}
[ $# -gt 0 ] && shift
ensure_ignored() {
  local ex
  ex=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$ex")"
  grep -qx '/.device-carry/' "$ex" 2>/dev/null || echo '/.device-carry/' >> "$ex"
}
case "$cmd" in
out)
  [ $# -gt 0 ] || { echo "usage: tree-aside.sh out PATH..." >&2; exit 2; }
  ensure_ignored
  for p in "$@"; do
    p=${p%/}
    case "$p" in '' | . | ./ | /* | *..* | .device-carry* | .git | .git/*) echo "tree-aside: '$p': give a tracked folder or file inside this checkout" >&2; exit 2 ;; esac
    [ -n "$(git ls-files -- "$p" | head -1)" ] || { echo "tree-aside: $p: not tracked by git" >&2; exit 1; }
    [ ! -e "$A/$p" ] || { echo "tree-aside: $p: already aside ($A/$p); run back first" >&2; exit 1; }
    [ -z "$(git status --porcelain -- "$p")" ] || { echo "tree-aside: $p: has changes (git status -- $p); commit or stash them first" >&2; exit 1; }
  done
  for p in "$@"; do
    p=${p%/}
    mkdir -p -- "$A/$(dirname -- "$p")"
    mv -- "$p" "$A/$p"
    git rm -r -q --cached -- "$p"
    echo "$p" >> "$list"
    echo "tree-aside: $p set aside ($(du -sh -- "$A/$p" | cut -f1))"
  done
  ;;
back)
  [ -s "$list" ] || { echo "tree-aside: nothing is set aside"; exit 0; }
  while IFS= read -r p; do
    [ ! -e "$p" ] || { echo "tree-aside: $p exists again; move it away before back" >&2; exit 1; }
  done < "$list"
  while IFS= read -r p; do
    git reset -q -- "$p"
    mkdir -p -- "$(dirname -- "$p")"
    mv -- "$A/$p" "$p"
    echo "tree-aside: $p back"
  done < "$list"
  rm -f "$list"
  ;;
status)
  if [ -s "$list" ]; then sed 's/^/aside: /' "$list"; else echo "nothing is set aside"; fi
  ;;
*) echo "usage: tree-aside.sh out PATH... | back | status" >&2; exit 2 ;;
esac
