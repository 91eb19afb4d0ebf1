#!/usr/bin/env bash
# After datagen: wait for every datagen.mjs to finish, SFT for TRAIN_MIN minutes, then the weights in fp16 split for the
# transfer limit + logs into $W/ship. Progress in $W/status.
#   bash scripts/device/loupe-tiny-train-ship.sh W TRAIN_MIN
set -uo pipefail
W=${1:?work dir}; TRAIN_MIN=${2:-8}
st() { echo "$(date +%T) $*" >> "$W/status"; }
while pgrep -f "node-pack/[d]atagen.mjs" >/dev/null; do sleep 5; done
st "datagen done: $(ls "$W"/data/*/manifest.jsonl 2>/dev/null | wc -l) seeds"
python3 models/loupe-tiny/train.py --data "$W/data" --out "$W/sft" --arch v2 --tok models/tiny-random-qwen25vl --device cuda --minutes "$TRAIN_MIN" \
  --bs 64 --lr 1e-3 --export none --aug-flips --val-every 250 --log-every 25 > "$W/train.log" 2>&1 || { st "train failed"; exit 1; }
st "sft done"
mkdir -p "$W/ship"
python3 - "$W" <<'PY'
import os, sys
sys.path.insert(0, "models/loupe-tiny")
import qwen_torch as qt
w = sys.argv[1]
sd = qt.load_safetensors(f"{w}/sft/model.safetensors")
qt.save_safetensors({k: v.half() for k, v in sd.items()}, f"{w}/ship/sft.fp16.safetensors")
PY
(cd "$W/ship" && split -b 15M -d sft.fp16.safetensors sft.fp16.safetensors.part && rm sft.fp16.safetensors)
(cd "$W" && tar -czf ship/logs.tgz status *.log sft/metrics.json sft/curves.png sft/config.json)
st "shipped: $(ls "$W/ship" | tr '\n' ' ')"
