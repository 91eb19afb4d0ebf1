#!/usr/bin/env python3
"""GPU reference for Loupe's engine bench: memory bandwidth, PyTorch `generate` speed on a random-weight Qwen2.5-VL,
the memory-bandwidth bound, and the same weights exported to ONNX (transformers.js layout) for Loupe's engine.

  python3 models/gpu_bench.py --config 3b --out /tmp/random-3b [--dtypes fp16] [--report models/reports/gpu-bench-3b.json]

(a) bandwidth: a large device-to-device copy (torch.Tensor.copy_), GB/s counted as bytes read + bytes written.
(b) PyTorch `generate`, bf16, batch 1, eager and sdpa attention: prompt = one image (224x168, 48 image tokens) + "Describe
    this image." in the Qwen chat template, greedy, exactly --new-tokens tokens (min_new_tokens: eos ignored), after a
    warm-up; prefill = a 1-token generate; decode tok/s = (N - 1) / (t(N tokens) - t(1 token)); median of --runs.
(c) bound: decode_bound_tok_s = bandwidth_Bps / bytes_read_per_decode_token, where bytes_read_per_decode_token =
    2 bytes x (text-decoder params incl. lm_head, excl. the embedding table [one row read] and the vision tower [not
    run in decode]) + the KV cache at the mid-generation length (2 x layers x kv_heads x head_dim x 2 bytes x tokens).
    `bound_all_weights_tok_s` = bandwidth / (2 bytes x all params), the convention of the issue's 7B reference
    (4.2 TB/s / 16.6 GB ~ 255 tok/s).
(d) export (unless --no-export): the same random weights (fp32 master copy; bf16/fp16 are roundings of it) to --out with
    make_tiny_qwen25vl's exporter (default fp16; add fp32 with --dtypes fp16,fp32), plus the committed tiny tokenizer (the
    config's special ids are the tiny tokenizer's, so prompts are identical in PyTorch and in Node) and original.png.
    Then run Loupe's engine on it: node engine-bench.mjs OUT --device webgpu --dtype fp16 --bandwidth-gbs <a>.

Budget (H100/H200): 3b ~ 4-5 min with the fp16 export (the fp32 3B export alone took 216 s, models/reports/
device-q3b.log.txt); 7b: run with --no-export first, then the export alone (--skip-bench) if needed; each under 10 min.
JSON to stdout (last line block) and to --report.
"""
import argparse, copy, json, os, shutil, statistics, sys, time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tiny_qwen25vl as mt  # noqa: E402


def bandwidth(gib=4, iters=20):
    """Device-to-device copy of `gib` GiB, `iters` times: (read + write bytes) / time, in GB/s (1e9)."""
    n = gib * (1 << 30)
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    src.random_(0, 255)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        dst.copy_(src)
    b.record()
    torch.cuda.synchronize()
    s = a.elapsed_time(b) / 1000
    del src, dst
    torch.cuda.empty_cache()
    return {"copy_bytes": n, "iters": iters, "seconds": s, "gb_s_read_plus_write": 2 * n * iters / s / 1e9}


def prompt_inputs(cfg):
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(f"{mt.TINY_DIR}/tokenizer.json")
    render = mt.render_with_jinja(mt.QWEN_VL_TEMPLATE)
    im = mt.synthetic_images()["original.png"]
    prompt = render([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe this image."}]}])
    parts = prompt.split("<|image_pad|>")
    text = parts[0] + "<|image_pad|>" * ((im.shape[0] // 14) * (im.shape[1] // 14) // 4) + parts[1]
    ids, pvs, thws = mt.case_inputs(None, tk.encode(text).ids, [im])
    return ids, pvs[0], thws[0], mt.mm_types(ids, cfg)


def bench_generate(m, cfg, new_tokens, runs):
    ids, pv, thw, mm = prompt_inputs(cfg)
    kw = dict(input_ids=ids.cuda(), pixel_values=pv.cuda().to(torch.bfloat16), image_grid_thw=thw.cuda(), mm_token_type_ids=mm.cuda(),
              do_sample=False, attention_mask=torch.ones_like(ids).cuda())

    def timed(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        out = m.generate(**kw, max_new_tokens=n, min_new_tokens=n)
        torch.cuda.synchronize()
        return time.perf_counter() - t, out

    with torch.no_grad():
        timed(8)  # warm-up (kernels, allocator)
        pre, dec, toks = [], [], None
        for _ in range(runs):
            t1, _ = timed(1)
            tn, out = timed(new_tokens)
            pre.append(t1)
            dec.append((new_tokens - 1) / max(tn - t1, 1e-9))
            toks = out[0, ids.shape[1]:].tolist()
    p = statistics.median(pre)
    return {"prompt_tokens": int(ids.shape[1]), "new_tokens": new_tokens, "runs": runs, "prefill_s": p, "prefill_tok_s": ids.shape[1] / p,
            "decode_tok_s": statistics.median(dec), "decode_tok_s_runs": dec, "greedy_tokens": toks[:32]}


def decode_bytes(model, prompt_tokens, new_tokens, bytes_per=2):
    cfg = model.config
    NL, KVH, HD, _ = mt.text_dims(cfg)
    lm = model.model.language_model
    text = sum(p.numel() for p in lm.parameters()) - lm.embed_tokens.weight.numel()
    head = model.lm_head.weight.numel()  # tied or not, the head is read every step
    total = sum(p.numel() for p in model.parameters())  # parameters() counts a tied matrix once
    kv = 2 * NL * KVH * HD * bytes_per * (prompt_tokens + new_tokens // 2)
    return {"params_total": total, "params_read_per_decode_token": text + head, "weight_bytes_per_decode_token": (text + head) * bytes_per,
            "kv_bytes_per_decode_token_mid": kv, "bytes_per_decode_token": (text + head) * bytes_per + kv, "all_weight_bytes": total * bytes_per}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", choices=sorted(mt.RANDOM_CONFIGS), required=True)
    ap.add_argument("--out", help="folder for the ONNX export (transformers.js layout); required unless --no-export")
    ap.add_argument("--dtypes", default=None, help="ONNX dtypes to export: fp16 (default for 3b/7b), fp16,fp32 (default for 0.5b), q8")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-export", action="store_true")
    ap.add_argument("--skip-bench", action="store_true", help="export only (no bandwidth / generate)")
    ap.add_argument("--report", help="JSON report path (default models/reports/gpu-bench-<config>.json)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_bench.py: no CUDA device (torch.cuda.is_available() is False)")
    if not a.no_export and not a.out:
        sys.exit("gpu_bench.py: --out DIR is required for the export (or pass --no-export)")
    dtypes = set((a.dtypes or ("fp16,fp32" if a.config == "0.5b" else "fp16")).split(","))
    if dtypes - {"fp16", "fp32", "q8"}:
        sys.exit(f"--dtypes: unsupported {sorted(dtypes - {'fp16', 'fp32', 'q8'})} (use fp16, fp32, q8)")
    report_path = a.report or os.path.join(os.path.dirname(os.path.abspath(__file__)), "reports", f"gpu-bench-{a.config}.json")
    log = lambda s: print(s, file=sys.stderr, flush=True)
    import transformers
    from transformers import Qwen2_5_VLForConditionalGeneration
    t_all = time.time()
    rep = {"config": a.config, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "transformers": transformers.__version__,
           "seed": a.seed}

    torch.manual_seed(a.seed)
    cfg = mt.random_config(a.config, mt.TINY_IDS)
    cfg._attn_implementation = "eager"
    t = time.time()
    with torch.device("cuda"):
        model = Qwen2_5_VLForConditionalGeneration(cfg).float().eval()
    rep["build_s"] = time.time() - t
    log(f"random {a.config}: {sum(p.numel() for p in model.parameters()) / 1e9:.3f} B params, built on CUDA in {rep['build_s']:.1f}s")

    if not a.skip_bench:
        rep["bandwidth"] = bw = bandwidth()
        log(f"bandwidth (d2d copy, read+write): {bw['gb_s_read_plus_write']:.0f} GB/s")
        m16 = copy.deepcopy(model).to(torch.bfloat16).eval()
        rep["generate"] = {}
        for impl in ("eager", "sdpa"):
            try:
                m16.set_attn_implementation(impl)
                r = bench_generate(m16, cfg, a.new_tokens, a.runs)
            except Exception as e:  # report, keep the other numbers
                r = {"error": f"{type(e).__name__}: {e}"}
            rep["generate"][impl] = r
            log(f"PyTorch generate bf16 {impl}: {json.dumps({k: v for k, v in r.items() if k not in ('decode_tok_s_runs', 'greedy_tokens')})}")
        del m16
        torch.cuda.empty_cache()
        b = decode_bytes(model, rep["generate"]["eager"].get("prompt_tokens", 77), a.new_tokens)
        Bps = bw["gb_s_read_plus_write"] * 1e9
        bound = Bps / b["bytes_per_decode_token"]
        rep["bound"] = dict(b, formula="decode_bound_tok_s = bandwidth_Bps / (2 B x params read per decode token [text decoder + lm_head] "
                                       "+ KV cache bytes at mid-generation)", decode_bound_tok_s=bound,
                            bound_all_weights_tok_s=Bps / b["all_weight_bytes"])
        for impl, r in rep["generate"].items():
            if "decode_tok_s" in r:
                r["fraction_of_bound"] = r["decode_tok_s"] / bound
        log(f"bound: {bound:.0f} tok/s ({b['bytes_per_decode_token'] / 1e9:.2f} GB per token); all weights: {rep['bound']['bound_all_weights_tok_s']:.0f} tok/s")

    if not a.no_export:
        t = time.time()
        model = model.cpu()  # the exporter traces on CPU; in place, so no second fp32 copy
        torch.cuda.empty_cache()
        os.makedirs(a.out, exist_ok=True)
        chunks = mt.export_onnx(model, a.out, dtypes, log)
        mt.write_model_files(model, a.out, chunks, tokenizer_src=mt.TINY_DIR)
        for f in mt.synthetic_images():
            shutil.copy(f"{mt.TINY_DIR}/{f}", f"{a.out}/{f}")
        rep["export"] = {"dir": a.out, "dtypes": sorted(dtypes), "seconds": time.time() - t,
                         "files": {f: os.path.getsize(f"{a.out}/onnx/{f}") for f in sorted(os.listdir(f"{a.out}/onnx"))}}
        log(f"exported {sorted(dtypes)} to {a.out} in {rep['export']['seconds']:.0f}s")
    rep["total_s"] = time.time() - t_all
    os.makedirs(os.path.dirname(os.path.abspath(report_path)), exist_ok=True)
    mt.write_json(report_path, rep)
    print(json.dumps(rep, indent=1))


if __name__ == "__main__":
    main()
