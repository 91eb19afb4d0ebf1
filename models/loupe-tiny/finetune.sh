#!/usr/bin/env bash
# The loupe-tiny local fine-tune in three phases, as the Training page's "loupe-tiny · local fine-tune" job runs it:
#   [1/3] synth    `loupe synth` scenes from a seed (skipped with --data)
#   [2/3] prepare  models/loupe-tiny/prepare.ts: each trajectory replayed through Loupe's agent loop (skipped with --data)
#   [3/3] train    models/loupe-tiny/train.py (plain torch; CPU is fine), verl console metric lines on stdout
# then `LOUPE_CHECKPOINT: OUT` (the Training page offers it for evaluation) and, when ONNX was exported,
# `LOUPE_MODEL: OUT` (a Loupe model folder the Models page can add).
#
#   bash models/loupe-tiny/finetune.sh --init MODEL_DIR --out OUT_DIR (--data DIR[,DIR...] | --seed S --scenes N)
#        [--work DIR] [--device cpu|cuda|auto] [--max-steps N] [--minutes M] [--bs B] [--lr LR] [--val-every K]
#        [--log-every K] [--export none|q8|fp32,q8] [--recipe plain|grounded] [--reading 0|1] [--train-args "..."]
#
# --recipe plain     (default) the language-model loss only
# --recipe grounded  adds train.py's training-only grounding signals: --aug-flips --aux-target 1 --aux-pos 3 --aux-attn 1
#                    --aux-attn-layer 2 --aux-read 10 --box-weight 3 --first-turns 2 (needs a model with ≥ 3 text layers)
# --reading 1        adds the reading signals --aux-glyph 1 --aux-attn2 1 (default 0: off; the reading pointer also
#                    sits on text layer 2 unless --train-args gives another --aux-attn-layer); with synthesized data
#                    also --scenes SYNTH --scene-frac 0.5 --aux-digit 1: half of every batch are zoom trajectories
#                    built afresh from the scenes (scene_traj.py), with the glyph pointer on their reading turns (each
#                    digit said attends to that digit in the crop; text layer: the second to last), the recipe that
#                    taught the shipped model to read
# --train-args "…"   extra train.py flags for experts, split on spaces and appended last (so they override the above)
#
# Relative paths are taken against the current directory. Python: $LOUPE_PYTHON if set, else the first of python3,
# /usr/bin/python3 that can import torch.
set -euo pipefail

die() {
  echo "loupe-tiny: $*" >&2
  exit 2
}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
abspath() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }

init='' out='' data='' seed='' scenes='' work='' device=cpu max_steps='' minutes='' bs=4 lr='' val_every='' log_every=1 export_=none
recipe=plain reading=0 train_args=''
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1 needs a value"
  case "$1" in
    --init) init=$2 ;;
    --out) out=$2 ;;
    --data) data=$2 ;;
    --seed) seed=$2 ;;
    --scenes) scenes=$2 ;;
    --work) work=$2 ;;
    --device) device=$2 ;;
    --max-steps) max_steps=$2 ;;
    --minutes) minutes=$2 ;;
    --bs) bs=$2 ;;
    --lr) lr=$2 ;;
    --val-every) val_every=$2 ;;
    --log-every) log_every=$2 ;;
    --export) export_=$2 ;;
    --recipe) recipe=$2 ;;
    --reading) reading=$2 ;;
    --train-args) train_args=$2 ;;
    *) die "unknown option $1 (see the header of models/loupe-tiny/finetune.sh)" ;;
  esac
  shift 2
done

# ── check the inputs before anything slow runs ──
[ -n "$init" ] || die "give --init MODEL_DIR (the model to start from)"
[ -n "$out" ] || die "give --out OUT_DIR"
init=$(abspath "$init")
out=$(abspath "$out")
[ -d "$init" ] || die "base model folder $init does not exist"
[ -f "$init/config.json" ] || die "base model folder $init has no config.json (expected a loupe-tiny model folder: config.json, model.safetensors, tokenizer files)"
fresh=0
if [ ! -f "$init/model.safetensors" ]; then
  # the committed loupe-tiny ships ONNX only (its weights are not trainable from there): start from a fresh model of
  # the same architecture and tokenizer, and say so
  fresh=1
  echo "note: $init has no model.safetensors, so training starts from a fresh (random) model of its config.json"
fi
[ -f "$init/tokenizer.json" ] || die "base model folder $init has no tokenizer.json"
case "$device" in cpu | cuda | auto) ;; *) die "--device must be cpu, cuda or auto (got $device)" ;; esac
case "$recipe" in plain | grounded) ;; *) die "--recipe must be plain or grounded (got $recipe)" ;; esac
case "$reading" in 0 | 1) ;; *) die "--reading must be 0 or 1 (got $reading)" ;; esac
[[ "$train_args" != *$'\n'* && "$train_args" != *$'\r'* ]] || die "--train-args must be one line (extra train.py flags separated by spaces)"
extra=()
IFS=' ' read -r -a extra <<<"$train_args"
if [ -n "$data" ]; then
  dirs=()
  IFS=',' read -r -a given <<<"$data"
  for d in "${given[@]}"; do
    [ -n "$d" ] || continue
    d=$(abspath "$d")
    [ -f "$d/manifest.jsonl" ] || die "prepared data folder $d has no manifest.jsonl (make one with models/loupe-tiny/prepare.ts, or leave data empty to synthesize scenes)"
    dirs+=("$d")
  done
  [ ${#dirs[@]} -gt 0 ] || die "--data names no folder"
else
  [[ "$seed" =~ ^[0-9]+$ ]] || die "give --seed S (a whole number) and --scenes N, or --data DIR"
  [[ "$scenes" =~ ^[1-9][0-9]*$ ]] || die "give --scenes N (a whole number > 0), or --data DIR"
fi

py=''
if [ -n "${LOUPE_PYTHON:-}" ]; then
  "$LOUPE_PYTHON" -c 'import torch' 2>/dev/null || die "LOUPE_PYTHON=$LOUPE_PYTHON cannot import torch: needs Python 3 with torch (pip install torch, or apt install python3-torch)"
  py=$LOUPE_PYTHON
else
  for c in python3 /usr/bin/python3; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import torch' 2>/dev/null; then
      py=$c
      break
    fi
  done
  [ -n "$py" ] || die "needs Python 3 with torch (pip install torch, or apt install python3-torch); tried python3, /usr/bin/python3 (set LOUPE_PYTHON to choose another)"
fi
echo "loupe-tiny: python $(command -v "$py") · torch $("$py" -c 'import torch; print(torch.__version__)') · device $device"

# prepare.ts encodes with the local engine's runtime, which loads the fp32 ONNX files of the tokenizer folder. A
# folder without them (loupe-tiny ships q8 only) borrows models/tiny-random-qwen25vl, whose tokenizer is the same file.
tok=$init
if [ -z "$data" ] && [ ! -f "$init/onnx/embed_tokens.onnx" ]; then
  alt="$repo/models/tiny-random-qwen25vl"
  if [ -f "$alt/onnx/embed_tokens.onnx" ] && cmp -s "$init/tokenizer.json" "$alt/tokenizer.json"; then
    tok=$alt
  else
    die "$init has no fp32 ONNX files (onnx/embed_tokens.onnx…), which prepare.ts needs to encode the data, and its tokenizer differs from models/tiny-random-qwen25vl's; give prepared data (--data) instead"
  fi
fi

work=$(abspath "${work:-${out%/}-data}")  # default: beside the output folder
mkdir -p "$work" "$out"
t0=$SECONDS

# ── data ──
if [ -z "$data" ]; then
  synth="$work/synth-s$seed-n$scenes"
  prep="$work/prepared-s$seed-n$scenes"
  echo "[1/3] synth: $scenes scenes, seed $seed, kinds ring-digits,tag-letter → $synth"
  (cd "$repo" && node bin/loupe.mjs synth --seed "$seed" --n "$scenes" --kinds ring-digits,tag-letter --out "$synth") || die "the synth phase failed (exit $?); see the lines above"
  echo "[2/3] prepare: replaying each trajectory through Loupe's agent loop → $prep"
  rm -rf "$prep"
  (cd "$repo" && node --import tsx models/loupe-tiny/prepare.ts --data "$synth" --out "$prep" --tokenizer "$tok") || die "the prepare phase failed (exit $?); see the lines above"
  [ -s "$prep/manifest.jsonl" ] || die "prepare wrote no trajectories to $prep"
  echo "[2/3] prepare: $(wc -l <"$prep/manifest.jsonl") trajectories ($((SECONDS - t0)) s so far)"
  data_arg=$prep
else
  echo "[1/3] synth: skipped (prepared data given)"
  echo "[2/3] prepare: skipped; using ${dirs[*]} ($(cat "${dirs[@]/%//manifest.jsonl}" | wc -l) trajectories)"
  data_arg=$(IFS=','; printf '%s' "${dirs[*]}")
fi

# ── train ──
if [ "$fresh" = 1 ]; then from=(--fresh-from "$init" --tok "$init"); else from=(--init "$init"); fi
args=(--data "$data_arg" "${from[@]}" --out "$out" --device "$device" --bs "$bs" --log-every "$log_every" --export "$export_")
[ "$reading" = 1 ] && [ -z "$data" ] && args+=(--scenes "$synth" --scene-frac 0.5 --aux-digit 1)
[ -n "$max_steps" ] && args+=(--max-steps "$max_steps")
[ -n "$minutes" ] && args+=(--minutes "$minutes")
[ -n "$lr" ] && args+=(--lr "$lr")
[ -n "$val_every" ] && args+=(--val-every "$val_every")
if [ "$recipe" = grounded ]; then
  args+=(--aug-flips --aux-target 1 --aux-pos 3 --aux-attn 1 --aux-attn-layer 2 --aux-read 10 --box-weight 3 --first-turns 2)
fi
[ "$reading" = 1 ] && args+=(--aux-glyph 1 --aux-attn2 1)
args+=(${extra[@]+"${extra[@]}"})  # (this form: bash 3.2 calls an empty array unbound)
# glibc's huge-page tunable for the trainer (scripts/huge-pages.sh says why; a value the user set is kept)
if [ -f "$repo/scripts/huge-pages.sh" ]; then . "$repo/scripts/huge-pages.sh"; fi
echo "[3/3] train: $py models/loupe-tiny/train.py ${args[*]}"
(cd "$repo" && PYTHONUNBUFFERED=1 "$py" models/loupe-tiny/train.py "${args[@]}") || die "the train phase failed (exit $?); see the lines above"
echo "[3/3] train: finished in $((SECONDS - t0)) s (all phases)"

echo "LOUPE_CHECKPOINT: $out"
if ls "$out"/onnx/*.onnx >/dev/null 2>&1; then
  echo "LOUPE_MODEL: $out"
  echo "loupe-tiny: ONNX files in $out/onnx: add the folder under Models to chat with it or evaluate it"
else
  echo "loupe-tiny: no ONNX export in $out (export was $export_): the PyTorch weights are there; the Models page needs ONNX"
fi
