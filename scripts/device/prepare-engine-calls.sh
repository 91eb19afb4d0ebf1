#!/usr/bin/env bash
# Everything the GPU machine's engine runs need, made and checked here before any device time is spent
# (models/reports/CUDA-EP.md, "Device recipe"):
#   - onnxruntime-node 1.29 + its CUDA provider, sm_90 only (pack-cuda-ep.sh; made once, reused while present),
#   - the node pack without onnxruntime's own libraries (pack-node.sh --no-ort; rebuilt every time: it bundles the
#     engine code of this checkout),
#   - tools.tar.xz: this checkout's models/*.py, the tiny random model and scripts/device/ (the scripts the device
#     runs, in this checkout's version even where the tree that travels is another checkout),
# then measures the tree that travels and splits all of it into call folders that fit (carry.py plan), printing each
# call's `carry` path and first command.
#
#   bash scripts/device/prepare-engine-calls.sh [--repo CHECKOUT] [--name NAME] [--assume-moved PATH]... [--max-call-mib N] [--reserve-mib N]
#
# --repo: the checkout whose tree the device tool sends (default: this one); the packs go to its .device-carry/NAME/
# (NAME: engine unless --name says otherwise).
# --assume-moved PATH: a tracked folder you will move out of that checkout for the calls (and back after them); or
# set such folders aside first with `bash scripts/device/tree-aside.sh out PATH...` (out of the tree and the index,
# `tree-aside.sh back` after the last call), and the plan measures the tree without them.
# XZ_LEVEL=-1 compresses faster on a busy machine (larger packs); the default is -9.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
repo=$here
name=engine
plan_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name=${2:?--name needs a folder name}; shift 2 ;;
    --repo) repo=$(cd "${2:?--repo needs a folder}" && pwd); shift 2 ;;
    --assume-moved|--max-call-mib|--reserve-mib) plan_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    *) echo "usage: prepare-engine-calls.sh [--repo CHECKOUT] [--name NAME] [--assume-moved PATH]... [--max-call-mib N] [--reserve-mib N]" >&2; exit 2 ;;
  esac
done
D=$repo/.device-carry/$name
mkdir -p "$D/payload"
cd "$here"
[ -f "$D/cuda-ep-sm90/ort129.tar.xz" ] && [ -f "$D/cuda-ep-sm90/SHA256SUMS" ] \
  && (cd "$D/cuda-ep-sm90" && grep ' ort129.tar.xz$' SHA256SUMS | sha256sum -c --quiet -) \
  || bash scripts/device/pack-cuda-ep.sh "$D/cuda-ep-sm90" --sm 90
bash scripts/device/pack-node.sh "$D/payload/node-pack.tar.xz" --no-ort
tar -cJf "$D/payload/tools.tar.xz" models/*.py models/tiny-random-qwen25vl scripts/device
# the node pack must hold what the calls run
for f in node engine-bench.mjs served-engine.mjs loupe.mjs dist/workers/engine.cjs; do
  tar -tJf "$D/payload/node-pack.tar.xz" "node-pack/$f" >/dev/null || { echo "node-pack.tar.xz lacks node-pack/$f" >&2; exit 1; }
done
python3 scripts/device/carry.py plan "$D/calls" --repo "$repo" "${plan_args[@]}" \
  "$D/payload/tools.tar.xz" "$D/payload/node-pack.tar.xz" "$D/cuda-ep-sm90/SHA256SUMS" "$D/cuda-ep-sm90/ort129.tar.xz"
cat <<EOF
Then, back to back (the device keeps /tmp while it stays warm, about 30 s after a call):
  call 1 (carry its folder): python3 .device-carry/$name/calls/call-1/carry.py in /tmp/loupe-carry && mkdir -p /tmp/wt && tar -C /tmp/wt -xJf /tmp/loupe-carry/tools.tar.xz && bash /tmp/wt/scripts/device/gpu-engine-calls.sh setup
  call 2 (carry its folder): python3 .device-carry/$name/calls/call-2/carry.py in /tmp/loupe-carry && bash /tmp/wt/scripts/device/gpu-engine-calls.sh assemble && bash /tmp/wt/scripts/device/gpu-engine-calls.sh served
  later calls (no carry):    bash /tmp/wt/scripts/device/gpu-engine-calls.sh bench05 | bench7b | status
EOF
