#!/usr/bin/env bash
# `npm test`: everything the suites need, then the suites, then tidy up. Safe to run again: a second run installs
# nothing, and services that were already running before it started are reused and left running.
#   1. scripts/test-setup.sh — Debian packages (as root; otherwise the exact apt-get line), a Python with every
#      module the tests import.
#   2. Real Slurm + slurmrestd + sshd on 127.0.0.1 (ci/services-up.sh); stopped at exit when this run started them.
#   3. typecheck, lint, build, unit + integration (vitest), e2e in Chromium (vitest, one file at a time).
# Under CI=true a skip of anything this machine can run fails the run (tests/support/requirements.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
say() { printf 'test: %s\n' "$*" >&2; }

export LOUPE_TEST_ENV
LOUPE_TEST_ENV=$(mktemp)
started_services=0
cleanup() {
  local rc=$?
  rm -f "$LOUPE_TEST_ENV"
  if [ "$started_services" = 1 ]; then
    say "stopping the services this run started"
    bash ci/services-down.sh >/dev/null 2>&1 || true
  fi
  say "done in $(( $(date +%s) - t0 )) s (exit $rc)"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bash scripts/test-setup.sh
set -a
# shellcheck disable=SC1090
. "$LOUPE_TEST_ENV"
set +a

if bash ci/services-up.sh --check 2>/dev/null; then
  say "Slurm, slurmrestd and sshd already running: reusing them (left running afterwards)"
  bash ci/services-up.sh >/dev/null 2>&1  # rewrites the env file the connector tests read
elif [ "$(id -u)" -ne 0 ]; then
  say "Slurm, slurmrestd and sshd are not running and starting them needs root: run \`sudo bash ci/services-up.sh\` (and \`sudo bash ci/services-down.sh\` after), then npm test again"
  exit 1
else
  say "starting Slurm, slurmrestd and sshd (ci/services-up.sh)"
  started_services=1
  bash ci/services-up.sh >/dev/null
fi

# glibc's huge-page tunable for the suites (scripts/huge-pages.sh says why): the loupe-tiny test files took
# 319 + 233 + 85 s without it and 63 + 85 + 48 s with it on a 2-core VM. Nothing a test checks depends on it.
. scripts/huge-pages.sh

npm run typecheck
npm run lint
npm run build

# One vitest suite (npm run test:unit | test:e2e; its vitest config, if not the default, second). If a test worker
# process dies while no test has failed (vitest: "Worker exited unexpectedly": a file that then never ends, whether it
# died loading the file or after its tests) and vitest reports no other error, the files that did not end
# (tests/support/fileTrail.ts names each file as it starts and ends) run once more on their own and must pass; the
# death is reported either way, in a WARNING line. Any failed test or other error fails the run as before.
suite() {
  local script=$1 config=${2:-} log rc files
  log=$(mktemp)
  set +e
  npm run "$script" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  local plain
  plain=$(sed 's/\x1b\[[0-9;]*m//g' "$log")
  # only that one error: a worker that died, no failed test, no other unhandled error
  if [ "$rc" -ne 0 ] && grep -q "Worker exited unexpectedly" <<<"$plain" && ! grep -qE "^ *Tests .*[0-9]+ failed" <<<"$plain" \
    && grep -qE "^ *Errors +1 error" <<<"$plain"; then
    # shellcheck disable=SC2086
    files=$(comm -23 <(npx vitest list --filesOnly ${config:+--config "$config"} 2>/dev/null | sed 's/^\[[^]]*\] //' | sort -u) \
      <(awk '$1 == "files:" && $2 == "end" && $4 == "(passed)" { print $3 }' "$log" | sort -u))
    if [ -n "$files" ] && [ "$(echo "$files" | wc -l)" -le 3 ]; then
      say "a test worker died with no test failed; the file(s) that did not end: $(echo $files); running them again on their own"
      # shellcheck disable=SC2086
      npm run "$script" -- $files || { rm -f "$log"; return 1; }
      say "WARNING: a test worker died during the run in $(echo $files) (see above); on their own they passed"
      rc=0
    fi
  fi
  rm -f "$log"
  return "$rc"
}
suite test:unit
suite test:e2e vitest.e2e.config.ts
