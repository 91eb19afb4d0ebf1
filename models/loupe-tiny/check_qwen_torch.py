#!/usr/bin/env python3
"""Checks for qwen_torch.py (the plain-torch Qwen2.5-VL). Prints one JSON line; exits 1 if a check fails.

  check_qwen_torch.py                 (b) always, (a) when transformers is importable
  check_qwen_torch.py --no-hf         (b) only
  check_qwen_torch.py --make-weights  rebuild models/tiny-random-qwen25vl/model.safetensors with make_tiny_qwen25vl.py's
                                      seeded make_tiny (needs transformers, tokenizers, onnx, onnxruntime, jinja2), after
                                      checking that the rebuild reproduces the committed parity.json and ONNX weights
  check_qwen_torch.py --bench         forward+backward step time, QwenVL vs transformers (loupe-tiny config, fp32, CPU)

(a) transformers' Qwen2_5_VLForConditionalGeneration, random weights (loupe-tiny's config, tiny-random's, and a tied-embedding
    no-GQA variant): identical state-dict keys, weights copied into QwenVL, then vision features, logits (one-image and
    three-image prompts, a right-padded batch of both, a text-only prompt) within 1e-4, loss, gradients, greedy tokens equal.
(b) torch only: QwenVL.from_pretrained(models/tiny-random-qwen25vl) reproduces parity.json's PyTorch greedy tokens from the
    PNGs there (read and patchified without Pillow/transformers), on both attention paths; logits match REF_LSE (recorded
    from transformers, `--record`) within 1e-4; KV-cache decoding equals
    teacher-forced argmax; padded batch == rows alone; an identical-row group == one row; safetensors round trips.
"""
import argparse, json, os, sys, tempfile, time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt  # noqa: E402

TINY = os.path.normpath(os.path.join(HERE, "..", "tiny-random-qwen25vl"))
LOUPE_CFG = os.path.join(HERE, "model", "config.json")
TOL = 1e-4
# transformers 5.17 (Qwen2_5_VLForConditionalGeneration, fp32 CPU) on the tiny random model's weights: logsumexp of the
# logits at 24 evenly spaced prompt positions per parity case (`--record` prints these). Greedy tokens alone can survive a
# subtle bug (e.g. swapped mrope rows move logits by 0.1 without flipping an argmax); these catch it without transformers.
REF_LSE = {
    "single_image": [12.349232, 9.506186, 9.414246, 9.593758, 9.436635, 9.346238, 9.492258, 9.453786, 9.294082, 9.420755, 9.315228, 9.840459, 9.358151, 9.388178, 9.807856, 9.568377, 9.990267, 9.725849, 9.609015, 9.843171, 9.665038, 9.813699, 9.821705, 9.28139],
    "multi_image": [12.349232, 9.215593, 9.123751, 9.3175, 9.605307, 9.620691, 9.172258, 9.417758, 9.567912, 9.449286, 9.780604, 9.360283, 9.728883, 9.52673, 9.632011, 9.70375, 9.319906, 9.517535, 9.500702, 9.491598, 9.624506, 9.505468, 9.725259, 9.306342],
}


def lse_positions(n, k=24):
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def lse_stats(logits):
    """logits [L, V] -> logsumexp at lse_positions(L), rounded."""
    return [round(float(x), 6) for x in torch.logsumexp(logits.double()[lse_positions(logits.shape[0])], -1)]


def trim(row, eos):
    out = []
    for t in row:
        out.append(int(t))
        if int(t) in eos:
            break
    return out


def case_inputs(case, patch=14, temporal=2, merge=2):
    pvs, thws = zip(*[qt.patches_from_rgb(qt.read_png(os.path.join(TINY, f)), patch, temporal, merge) for f in case["images"]])
    return torch.tensor([case["input_ids"]]), torch.cat(pvs), torch.cat(thws), list(pvs)


def padded_batch(cases, pad):
    """Right-padded batch of the parity cases, labels on the second half of each row's text."""
    L = max(len(c["input_ids"]) for c in cases)
    ids = torch.full((len(cases), L), pad, dtype=torch.long)
    att = torch.zeros_like(ids)
    lab = torch.full_like(ids, -100)
    pvs, thws = [], []
    for i, c in enumerate(cases):
        n = len(c["input_ids"])
        ids[i, :n] = torch.tensor(c["input_ids"])
        att[i, :n] = 1
        lab[i, n // 2:n] = ids[i, n // 2:n]
        _, pv, thw, _ = case_inputs(c)
        pvs.append(pv)
        thws.append(thw)
    return ids, att, lab, torch.cat(pvs), torch.cat(thws)


# ----------------------------------------------------------------------------------------------------------------------
def check_parity(res, fails):
    """(b): torch only."""
    par = json.load(open(os.path.join(TINY, "parity.json")))
    eos = par["eos_token_id"]
    model = qt.QwenVL.from_pretrained(TINY).eval()
    out = {}
    for name, case in par["cases"].items():
        ids, pv, thw, pvs = case_inputs(case)
        r = {}
        sums = [float(p.double().sum()) for p in pvs]
        r["pixel_sum_max_rel_diff"] = max(abs(a - b) / abs(b) for a, b in zip(sums, case["pixel_values_sum"]))
        if r["pixel_sum_max_rel_diff"] > 1e-6 or thw.tolist() != case["image_grid_thw"]:
            fails.append(f"parity/{name}: preprocessing differs (pixel sums {sums} vs {case['pixel_values_sum']}, grids {thw.tolist()})")
        for path, sdpa in (("sdpa", True), ("manual", False)):
            if path == "sdpa" and qt._SDPA is None:
                continue
            qt.USE_SDPA = sdpa
            gen = trim(model.generate(ids, pv, thw, max_new_tokens=case["max_new_tokens"], eos_ids=eos)[0].tolist(), eos)
            r[f"greedy_equal_{path}"] = gen == case["generated"]
            if gen != case["generated"]:
                fails.append(f"parity/{name} ({path} attention): greedy {gen} != parity.json {case['generated']}")
        qt.USE_SDPA = True
        # KV-cache decoding == argmax of one full forward over prompt + generated (teacher forced)
        full = torch.tensor([case["input_ids"] + case["generated"]])
        with torch.no_grad():
            lg = model(full, pixel_values=pv, image_grid_thw=thw).logits[0]
        tf = lg[len(case["input_ids"]) - 1:-1].argmax(-1).tolist()
        r["teacher_forced_equal"] = tf == case["generated"]
        lse = lse_stats(lg[:len(case["input_ids"])])
        r["lse_max_diff_vs_transformers"] = max(abs(a - b) for a, b in zip(lse, REF_LSE[name]))
        if r["lse_max_diff_vs_transformers"] > TOL:
            fails.append(f"parity/{name}: logits differ from the recorded transformers reference (logsumexp diff {r['lse_max_diff_vs_transformers']:.3g})")
        if tf != case["generated"]:
            fails.append(f"parity/{name}: teacher-forced argmax {tf} != greedy {case['generated']}")
        # a group of 3 identical rows (images given once) == the single row
        g3 = model.generate(ids.repeat(3, 1), pv, thw, max_new_tokens=case["max_new_tokens"], eos_ids=eos)
        r["group_equal"] = all(trim(row.tolist(), eos) == case["generated"] for row in g3)
        if not r["group_equal"]:
            fails.append(f"parity/{name}: identical-row group generate differs from the single row")
        out[name] = r
    # right-padded batch == each row alone (positions, masks), and the loss is the mean over the batch's label tokens
    cases = list(par["cases"].values())
    ids, att, lab, pv, thw = padded_batch(cases, model.tc["pad"] or 0)
    with torch.no_grad():
        ob = model(ids, attention_mask=att, pixel_values=pv, image_grid_thw=thw, labels=lab)
        diff, nll, cnt = 0.0, 0.0, 0
        for i, c in enumerate(cases):
            n = len(c["input_ids"])
            i1, p1, t1, _ = case_inputs(c)
            o1 = model(i1, pixel_values=p1, image_grid_thw=t1, labels=lab[i:i + 1, :n])
            diff = max(diff, float((o1.logits[0] - ob.logits[i, :n]).abs().max()))
            k = int((lab[i, 1:n] != -100).sum())
            nll += float(o1.loss) * k
            cnt += k
    out["padded_batch_logits_max_diff"] = diff
    out["padded_batch_loss_diff"] = abs(float(ob.loss) - nll / cnt)
    if diff > TOL or out["padded_batch_loss_diff"] > TOL:
        fails.append(f"parity: padded batch differs from rows alone (logits {diff:.3g}, loss {out['padded_batch_loss_diff']:.3g})")
    # sampling: seeded => reproducible; a tiny top_p => greedy
    c0 = par["cases"]["single_image"]
    ids, pv, thw, _ = case_inputs(c0)
    s = [model.generate(ids.repeat(2, 1), pv, thw, max_new_tokens=8, eos_ids=eos, temperature=1.0, top_p=0.9,
                        generator=torch.Generator().manual_seed(5)).tolist() for _ in range(2)]
    tp = trim(model.generate(ids, pv, thw, max_new_tokens=c0["max_new_tokens"], eos_ids=eos, temperature=1.0, top_p=1e-9)[0].tolist(), eos)
    out["sampling_reproducible"] = s[0] == s[1]
    out["top_p_tiny_is_greedy"] = tp == c0["generated"]
    if not (out["sampling_reproducible"] and out["top_p_tiny_is_greedy"]):
        fails.append("parity: sampling not reproducible with a seeded generator, or top_p=1e-9 is not greedy")
    toks, lps = model.generate(ids, pv, thw, max_new_tokens=4, eos_ids=eos, return_logprobs=True)
    out["logprobs_ok"] = bool((lps <= 0).all()) and lps.shape == toks.shape
    # safetensors: built-in writer/reader round trip (and against the package when present); save/from_pretrained
    with tempfile.TemporaryDirectory() as tmp:
        sd = model.state_dict()
        sd_bf = {k: v.to(torch.bfloat16) for k, v in list(sd.items())[:5]}
        sd_bf["ints"] = torch.arange(7, dtype=torch.int64)
        sd_bf["empty"] = torch.zeros(0, 3)
        qt.write_safetensors(sd_bf, f"{tmp}/a.safetensors")
        back = qt.read_safetensors(f"{tmp}/a.safetensors")
        ok = back.keys() == sd_bf.keys() and all(torch.equal(back[k], sd_bf[k]) and back[k].dtype == sd_bf[k].dtype for k in sd_bf)
        try:
            from safetensors.torch import load_file
            pk = load_file(f"{tmp}/a.safetensors")
            ok = ok and all(torch.equal(pk[k], sd_bf[k]) for k in sd_bf)
            ok = ok and all(torch.equal(v, sd[k]) for k, v in qt.read_safetensors(os.path.join(TINY, "model.safetensors")).items())
            out["safetensors_package_cross_checked"] = True
        except ImportError:
            out["safetensors_package_cross_checked"] = False
        model.save_pretrained(f"{tmp}/m")
        m2 = qt.QwenVL.from_pretrained(f"{tmp}/m")
        ok = ok and all(torch.equal(v, m2.state_dict()[k]) for k, v in sd.items())
        out["safetensors_roundtrip"] = bool(ok)
        if not ok:
            fails.append("parity: safetensors round trip failed")
    res["parity"] = out


# ----------------------------------------------------------------------------------------------------------------------
def hf_model(cfg, attn="sdpa"):
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    c = Qwen2_5_VLConfig(**cfg)
    c._attn_implementation = attn
    m = Qwen2_5_VLForConditionalGeneration(c).eval()
    with torch.no_grad():  # make_tiny's wider init: greedy choices far from ties
        for n, p in m.named_parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.3 if "embed" in n or "lm_head" in n else 0.08)
            elif n.endswith("bias"):
                p.normal_(0, 0.02)
    return m


def mm_types(ids, cfg):
    return (ids == cfg["image_token_id"]).long() + 2 * (ids == cfg["video_token_id"]).long()


def check_hf_one(label, cfg, fails):
    torch.manual_seed(0)
    hf = hf_model(cfg)
    q = qt.QwenVL(cfg).eval()
    hk, qk = list(hf.state_dict()), list(q.state_dict())
    r = {"state_dict_keys_equal": hk == qk}
    if set(hk) != set(qk):
        fails.append(f"hf/{label}: state-dict keys differ: only HF {sorted(set(hk) - set(qk))[:5]}, only QwenVL {sorted(set(qk) - set(hk))[:5]}")
        return r
    q.load_state_dict(hf.state_dict())
    vv = cfg["vision_config"]
    par = json.load(open(os.path.join(TINY, "parity.json")))
    eos = par["eos_token_id"]
    for name, case in par["cases"].items():
        ids, pv, thw, _ = case_inputs(case, vv["patch_size"], vv["temporal_patch_size"], vv["spatial_merge_size"])
        lab = ids.clone()
        lab[:, : ids.shape[1] // 2] = -100
        with torch.no_grad():
            vh = hf.model.visual(pv, thw).pooler_output
            vq = q.model.visual(pv, thw)
            oh = hf(input_ids=ids, pixel_values=pv, image_grid_thw=thw, mm_token_type_ids=mm_types(ids, cfg), labels=lab)
            oq = q(ids, pixel_values=pv, image_grid_thw=thw, labels=lab)
            g = hf.generate(input_ids=ids, pixel_values=pv, image_grid_thw=thw, mm_token_type_ids=mm_types(ids, cfg), max_new_tokens=12,
                            do_sample=False, eos_token_id=eos, output_scores=True, return_dict_in_generate=True)
        gh = g.sequences[0, ids.shape[1]:].tolist()
        gq = trim(q.generate(ids, pv, thw, max_new_tokens=12, eos_ids=eos)[0].tolist(), eos)
        c = {"vision_max_diff": float((vh - vq).abs().max()), "logits_max_diff": float((oh.logits - oq.logits).abs().max()),
             "loss_diff": abs(float(oh.loss) - float(oq.loss)), "greedy_equal": gh == gq, "greedy_hf": gh}
        if gh != gq:
            k = next(i for i in range(min(len(gh), len(gq)) + 1) if i >= len(gh) or i >= len(gq) or gh[i] != gq[i])
            if k < len(g.scores):
                top = g.scores[k][0].float().topk(2).values
                c["divergence_step"], c["hf_margin_there"] = k, float(top[0] - top[1])
            fails.append(f"hf/{label}/{name}: greedy {gq} != HF {gh}")
        for key in ("vision_max_diff", "logits_max_diff", "loss_diff"):
            if c[key] > TOL:
                fails.append(f"hf/{label}/{name}: {key} {c[key]:.3g} > {TOL}")
        r[name] = c
    # right-padded two-row batch with labels: logits everywhere (padded positions too), loss, gradients
    cases = list(par["cases"].values())
    ids, att, lab, pv, thw = padded_batch(cases, cfg["text_config"].get("pad_token_id") or 0)
    oh = hf(input_ids=ids, attention_mask=att, pixel_values=pv, image_grid_thw=thw, mm_token_type_ids=mm_types(ids, cfg), labels=lab)
    oq = q(ids, attention_mask=att, pixel_values=pv, image_grid_thw=thw, labels=lab)
    oh.loss.backward()
    oq.loss.backward()
    gq = dict(q.named_parameters())
    gdiff = max(float((p.grad - gq[n].grad).abs().max() / (p.grad.abs().max() + 1e-12)) for n, p in hf.named_parameters() if p.grad is not None)
    b = {"logits_max_diff": float((oh.logits - oq.logits).abs().max()), "loss_diff": abs(float(oh.loss) - float(oq.loss)),
         "grad_max_rel_diff": gdiff}
    for key in b:
        if b[key] > TOL:
            fails.append(f"hf/{label}/padded_batch: {key} {b[key]:.3g} > {TOL}")
    r["padded_batch"] = b
    # text only (no images): HF's 1-D positions
    ids = torch.tensor([cases[0]["input_ids"][:10] + cases[0]["input_ids"][-12:]])
    with torch.no_grad():
        d = float((hf(input_ids=ids).logits - q(ids).logits).abs().max())
    r["text_only_logits_max_diff"] = d
    if d > TOL:
        fails.append(f"hf/{label}/text_only: logits diff {d:.3g}")
    return r


def check_hf(res, fails):
    tiny = json.load(open(os.path.join(TINY, "config.json")))
    tied = json.loads(json.dumps(tiny))
    tied["tie_word_embeddings"] = True
    tied["text_config"].update(num_key_value_heads=4, hidden_size=96, num_attention_heads=4)
    tied["text_config"]["rope_parameters"]["mrope_section"] = [4, 4, 4]
    tied["vision_config"].update(depth=3, fullatt_block_indexes=[0], num_heads=4, out_hidden_size=96, window_size=56)
    out = {}
    for label, cfg in (("loupe-tiny", json.load(open(LOUPE_CFG))), ("tiny-random", tiny), ("tied-noGQA", tied)):
        out[label] = check_hf_one(label, cfg, fails)
    res["hf"] = out


# ----------------------------------------------------------------------------------------------------------------------
def make_weights(res, fails):
    """Rebuild the tiny random model with make_tiny (seed 0, as `make_tiny_qwen25vl.py OUT` does), check it against the
    committed parity.json and ONNX weights, and write its state dict to models/tiny-random-qwen25vl/model.safetensors."""
    import onnx
    from onnx import numpy_helper
    sys.path.insert(0, os.path.dirname(HERE))
    import make_tiny_qwen25vl as mk
    with tempfile.TemporaryDirectory() as tmp:
        model, _ = mk.make_tiny(tmp, 0, {"fp32"}, lambda s: None)
        a, b = json.load(open(f"{tmp}/parity.json")), json.load(open(os.path.join(TINY, "parity.json")))
        same_parity = all(a["cases"][k][f] == b["cases"][k][f] for k in b["cases"] for f in ("input_ids", "image_grid_thw", "generated"))
        onnx_diff = 0.0
        for f in ("vision_encoder.onnx", "decoder_model_merged.onnx", "embed_tokens.onnx"):
            wa = {t.name: numpy_helper.to_array(t) for t in onnx.load(f"{tmp}/onnx/{f}").graph.initializer}
            wb = {t.name: numpy_helper.to_array(t) for t in onnx.load(os.path.join(TINY, "onnx", f)).graph.initializer}
            if wa.keys() != wb.keys():
                onnx_diff = float("inf")
                continue
            onnx_diff = max([onnx_diff] + [float(np.abs(wa[k].astype(np.float64) - wb[k]).max()) for k in wa if wa[k].size])
        res["make_weights"] = {"parity_json_reproduced": same_parity, "onnx_initializers_max_diff": onnx_diff}
        if not same_parity or onnx_diff != 0.0:
            fails.append(f"make-weights: the rebuild does not reproduce the committed files (parity {same_parity}, onnx diff {onnx_diff})")
            return
        cfg = json.load(open(os.path.join(TINY, "config.json")))
        q = qt.QwenVL(cfg, init=False)
        q.load_state_dict(model.state_dict())
        dst = os.path.join(TINY, "model.safetensors")
        qt.save_safetensors({k: v for k, v in q.state_dict().items()}, dst)
        res["make_weights"]["written"] = os.path.relpath(dst, os.path.dirname(os.path.dirname(HERE)))
        res["make_weights"]["bytes"] = os.path.getsize(dst)


def record():
    """Print REF_LSE computed by transformers on models/tiny-random-qwen25vl/model.safetensors."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    cfg = json.load(open(os.path.join(TINY, "config.json")))
    c = Qwen2_5_VLConfig(**cfg)
    c._attn_implementation = "eager"
    hf = Qwen2_5_VLForConditionalGeneration(c).eval()
    hf.load_state_dict(qt.load_safetensors(os.path.join(TINY, "model.safetensors")))
    par = json.load(open(os.path.join(TINY, "parity.json")))
    ref = {}
    for name, case in par["cases"].items():
        ids, pv, thw, _ = case_inputs(case)
        with torch.no_grad():
            ref[name] = lse_stats(hf(input_ids=ids, pixel_values=pv, image_grid_thw=thw, mm_token_type_ids=mm_types(ids, cfg)).logits[0])
    print("REF_LSE = " + json.dumps(ref))


def bench(res, steps=5):
    """forward+backward, batch 4 x ~300 tokens, one 128-token image (16x32 patches) per row, labels on the text after it."""
    cfg = json.load(open(LOUPE_CFG))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    B, L, ntok = 4, 300, 128
    ids = torch.tensor(rng.integers(20, cfg["text_config"]["vocab_size"], (B, L)))
    ids[:, 20] = cfg["vision_start_token_id"]
    ids[:, 21:21 + ntok] = cfg["image_token_id"]
    ids[:, 21 + ntok] = cfg["vision_end_token_id"]
    att = torch.ones_like(ids)
    for i in range(B):  # ragged lengths, right padded
        att[i, L - 10 * i:] = 0
    lab = ids.masked_fill(att == 0, -100)
    lab[:, :22 + ntok] = -100
    pv = torch.randn(B * 512, 1176)
    thw = torch.tensor([[1, 16, 32]] * B)
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "batch": B, "seq": L, "image_tokens": ntok}

    def timeit(fn):
        fn()
        ts = []
        for _ in range(steps):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return round(float(np.median(ts)) * 1000, 1)

    q = qt.QwenVL(cfg).train()

    def step_q():
        q.zero_grad(set_to_none=True)
        q(ids, attention_mask=att, pixel_values=pv, image_grid_thw=thw, labels=lab).loss.backward()
    out["qwen_torch_ms"] = timeit(step_q)
    qt.USE_SDPA = False
    out["qwen_torch_manual_attention_ms"] = timeit(step_q)
    qt.USE_SDPA = True
    try:
        hf = hf_model(cfg).train()
        mm = mm_types(ids, cfg)

        def step_h():
            hf.zero_grad(set_to_none=True)
            hf(input_ids=ids, attention_mask=att, pixel_values=pv, image_grid_thw=thw, mm_token_type_ids=mm, labels=lab).loss.backward()
        out["transformers_sdpa_ms"] = timeit(step_h)
    except ImportError:
        out["transformers_sdpa_ms"] = None
    res["bench"] = out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-hf", action="store_true")
    ap.add_argument("--make-weights", action="store_true")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--record", action="store_true", help="print REF_LSE from transformers (for this file)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: these models are tiny, and on a busy machine extra OpenMP threads only wait)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.record:
        return record()
    res, fails = {"torch": torch.__version__, "sdpa": qt._SDPA is not None}, []
    t0 = time.time()
    if a.make_weights:
        make_weights(res, fails)
    if a.bench:
        bench(res)
    else:
        if not os.path.exists(os.path.join(TINY, "model.safetensors")):
            fails.append(f"{TINY}/model.safetensors is missing (run check_qwen_torch.py --make-weights)")
        else:
            check_parity(res, fails)
        try:
            import transformers
            have_hf = not a.no_hf
            res["transformers"] = transformers.__version__
        except ImportError:
            have_hf = False
        if have_hf:
            check_hf(res, fails)
        res["ran"] = ["b"] + (["a"] if have_hf else [])
    res["seconds"] = round(time.time() - t0, 1)
    res["ok"] = not fails
    res["failures"] = fails
    print(json.dumps(res))
    sys.exit(0 if not fails else 1)


if __name__ == "__main__":
    main()
