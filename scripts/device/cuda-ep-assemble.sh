#!/usr/bin/env bash
# On the GPU machine: put onnxruntime-node 1.29 + its CUDA execution provider (made by pack-cuda-ep.sh, carried over as
# cuda-ep.part-NN + SHA256SUMS) into an unpacked node-pack (pack-node.sh), replacing its onnxruntime-node and
# onnxruntime-common. Checks every part, joins and unpacks them, then finds the CUDA 13 + cuDNN 9 libraries of python3's
# torch (its nvidia/cu13/lib and nvidia/cudnn/lib) and prints, on stdout and alone, the line to export:
#
#   L=$(bash scripts/device/cuda-ep-assemble.sh DIR NODE_PACK_DIR) && eval "$L"
#   NODE_PACK_DIR/node NODE_PACK_DIR/engine-bench.mjs MODEL --device cuda --dtype fp16
#
# DIR holds SHA256SUMS and the parts (or the whole ort129.tar.xz). Diagnostics go to stderr. PYTHON=... picks another
# python than python3 to look for the nvidia packages in.
set -euo pipefail
dir=${1:?usage: cuda-ep-assemble.sh DIR NODE_PACK_DIR}
np=${2:?usage: cuda-ep-assemble.sh DIR NODE_PACK_DIR}
dir=$(cd "$dir" && pwd)
[ -d "$np/node_modules" ] || { echo "$np/node_modules: not a folder (unpack the node pack first)" >&2; exit 1; }
np=$(cd "$np" && pwd)
[ -f "$dir/SHA256SUMS" ] || { echo "$dir/SHA256SUMS: missing" >&2; exit 1; }
log() { echo "cuda-ep-assemble: $*" >&2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
whole_sum=$(awk '$2 == "ort129.tar.xz" || $2 == "*ort129.tar.xz" { print $1 }' "$dir/SHA256SUMS")
[ -n "$whole_sum" ] || { echo "SHA256SUMS has no line for ort129.tar.xz" >&2; exit 1; }
mapfile -t parts < <(awk '{ sub(/^\*/, "", $2) } $2 ~ /^cuda-ep\.part-[0-9]+$/ { print $2 }' "$dir/SHA256SUMS" | sort)
if [ -f "$dir/ort129.tar.xz" ]; then
  archive="$dir/ort129.tar.xz"
else
  [ "${#parts[@]}" -gt 0 ] || { echo "SHA256SUMS lists no parts and $dir has no ort129.tar.xz" >&2; exit 1; }
  missing=()
  for p in "${parts[@]}"; do [ -f "$dir/$p" ] || missing+=("$p"); done
  [ "${#missing[@]}" -eq 0 ] || { echo "missing in $dir: ${missing[*]} (carry them first)" >&2; exit 1; }
  (cd "$dir" && grep -E ' \*?cuda-ep\.part-[0-9]+$' SHA256SUMS | sha256sum -c --quiet -) >&2 || { echo "a part does not match SHA256SUMS" >&2; exit 1; }
  (cd "$dir" && cat "${parts[@]}") > "$tmp/ort129.tar.xz"
  archive="$tmp/ort129.tar.xz"
  log "joined ${#parts[@]} part(s)"
fi
echo "$whole_sum  $archive" | sha256sum -c --quiet - >&2 || { echo "ort129.tar.xz does not match SHA256SUMS" >&2; exit 1; }
mkdir "$tmp/x"
tar -C "$tmp/x" -xJf "$archive"
for m in onnxruntime-node onnxruntime-common; do
  [ -f "$tmp/x/$m/package.json" ] || { echo "the archive holds no $m/" >&2; exit 1; }
  rm -rf "${np:?}/node_modules/$m"
  mv "$tmp/x/$m" "$np/node_modules/$m"
done
bin="$np/node_modules/onnxruntime-node/bin/napi-v6/linux/x64"
log "onnxruntime-node $(sed -n 's/.*"version": "\(.*\)".*/\1/p' "$np/node_modules/onnxruntime-node/package.json") with the CUDA provider in $bin"
sed -n 's/^fatbin pruned to sm: /fatbin pruned to sm: /p' "$tmp/x/SOURCES.txt" | sed 's/^/cuda-ep-assemble: /' >&2 || true

# python3's nvidia packages (torch's CUDA wheels): nvidia/cu13/lib (cudart, cublas, cublasLt, curand, cufft, nvrtc)
# and nvidia/cudnn/lib (cuDNN 9)
mapfile -t roots < <("${PYTHON:-python3}" - <<'PY' 2>/dev/null || true
import importlib.util
s = importlib.util.find_spec("nvidia")
for p in (list(s.submodule_search_locations or []) if s else []):
    print(p)
PY
)
libdirs=()
for r in "${roots[@]}"; do
  for d in "$r/cu13/lib" "$r/cudnn/lib"; do [ -d "$d" ] && libdirs+=("$d"); done
done
[ "${#libdirs[@]}" -gt 0 ] || log "WARNING: ${PYTHON:-python3} has no nvidia/cu13/lib or nvidia/cudnn/lib: the CUDA provider will not load"
ld=$(IFS=:; echo "${libdirs[*]}")
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libcudnn.so.9 libcufft.so.12 libnvrtc.so.13; do
  found=""
  for d in "${libdirs[@]}"; do [ -e "$d/$so" ] && found=$d; done
  case $so in
    libcudnn*|libcufft*|libnvrtc*) kind="loaded on demand" ;;
    *) kind="needed" ;;
  esac
  [ -n "$found" ] && log "$so ($kind): $found" || log "WARNING: $so ($kind) not found in the torch lib folders"
done
if command -v ldd >/dev/null; then
  if lo=$(LD_LIBRARY_PATH="$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$bin/libonnxruntime_providers_cuda.so" 2>&1); then
    nf=$(echo "$lo" | grep 'not found' || true)
    [ -z "$nf" ] && log "ldd: every library the CUDA provider needs resolves" || log "WARNING: ldd, unresolved: $(echo "$nf" | tr -s ' \t\n' ' ')"
  else
    log "WARNING: ldd failed: $lo"
  fi
fi
if [ -n "$ld" ]; then
  printf 'export LD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$ld"
else
  echo 'export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}'
fi
