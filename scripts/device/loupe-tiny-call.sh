#!/usr/bin/env bash
# One device call of a loupe-tiny GPU run (a machine is given back 30 s after a call ends, so a run is a chain of
# calls made back to back, each waiting here while the run goes on in the background).
#   start: copy models/ and scripts/ to /tmp/lt (a later call re-syncs the repository's folder; the running phases must
#          not see files change under them), recover the trainable weights of the committed model from its q8 ONNX
#          (models/loupe-tiny/onnx_weights.py: the shipped model's fp32 weights were never committed), and start
#          loupe-tiny-gpu.sh with setsid; then wait as `wait` does.
#   wait:  print $W/status until SECONDS_MAX have passed or the run has shipped, then copy what is under $W/ship (the
#          fp16 weights, split below 16 MiB, logs.tgz) and, where this machine can export (transformers, onnx,
#          onnxruntime, tokenizers), each shipped model's q8 ONNX and its config.json (which holds the rope split it was
#          trained under) as one tar into $OUT.
#   bash scripts/device/loupe-tiny-call.sh start|wait SECONDS_MAX   (the run's settings: loupe-tiny-gpu.sh's variables)
set -uo pipefail
MODE=${1:?start|wait}; MAX=${2:-540}
W=/tmp/lt/w
t0=$(date +%s)
if [ "$MODE" = start ]; then
  mkdir -p /tmp/lt/w/init && { [ "$PWD" = /tmp/lt ] || cp -r models scripts /tmp/lt/; } && cd /tmp/lt || exit 1
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
  for m in transformers onnx onnxruntime tokenizers; do python3 -c "import $m; print('$m', $m.__version__)" 2>&1 | tail -1; done
  python3 models/loupe-tiny/onnx_weights.py --model models/loupe-tiny/model --out $W/init/model.safetensors --dtype fp32 || exit 1
  cp models/loupe-tiny/model/{config.json,generation_config.json,preprocessor_config.json,tokenizer.json,tokenizer_config.json} $W/init/
  PACK=${PACK:-$(realpath "$OLDPWD/.device-carry/node-pack.tar.xz")}
  setsid bash scripts/device/loupe-tiny-gpu.sh $W "$PACK" "${DATA_S:-240}" "${TRAIN_MIN:-12}" "${RL_MIN:-3}" > $W/gpu.log 2>&1 < /dev/null &
  disown
fi
cd /tmp/lt || exit 1
while [ $(( $(date +%s) - t0 )) -lt "$MAX" ]; do
  grep -q shipped $W/status 2>/dev/null && break
  sleep 10
done
cat $W/status 2>/dev/null
tail -3 $W/train-sftA.log $W/rl.log 2>/dev/null
ls -la $W/ship 2>/dev/null
if grep -q shipped $W/status 2>/dev/null; then
  # the weights (split parts) and the logs; the auxiliary heads stay (at most 8 files come back)
  for f in $W/ship/*; do case "$f" in *.aux.*) ;; *) cp "$f" "$OUT/" ;; esac; done
  if python3 -c "import transformers, onnx, onnxruntime, tokenizers" 2>/dev/null; then
    for m in sftA:$W/sftA rl:$W/rlout/model; do
      n=${m%%:*}; d=${m#*:}
      [ -e "$d/model.safetensors" ] || continue
      python3 models/loupe-tiny/export.py --weights "$d/model.safetensors" --config "$d/config.json" --tok models/loupe-tiny/model \
        --out $W/export-$n --export q8 > $W/export-$n.log 2>&1 && tar -C $W/export-$n -cf "$OUT/$n-onnx.tar" onnx config.json
      tail -2 $W/export-$n.log
    done
  fi
fi
