#!/usr/bin/env bash
# loupe-tiny on one GPU machine, start to end, in the background (setsid) so it outlives the device call that starts it:
# data (scripts/device/datagen.ts through Loupe's own loop, on the CPU cores) → SFT (train.py) → RL (rl.py) → weights in
# fp16, split for the transfer limit. Progress: $W/status, logs in $W/*.log.
# RL_MIN=0 skips RL and its scenes. SEEDS / N_PER_SEED: the SFT data's seeds (default 1000-1599, 50 scenes each).
#   [SEEDS=A-B] [N_PER_SEED=50] [WAIT_FOR=INIT/model.safetensors] [TRAIN_ARGS="--aux-target 1 ..."] [TRAIN_ARGS_B="... a second variant"] [WORKERS=16] bash scripts/device/loupe-tiny-gpu.sh W NODE_PACK.tar.xz DATA_SECONDS TRAIN_MINUTES RL_MINUTES
set -uo pipefail
W=${1:?work dir}; PACK=${2:?node pack}; DATA_S=${3:-600}; TRAIN_MIN=${4:-9}; RL_MIN=${5:-2.5}
mkdir -p "$W"
st() { echo "$(date +%T) $*" >> "$W/status"; }
st start
tar -C "$W" -xJf "$PACK" || { st "unpack failed"; exit 1; }
NODE="$W/node-pack/node"
TOK=models/tiny-random-qwen25vl
# RL and held-out scenes (kept with their images), then the SFT data until the deadline
[ "$RL_MIN" != 0 ] && "$NODE" "$W/node-pack/datagen.mjs" --seeds 7001-7002 --n 50 --kinds ring-digits,tag-letter --tokenizer $TOK --out "$W/rl" --workers 2 --keep-scenes > "$W/datagen-rl.log" 2>&1 &
[ "$RL_MIN" != 0 ] && "$NODE" "$W/node-pack/datagen.mjs" --seeds 8 --n 40 --kinds ring-digits,tag-letter --tokenizer $TOK --out "$W/heldout" --workers 1 --keep-scenes > "$W/datagen-heldout.log" 2>&1 &
st datagen
"$NODE" "$W/node-pack/datagen.mjs" --seeds "${SEEDS:-1000-1599}" --n "${N_PER_SEED:-50}" --video 1 --kinds ring-digits,tag-letter --tokenizer $TOK --out "$W/data" \
  --workers "${WORKERS:-18}" --deadline-s "$DATA_S" > "$W/datagen.log" 2>&1
wait
st "datagen done: $(ls -d "$W"/data/prep-* 2>/dev/null | grep -vc "\.tmp") seeds"
# WAIT_FOR=PATH: weights for --init that a later device call carries (one call cannot carry them with the node pack)
if [ -n "${WAIT_FOR:-}" ]; then
  for _ in $(seq 300); do [ -e "$WAIT_FOR" ] && break; sleep 1; done
  [ -e "$WAIT_FOR" ] || { st "missing $WAIT_FOR"; exit 1; }
fi
# SFT: up to two variants side by side on the one GPU (a 12 M model leaves it mostly idle), then RL on the one whose
# greedy first turns on held-out scenes hit the target most often (train.py's final/crop_hit).
train_one() {
  local name=$1; shift
  python3 models/loupe-tiny/train.py --data "$W/data" --out "$W/$name" --tok $TOK --device cuda --minutes "$TRAIN_MIN" --bs 64 --lr 1e-3 \
    --export none --aug-flips --val-every 250 --log-every 25 --threads 4 --crop-eval 40 "$@" > "$W/train-$name.log" 2>&1 || st "train $name failed"
}
train_one sftA --arch v2 ${TRAIN_ARGS:-} &
[ -n "${TRAIN_ARGS_B:-}" ] && train_one sftB --arch v2 $TRAIN_ARGS_B &
wait
BEST=$(python3 - "$W" <<'PY'
import json, os, sys
w = sys.argv[1]
have = [(json.load(open(f"{w}/{n}/metrics.json"))["crop_eval"]["hit"], n) for n in ("sftA", "sftB") if os.path.exists(f"{w}/{n}/metrics.json")]
print(max(have)[1] if have else "")
PY
)
[ -n "$BEST" ] || { st "no SFT model"; exit 1; }
st "sft done: best $BEST"
if [ "$RL_MIN" != 0 ]; then
  python3 models/loupe-tiny/rl.py --model "$W/$BEST" --scenes "$W/rl/synth-7001,$W/rl/synth-7002" --eval-scenes "$W/heldout/synth-8" --eval-n 40 \
    --out "$W/rlout" --minutes "$RL_MIN" --steps 1000 --group 8 --scenes-per-step 4 --lr 3e-5 --device cuda > "$W/rl.log" 2>&1 || st "rl failed"
  st "rl done"
fi
mkdir -p "$W/ship"
python3 - "$W" <<'PY'
import os, sys, torch
sys.path.insert(0, "models/loupe-tiny")
import qwen_torch as qt
w = sys.argv[1]
for name, d in (("sftA", f"{w}/sftA"), ("sftB", f"{w}/sftB"), ("rl", f"{w}/rlout/model")):
    if os.path.exists(f"{d}/model.safetensors"):
        sd = qt.load_safetensors(f"{d}/model.safetensors")
        qt.save_safetensors({k: v.half() for k, v in sd.items()}, f"{w}/ship/{name}.fp16.safetensors")
PY
cd "$W/ship" && for f in *.safetensors; do split -b 15M -d "$f" "$f.part"; rm "$f"; done
cd "$W" && tar -czf ship/logs.tgz status *.log sft?/metrics.json sft?/curves.png sft?/config.json rlout/metrics.jsonl rlout/curves.png rlout/samples.jsonl 2>/dev/null
st "shipped: $(ls "$W/ship" | tr '\n' ' ')"
