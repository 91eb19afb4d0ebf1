#!/usr/bin/env bash
# The GPU machine's side of the local-engine measurements (models/reports/CUDA-EP.md, "Device recipe"): one step per
# device call, run back to back while the machine stays warm. Everything lives under /tmp there (the repository copy
# is replaced at every call); results go to $OUT.
#
#   bash /tmp/wt/scripts/device/gpu-engine-calls.sh STEP
#
# The first call unpacks what scripts/device/carry.py brought (/tmp/loupe-carry: node-pack.tar.xz, tools.tar.xz,
# ort129.tar.xz + SHA256SUMS once complete). Steps:
#   setup     (DTYPES05=fp16: export the 0.5B in fp16 only; ONLY=7b: no 0.5B; ONLY=0.5b: no 7B; SKIP7B_BENCH=1: the 7B export alone) unpack the node pack to /tmp/np and the tools (this checkout's models/ and scripts/) to /tmp/wt, then
#             start, detached (it outlives the call), the fp16/fp32 ONNX export of the random 0.5B, then the PyTorch
#             reference and fp16 ONNX export of the random 7B: logs and reports in /tmp/r
#   assemble  put onnxruntime-node 1.29 + its CUDA provider into /tmp/np (cuda-ep-assemble.sh); /tmp/ld.sh exports
#             LD_LIBRARY_PATH for node
#   served    issue #29: the served-engine launcher starts `loupe serve-model --device cuda` for a random Qwen2.5-VL,
#             one trajectory and a 20-sample sweep run through it
#   bench05   the random 0.5B on CUDA: decode through model.forward (--no-kv-reuse) and through reused KV buffers
#   bench7b   the random 7B on CUDA, fp16: the same pair, onnxruntime profiles of both, logits of 32 steps compared
#             with PyTorch (models/logits_compare.py), then PyTorch eager/sdpa again on the same card
#   fused05   issue #25's fused decoder on the random 0.5B, fp16: `loupe convert --fused`, then the exported and the
#             fused decoder interleaved (two rounds), their logits of 32 steps compared
#   fused7b   the same on the random 7B, fp16, in one call: exported, fused, an onnxruntime profile of the fused one,
#             fused logits against exported and against PyTorch (logits_compare.py), then PyTorch eager/sdpa again
#             (FIRST=7b: export the 7B before the 0.5B)
#   wait7b    wait (WAIT_S, default 540 s) for the detached 7B export
#   attn7b    the fused decoder's attention variants (convert --fused-attention ops|mha|gqa, ATTN picks), the exported
#             decoder and PyTorch eager/sdpa on the random 7B in one call, each engine run warmed up with WARMUP
#             (default 128) tokens; logits of each variant against the exported decoder's
#   attn7b-check  one variant (ATTN, default ops): an onnxruntime profile, its logits against PyTorch fp32
#   loop7b    issue #25's decode loop on the random 7B, fp16, one call: `convert --fused` without the decode loop
#             (--no-decode-loop), with it (ops attention) and with it on GroupQueryAttention (VARIANTS picks), interleaved over two rounds (WARMUP tokens first, default 128), their greedy tokens
#             compared, an onnxruntime profile of the loop, then PyTorch eager/sdpa on the same card, then (LOGITS=1, the
#             default) the loop graph's logits for 32 steps against PyTorch fp32 (models/logits_compare.py)
#   gqa-first the GroupQueryAttention loop's first-time-per-KV-length cost under node environment settings and onnxruntime
#             session options (VARIANTS; MODEL=0.5b for the random 0.5B)
#   gqa-plan  no GPU: the variants gqa-first would run, each as its node environment and session options
#   logits7b  only that logits comparison (after loop7b with LOGITS=0, when one call cannot hold both; LOOP=loop-gqa:
#             the GroupQueryAttention loop's)
#   loop05    the same pair on the random 0.5B (fp16) beside the exported decoder: the 0.5B before/after
#   status    what the detached jobs have done so far
set -uo pipefail
step=${1:?usage: gpu-engine-calls.sh setup|assemble|served|bench05|bench7b|fused05|fused7b|wait7b|attn7b|attn7b-check|loop7b|gqa-first|gqa-plan|logits7b|loop05|status}
# LOUPE_WT / LOUPE_R move the tools and logs folders (for the script's own test here; the device uses the defaults)
C=/tmp/loupe-carry NP=/tmp/np/node-pack WT=${LOUPE_WT:-/tmp/wt} R=${LOUPE_R:-/tmp/r}
OUT=${OUT:-/tmp/out}
# Each call runs in a fresh copy of the repository, while $WT holds the scripts and Python that tools.tar.xz brought at
# call 1. Where this call's copy differs (a script edited after the packs were made), refresh $WT from it and run the
# refreshed script, so no step runs stale code: the 2026-12-07 lease ran an onnxruntime profile that PROFILE=0 should
# have skipped, most likely from such a stale copy.
if [ -z "${LOUPE_CALLS_FRESH:-}" ] && [ -d "$WT/scripts/device" ] && [ -f scripts/device/gpu-engine-calls.sh ]; then
  changed=0
  for f in scripts/device/*.sh scripts/device/*.py models/*.py; do
    [ -f "$f" ] || continue
    cmp -s "$f" "$WT/$f" && continue
    mkdir -p "$WT/$(dirname "$f")" && cp "$f" "$WT/$f" && changed=$((changed + 1))
  done
  [ "$changed" -gt 0 ] && echo "gpu-engine-calls: $changed file(s) in $WT refreshed from this call's repository copy" >&2
  LOUPE_CALLS_FRESH=1 exec bash "$WT/scripts/device/gpu-engine-calls.sh" "$@"
fi
mkdir -p "$R" "$OUT"
nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv,noheader
# the card's copy bandwidth (GB/s, read + write): from the 7B reference run, else measured now (SKIP7B_BENCH)
bw() {
  python3 -c "import json;print(round(json.load(open('$R/gpu-bench-7b.json'))['bandwidth']['gb_s_read_plus_write']))" 2>/dev/null ||
    (cd "$WT/models" && python3 -c "import gpu_bench;print(round(gpu_bench.bandwidth()['gb_s_read_plus_write']))" 2>/dev/null) || echo 3000
}
node_env() { [ -f /tmp/ld.sh ] || { echo "run the assemble step first"; exit 1; }; . /tmp/ld.sh; }
# gqa-first's variants, one per line on stdout as ENV, the unit separator (\x1f: not whitespace, so an empty ENV stays
# a field), JSON: VARIANTS, else the defaults: none; cuDNN's attention off (one onnxruntime branch's benchmark says SM90
# turns it on for GroupQueryAttention when XQA is off, and cuDNN builds a plan per shape: the profile of 2026-12-07 put
# the first-length cost on one GroupQueryAttention node a step, about 33 ms each); XQA on; both off. (Memory patterns, lazy kernel loading
# and the graph optimisations were ruled out before: GPU-7B.md.) Each line: environment assignments for node, then
# onnxruntime session options as a JSON object; the empty line = neither. (The defaults sit in a variable: a "}"
# inside ${VARIANTS:-…} would end the expansion there, which once cut a default line in two.)
gqa_variants() {
  local defaults=$'\nORT_ENABLE_CUDNN_FLASH_ATTENTION=0\nORT_ENABLE_XQA=1\nORT_ENABLE_XQA=0 ORT_ENABLE_CUDNN_FLASH_ATTENTION=0' line envs
  printf '%s\n' "${VARIANTS:-$defaults}" | while IFS= read -r line; do
    envs=${line%%\{*}
    printf '%s\x1f%s\n' "$(echo $envs)" "${line#"$envs"}"
  done
}
# logits of two runs (engine-bench --logits-out: float32 rows of vocab size) compared: A B VOCAB REPORT
cmp_logits() {
  python3 - "$@" <<'PY'
import json, sys
import numpy as np
a, b, v, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
x, y = np.fromfile(a, np.float32).reshape(-1, v), np.fromfile(b, np.float32).reshape(-1, v)
n = min(len(x), len(y)); x, y = x[:n].astype(np.float64), y[:n].astype(np.float64)
cos = (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
r = {"a": a.split("/")[-1], "b": b.split("/")[-1], "steps": n, "max_abs_diff": float(np.abs(x - y).max()),
     "max_abs_logit": float(np.abs(x).max()), "min_cosine": float(cos.min()),
     "argmax_differs_at": [int(i) for i in np.nonzero(x.argmax(1) != y.argmax(1))[0]]}
json.dump(r, open(out, "w"), indent=1); print(json.dumps(r))
PY
}
vocab() { python3 -c "import json,sys;c=json.load(open(sys.argv[1]));print((c.get('text_config') or c)['vocab_size'])" "$1/config.json"; }
summary() {
  python3 - "$OUT" "$1" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/engine-bench-" + sys.argv[2] + "-*.json")):
    d = json.load(open(f))
    print(f.split("/")[-1], {k: d.get(k) for k in ("device", "decoder", "fallback_reason", "load_s", "prefill_tok_s", "decode_tok_s", "decode_tok_s_runs", "bound_tok_s", "fraction_of_bound")}, d["greedy_tokens"][:12])
PY
}

# the 7B loop graph's logits (model.forward runs it with steps = 0) for 32 steps against PyTorch fp32
# LOOP=loop-gqa: the GroupQueryAttention loop's logits instead of the ops loop's (loop7b writes both graphs)
loop_logits7b() {
  local M=/tmp/random-7b v=${LOOP:-loop}
  ln -sf "fused-$v.onnx" "$M/onnx/decoder_model_merged_fused_fp16.onnx"
  "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder fused --new-tokens 32 --runs 1 \
    --logits-out "$R/logits-7b-$v.f32" --json "$R/engine-bench-7b-$v-logits.json" > /dev/null 2> "$R/7b-$v-logits.err" || tail -5 "$R/7b-$v-logits.err"
  (cd "$WT" && PYTHONUNBUFFERED=1 python3 models/logits_compare.py --config 7b --onnx-logits "$R/logits-7b-$v.f32" --onnx-bench "$R/engine-bench-7b-$v-logits.json" \
    --report "$OUT/logits-7b-fused-$v.json" 2>&1 | tail -8)
}

case $step in
setup)
  rm -rf /tmp/np "$WT" && mkdir -p /tmp/np "$WT"
  tar -C /tmp/np -xJf "$C/node-pack.tar.xz" && tar -C "$WT" -xJf "$C/tools.tar.xz" || exit 1
  ls "$NP" | tr '\n' ' '; echo
  cd "$WT" || exit 1
  export05="PYTHONUNBUFFERED=1 python3 models/gpu_bench.py --config 0.5b --skip-bench --dtypes ${DTYPES05:-fp16,fp32} --out /tmp/random-0.5b --report $R/gpu-bench-0.5b.json > $R/gpu-bench-0.5b.log 2>&1; echo \$? > $R/05b.rc"
  # SKIP7B_BENCH=1: export the 7B only (no bandwidth / PyTorch generate here; loop7b measures both beside the engine)
  export7b="PYTHONUNBUFFERED=1 python3 models/gpu_bench.py --config 7b ${SKIP7B_BENCH:+--skip-bench} --out /tmp/random-7b --report $R/gpu-bench-7b.json > $R/gpu-bench-7b.log 2>&1; echo \$? > $R/7b.rc"
  # FIRST=7b: the 7B first (its export is the long one), the 0.5B after it; ONLY=7b: no 0.5B; ONLY=0.5b: no 7B
  if [ "${ONLY:-}" = 7b ]; then jobs="$export7b"; elif [ "${ONLY:-}" = 0.5b ]; then jobs="$export05"; elif [ "${FIRST:-0.5b}" = 7b ]; then jobs="$export7b; $export05"; else jobs="$export05; $export7b"; fi
  setsid nohup bash -c "$jobs" > /dev/null 2>&1 < /dev/null &
  sleep 15; tail -3 "$R/gpu-bench-0.5b.log"
  ;;
assemble)
  L=$(bash "$WT/scripts/device/cuda-ep-assemble.sh" "$C" "$NP" 2> "$OUT/assemble.log"); cat "$OUT/assemble.log"
  [ -n "$L" ] || exit 1
  echo "$L" > /tmp/ld.sh
  ;;
served)
  node_env
  models="$WT/models/tiny-random-qwen25vl:fp32"
  [ -f "$R/05b.rc" ] && models="$models /tmp/random-0.5b:fp16"
  for m in $models; do
    dir=${m%:*} dt=${m#*:} work=/tmp/served-$(basename "${m%:*}")-${m#*:}
    # a fresh workspace each time: a second run into the same one is refused (its runs exist with another server URL)
    rm -rf "$work"
    (cd "$WT" && "$NP/node" "$NP/served-engine.mjs" --model "$dir" --device cuda --dtype "$dt" --samples 20 \
      --loupe "$NP/node $NP/loupe.mjs" --out "$work") | tee "$OUT/served-engine-cuda-$(basename "$dir")-$dt.jsonl"
  done
  ;;
bench05)
  node_env
  [ -f "$R/05b.rc" ] || { echo "the 0.5B export is not done yet"; tail -3 "$R/gpu-bench-0.5b.log"; exit 1; }
  for dt in fp16 fp32; do
    for kv in off on; do
      "$NP/node" "$NP/engine-bench.mjs" /tmp/random-0.5b --device cuda --dtype $dt --new-tokens 128 --bandwidth-gbs "$(bw)" \
        $([ $kv = off ] && echo --no-kv-reuse) --json "$OUT/engine-bench-0.5b-cuda-$dt-kv$kv.json" > /dev/null 2> "$R/05-$dt-$kv.err" || tail -5 "$R/05-$dt-$kv.err"
    done
  done
  python3 - "$OUT" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/engine-bench-0.5b-*.json")):
    d = json.load(open(f))
    print(f.split("/")[-1], {k: d.get(k) for k in ("device", "fallback_reason", "kv_reuse", "load_s", "prefill_tok_s", "decode_tok_s", "decode_tok_s_runs", "fraction_of_bound")}, d["greedy_tokens"][:12])
PY
  ;;
bench7b)
  node_env
  [ -f "$R/7b.rc" ] || { echo "the 7B export is not done yet"; tail -3 "$R/gpu-bench-7b.log"; exit 1; }
  M=/tmp/random-7b B=$(bw)
  for kv in off on; do
    "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --new-tokens 128 --bandwidth-gbs "$B" \
      $([ $kv = off ] && echo --no-kv-reuse) --json "$OUT/engine-bench-7b-cuda-fp16-kv$kv.json" > /dev/null 2> "$R/7b-$kv.err" || tail -5 "$R/7b-$kv.err"
  done
  # profiles (one run of 32 tokens each) and the logits of the reused-buffer path's first 32 steps
  for kv in off on; do
    rm -rf "$R/prof-$kv" && mkdir -p "$R/prof-$kv"
    LOUPE_ORT_PROFILE="$R/prof-$kv/ort" "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --new-tokens 32 --runs 1 \
      $([ $kv = off ] && echo --no-kv-reuse) $([ $kv = on ] && echo "--logits-out $R/logits-7b.f32") --json "$R/prof-$kv/bench.json" > /dev/null 2> "$R/prof-$kv.err" || tail -5 "$R/prof-$kv.err"
    python3 "$WT/models/ort_profile_summary.py" "$R"/prof-$kv/ort_*.json --out "$OUT/ort-profile-7b-cuda-fp16-kv$kv.json" > /dev/null
  done
  (cd "$WT" && PYTHONUNBUFFERED=1 python3 models/logits_compare.py --config 7b --onnx-logits "$R/logits-7b.f32" --onnx-bench "$R/prof-on/bench.json" \
    --report "$OUT/logits-7b.json" 2>&1 | tail -12)
  (cd "$WT" && PYTHONUNBUFFERED=1 python3 models/gpu_bench.py --config 7b --no-export --report "$OUT/gpu-bench-7b-again.json" 2>&1 | grep -E "PyTorch|bound|bandwidth")
  cp "$R/gpu-bench-7b.json" "$OUT/" 2>/dev/null
  python3 - "$OUT" <<'PY'
import glob, json, sys
o = sys.argv[1]
for f in sorted(glob.glob(o + "/engine-bench-7b-*.json")):
    d = json.load(open(f))
    print(f.split("/")[-1], {k: d.get(k) for k in ("device", "fallback_reason", "kv_reuse", "load_s", "prefill_tok_s", "decode_tok_s", "decode_tok_s_runs", "bound_tok_s", "fraction_of_bound")}, d["greedy_tokens"][:12])
for f in sorted(glob.glob(o + "/ort-profile-7b-*.json")):
    for s in json.load(open(f)):
        m = s.get("median_decode_step")
        if m:
            print(f.split("/")[-1], s["file"], s["decode_wall_us"]["median"], {k: m[k] for k in ("nodes", "node_time_us", "gap_us", "by_provider_us", "memcpy_nodes")}, m["top_ops_us"][:5])
PY
  ;;
fused05)
  node_env
  [ -f "$R/05b.rc" ] || { echo "the 0.5B export is not done yet"; tail -3 "$R/gpu-bench-0.5b.log"; exit 1; }
  M=/tmp/random-0.5b
  "$NP/node" "$NP/loupe.mjs" convert --fused $M || exit 1
  for r in 1 2; do
    for dec in exported fused; do
      "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder $dec --new-tokens 128 --bandwidth-gbs "$(bw)" \
        --logits-out "$R/logits-05-$dec.f32" --json "$OUT/engine-bench-0.5b-cuda-fp16-$dec-r$r.json" > /dev/null 2> "$R/05-$dec.err" || tail -5 "$R/05-$dec.err"
    done
  done
  cmp_logits "$R/logits-05-exported.f32" "$R/logits-05-fused.f32" "$(vocab $M)" "$OUT/logits-0.5b-fused-vs-exported.json"
  summary 0.5b
  ;;
fused7b)
  node_env
  [ -f "$R/7b.rc" ] || { echo "the 7B export is not done yet"; tail -3 "$R/gpu-bench-7b.log"; exit 1; }
  M=/tmp/random-7b B=$(bw)
  "$NP/node" "$NP/loupe.mjs" convert --fused $M || exit 1
  for dec in exported fused; do
    "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder $dec --new-tokens 128 --bandwidth-gbs "$B" \
      --logits-out "$R/logits-7b-$dec.f32" --json "$OUT/engine-bench-7b-cuda-fp16-$dec.json" > /dev/null 2> "$R/7b-$dec.err" || tail -5 "$R/7b-$dec.err"
  done
  summary 7b
  cmp_logits "$R/logits-7b-exported.f32" "$R/logits-7b-fused.f32" "$(vocab $M)" "$OUT/logits-7b-fused-vs-exported.json"
  (cd "$WT" && PYTHONUNBUFFERED=1 python3 models/gpu_bench.py --config 7b --no-export --report "$OUT/gpu-bench-7b-again.json" 2>&1 | grep -E "PyTorch|bound|bandwidth")
  cp "$R/gpu-bench-7b.json" "$OUT/" 2>/dev/null
  rm -rf "$R/prof-fused" && mkdir -p "$R/prof-fused"
  LOUPE_ORT_PROFILE="$R/prof-fused/ort" "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder fused --new-tokens 32 --runs 1 \
    --json "$R/prof-fused/bench.json" > /dev/null 2> "$R/prof-fused.err" || tail -5 "$R/prof-fused.err"
  python3 "$WT/models/ort_profile_summary.py" "$R"/prof-fused/ort_*.json --out "$OUT/ort-profile-7b-cuda-fp16-fused.json" > /dev/null
  python3 - "$OUT" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1] + "/ort-profile-7b-cuda-fp16-fused.json")):
    m = s.get("median_decode_step")
    if m:
        print(s["file"], s["decode_wall_us"]["median"], {k: m[k] for k in ("nodes", "node_time_us", "gap_us", "by_provider_us", "memcpy_nodes")}, m["top_ops_us"][:6])
PY
  (cd "$WT" && PYTHONUNBUFFERED=1 python3 models/logits_compare.py --config 7b --onnx-logits "$R/logits-7b-fused.f32" --onnx-bench "$OUT/engine-bench-7b-cuda-fp16-fused.json" \
    --report "$OUT/logits-7b-fused.json" 2>&1 | tail -8)
  ;;
wait7b)
  # wait (at most WAIT_S seconds, default 540) for the detached 7B export
  for _ in $(seq "$(( ${WAIT_S:-540} / 10 ))"); do [ -f "$R/7b.rc" ] && break; sleep 10; done
  tail -3 "$R/gpu-bench-7b.log"; cat "$R/7b.rc" 2>/dev/null || echo "the 7B export is still running"
  ;;
attn7b)
  # the fused decoder's attention variants (loupe convert --fused-attention gqa|ops|mha), the exported decoder and
  # PyTorch eager/sdpa on the random 7B, one call; each engine run warms up with WARMUP tokens (default 128, so the
  # timed runs meet no new KV length; the warm-up's own speed is in the JSON as warmup_decode_tok_s)
  node_env
  [ -f "$R/7b.rc" ] || { echo "the 7B export is not done yet"; tail -3 "$R/gpu-bench-7b.log"; exit 1; }
  M=/tmp/random-7b B=$(bw) W=${WARMUP:-128}
  for a in ${ATTN:-ops mha gqa}; do
    "$NP/node" "$NP/loupe.mjs" convert --fused --fused-attention "$a" $M || continue
    "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder fused --new-tokens 128 --warmup-tokens "$W" --bandwidth-gbs "$B" \
      --logits-out "$R/logits-7b-$a.f32" --json "$OUT/engine-bench-7b-cuda-fp16-fused-$a.json" > /dev/null 2> "$R/7b-$a.err" || tail -5 "$R/7b-$a.err"
  done
  "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder exported --new-tokens 128 --warmup-tokens "$W" --bandwidth-gbs "$B" \
    --logits-out "$R/logits-7b-exported.f32" --json "$OUT/engine-bench-7b-cuda-fp16-exported.json" > /dev/null 2> "$R/7b-exported.err" || tail -5 "$R/7b-exported.err"
  cp "$OUT"/engine-bench-7b-*.json "$R/"
  (cd "$WT" && PYTHONUNBUFFERED=1 python3 models/gpu_bench.py --config 7b --no-export --report "$OUT/gpu-bench-7b-again.json" 2>&1 | grep -E "PyTorch|bound|bandwidth")
  cp "$R/gpu-bench-7b.json" "$OUT/" 2>/dev/null
  for a in ${ATTN:-ops mha gqa}; do
    [ -f "$R/logits-7b-$a.f32" ] && cmp_logits "$R/logits-7b-exported.f32" "$R/logits-7b-$a.f32" "$(vocab $M)" "$OUT/logits-7b-fused-$a-vs-exported.json"
  done
  python3 - "$OUT" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/engine-bench-7b-*.json")):
    d = json.load(open(f))
    print(f.split("/")[-1], {k: d.get(k) for k in ("device", "decoder", "load_s", "prefill_tok_s", "decode_tok_s", "decode_tok_s_runs", "warmup_decode_tok_s", "bound_tok_s", "fraction_of_bound")}, d["greedy_tokens"][:8])
PY
  ;;
attn7b-check)
  # one variant (ATTN, default ops): an onnxruntime profile of 32 tokens, then its logits (from attn7b) against PyTorch fp32
  node_env
  M=/tmp/random-7b a=${ATTN:-ops}
  "$NP/node" "$NP/loupe.mjs" convert --fused --fused-attention "$a" $M || exit 1
  rm -rf "$R/prof-$a" && mkdir -p "$R/prof-$a"
  LOUPE_ORT_PROFILE="$R/prof-$a/ort" "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder fused --new-tokens 32 --runs 1 \
    --json "$R/prof-$a/bench.json" > /dev/null 2> "$R/prof-$a.err" || tail -5 "$R/prof-$a.err"
  python3 "$WT/models/ort_profile_summary.py" "$R"/prof-$a/ort_*.json --out "$OUT/ort-profile-7b-cuda-fp16-fused-$a.json" > /dev/null
  python3 - "$OUT" "$a" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1] + "/ort-profile-7b-cuda-fp16-fused-" + sys.argv[2] + ".json")):
    m = s.get("median_decode_step")
    if m:
        print(s["file"], s["decode_wall_us"]["median"], {k: m[k] for k in ("nodes", "node_time_us", "gap_us", "by_provider_us", "memcpy_nodes")}, m["top_ops_us"][:8])
PY
  (cd "$WT" && PYTHONUNBUFFERED=1 python3 models/logits_compare.py --config 7b --onnx-logits "$R/logits-7b-$a.f32" --onnx-bench "$R/engine-bench-7b-cuda-fp16-fused-$a.json" \
    --report "$OUT/logits-7b-fused-$a.json" 2>&1 | tail -8)
  ;;
loop7b|loop05)
  node_env
  if [ "$step" = loop7b ]; then size=7b M=/tmp/random-7b rc=7b.rc; else size=0.5b M=/tmp/random-0.5b rc=05b.rc; fi
  [ -f "$R/$rc" ] || { echo "the $size export is not done yet"; exit 1; }
  B=$(bw) W=${WARMUP:-128} O=$M/onnx F=decoder_model_merged_fused_fp16.onnx
  # the fused graphs beside the exported decoder (they read its weights from its data file); the runtime opens $F.
  # VARIANTS (default: plain loop loop-gqa; the 0.5B adds exported): plain = --no-decode-loop, loop = the decode loop
  # with ops attention, loop-gqa / loop-mha = the loop with that attention
  variants=${VARIANTS:-plain loop loop-gqa}; [ "$step" = loop05 ] && variants=${VARIANTS:-exported plain loop}
  for v in $variants; do
    case $v in
      exported) continue ;;
      plain) flags=--no-decode-loop ;;
      loop) flags= ;;
      loop-*) flags="--fused-attention ${v#loop-}" ;;
      *) echo "unknown variant $v"; exit 2 ;;
    esac
    "$NP/node" "$NP/loupe.mjs" convert --fused $flags $M && mv "$O/$F" "$O/fused-$v.onnx" || exit 1
  done
  for r in 1 2; do
    for v in $variants; do
      dec=fused; [ "$v" = exported ] && dec=exported
      [ "$v" != exported ] && ln -sf "fused-$v.onnx" "$O/$F"
      "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder $dec --new-tokens 128 --warmup-tokens "$W" --bandwidth-gbs "$B" \
        --json "$OUT/engine-bench-$size-cuda-fp16-$v-r$r.json" > /dev/null 2> "$R/$size-$v.err" || tail -5 "$R/$size-$v.err"
    done
  done
  if [ "$step" = loop7b ]; then
    ln -sf fused-loop.onnx "$O/$F"
    rm -rf "$R/prof-loop" && mkdir -p "$R/prof-loop"
    # PROFILE=0: no onnxruntime profile (a short lease)
    [ "${PROFILE:-1}" = 1 ] && {
    LOUPE_ORT_PROFILE="$R/prof-loop/ort" "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder fused --new-tokens 32 --runs 1 \
      --json "$R/prof-loop/bench.json" > /dev/null 2> "$R/prof-loop.err" || tail -5 "$R/prof-loop.err"
    python3 "$WT/models/ort_profile_summary.py" "$R"/prof-loop/ort_*.json --out "$OUT/ort-profile-7b-cuda-fp16-fused-loop.json" > /dev/null 2>&1 || echo "profile summary failed"
    }
    (cd "$WT" && PYTHONUNBUFFERED=1 python3 models/gpu_bench.py --config 7b --no-export --report "$OUT/gpu-bench-7b-beside-loop.json" 2>&1 | grep -E "PyTorch|bound|bandwidth")
    # the loop graph's logits for 32 steps against PyTorch fp32 (LOGITS=0 skips; the logits7b step runs them alone)
    [ "${LOGITS:-1}" = 1 ] && loop_logits7b
  fi
  python3 - "$OUT" "$size" <<'PY'
import glob, json, sys
runs = {}
for f in sorted(glob.glob(sys.argv[1] + "/engine-bench-" + sys.argv[2] + "-cuda-fp16-*-r*.json")):
    d = json.load(open(f))
    runs[f.split("/")[-1]] = d["greedy_tokens"]
    print(f.split("/")[-1], {k: d.get(k) for k in ("decoder", "load_s", "prefill_tok_s", "decode_tok_s", "decode_tok_s_runs", "warmup_decode_tok_s", "bound_tok_s", "fraction_of_bound")}, d["greedy_tokens"][:8])
toks = list(runs.values())
print("greedy tokens equal across all runs:", all(t == toks[0] for t in toks), len(toks[0]) if toks else 0)
PY
  ;;
gqa-first)
  # the GroupQueryAttention loop's cost the first time a session meets a KV length: the warm-up (new lengths) against
  # the timed run (the same lengths again), beside the ops loop, for each line of VARIANTS: environment assignments
  # for node (such as CUDA_MODULE_LOADING=EAGER), then onnxruntime session options as a JSON object (LOUPE_ORT_SESSION);
  # the empty line = neither. MODEL=0.5b runs it on the random 0.5B (its export takes about a minute; the 7B's seven)
  node_env
  case "${MODEL:-7b}" in
    7b) M=/tmp/random-7b rc=7b.rc ;;
    0.5b) M=/tmp/random-0.5b rc=05b.rc ;;
    *) echo "MODEL is 7b or 0.5b"; exit 2 ;;
  esac
  [ -f "$R/$rc" ] || { echo "the ${MODEL:-7b} export is not done yet"; exit 1; }
  O=$M/onnx F=decoder_model_merged_fused_fp16.onnx B=$(bw)
  for v in loop loop-gqa; do
    [ -f "$O/fused-$v.onnx" ] && continue
    flags=; [ "$v" = loop-gqa ] && flags="--fused-attention gqa"
    "$NP/node" "$NP/loupe.mjs" convert --fused $flags $M && mv "$O/$F" "$O/fused-$v.onnx" || exit 1
  done
  # PROFILE=1: then one more run of each loop with onnxruntime's profiler (per run: wall time and the top op types;
  # the warm-up's loop run against the timed one says which op pays at a new length); PROFILE=only: that run alone
  i=0
  [ "${PROFILE:-0}" = only ] || gqa_variants | while IFS=$'\x1f' read -r envs opts; do
    i=$((i + 1)) line="$envs $opts"
    for v in loop-gqa loop; do
      ln -sf "fused-$v.onnx" "$O/$F"
      # ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO=1: onnxruntime prints the attention kernel each GroupQueryAttention
      # node ran (SdpaKernel=…) on stdout; counted per kernel after the run
      env $envs ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO=1 LOUPE_ORT_SESSION="$opts" "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder fused --new-tokens 64 --warmup-tokens 64 --runs 1 \
        --bandwidth-gbs "$B" --json "$OUT/gqa-first-${MODEL:-7b}-$v-$i.json" > "$R/gqa-first.out" 2> "$R/gqa-first.err" || { tail -3 "$R/gqa-first.err"; continue; }
      python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(sys.argv[2], repr(sys.argv[3]), 'device', d.get('device'), 'new lengths', d.get('warmup_decode_tok_s'), 'met lengths', d['decode_tok_s'])" "$OUT/gqa-first-${MODEL:-7b}-$v-$i.json" "$v" "$line"
      grep -ao 'SdpaKernel=[A-Z_]*' "$R/gqa-first.out" | sort | uniq -c | sed "s/^/  $v kernels: /"
    done
  done
  if [ "${PROFILE:-0}" != 0 ]; then
    for v in loop-gqa loop; do
      ln -sf "fused-$v.onnx" "$O/$F"
      P="$R/prof-first-$v" && rm -rf "$P" && mkdir -p "$P"
      LOUPE_ORT_PROFILE="$P/ort" "$NP/node" "$NP/engine-bench.mjs" $M --device cuda --dtype fp16 --decoder fused --new-tokens 64 --warmup-tokens 64 --runs 1 \
        --bandwidth-gbs "$B" --json "$P/bench.json" > /dev/null 2> "$P.err" || { tail -3 "$P.err"; continue; }
      python3 "$WT/models/ort_profile_summary.py" "$P"/ort_*.json --per-run --top 8 --out "$OUT/ort-profile-first-${MODEL:-7b}-$v.json" > /dev/null || { echo "profile summary failed"; continue; }
      python3 "$WT/models/ort_profile_summary.py" --brief "$OUT/ort-profile-first-${MODEL:-7b}-$v.json" | sed "s/^/$v /"
    done
  fi
  ;;
gqa-plan)
  # what gqa-first would run, without a GPU: each variant's node environment and session options
  gqa_variants | while IFS=$'\x1f' read -r envs opts; do echo "env [$envs] session [$opts]"; done
  ;;
logits7b)
  node_env
  [ -f "/tmp/random-7b/onnx/fused-${LOOP:-loop}.onnx" ] || { echo "run loop7b first (it writes fused-${LOOP:-loop}.onnx)"; exit 1; }
  loop_logits7b
  ;;
status)
  for f in "$R"/*.log; do echo "== $f"; tail -4 "$f"; done; ls "$R"
  ;;
*) echo "unknown step $step"; exit 2 ;;
esac
