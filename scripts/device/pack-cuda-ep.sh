#!/usr/bin/env bash
# onnxruntime-node's CUDA execution provider for a machine that cannot reach NuGet (the GPU machine). onnxruntime-node
# ships its CUDA provider libraries only through NuGet, at `npm install` time; this packs a prebuilt provider from npm
# instead, with the onnxruntime-node/-common version it was built for:
#   onnxruntime-node@1.29.0, onnxruntime-common@1.29.0                 (MIT, Microsoft)
#   com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9                    (MIT, Koki Ibukuro's Unity packaging of the
#     official ONNX Runtime 1.29.0 Linux x64 GPU build: libonnxruntime_providers_cuda.so, built for CUDA 13 and cuDNN 9)
# into OUTDIR/ort129.tar.xz = onnxruntime-node/ (package.json, dist/, bin/napi-v6/linux/x64/ with the binding,
# libonnxruntime.so.1 and the two provider libraries beside it, where the core looks for them) + onnxruntime-common/ +
# SOURCES.txt, split into OUTDIR/cuda-ep.part-NN of at most 44 MiB (one device call's carry each), + OUTDIR/SHA256SUMS.
# On the GPU machine scripts/device/cuda-ep-assemble.sh puts it into an unpacked node-pack (pack-node.sh).
#
#   [CUDA_EP_CACHE=DIR] bash scripts/device/pack-cuda-ep.sh OUTDIR [--sm 90]
#
# CUDA_EP_CACHE: a folder of already fetched `npm pack` tarballs (NAME-VERSION.tgz), used instead of the registry when
# present (checked against the registry's integrity when the registry answers); new downloads are saved there.
# --sm LIST (e.g. 90, or 80,90): keep only the machine code for those GPU architectures in the provider's fat binary and
# zero the rest (same file layout; the archive shrinks from ~169 MiB to ~48 MiB: two parts instead of four). The H100
# and H200 are sm_90. The provider ships no PTX, so a GPU outside LIST cannot run it at all. See models/reports/CUDA-EP.md.
# XZ_LEVEL=-1: compress fast (a busy machine takes minutes instead of half an hour; the archive grows by ~3 MiB).
set -euo pipefail
usage='usage: [CUDA_EP_CACHE=DIR] pack-cuda-ep.sh OUTDIR [--sm 90[,..]]'
out=""; sm=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sm) sm=${2:?--sm needs a list such as 90}; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*) echo "unknown option $1; $usage" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "$usage" >&2; exit 2; }; out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "$usage" >&2; exit 2; }
[[ -z "$sm" || "$sm" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "--sm: expected numbers such as 90 or 80,90, got '$sm'" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
ORT_VERSION=1.29.0
GPU_PKG=com.github.asus4.onnxruntime.linux-x64-gpu
GPU_VERSION=0.4.9
PART_SIZE=44M # GNU split: MiB

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/dl"
cache=${CUDA_EP_CACHE:-}

# registry integrity (sha512-<base64>) of NAME@VERSION, or nothing when the registry does not answer
integrity() { npm view "$1@$2" dist.integrity 2>/dev/null || true; }
sri() { echo "sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }

# fetch NAME VERSION -> prints the path of NAME-VERSION.tgz
fetch() {
  local name=$1 ver=$2 f="$1-$2.tgz"
  if [ -n "$cache" ] && [ -f "$cache/$f" ]; then
    local want; want=$(integrity "$name" "$ver")
    if [ -z "$want" ]; then
      echo "warning: $cache/$f used without an integrity check (registry did not answer)" >&2
    elif [ "$want" != "$(sri "$cache/$f")" ]; then
      echo "$cache/$f does not match the registry's integrity $want; delete it and run again" >&2
      return 1
    fi
    echo "$cache/$f"
    return
  fi
  echo "npm pack $name@$ver" >&2
  (cd "$tmp/dl" && npm pack --silent "$name@$ver" >/dev/null)
  [ -f "$tmp/dl/$f" ] || { echo "npm pack $name@$ver made no $f" >&2; return 1; }
  if [ -n "$cache" ] && mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; then cp "$tmp/dl/$f" "$cache/$f"; fi
  echo "$tmp/dl/$f"
}

node_tgz=$(fetch onnxruntime-node "$ORT_VERSION")
common_tgz=$(fetch onnxruntime-common "$ORT_VERSION")
gpu_tgz=$(fetch "$GPU_PKG" "$GPU_VERSION")

mkdir -p "$tmp/node" "$tmp/common" "$tmp/gpu"
tar -xzf "$node_tgz" -C "$tmp/node" package/package.json package/README.md package/dist package/bin/napi-v6/linux/x64
tar -xzf "$common_tgz" -C "$tmp/common"
g=package/Plugins/Linux/x64
tar -xzf "$gpu_tgz" -C "$tmp/gpu" package/package.json package/README.md package/LICENSE \
  "$g/libonnxruntime_providers_cuda.so" "$g/libonnxruntime_providers_shared.so"

# the provider must be built for the same ONNX Runtime as the core it is loaded into
grep -q "\"version\": \"$ORT_VERSION\"" "$tmp/node/package/package.json" || { echo "onnxruntime-node is not $ORT_VERSION" >&2; exit 1; }
grep -q "VERS_$ORT_VERSION" <(strings "$tmp/node/package/bin/napi-v6/linux/x64/libonnxruntime.so.1") \
  || { echo "libonnxruntime.so.1 does not say VERS_$ORT_VERSION" >&2; exit 1; }
grep -q "ONNX Runtime: \[$ORT_VERSION\]" "$tmp/gpu/package/README.md" \
  || { echo "$GPU_PKG@$GPU_VERSION's README does not name ONNX Runtime $ORT_VERSION" >&2; exit 1; }

st="$tmp/stage"
ortn="$st/onnxruntime-node"
bin="$ortn/bin/napi-v6/linux/x64"
mkdir -p "$ortn/bin/napi-v6/linux"
cp "$tmp/node/package/package.json" "$tmp/node/package/README.md" "$ortn/"
cp -r "$tmp/node/package/dist" "$ortn/"
cp -r "$tmp/node/package/bin/napi-v6/linux/x64" "$ortn/bin/napi-v6/linux/"
cp "$tmp/gpu/$g/libonnxruntime_providers_cuda.so" "$tmp/gpu/$g/libonnxruntime_providers_shared.so" "$bin/"
cp "$tmp/gpu/package/LICENSE" "$bin/LICENSE.$GPU_PKG"
cp -r "$tmp/common/package" "$st/onnxruntime-common"

if [ -n "$sm" ]; then
  # A fat binary (.nv_fatbin) holds, per compilation unit, one entry per GPU architecture: a header (kind, header size,
  # payload size, sm number at +28) and a payload (here zstd-compressed cubins). The CUDA driver loads only the entry
  # that matches the GPU; the others are zeroed, sizes and offsets unchanged.
  python3 - "$bin/libonnxruntime_providers_cuda.so" "$sm" <<'PY'
import struct, sys
path, keep = sys.argv[1], {int(x) for x in sys.argv[2].split(",")}
buf = bytearray(open(path, "rb").read())
shoff, = struct.unpack_from("<Q", buf, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", buf, 0x3A)
sh = lambda i: struct.unpack_from("<IIQQQQIIQQ", buf, shoff + i * shentsize)
names = sh(shstrndx)[4]
sec = None
for i in range(shnum):
    h = sh(i)
    if bytes(buf[names + h[0]:buf.index(b"\0", names + h[0])]) == b".nv_fatbin":
        sec = (h[4], h[5])
if sec is None:
    sys.exit("no .nv_fatbin section")
off, size = sec
pos, end_sec = off, off + size
kept, zeroed, arches, n_fat, accounted = 0, 0, {}, 0, 0
while pos + 16 <= end_sec:
    magic, _ver, hsz, fsz = struct.unpack_from("<IHHQ", buf, pos)
    if magic != 0xBA55ED50:
        pos += 8  # alignment padding between fat binaries
        continue
    n_fat += 1
    e, end = pos + hsz, pos + hsz + fsz
    while e < end:
        kind, _ev, ehsz, psz = struct.unpack_from("<HHIQ", buf, e)
        arch, = struct.unpack_from("<I", buf, e + 28)
        arches[(kind, arch)] = arches.get((kind, arch), 0) + psz
        if kind == 2 and arch not in keep:  # 2 = machine code (cubin); 1 = PTX, kept
            buf[e + ehsz:e + ehsz + psz] = bytes(psz)
            zeroed += psz
        else:
            kept += psz
        e += ehsz + psz
    if e != end:
        sys.exit(f"fat binary at {pos:#x}: entries end at {e:#x}, header says {end:#x}")
    accounted += hsz + fsz
    pos = end
if not any(k == 2 and a in keep for k, a in arches):
    sys.exit(f"no machine code for sm {sorted(keep)}; present: {sorted(a for k, a in arches if k == 2)}")
open(path, "wb").write(buf)
print(f"fatbin: {n_fat} fat binaries, {accounted} of {size} bytes parsed; kept {kept / 1e6:.1f} MB "
      f"(sm {sorted(keep)} + PTX), zeroed {zeroed / 1e6:.1f} MB; present: "
      + ", ".join(f"{'ptx' if k == 1 else 'sm'}_{a} {b / 1e6:.1f} MB" for (k, a), b in sorted(arches.items())), file=sys.stderr)
PY
fi

{
  echo "Packed by scripts/device/pack-cuda-ep.sh from these npm tarballs (name, registry integrity):"
  for t in "$node_tgz" "$common_tgz" "$gpu_tgz"; do echo "$(basename "$t") $(sri "$t")"; done
  echo "onnxruntime-node, onnxruntime-common: MIT (Microsoft). $GPU_PKG: MIT (Koki Ibukuro), see"
  echo "onnxruntime-node/bin/napi-v6/linux/x64/LICENSE.$GPU_PKG; the provider libraries inside are ONNX Runtime $ORT_VERSION (MIT)."
  echo "fatbin pruned to sm: ${sm:-no (all architectures kept)}"
} > "$st/SOURCES.txt"

echo "compressing (xz ${XZ_LEVEL:--9}, one thread) ..." >&2
# fixed owner, order and times: the same inputs give the same bytes, so parts from two runs agree
tar -C "$st" --owner=0 --group=0 --numeric-owner --sort=name --mtime=@0 -cf - onnxruntime-node onnxruntime-common SOURCES.txt | xz "${XZ_LEVEL:--9}" -T1 > "$out/ort129.tar.xz"
rm -f "$out"/cuda-ep.part-*
split -b "$PART_SIZE" -d -a 2 "$out/ort129.tar.xz" "$out/cuda-ep.part-"
(cd "$out" && sha256sum cuda-ep.part-* ort129.tar.xz > SHA256SUMS)
limit=$((44 * 1024 * 1024))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
n=0
for f in "$out"/cuda-ep.part-*; do
  s=$(stat -c %s "$f")
  [ "$s" -le "$limit" ] || { echo "$f is $s bytes, over $limit" >&2; exit 1; }
  echo "$(basename "$f") $s bytes ($(mib "$s") MiB)"
  n=$((n + 1))
done
s=$(stat -c %s "$out/ort129.tar.xz")
echo "ort129.tar.xz $s bytes ($(mib "$s") MiB) in $n part(s) of at most 44 MiB; SHA256SUMS beside them in $out"
