#!/usr/bin/env bash
# Node for a machine that has none (the GPU machine): this machine's node binary, esbuild bundles of the scripts
# the GPU runs need, and only the native packages they load (sharp + libvips, onnxruntime-node's Linux x64 build),
# packed as one .tar.xz. The GPU machine unpacks it and runs `node-pack/node node-pack/datagen.mjs …`; the `loupe`
# CLI is node-pack/loupe.mjs (serve-model and eval for scripts/device/served-engine.ts).
#   bash scripts/device/pack-node.sh OUT.tar.xz [--no-ort]
# --no-ort leaves onnxruntime-node's native libraries out (about a quarter of the pack): for runs that put
# onnxruntime-node 1.29 with its CUDA provider in place anyway (scripts/device/cuda-ep-assemble.sh).
# XZ_LEVEL=-1: compress fast (default -9).
set -euo pipefail
usage='usage: pack-node.sh OUT.tar.xz [--no-ort]'
out=""; with_ort=1
for a in "$@"; do
  case "$a" in
    --no-ort) with_ort=0 ;;
    -*) echo "unknown option $a; $usage" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "$usage" >&2; exit 2; }; out=$a ;;
  esac
done
[ -n "$out" ] || { echo "$usage" >&2; exit 2; }
out=$(realpath -m "$out")
# the output's folder may not exist yet (a first run into .device-carry/)
mkdir -p "$(dirname "$out")"
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
command -v xz >/dev/null || { echo "pack-node.sh: xz is needed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
p="$tmp/node-pack"
mkdir -p "$p/node_modules/@img"
node_bin=$(readlink -f "$(command -v node)")
# debug info is a seventh of the binary and useless there
strip -o "$p/node" "$node_bin" 2>/dev/null || cp "$node_bin" "$p/node"
banner="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);"
# The `loupe` CLI itself (serve-model, eval) and the engine worker it starts, laid out as app/paths.ts expects of a
# bundle: a package.json marks node-pack/ as the package root, the worker is dist/workers/engine.cjs under it.
# ssh2 (bundled) reads __dirname and tries its optional native cpu-features, which stays out (ssh2 works without).
cli_banner="$banner import { fileURLToPath as __fu } from 'url'; import { dirname as __dn } from 'path'; const __filename = __fu(import.meta.url); const __dirname = __dn(__filename);"
for entry in scripts/device/datagen.ts scripts/device/engine-bench.ts; do
  [ -f "$entry" ] || continue
  npx esbuild "$entry" --bundle --platform=node --format=esm --log-level=warning \
    --external:onnxruntime-node --external:sharp --banner:js="$banner" --outfile="$p/$(basename "${entry%.ts}").mjs"
done
for entry in scripts/device/served-engine.ts main/cli/run.ts; do
  out_name=$(basename "${entry%.ts}"); [ "$entry" = main/cli/run.ts ] && out_name=loupe
  npx esbuild "$entry" --bundle --platform=node --format=esm --log-level=error --external:onnxruntime-node --external:sharp \
    --external:cpu-features --external:electron --banner:js="$cli_banner" --outfile="$p/$out_name.mjs"
done
npx esbuild native/engine/worker.ts --bundle --platform=node --format=cjs --log-level=warning --external:onnxruntime-node --external:sharp \
  --define:import.meta.url=__loupe_import_meta_url --banner:js="var __loupe_import_meta_url = require('node:url').pathToFileURL(__filename).href;" \
  --outfile="$p/dist/workers/engine.cjs"
echo '{ "name": "loupe-node-pack", "private": true }' > "$p/package.json"
cp -r node_modules/sharp node_modules/detect-libc node_modules/semver "$p/node_modules/"
cp -r node_modules/@img/colour node_modules/@img/sharp-linux-x64 node_modules/@img/sharp-libvips-linux-x64 "$p/node_modules/@img/"
for m in onnxruntime-common; do cp -r "node_modules/$m" "$p/node_modules/"; done
ort="$p/node_modules/onnxruntime-node"
mkdir -p "$ort/bin/napi-v6/linux"
cp node_modules/onnxruntime-node/package.json "$ort/"
cp -r node_modules/onnxruntime-node/dist "$ort/"
[ "$with_ort" = 1 ] && cp -r node_modules/onnxruntime-node/bin/napi-v6/linux/x64 "$ort/bin/napi-v6/linux/"
XZ_OPT=${XZ_LEVEL:--9} tar -C "$tmp" -cJf "$out" node-pack
ls -la "$out"
