#!/usr/bin/env bash
# Stop what ci/services-up.sh started and remove its env file. Safe to run when nothing is up.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export SLURM_CI_DIR=${SLURM_CI_DIR:-/tmp/slurm-ci}
export SSHD_CI_DIR=${SSHD_CI_DIR:-/tmp/sshd-ci}
ENV_FILE=${LOUPE_CI_ENV:-${TMPDIR:-/tmp}/loupe-ci/services.env}
[ -d "$SLURM_CI_DIR" ] && bash "$HERE/slurm-local.sh" down
[ -d "$SSHD_CI_DIR" ] && bash "$HERE/sshd-local.sh" down
rm -f "$ENV_FILE"
echo "services-down: done"
