#!/usr/bin/env bash
# What `npm test` needs before its first test, provisioned idempotently (a second run installs nothing):
#   - Debian packages: chromium + a font (e2e in real Chromium), python3 with torch, numpy, Pillow, regex, matplotlib
#     (loupe-tiny's trainer and RL environment, the Pillow-parity tests, the PyVision sandbox), bubblewrap (the
#     sandbox's network isolation), and what ci/services-up.sh needs for real Slurm, slurmrestd and sshd.
#     As root they are installed with apt-get; otherwise this stops at once and prints the exact command to run.
#   - A Python that imports every module the tests use (LOUPE_PYTHON if set, else python3, else /usr/bin/python3):
#     the one found is written to $LOUPE_TEST_ENV as LOUPE_PYTHON=... for scripts/test.sh to export.
# Exit 0: ready. Exit 1: one line saying what is missing and what to run.
set -euo pipefail
cd "$(dirname "$0")/.."

PY_MODULES=(torch numpy PIL regex matplotlib)
declare -A DEBIAN_OF=([torch]=python3-torch [numpy]=python3-numpy [PIL]=python3-pil [regex]=python3-regex [matplotlib]=python3-matplotlib)

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
fc-list 2>/dev/null | grep -qi dejavu || need+=(fonts-dejavu-core)
command -v bwrap >/dev/null || need+=(bubblewrap)
# ci/services-up.sh's own list (kept in one place: it prints it with --packages).
read -r -a svc <<<"$(bash ci/services-up.sh --packages)"
need+=("${svc[@]}")

find_python() {
  local py
  for py in ${LOUPE_PYTHON:-} python3 /usr/bin/python3; do
    if "$py" -c "import $(IFS=,; echo "${PY_MODULES[*]}")" >/dev/null 2>&1; then echo "$py"; return 0; fi
  done
  return 1
}
if ! python=$(find_python); then
  # Debian's python3 gets the Debian packages; a python3 elsewhere on PATH (pyenv, conda) keeps its own.
  for m in "${PY_MODULES[@]}"; do
    /usr/bin/python3 -c "import $m" >/dev/null 2>&1 || need+=("${DEBIAN_OF[$m]}")
  done
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test-setup: missing Debian packages; run: sudo apt-get install -y --no-install-recommends ${need[*]}" >&2
    exit 1
  fi
  echo "test-setup: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! python=$(find_python); then
  echo "test-setup: no Python imports ${PY_MODULES[*]} (tried ${LOUPE_PYTHON:+$LOUPE_PYTHON, }python3, /usr/bin/python3); set LOUPE_PYTHON to one that does" >&2
  exit 1
fi
if [ -n "${LOUPE_TEST_ENV:-}" ]; then
  printf 'LOUPE_PYTHON=%s\n' "$(command -v "$python")" >"$LOUPE_TEST_ENV"
fi
echo "test-setup: ready (python: $(command -v "$python"))" >&2
