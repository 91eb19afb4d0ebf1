#!/usr/bin/env python3
"""loupe-tiny: SFT of a tiny Qwen2.5-VL on loupe-synth trajectories (made by prepare.ts through Loupe's own loop and
engine preprocessing), then export to the transformers.js layout with models/make_tiny_qwen25vl.py's exporter.

  train.py --data DIR[,DIR...] --tok models/tiny-random-qwen25vl --out OUT [--minutes 5] [--bs 32] [--lr 1.5e-3]

Plain torch + transformers' Qwen2_5_VLForConditionalGeneration with a small config; loss on assistant tokens only
(the spans prepare.ts recorded, each ending with its <|im_end|>). The learning-rate schedule runs on wall-clock time
(warm-up then cosine to 0 at --minutes), so the run ends on time whatever the GPU.
Writes OUT/{config.json, generation_config.json, preprocessor_config.json, tokenizer*.json, onnx/*.onnx}, OUT/metrics.json,
OUT/curves.png, OUT/state_dict.pt.
"""
import argparse, json, math, os, random, shutil, sys, time

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import make_tiny_qwen25vl as mk  # noqa: E402  (the exporter and its patch layout)

MAX_PIXELS = 128 * 28 * 28  # = prepare.ts LOUPE_TINY_MAX_PIXELS


def build_config(tok_dir):
    from transformers import Qwen2_5_VLConfig
    base = json.load(open(f"{tok_dir}/config.json"))
    t = base["text_config"]
    cfg = Qwen2_5_VLConfig(
        text_config=dict(vocab_size=t["vocab_size"], hidden_size=256, intermediate_size=640, num_hidden_layers=4, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=32768, rms_norm_eps=1e-6, bos_token_id=t["bos_token_id"],
                         eos_token_id=t["eos_token_id"], pad_token_id=t["pad_token_id"],
                         rope_parameters={"rope_type": "default", "rope_theta": 1e5, "mrope_section": [8, 12, 12]}),
        vision_config=dict(depth=4, hidden_size=160, intermediate_size=480, num_heads=2, out_hidden_size=256, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2, window_size=112, fullatt_block_indexes=[1, 3], tokens_per_second=2),
        image_token_id=base["image_token_id"], video_token_id=base["video_token_id"], vision_start_token_id=base["vision_start_token_id"],
        vision_end_token_id=base["vision_end_token_id"], tie_word_embeddings=False)
    return cfg


def load_data(dirs, log):
    recs, pix = [], {}
    for d in dirs:
        for line in open(f"{d}/manifest.jsonl"):
            if not line.strip():
                continue
            r = json.loads(line)
            for im in r["images"]:
                key = os.path.normpath(os.path.join(d, "images", im["file"]))  # notool manifests point into another folder
                if key not in pix:
                    rgb = np.asarray(Image.open(key).convert("RGB"))
                    pv, thw = mk.patches_from_rgb(rgb)
                    assert thw[0].tolist() == im["grid"], (key, thw, im["grid"])
                    pix[key] = pv.to(torch.bfloat16)
                im["key"] = key
            recs.append(r)
    log(f"{len(recs)} trajectories, {len(pix)} images from {dirs}")
    return recs, pix


def where(cx, cy):
    """app/bench/loupe-synth/trajectories.ts where(), on a box centre."""
    v = "upper" if cy < 0.34 else "lower" if cy > 0.66 else "middle"
    hz = "left" if cx < 0.34 else "right" if cx > 0.66 else "centre"
    if v == "middle" and hz == "centre":
        return "near the centre"
    if v == "middle":
        return f"on the {hz} side"
    return f"in the {v} {'middle' if hz == 'centre' else hz}"


def fmt(x):
    """Python json.dumps of a 3-decimal box value as the TS generator writes it (r3: clamp to [0, 0.999])."""
    x = min(0.999, max(0.0, round(x, 3)))
    return "0" if x == 0 else repr(x)


def flip_first_turns(recs, pix, tk, log):
    """Localization data for free: the first turn of each zoom trajectory (global image -> crop call) on the image
    mirrored left-right, top-bottom and both, with the call box and the 'where' phrase mirrored to match. The prompt
    tokens do not change (same grid), so only the image and the assistant text are new."""
    import re
    out = []
    pat = re.compile(r"^I can see (.+?) (in the \w+ \w+|on the \w+ side|near the centre), but (.+?) at this size\. Let me zoom in\.\n<tool_call>\n"
                     r'\{"name": "crop_image_normalized", "arguments": \{"bbox_2d": \[([^\]]+)\], "target_image": 1\}\}\n</tool_call>$')
    im_end = tk.token_to_id("<|im_end|>")
    bad = 0
    for r in recs:
        s0, e0 = r["spans"][0]
        text = tk.decode(r["ids"][s0:e0 - 1], skip_special_tokens=False)
        m = pat.match(text)
        if not m:
            bad += 1
            continue
        box = [float(v) for v in m.group(4).split(",")]
        im = r["images"][0]
        rgb = np.asarray(Image.open(im["key"]).convert("RGB"))
        for name, fx, fy in (("h", True, False), ("v", False, True), ("hv", True, True)):
            x1, y1, x2, y2 = box
            if fx:
                x1, x2 = 1 - x2, 1 - x1
            if fy:
                y1, y2 = 1 - y2, 1 - y1
            img = rgb[:, ::-1] if fx else rgb
            img = img[::-1] if fy else img
            key = f"{im['key']}#{name}"
            if key not in pix:
                pv, _ = mk.patches_from_rgb(np.ascontiguousarray(img))
                pix[key] = pv.to(torch.bfloat16)
            new = (f"I can see {m.group(1)} {where((x1 + x2) / 2, (y1 + y2) / 2)}, but {m.group(3)} at this size. Let me zoom in.\n<tool_call>\n"
                   f'{{"name": "crop_image_normalized", "arguments": {{"bbox_2d": [{", ".join(fmt(v) for v in (x1, y1, x2, y2))}], "target_image": 1}}}}\n</tool_call>')
            ids = r["ids"][:s0] + tk.encode(new).ids + [im_end]
            out.append({"qid": r["qid"], "kind": f"zoom-first-{name}", "ids": ids, "spans": [[s0, len(ids)]], "images": [{**im, "key": key}]})
    log(f"mirrored first turns: {len(out)} from {len(recs)} zoom trajectories ({bad} did not match the template)")
    return out


def batch(recs, pix, cfg, dev):
    L = max(len(r["ids"]) for r in recs)
    pad = cfg.text_config.pad_token_id
    ids = torch.full((len(recs), L), pad, dtype=torch.long)
    lab = torch.full((len(recs), L), -100, dtype=torch.long)
    att = torch.zeros((len(recs), L), dtype=torch.long)
    pvs, thws = [], []
    for i, r in enumerate(recs):
        n = len(r["ids"])
        ids[i, :n] = torch.tensor(r["ids"])
        att[i, :n] = 1
        for s, e in r["spans"]:
            lab[i, s:e] = ids[i, s:e]
        for im in r["images"]:
            pvs.append(pix[im["key"]])
            thws.append(im["grid"])
    return dict(input_ids=ids.to(dev), attention_mask=att.to(dev), labels=lab.to(dev), pixel_values=torch.cat(pvs).to(dev),
                image_grid_thw=torch.tensor(thws).to(dev), mm_token_type_ids=mk.mm_types(ids, cfg).to(dev))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--tok", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--bs", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init", help="start from this state_dict.pt (a previous run's)")
    ap.add_argument("--aug-flips", action="store_true", help="add mirrored first turns of the zoom trajectories (localization data)")
    a = ap.parse_args()
    log = lambda s: print(s, flush=True)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    from transformers import Qwen2_5_VLForConditionalGeneration
    cfg = build_config(a.tok)
    cfg._attn_implementation = "sdpa"
    model = Qwen2_5_VLForConditionalGeneration(cfg).to(dev)
    nparam = sum(p.numel() for p in model.parameters())
    log(f"params {nparam / 1e6:.2f} M (vision {sum(p.numel() for p in model.model.visual.parameters()) / 1e6:.2f} M)")
    recs, pix = load_data(a.data.split(","), log)
    # hold out whole scenes (qid) for validation
    qids = sorted({r["qid"] for r in recs})
    rnd = random.Random(1)
    val_q = set(rnd.sample(qids, max(8, len(qids) // 25)))
    train = [r for r in recs if r["qid"] not in val_q]
    val = [r for r in recs if r["qid"] in val_q]
    log(f"train {len(train)} trajectories ({len(qids) - len(val_q)} scenes), val {len(val)} ({len(val_q)} scenes)")
    if a.init:
        sd = torch.load(a.init, map_location="cpu")
        model.load_state_dict({k: v.float() for k, v in sd.items()})
        log(f"initialized from {a.init}")
    if a.aug_flips:
        from tokenizers import Tokenizer
        tk0 = Tokenizer.from_file(f"{a.tok}/tokenizer.json")
        extra = flip_first_turns([r for r in train if r["kind"] == "zoom"], pix, tk0, log)
        train = train + extra
        log(f"train with mirrored first turns: {len(train)}")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": nodecay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.98))
    budget = a.minutes * 60
    warm = 0.04
    curve, vcurve = [], []
    t0 = time.time()
    step, epoch = 0, 0
    order = []

    def evaluate():
        model.eval()
        tot, n, ans_ok, ans_n = 0.0, 0, 0, 0
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev == "cuda"):
            for i in range(0, len(val), a.bs):
                b = batch(val[i:i + a.bs], pix, cfg, dev)
                out = model(**b)
                m = b["labels"][:, 1:] != -100
                lg = out.logits[:, :-1].float()
                ce = torch.nn.functional.cross_entropy(lg.transpose(1, 2), b["labels"][:, 1:].clamp(min=0), reduction="none")
                tot += float((ce * m).sum())
                n += int(m.sum())
                ok = (lg.argmax(-1) == b["labels"][:, 1:]) | ~m
                ans_ok += int(ok.all(-1).sum())
                ans_n += ok.shape[0]
        model.train()
        return tot / max(n, 1), ans_ok / max(ans_n, 1)

    model.train()
    while True:
        el = time.time() - t0
        if el > budget:
            break
        frac = el / budget
        lr = a.lr * (frac / warm if frac < warm else 0.5 * (1 + math.cos(math.pi * (frac - warm) / (1 - warm))))
        for g in opt.param_groups:
            g["lr"] = lr
        if not order:
            order = list(range(len(train)))
            random.shuffle(order)
            # similar lengths together: less padding
            chunks = [order[i:i + a.bs * 8] for i in range(0, len(order), a.bs * 8)]
            order = [j for c in chunks for j in sorted(c, key=lambda k: len(train[k]["ids"]))]
            bl = [order[i:i + a.bs] for i in range(0, len(order), a.bs)]
            random.shuffle(bl)
            order = [j for b_ in bl for j in b_]
            epoch += 1
        idx, order = order[:a.bs], order[a.bs:]
        b = batch([train[i] for i in idx], pix, cfg, dev)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev == "cuda"):
            loss = model(**b).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        step += 1
        if step % 10 == 0:
            curve.append({"step": step, "t": round(time.time() - t0, 1), "loss": float(loss), "lr": lr, "grad_norm": gn, "epoch": epoch})
        if step % 100 == 0:
            vl, va = evaluate()
            vcurve.append({"step": step, "t": round(time.time() - t0, 1), "val_loss": vl, "val_seq_exact": va})
            log(f"step {step} ep {epoch} t {time.time() - t0:.0f}s loss {float(loss):.4f} val {vl:.4f} exact {va:.3f} lr {lr:.2e}")
    vl, va = evaluate()
    vcurve.append({"step": step, "t": round(time.time() - t0, 1), "val_loss": vl, "val_seq_exact": va})
    log(f"final step {step} epochs {epoch} val_loss {vl:.4f} val exact-trajectory (teacher forced) {va:.3f}")

    # greedy first turns on held-out scenes (PyTorch), to see tool calls before export
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(f"{a.tok}/tokenizer.json")
    model.eval()
    samples = []
    eos = [cfg.text_config.eos_token_id]
    for r in [x for x in val if x["kind"] in ("zoom", "recover")][:12]:
        s0 = r["spans"][0][0]
        ids = torch.tensor([r["ids"][:s0]], device=dev)
        im = r["images"][0]
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev == "cuda"):
            g = model.generate(input_ids=ids, pixel_values=pix[im["key"]].to(dev), image_grid_thw=torch.tensor([im["grid"]], device=dev),
                               mm_token_type_ids=mk.mm_types(ids.cpu(), cfg).to(dev), max_new_tokens=100, do_sample=False, eos_token_id=eos)
        text = tk.decode(g[0, s0:].tolist(), skip_special_tokens=False)
        ref = tk.decode(r["ids"][s0:r["spans"][0][1]], skip_special_tokens=False)
        samples.append({"qid": r["qid"], "kind": r["kind"], "generated": text, "reference": ref})
    log(json.dumps(samples[:4], indent=1))

    os.makedirs(a.out, exist_ok=True)
    cpu = model.float().cpu().eval()
    cpu.config._attn_implementation = "eager"
    torch.save({k: v.half() for k, v in cpu.state_dict().items()}, f"{a.out}/state_dict.pt")
    t1 = time.time()
    chunks = mk.export_onnx(cpu, a.out, {"fp32", "q8"}, log)
    mk.write_model_files(cpu, a.out, chunks)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{a.tok}/{f}", f"{a.out}/{f}")
    pp = json.load(open(f"{a.tok}/preprocessor_config.json"))
    pp["max_pixels"] = MAX_PIXELS
    pp["size"] = {"shortest_edge": pp.get("min_pixels", 3136), "longest_edge": MAX_PIXELS}
    mk.write_json(f"{a.out}/preprocessor_config.json", pp)
    shutil.copy(f"{a.tok}/generation_config.json", f"{a.out}/generation_config.json")
    # ONNX vs PyTorch on the exporter's own one- and three-image conversations (as models/README.md reports)
    check = mk.check_and_parity(cpu, a.out, lambda s: tk.encode(s).ids, mk.render_with_jinja(mk.QWEN_VL_TEMPLATE), mk.synthetic_images(), log,
                                write_parity=False, eos=[cfg.text_config.eos_token_id, cfg.text_config.pad_token_id])
    log(f"export + check {time.time() - t1:.0f}s")
    metrics = {"params": nparam, "vision_params": sum(p.numel() for p in cpu.model.visual.parameters()), "steps": step, "epochs": epoch,
               "batch_size": a.bs, "lr": a.lr, "minutes": a.minutes, "train_trajectories": len(train), "val_trajectories": len(val),
               "train_scenes": len(qids) - len(val_q), "val_scenes": len(val_q), "curve": curve, "val_curve": vcurve, "greedy_samples": samples,
               "onnx_check": check, "gpu": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "torch": torch.__version__}
    mk.write_json(f"{a.out}/metrics.json", metrics)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
        ax[0].plot([c["step"] for c in curve], [c["loss"] for c in curve], lw=0.8, label="train (batch)")
        ax[0].plot([c["step"] for c in vcurve], [c["val_loss"] for c in vcurve], "o-", label="val (held-out scenes)")
        ax[0].set_yscale("log"); ax[0].set_xlabel("step"); ax[0].set_ylabel("loss (assistant tokens)"); ax[0].legend()
        ax[1].plot([c["step"] for c in vcurve], [c["val_seq_exact"] for c in vcurve], "o-")
        ax[1].set_xlabel("step"); ax[1].set_ylabel("val: whole trajectory exact (teacher-forced)"); ax[1].set_ylim(0, 1)
        fig.suptitle("loupe-tiny SFT"); fig.tight_layout(); fig.savefig(f"{a.out}/curves.png", dpi=110)
    except Exception as e:  # the curves are a nicety; the model matters
        log(f"no curves.png: {e}")


if __name__ == "__main__":
    main()
