#!/usr/bin/env python3
"""loupe-tiny SFT: a small Qwen2.5-VL (plain torch, qwen_torch.py — no HF transformers needed to train) on loupe-synth
trajectories made by prepare.ts / scripts/device/datagen.ts through Loupe's own loop and engine preprocessing.

  train.py --data DIR[,DIR...] --out OUT [--init MODEL_DIR | --fresh-from MODEL_DIR | --arch v2] [--tok MODEL_DIR] [--device auto|cpu|cuda]
           [--minutes M | --max-steps N] [--bs 32] [--lr 1.5e-3] [--val-every 100] [--log-every 10]
           [--export none|q8|fp32,q8] [--aug-flips]

--data: prepared folders (manifest.jsonl + images/); a folder without manifest.jsonl stands for all its subfolders that have one.
--init: start from MODEL_DIR/model.safetensors (+ its config.json); else a fresh model of --arch.
--tok: tokenizer/chat template/preprocessor source (default: --init, else models/tiny-random-qwen25vl).
Loss on assistant tokens only (the spans prepare.ts recorded, each ending with its <|im_end|>). The learning rate warms up
over 4 % of the run and follows a cosine to 0 at --max-steps, or on wall-clock time at --minutes (so a GPU run ends on time).
Console lines in verl's format (`step:N - train/loss:X - ...`), which Loupe's Training page charts.
Writes OUT/{config.json, model.safetensors, generation_config.json, preprocessor_config.json, tokenizer*.json, metrics.json,
curves.png} and with --export the ONNX files (onnx/*.onnx, transformers.js layout; needs transformers + onnx, through
models/make_tiny_qwen25vl.py).
"""
import argparse, json, math, os, random, re, shutil, sys, time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt  # noqa: E402

MAX_PIXELS = 128 * 28 * 28  # = prepare.ts LOUPE_TINY_MAX_PIXELS
MEAN = torch.tensor([0.48145466, 0.4578275, 0.40821073])
STD = torch.tensor([0.26862954, 0.26130258, 0.27577711])

# Model sizes. v1: the first loupe-tiny (5.3 M). v2: wider and deeper text and vision (~12 M), still fast on a laptop CPU.
ARCH = {
    "v1": dict(text=dict(hidden_size=256, intermediate_size=640, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
               vision=dict(depth=4, hidden_size=160, intermediate_size=480, num_heads=2, fullatt_block_indexes=[1, 3])),
    "v2": dict(text=dict(hidden_size=384, intermediate_size=1024, num_hidden_layers=5, num_attention_heads=6, num_key_value_heads=2),
               vision=dict(depth=5, hidden_size=192, intermediate_size=576, num_heads=3, fullatt_block_indexes=[2, 4])),
}


def log(s):
    print(s, flush=True)


def build_config(tok_dir, arch):
    """A Qwen2.5-VL config.json dict (transformers 5 layout) of size `arch`, with the tokenizer's special ids."""
    base = json.load(open(os.path.join(tok_dir, "config.json")))
    t, a = base["text_config"], ARCH[arch]
    head_dim = a["text"]["hidden_size"] // a["text"]["num_attention_heads"]
    assert head_dim == 64, "mrope_section [8, 12, 12] assumes head_dim 64"
    text = dict(t)
    text.update(a["text"], vocab_size=t["vocab_size"], max_position_embeddings=32768, rms_norm_eps=1e-6,
                rope_parameters={"rope_type": "default", "rope_theta": 1e5, "mrope_section": [8, 12, 12]},
                layer_types=["full_attention"] * a["text"]["num_hidden_layers"], tie_word_embeddings=False)
    text.pop("rope_scaling", None)
    text.pop("rope_theta", None)
    vis = dict(base["vision_config"])
    vis.update(a["vision"], out_hidden_size=a["text"]["hidden_size"], patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
               window_size=112, tokens_per_second=2)
    cfg = {k: v for k, v in base.items() if k not in ("text_config", "vision_config")}
    cfg.update(text_config=text, vision_config=vis, tie_word_embeddings=False, architectures=["Qwen2_5_VLForConditionalGeneration"],
               model_type="qwen2_5_vl")
    return cfg


def expand_dirs(spec):
    out = []
    for d in spec.split(","):
        d = d.strip()
        if not d:
            continue
        if os.path.exists(os.path.join(d, "manifest.jsonl")):
            out.append(d)
            continue
        subs = sorted(os.path.join(d, s) for s in os.listdir(d) if os.path.exists(os.path.join(d, s, "manifest.jsonl")))
        if not subs:
            raise SystemExit(f"train.py: {d} has no manifest.jsonl and no prepared subfolders (make them with models/loupe-tiny/prepare.ts)")
        out += subs
    return out


def read_rgb(path):
    from PIL import Image
    return np.asarray(Image.open(path).convert("RGB"))


def load_data(dirs):
    """Trajectories and their images (uint8 RGB, shared between trajectories that reference the same file; decoded by a
    thread pool — PIL releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor
    recs, want = [], {}
    for d in dirs:
        for line in open(os.path.join(d, "manifest.jsonl")):
            if not line.strip():
                continue
            r = json.loads(line)
            for im in r["images"]:
                im["key"] = os.path.normpath(os.path.join(d, "images", im["file"]))
                want.setdefault(im["key"], im["grid"])
            recs.append(r)

    def load(item):
        key, grid = item
        rgb = read_rgb(key)
        if [rgb.shape[0] // 14, rgb.shape[1] // 14] != grid[1:]:
            raise SystemExit(f"train.py: {key} is {rgb.shape[1]}x{rgb.shape[0]}, its manifest says grid {grid}")
        return key, torch.from_numpy(np.array(rgb))

    with ThreadPoolExecutor(max_workers=min(32, (os.cpu_count() or 2))) as ex:
        pix = dict(ex.map(load, want.items()))
    return recs, pix


def patches(rgb, dev):
    """uint8 [H, W, 3] -> pixel_values [N, 3*2*14*14] in the Qwen2-VL processor's layout (= qwen_torch.patches_from_rgb), on dev."""
    x = rgb.to(dev, non_blocking=True).float().div_(255)
    x = ((x - MEAN.to(dev)) / STD.to(dev)).permute(2, 0, 1)[None].expand(2, -1, -1, -1)
    h, w = rgb.shape[0], rgb.shape[1]
    gh, gw = h // 14, w // 14
    x = x.reshape(1, 2, 3, gh // 2, 2, 14, gw // 2, 2, 14).permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gh * gw, 3 * 2 * 14 * 14)


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


FIRST_TURN = re.compile(r"^I can see (.+?) (in the \w+ \w+|on the \w+ side|near the centre), but (.+?) at this size\. Let me zoom in\.\n<tool_call>\n"
                        r'\{"name": "crop_image_normalized", "arguments": \{"bbox_2d": \[([^\]]+)\], "target_image": 1\}\}\n</tool_call>$')


def flip_first_turns(recs, pix, tk):
    """Localization data for free: the first turn of each zoom trajectory (global image -> crop call) on the image mirrored
    left-right, top-bottom and both, with the call box and the 'where' phrase mirrored to match. The prompt tokens do not
    change (same grid), so only the image and the assistant text are new."""
    out, bad = [], 0
    im_end = tk.token_to_id("<|im_end|>")
    for r in recs:
        s0, e0 = r["spans"][0]
        m = FIRST_TURN.match(tk.decode(r["ids"][s0:e0 - 1], skip_special_tokens=False))
        if not m:
            bad += 1
            continue
        box = [float(v) for v in m.group(4).split(",")]
        im = r["images"][0]
        for name, fx, fy in (("h", True, False), ("v", False, True), ("hv", True, True)):
            x1, y1, x2, y2 = box
            if fx:
                x1, x2 = 1 - x2, 1 - x1
            if fy:
                y1, y2 = 1 - y2, 1 - y1
            key = f"{im['key']}#{name}"
            if key not in pix:
                img = pix[im["key"]]
                img = img.flip(1) if fx else img
                pix[key] = (img.flip(0) if fy else img).contiguous()
            new = (f"I can see {m.group(1)} {where((x1 + x2) / 2, (y1 + y2) / 2)}, but {m.group(3)} at this size. Let me zoom in.\n<tool_call>\n"
                   f'{{"name": "crop_image_normalized", "arguments": {{"bbox_2d": [{", ".join(fmt(v) for v in (x1, y1, x2, y2))}], "target_image": 1}}}}\n</tool_call>')
            ids = r["ids"][:s0] + tk.encode(new).ids + [im_end]
            out.append({"qid": r["qid"], "kind": f"zoom-first-{name}", "ids": ids, "spans": [[s0, len(ids)]], "images": [{**im, "key": key}]})
    log(f"mirrored first turns: {len(out)} from {len(recs)} zoom trajectories ({bad} did not match the template)")
    return out


def make_batch(recs, pix, pad, dev):
    L = max(len(r["ids"]) for r in recs)
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
            pvs.append(patches(pix[im["key"]], dev))
            thws.append(im["grid"])
    return dict(input_ids=ids.to(dev), attention_mask=att.to(dev), labels=lab.to(dev), pixel_values=torch.cat(pvs) if pvs else None,
                image_grid_thw=torch.tensor(thws, device=dev) if thws else None)


def write_model(model, out, tok_dir, export, tk=None):
    """The model folder: config + weights (+ ONNX through make_tiny's exporter when asked and possible)."""
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(tok_dir, f), os.path.join(out, f))
    pp = json.load(open(os.path.join(tok_dir, "preprocessor_config.json")))
    pp["max_pixels"] = MAX_PIXELS
    pp["size"] = {"shortest_edge": pp.get("min_pixels", 3136), "longest_edge": MAX_PIXELS}
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(pp, f, indent=1)
    dtypes = {d for d in export.split(",") if d and d != "none"}
    if not dtypes:
        return None
    try:
        import transformers  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        log(f"export skipped: ONNX export needs transformers>=5 and onnx ({e}); the weights are in {out}/model.safetensors")
        return None
    sys.path.insert(0, os.path.dirname(HERE))
    import make_tiny_qwen25vl as mk
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    cfg = Qwen2_5_VLConfig(**json.load(open(os.path.join(out, "config.json"))))
    cfg._attn_implementation = "eager"
    hf = Qwen2_5_VLForConditionalGeneration(cfg).eval()
    missing, unexpected = hf.load_state_dict({k: v.float().cpu() for k, v in model.state_dict().items()}, strict=False)
    if [k for k in missing if not k.endswith("inv_freq")] or unexpected:
        raise SystemExit(f"train.py: weights do not fit the HF model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    t1 = time.time()
    chunks = mk.export_onnx(hf, out, dtypes, log)
    mk.write_model_files(hf, out, chunks)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):  # write_model_files may rewrite them
        shutil.copy(os.path.join(tok_dir, f), os.path.join(out, f))
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(pp, f, indent=1)
    check = None
    if tk is not None:
        check = mk.check_and_parity(hf, out, lambda s: tk.encode(s).ids, mk.render_with_jinja(mk.QWEN_VL_TEMPLATE), mk.synthetic_images(), log,
                                    write_parity=False, eos=[cfg.text_config.eos_token_id, cfg.text_config.pad_token_id])
    log(f"export {sorted(dtypes)} + check {time.time() - t1:.0f}s")
    return check


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--init", help="start from this model folder (config.json + model.safetensors)")
    ap.add_argument("--fresh-from", help="a fresh (random) model with this folder's config.json (for a folder without trainable weights)")
    ap.add_argument("--arch", default="v2", choices=sorted(ARCH))
    ap.add_argument("--tok", help="tokenizer / chat template / preprocessor folder (default: --init, else models/tiny-random-qwen25vl)")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--minutes", type=float, default=None)
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--bs", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--warmup", type=float, default=0.04)
    ap.add_argument("--val-every", type=int, default=100)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--export", default="fp32,q8", help="none | q8 | fp32,q8")
    ap.add_argument("--aug-flips", action="store_true", help="add mirrored first turns of the zoom trajectories (localization data)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    a = ap.parse_args()
    if a.minutes is None and a.max_steps is None:
        a.minutes = 5.0
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    dev = "cuda" if (a.device == "cuda" or (a.device == "auto" and torch.cuda.is_available())) else "cpu"
    if dev == "cuda" and not torch.cuda.is_available():
        raise SystemExit("train.py: --device cuda, but torch sees no CUDA device")
    tok_dir = a.tok or a.init or os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl")
    for f in ("tokenizer.json", "config.json", "preprocessor_config.json"):
        if not os.path.exists(os.path.join(tok_dir, f)):
            raise SystemExit(f"train.py: {tok_dir} has no {f} (want a model folder such as models/loupe-tiny/model)")
    if a.init:
        if not os.path.exists(os.path.join(a.init, "model.safetensors")):
            raise SystemExit(f"train.py: --init {a.init} has no model.safetensors")
        model = qt.QwenVL.from_pretrained(a.init, dtype=torch.float32, device=dev)
        log(f"initialized from {a.init}")
    elif a.fresh_from:
        model = qt.QwenVL(json.load(open(os.path.join(a.fresh_from, "config.json")))).to(dev)
        log(f"fresh model with the config of {a.fresh_from}")
    else:
        model = qt.QwenVL(build_config(tok_dir, a.arch)).to(dev)
    nparam = sum(p.numel() for p in model.parameters())
    nvis = sum(p.numel() for n, p in model.named_parameters() if n.startswith("model.visual."))
    log(f"params {nparam / 1e6:.2f} M (vision {nvis / 1e6:.2f} M), device {dev}")

    dirs = expand_dirs(a.data)
    t0 = time.time()
    recs, pix = load_data(dirs)
    log(f"{len(recs)} trajectories, {len(pix)} images from {len(dirs)} folder(s) in {time.time() - t0:.0f}s")
    if not recs:
        raise SystemExit("train.py: no trajectories in --data")
    qids = sorted({r["qid"] for r in recs})
    rnd = random.Random(1)
    val_q = set(rnd.sample(qids, min(max(2, len(qids) // 25), 400))) if len(qids) > 4 else set()
    train = [r for r in recs if r["qid"] not in val_q]
    val = [r for r in recs if r["qid"] in val_q]
    log(f"train {len(train)} trajectories ({len(qids) - len(val_q)} scenes), val {len(val)} ({len(val_q)} scenes)")
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    if a.aug_flips:
        train = train + flip_first_turns([r for r in train if r["kind"] == "zoom"], pix, tk)
        log(f"train with mirrored first turns: {len(train)}")
    pad = json.load(open(os.path.join(tok_dir, "config.json")))["text_config"].get("pad_token_id", 0) or 0

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": nodecay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.98))
    amp = dict(device_type="cuda", dtype=torch.bfloat16) if dev == "cuda" else None
    curve, vcurve = [], []

    def evaluate():
        model.eval()
        tot, n, ok_n, seqs = 0.0, 0, 0, 0
        with torch.no_grad():
            for i in range(0, len(val), a.bs):
                b = make_batch(val[i:i + a.bs], pix, pad, dev)
                with torch.autocast(**amp) if amp else torch.no_grad():
                    out = model(**{k: v for k, v in b.items() if k != "labels"})
                lab = b["labels"][:, 1:]
                m = lab != -100
                lg = out.logits[:, :-1].float()
                ce = torch.nn.functional.cross_entropy(lg.transpose(1, 2), lab.clamp(min=0), reduction="none")
                tot += float((ce * m).sum())
                n += int(m.sum())
                ok = (lg.argmax(-1) == lab) | ~m
                ok_n += int(ok.all(-1).sum())
                seqs += ok.shape[0]
        model.train()
        return tot / max(n, 1), ok_n / max(seqs, 1)

    order, step, epoch = [], 0, 0
    t0 = time.time()
    model.train()
    while True:
        el = time.time() - t0
        if a.max_steps is not None and step >= a.max_steps:
            break
        if a.minutes is not None and el > a.minutes * 60:
            break
        frac = step / a.max_steps if a.max_steps is not None else el / (a.minutes * 60)
        lr = a.lr * (frac / a.warmup if frac < a.warmup else 0.5 * (1 + math.cos(math.pi * min(1.0, (frac - a.warmup) / (1 - a.warmup)))))
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
        ts = time.time()
        b = make_batch([train[i] for i in idx], pix, pad, dev)
        if amp:
            with torch.autocast(**amp):
                loss = model(**b).loss
        else:
            loss = model(**b).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        step += 1
        if step % a.log_every == 0 or step == 1:
            lv = loss.item()
            curve.append({"step": step, "t": round(time.time() - t0, 1), "loss": lv, "lr": lr, "grad_norm": gn, "epoch": epoch})
            log(f"step:{step} - train/loss:{lv:.4f} - train/lr:{lr:.3e} - train/grad_norm:{gn:.3f} - train/epoch:{epoch} - perf/sec_per_step:{time.time() - ts:.3f}")
        if val and step % a.val_every == 0:
            vl, va = evaluate()
            vcurve.append({"step": step, "t": round(time.time() - t0, 1), "val_loss": vl, "val_seq_exact": va})
            log(f"step:{step} - val/loss:{vl:.4f} - val/seq_exact:{va:.3f}")
    if val:
        vl, va = evaluate()
        vcurve.append({"step": step, "t": round(time.time() - t0, 1), "val_loss": vl, "val_seq_exact": va})
        log(f"step:{step} - val/loss:{vl:.4f} - val/seq_exact:{va:.3f}")
    train_s = time.time() - t0

    # greedy first turns on held-out scenes (PyTorch), to see tool calls before export
    model.eval()
    samples = []
    eos = [2, pad]
    for r in [x for x in val if x["kind"] in ("zoom", "recover")][:6]:
        s0 = r["spans"][0][0]
        im = r["images"][0]
        with torch.no_grad():
            g = model.generate(torch.tensor([r["ids"][:s0]], device=dev), patches(pix[im["key"]], dev), torch.tensor([im["grid"]], device=dev),
                               max_new_tokens=100, eos_ids=eos, temperature=0)
        samples.append({"qid": r["qid"], "kind": r["kind"], "generated": tk.decode(g[0].tolist(), skip_special_tokens=False),
                        "reference": tk.decode(r["ids"][s0:r["spans"][0][1]], skip_special_tokens=False)})
    for s in samples[:3]:
        log(f"sample {s['qid']}: {json.dumps(s['generated'])[:240]}")

    model = model.float().cpu().eval()
    check = write_model(model, a.out, tok_dir, a.export, tk)
    metrics = {"params": nparam, "vision_params": nvis, "steps": step, "epochs": epoch, "batch_size": a.bs, "lr": a.lr, "minutes": a.minutes,
               "max_steps": a.max_steps, "train_seconds": round(train_s, 1), "init": a.init, "arch": None if (a.init or a.fresh_from) else a.arch, "fresh_from": a.fresh_from,
               "train_trajectories": len(train), "val_trajectories": len(val), "train_scenes": len(qids) - len(val_q), "val_scenes": len(val_q),
               "curve": curve, "val_curve": vcurve, "greedy_samples": samples, "onnx_check": check,
               "device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "torch": torch.__version__}
    with open(os.path.join(a.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
        ax[0].plot([c["step"] for c in curve], [c["loss"] for c in curve], lw=0.8, label="train (batch)")
        ax[0].plot([c["step"] for c in vcurve], [c["val_loss"] for c in vcurve], "o-", ms=3, label="val (held-out scenes)")
        ax[0].set_yscale("log"); ax[0].set_xlabel("step"); ax[0].set_ylabel("loss (assistant tokens)"); ax[0].legend()
        ax[1].plot([c["step"] for c in vcurve], [c["val_seq_exact"] for c in vcurve], "o-", ms=3)
        ax[1].set_xlabel("step"); ax[1].set_ylabel("val: whole trajectory exact (teacher-forced)"); ax[1].set_ylim(0, 1)
        fig.suptitle("loupe-tiny SFT"); fig.tight_layout(); fig.savefig(os.path.join(a.out, "curves.png"), dpi=110)
    except Exception as e:  # the curves are a nicety; the model matters
        log(f"no curves.png: {e}")
    log(f"done: {a.out}")


if __name__ == "__main__":
    main()
