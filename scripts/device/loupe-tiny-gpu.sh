#!/usr/bin/env bash
# loupe-tiny on one GPU machine, start to end, in the background (setsid) so it outlives the device call that starts it:
# data (scripts/device/datagen.ts through Loupe's own loop, on the CPU cores) → SFT (train.py) → RL (rl.py) → weights in
# fp16, split for the transfer limit. Progress: $W/status, logs in $W/*.log.
# RL_MIN=0 skips RL and its scenes. SEEDS / N_PER_SEED / VIDEO: the SFT data's seeds (default 1000-1599, 50 scenes and 1 video
# each). READ_MIN>0 adds a reading phase before SFT: pretrain_reading.py on READ_INIT for READ_MIN minutes with crops cut on
# the fly from the SFT data's scenes plus scenes-only seeds READ_SEEDS (made beside the SFT data on READ_WORKERS cores),
# written to $W/pre (then give TRAIN_ARGS="--init $W/pre ..."). READ_VIDEO: videos per scenes-only seed (for train.py's fresh
# video trajectories; the reading phase itself uses image scenes); READ_KINDS: their kinds, cycled (a kind named twice
# comes twice as often).
#   [SEEDS=A-B] [N_PER_SEED=50] [VIDEO=1] [READ_MIN=5 READ_INIT=DIR READ_SEEDS=A-B READ_N=50 READ_KINDS=ring-digits,tag-letter READ_VIDEO=0 READ_WORKERS=4 READ_ARGS=...] [SFT_SCENES=1] [WAIT_FOR=INIT/model.safetensors] [TRAIN_ARGS="--aux-target 1 ..."] [TRAIN_ARGS_B="... a second variant"] [WORKERS=16] bash scripts/device/loupe-tiny-gpu.sh W NODE_PACK.tar.xz DATA_SECONDS TRAIN_MINUTES RL_MINUTES
set -uo pipefail
W=${1:?work dir}; PACK=${2:?node pack}; DATA_S=${3:-600}; TRAIN_MIN=${4:-9}; RL_MIN=${5:-2.5}
mkdir -p "$W"
st() { echo "$(date +%T) $*" >> "$W/status"; }
# ship NAME DIR: DIR's weights (and auxiliary heads) in fp16 into $W/ship, split for the transfer limit
ship() {
  mkdir -p "$W/ship"
  python3 - "$W/ship" "$1" "$2" <<'PY'
import os, sys, torch
sys.path.insert(0, "models/loupe-tiny")
import qwen_torch as qt
out, name, d = sys.argv[1:]
for src, dst in (("model.safetensors", f"{name}.fp16.safetensors"), ("aux_heads.safetensors", f"{name}.aux.fp16.safetensors")):
    if os.path.exists(f"{d}/{src}"):
        qt.save_safetensors({k: v.half() for k, v in qt.load_safetensors(f"{d}/{src}").items()}, f"{out}/{dst}")
PY
  (cd "$W/ship" && for f in "$1".*safetensors; do [ -e "$f" ] && [ "$(stat -c %s "$f")" -gt 15728640 ] && { split -b 15M -d "$f" "$f.part"; rm "$f"; }; done; true)
}
st start
tar -C "$W" -xJf "$PACK" || { st "unpack failed"; exit 1; }
NODE="$W/node-pack/node"
TOK=models/tiny-random-qwen25vl
# RL and held-out scenes (kept with their images), then the SFT data until the deadline
# SFT_KINDS / RL_KINDS: the kinds of the prepared SFT data and of the RL scenes (default: the two reading kinds);
# RL_SEEDS / RL_EVAL_SEED: RL's training scenes and the scenes of its own greedy check (never the validation or test seeds)
RL_SEEDS=${RL_SEEDS:-7001-7002}; RL_EVAL_SEED=${RL_EVAL_SEED:-8}; RL_KINDS=${RL_KINDS:-ring-digits,tag-letter}
[ "$RL_MIN" != 0 ] && "$NODE" "$W/node-pack/datagen.mjs" --seeds "$RL_SEEDS" --n 50 --kinds "$RL_KINDS" --tokenizer $TOK --out "$W/rl" --workers 2 --keep-scenes > "$W/datagen-rl.log" 2>&1 &
[ "$RL_MIN" != 0 ] && "$NODE" "$W/node-pack/datagen.mjs" --seeds "$RL_EVAL_SEED" --n 40 --kinds "$RL_KINDS" --tokenizer $TOK --out "$W/heldout" --workers 1 --keep-scenes > "$W/datagen-heldout.log" 2>&1 &
st datagen
READ_MIN=${READ_MIN:-0}
NEED_SC=; { [ "$READ_MIN" != 0 ] || [ -n "${SFT_SCENES:-}" ]; } && NEED_SC=1
KEEP=(); [ -n "$NEED_SC" ] && KEEP=(--keep-scenes)
[ -n "$NEED_SC" ] && [ -n "${READ_SEEDS:-}" ] && "$NODE" "$W/node-pack/datagen.mjs" --seeds "$READ_SEEDS" --n "${READ_N:-50}" --kinds "${READ_KINDS:-ring-digits,tag-letter}" --tokenizer $TOK \
  --video "${READ_VIDEO:-0}" --out "$W/read" --workers "${READ_WORKERS:-4}" --deadline-s "$DATA_S" --scenes-only > "$W/datagen-read.log" 2>&1 &
"$NODE" "$W/node-pack/datagen.mjs" --seeds "${SEEDS:-1000-1599}" --n "${N_PER_SEED:-50}" --video "${VIDEO:-1}" --kinds "${SFT_KINDS:-ring-digits,tag-letter}" --tokenizer $TOK --out "$W/data" \
  --workers "${WORKERS:-18}" --deadline-s "$DATA_S" "${KEEP[@]}" > "$W/datagen.log" 2>&1
wait
st "datagen done: $(ls -d "$W"/data/prep-* 2>/dev/null | grep -vc "\.tmp") seeds"
# WAIT_FOR=PATH: weights for --init that a later device call carries (one call cannot carry them with the node pack)
if [ -n "${WAIT_FOR:-}" ]; then
  for _ in $(seq 300); do [ -e "$WAIT_FOR" ] && break; sleep 1; done
  [ -e "$WAIT_FOR" ] || { st "missing $WAIT_FOR"; exit 1; }
fi
# $W/read_min, $W/train_min: durations set after the start (a later call writes them once it knows the device budget)
[ -e "$W/read_min" ] && READ_MIN=$(cat "$W/read_min")
[ -e "$W/train_min" ] && TRAIN_MIN=$(cat "$W/train_min")
SC=$(ls -d "$W"/data/synth-* "$W"/read/synth-* 2>/dev/null | while read -r d; do [ -e "$d/samples.jsonl" ] && printf '%s,' "$d"; done)
if [ "$READ_MIN" != 0 ]; then
  st "reading: $(echo "$SC" | tr ',' '\n' | grep -c .) scene folders"
  python3 models/loupe-tiny/pretrain_reading.py --scenes "${SC%,}" --init "${READ_INIT:?READ_INIT}" --out "$W/pre" --minutes "$READ_MIN" \
    --workers 14 --save-crops 24 ${READ_ARGS:-} > "$W/pretrain-reading.log" 2>&1 || { st "reading failed"; exit 1; }
  ship pre "$W/pre"
  st "reading done"
fi
# SFT: up to two variants side by side on the one GPU (a 12 M model leaves it mostly idle), then RL on the one whose
# greedy first turns on held-out scenes hit the target most often (train.py's final/crop_hit).
train_one() {
  local name=$1; shift
  python3 models/loupe-tiny/train.py --data "$W/data" --out "$W/$name" --tok $TOK --device "${DEVICE:-cuda}" --minutes "$TRAIN_MIN" --bs 64 --lr 1e-3 \
    --export none --aug-flips --val-every 250 --log-every 25 --threads 4 --crop-eval 40 "$@" > "$W/train-$name.log" 2>&1 || st "train $name failed"
}
# SFT_SCENES=1: fresh zoom trajectories from the same scene folders every step (train.py --scenes)
SCN=(); [ -n "${SFT_SCENES:-}" ] && SCN=(--scenes "${SC%,}")
st "sft: ${#SCN[@]} scene args"
train_one sftA --arch v2 "${SCN[@]}" ${TRAIN_ARGS:-} &
[ -n "${TRAIN_ARGS_B:-}" ] && train_one sftB --arch v2 "${SCN[@]}" $TRAIN_ARGS_B &
wait
BEST=$(python3 - "$W" <<'PY'
import json, os, sys
w = sys.argv[1]
have = [(json.load(open(f"{w}/{n}/metrics.json"))["crop_eval"]["hit"], n) for n in ("sftA", "sftB") if os.path.exists(f"{w}/{n}/metrics.json")]
print(max(have)[1] if have else "")
PY
)
[ -n "$BEST" ] || { st "no SFT model"; exit 1; }
for n in sftA sftB; do [ -e "$W/$n/model.safetensors" ] && ship $n "$W/$n"; done
st "sft done: best $BEST"
if [ "$RL_MIN" != 0 ]; then
  RLS=$(ls -d "$W"/rl/synth-* | paste -sd,)
  python3 models/loupe-tiny/rl.py --model "$W/$BEST" --scenes "$RLS" --eval-scenes "$(ls -d "$W"/heldout/synth-* | head -1)" --eval-n 40 \
    --out "$W/rlout" --minutes "$RL_MIN" --steps 1000 --group 8 --scenes-per-step 4 --lr "${RL_LR:-3e-5}" ${RL_ARGS:-} --device cuda > "$W/rl.log" 2>&1 || st "rl failed"
  ship rl "$W/rlout/model"
  st "rl done"
fi
cd "$W" && tar -czf ship/logs.tgz status *.log sft?/metrics.json sft?/curves.png sft?/config.json rlout/metrics.jsonl rlout/curves.png rlout/samples.jsonl \
  pre/metrics.json pre/crops 2>/dev/null
st "shipped: $(ls "$W/ship" | tr '\n' ' ')"
