#!/usr/bin/env python3
"""Per-step logits of Loupe's ONNX engine against PyTorch on the same random-weight Qwen2.5-VL and the same prompt.

  python3 models/logits_compare.py --config 7b --onnx-logits L.f32 --onnx-bench engine-bench.json [--steps 32]
          [--seed 0] [--report out.json]

The model is rebuilt exactly as models/gpu_bench.py builds it (same seed, same config, initialised on CUDA in fp32), so
its weights are the ones gpu_bench.py exported to ONNX. L.f32 holds the engine's first --steps next-token logit rows
(scripts/device/engine-bench.ts --logits-out, float32 little-endian); the engine-bench JSON gives its greedy tokens.

PyTorch is run teacher-forced on the engine's own tokens (the prompt + the engine's first steps-1 tokens in one
forward pass), so a step compares like with like even after the two greedy sequences part. References: PyTorch fp32
(the truth) and PyTorch fp16 (the same weights rounded as the fp16 export rounds them: what "fp16 tolerance" means).
Per step: max |diff|, max |diff| / max |ref|, cosine, whether the argmax agrees, the reference's top-1/top-2 margin, and
the engine token's rank under the reference. A divergence where the reference's margin is below the fp16 reference's
own error is a near-tie that rounding decides, not an export bug.
"""
import argparse, json, os, sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tiny_qwen25vl as mt  # noqa: E402
import gpu_bench as gb  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", choices=sorted(mt.RANDOM_CONFIGS), required=True)
    ap.add_argument("--onnx-logits", required=True)
    ap.add_argument("--onnx-bench", required=True, help="engine-bench JSON of the run that wrote --onnx-logits")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report")
    a = ap.parse_args()
    from transformers import Qwen2_5_VLForConditionalGeneration
    torch.manual_seed(a.seed)
    cfg = mt.random_config(a.config, mt.TINY_IDS)
    cfg._attn_implementation = "eager"
    with torch.device("cuda"):
        model = Qwen2_5_VLForConditionalGeneration(cfg).float().eval()
    V = model.config.text_config.vocab_size if hasattr(model.config, "text_config") else model.config.vocab_size
    onnx = np.fromfile(a.onnx_logits, dtype="<f4")
    steps = min(a.steps, onnx.size // V)
    onnx = torch.from_numpy(onnx[: steps * V].reshape(steps, V).copy()).double()
    toks = json.load(open(a.onnx_bench))["greedy_tokens"][:steps]
    ids, pv, thw, _ = gb.prompt_inputs(cfg)
    L = ids.shape[1]
    full = torch.cat([ids, torch.tensor([toks[: steps - 1]], dtype=ids.dtype)], 1)
    mm = mt.mm_types(full, cfg)

    def logits(m, dt):
        with torch.no_grad():
            out = m(input_ids=full.cuda(), pixel_values=pv.cuda().to(dt), image_grid_thw=thw.cuda(), mm_token_type_ids=mm.cuda(),
                    attention_mask=torch.ones_like(full).cuda())
        return out.logits[0, L - 1: L - 1 + steps].double().cpu()

    ref = logits(model, torch.float32)
    with torch.no_grad():
        g = model.generate(input_ids=ids.cuda(), pixel_values=pv.cuda(), image_grid_thw=thw.cuda(), mm_token_type_ids=gb.prompt_inputs(cfg)[3].cuda(),
                           attention_mask=torch.ones_like(ids).cuda(), do_sample=False, max_new_tokens=steps, min_new_tokens=steps)
    fp32_greedy = g[0, L:].tolist()
    # fp16 weights, rotary inverse frequencies kept fp32 (as the fp16 export keeps them: see make_tiny_qwen25vl)
    inv = {n: b.clone() for n, b in model.named_buffers() if n.endswith("inv_freq")}
    model.half()
    for n, b in inv.items():
        mod = model.get_submodule(n.rsplit(".", 1)[0])
        setattr(mod, "inv_freq", b)
    ref16 = logits(model, torch.float16)
    del model
    torch.cuda.empty_cache()

    def compare(x, r):
        rows = []
        for i in range(steps):
            d = (x[i] - r[i]).abs()
            top2 = torch.topk(r[i], 2)
            rows.append({
                "step": i,
                "max_abs_diff": float(d.max()),
                "rel_max_diff": float(d.max() / r[i].abs().max()),
                "cosine": float(torch.nn.functional.cosine_similarity(x[i], r[i], 0)),
                "argmax_equal": int(x[i].argmax()) == int(r[i].argmax()),
                "ref_top1_top2_margin": float(top2.values[0] - top2.values[1]),
                "token": toks[i],
                "token_rank_in_ref": int((r[i] > r[i][toks[i]]).sum()),
            })
        return rows

    onnx_vs_fp32 = compare(onnx, ref)
    fp16_vs_fp32 = compare(ref16, ref)
    first_fp32_diff = next((i for i, (p, q) in enumerate(zip(fp32_greedy, toks)) if p != q), None)
    rep = {
        "config": a.config, "seed": a.seed, "gpu": torch.cuda.get_device_name(0), "steps": steps, "prompt_tokens": L,
        "method": "PyTorch teacher-forced on the engine's tokens (one forward pass); fp32 reference and fp16 reference (same weights)",
        "engine_greedy": toks, "pytorch_fp32_greedy": fp32_greedy, "first_step_where_fp32_greedy_differs": first_fp32_diff,
        "summary": {
            "onnx_vs_fp32_max_abs_diff": max(r["max_abs_diff"] for r in onnx_vs_fp32),
            "fp16_pytorch_vs_fp32_max_abs_diff": max(r["max_abs_diff"] for r in fp16_vs_fp32),
            "onnx_vs_fp32_min_cosine": min(r["cosine"] for r in onnx_vs_fp32),
            "fp16_pytorch_vs_fp32_min_cosine": min(r["cosine"] for r in fp16_vs_fp32),
            "onnx_argmax_disagreements": [r["step"] for r in onnx_vs_fp32 if not r["argmax_equal"]],
            "fp16_pytorch_argmax_disagreements": [r["step"] for r in fp16_vs_fp32 if not r["argmax_equal"]],
        },
        "onnx_vs_fp32": onnx_vs_fp32,
        "fp16_pytorch_vs_fp32": fp16_vs_fp32,
    }
    if a.report:
        mt.write_json(a.report, rep)
    print(json.dumps(rep["summary"], indent=1))
    print("first step where PyTorch fp32 greedy differs from the engine's:", first_fp32_diff)
    for r in onnx_vs_fp32:
        if not r["argmax_equal"]:
            print("onnx argmax differs at step", r["step"], {k: r[k] for k in ("max_abs_diff", "ref_top1_top2_margin", "token_rank_in_ref")})


if __name__ == "__main__":
    main()
