#!/usr/bin/env python3
"""Weights → a Loupe model folder: config + model.safetensors (+ ONNX in the transformers.js layout, with its check).

  export.py --weights W.safetensors --config config.json --tok TOKENIZER_DIR --out OUT [--export fp32,q8] [--dtype fp16|fp32]

For weights trained elsewhere (the GPU machine ships fp16 weights); train.py writes the same folder itself.
--dtype: how model.safetensors is stored in OUT (fp16 halves the size; training upcasts to fp32 on load).
"""
import argparse, json, os, sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt  # noqa: E402
import train  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--tok", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--export", default="fp32,q8")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    a = ap.parse_args()
    model = qt.QwenVL(json.load(open(a.config)), init=False)
    sd = {k: v.float() for k, v in qt.load_safetensors(a.weights).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    if [k for k in missing if not k.endswith("inv_freq")] or unexpected:
        raise SystemExit(f"export.py: weights do not fit the config: missing {missing[:5]}, unexpected {unexpected[:5]}")
    from tok import load_hf_style
    tk = load_hf_style(a.tok)
    check = train.write_model(model.eval(), a.out, a.tok, a.export, tk)
    if a.dtype == "fp16":
        qt.save_safetensors({k: v.half() for k, v in qt.load_safetensors(os.path.join(a.out, "model.safetensors")).items()},
                            os.path.join(a.out, "model.safetensors"))
    print(json.dumps({"out": a.out, "onnx_check": check}, default=str)[:2000])


if __name__ == "__main__":
    main()
