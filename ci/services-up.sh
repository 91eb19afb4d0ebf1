#!/usr/bin/env bash
# Start the real services the connector integration tests use: Slurm (slurmctld+slurmd), slurmrestd (JWT)
# and an sshd on 127.0.0.1. Idempotent: when everything already answers it only rewrites the env file.
# Prints the env vars and writes them to $LOUPE_CI_ENV (default: $TMPDIR/loupe-ci/services.env), which
# tests/integration/connectors/* read. Run as root (installs apt packages when missing).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export SLURM_CI_DIR=${SLURM_CI_DIR:-/tmp/slurm-ci}
export SSHD_CI_DIR=${SSHD_CI_DIR:-/tmp/sshd-ci}
export SLURM_REST_PORT=${SLURM_REST_PORT:-6820}
export SSHD_PORT=${SSHD_PORT:-2222}
ENV_FILE=${LOUPE_CI_ENV:-${TMPDIR:-/tmp}/loupe-ci/services.env}

need_pkgs=()
command -v slurmrestd >/dev/null || need_pkgs+=(munge slurmctld slurmd slurm-client slurmrestd)
# auth_jwt.so ships only in slurm-wlm-jwt-plugin; without it `scontrol token` fails.
dpkg -s slurm-wlm-jwt-plugin >/dev/null 2>&1 || need_pkgs+=(slurm-wlm-jwt-plugin)
[ -x /usr/sbin/sshd ] || need_pkgs+=(openssh-server)
command -v ssh >/dev/null || need_pkgs+=(openssh-client)
command -v curl >/dev/null || need_pkgs+=(curl)
command -v jq >/dev/null || need_pkgs+=(jq)
slurm_ok() {
  [ -s "$SLURM_CI_DIR/token" ] || return 1
  [ "$(SLURM_CONF=$SLURM_CI_DIR/slurm.conf sinfo -h -o %T 2>/dev/null)" = idle ] || \
    [ "$(SLURM_CONF=$SLURM_CI_DIR/slurm.conf sinfo -h -o %T 2>/dev/null)" = mixed ] || \
    [ "$(SLURM_CONF=$SLURM_CI_DIR/slurm.conf sinfo -h -o %T 2>/dev/null)" = allocated ] || return 1
  curl -sf -o /dev/null -H "X-SLURM-USER-NAME: slurmrest" -H "X-SLURM-USER-TOKEN: $(cat "$SLURM_CI_DIR/token")" \
    "http://127.0.0.1:$SLURM_REST_PORT/slurm/v0.0.38/ping"
}
sshd_ok() {
  [ -s "$SSHD_CI_DIR/id_ed25519" ] && [ -s "$SSHD_CI_DIR/known_hosts" ] || return 1
  ssh -p "$SSHD_PORT" -i "$SSHD_CI_DIR/id_ed25519" -o UserKnownHostsFile="$SSHD_CI_DIR/known_hosts" \
    -o BatchMode=yes -o ConnectTimeout=3 root@127.0.0.1 true 2>/dev/null
}

# --check: exit 0 when Slurm, slurmrestd and sshd all answer (nothing is installed, started or written).
if [ "${1:-}" = --check ]; then slurm_ok && sshd_ok; exit; fi

# --packages: print the missing Debian packages (space-separated, maybe nothing) and stop: scripts/test-setup.sh
# installs them with everything else the tests need.
if [ "${1:-}" = --packages ]; then echo "${need_pkgs[*]}"; exit 0; fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "services-up: installing ${need_pkgs[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if slurm_ok; then echo "services-up: slurm already up" >&2
else
  # A half-started cluster (e.g. munged alive, slurmctld dead) would make `up` fail: clear it first.
  bash "$HERE/slurm-local.sh" down >/dev/null 2>&1 || true
  bash "$HERE/slurm-local.sh" up >&2
fi
if sshd_ok; then echo "services-up: sshd already up" >&2
else
  bash "$HERE/sshd-local.sh" down >/dev/null 2>&1 || true
  bash "$HERE/sshd-local.sh" up >&2
fi
slurm_ok || { echo "services-up: slurm did not come up; logs:" >&2; tail -n 20 "$SLURM_CI_DIR"/log/*.log >&2 || true; exit 1; }
sshd_ok || { echo "services-up: sshd did not come up; log:" >&2; tail -n 20 "$SSHD_CI_DIR/sshd.log" >&2 || true; exit 1; }

mkdir -p "$(dirname "$ENV_FILE")"
cat > "$ENV_FILE.tmp" <<ENVEOF
LOUPE_SLURM_CONF=$SLURM_CI_DIR/slurm.conf
LOUPE_SLURM_JOBS_DIR=$SLURM_CI_DIR/jobs
LOUPE_SLURM_PARTITION=debug
LOUPE_SLURM_REST_URL=http://127.0.0.1:$SLURM_REST_PORT
LOUPE_SLURM_REST_USER=slurmrest
LOUPE_SLURM_REST_TOKEN_FILE=$SLURM_CI_DIR/token
LOUPE_SSH_HOST=127.0.0.1
LOUPE_SSH_PORT=$SSHD_PORT
LOUPE_SSH_USER=root
LOUPE_SSH_KEY=$SSHD_CI_DIR/id_ed25519
LOUPE_SSH_KNOWN_HOSTS=$SSHD_CI_DIR/known_hosts
ENVEOF
mv "$ENV_FILE.tmp" "$ENV_FILE"
cat "$ENV_FILE"
echo "LOUPE_CI_ENV=$ENV_FILE"
