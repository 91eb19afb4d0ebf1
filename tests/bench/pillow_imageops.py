#!/usr/bin/env python3
"""Pillow side of tests/bench/imageops.bench.ts: the same pipeline as the sharp side, timed.

decode JPEG (from bytes in memory) -> RGB -> smart_resize (qwen-vl-utils rule) -> resize BICUBIC
-> crop the padded normalized box (Pillow rounds the float box half-to-even) -> smart_resize the
crop with the zoom bounds -> resize BICUBIC.

usage: pillow_imageops.py JPEG RUNS INIT_MIN INIT_MAX ZOOM_MIN ZOOM_MAX X1 Y1 X2 Y2 [OUT_PNG]
prints one JSON object: sizes, crop box, per-run milliseconds.
"""
import io
import json
import math
import sys
import time

from PIL import Image


def smart_resize(height, width, factor=28, min_pixels=4 * 28 * 28, max_pixels=16384 * 28 * 28):
    if max(height, width) / min(height, width) > 200:
        raise ValueError("absolute aspect ratio must be smaller than 200")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def pipeline(data, init_bounds, zoom_bounds, box):
    im = Image.open(io.BytesIO(data)).convert("RGB")
    h, w = smart_resize(im.height, im.width, 28, *init_bounds)
    im = im.resize((w, h), Image.BICUBIC)
    x1, y1, x2, y2 = box
    pad = 0.1
    nx1, ny1 = max(0, x1 - pad), max(0, y1 - pad)
    nx2, ny2 = min(1, x2 + pad), min(1, y2 + pad)
    crop = im.crop((nx1 * w, ny1 * h, nx2 * w, ny2 * h))
    ch, cw = smart_resize(crop.height, crop.width, 28, *zoom_bounds)
    out = crop.resize((cw, ch), Image.BICUBIC)
    return (w, h), (round(nx1 * w), round(ny1 * h), round(nx2 * w), round(ny2 * h)), (cw, ch), out


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2])
    init_bounds = (int(sys.argv[3]), int(sys.argv[4]))
    zoom_bounds = (int(sys.argv[5]), int(sys.argv[6]))
    box = tuple(float(v) for v in sys.argv[7:11])
    out_png = sys.argv[11] if len(sys.argv) > 11 else None
    with open(path, "rb") as f:
        data = f.read()
    pipeline(data, init_bounds, zoom_bounds, box)  # warm-up
    times = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = pipeline(data, init_bounds, zoom_bounds, box)
        times.append((time.perf_counter() - t0) * 1000.0)
    resized, crop_box, zoom, out = result
    if out_png:
        out.save(out_png)
    print(json.dumps({"pillow": Image.__version__, "resized": resized, "cropBox": crop_box, "zoom": zoom, "ms": times}))


if __name__ == "__main__":
    main()
