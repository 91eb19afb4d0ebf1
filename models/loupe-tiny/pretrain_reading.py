#!/usr/bin/env python3
"""Can loupe-tiny's vision tower read the crop? The tower alone, with train.py's reading head (the crop's 3x3 merged
tokens around the target -> the answer's glyphs, slot by slot). A direct signal before SFT, as pretrain_vision.py is for
finding the target. Held-out scenes measure it: glyph slots right, whole answer right, per category.

  pretrain_reading.py (--data DIR[,DIR...] | --scenes DIR[,DIR...] | both) --init MODEL_DIR --out OUT [--minutes 30]
                      [--bs 16] [--lr 5e-4] [--shift 14] [--workers 2] [--save-crops K]

Two sources of crops, either or both:
- --data: the crop images of prepared zoom trajectories (prepare.ts / datagen.ts: the exact engine inputs, fixed).
- --scenes: loupe-synth scene folders (`loupe synth --kinds ring-digits,tag-letter`: samples.jsonl + images/), crops cut
  on the fly, a new one each time a scene is drawn: a call box around the target as trajectories.ts callBox makes it
  (the target box grown by a random 0.3-0.8 of its size on each side, each side jittered by +-0.15 of the size, 2 decimals,
  clamped to [0, 0.99]); Pixel Reasoner's crop of it on the image *after the initial resize* (eval mode, as prepare.ts and
  Loupe's loop run it) by pr_env (`plan_turn`: 0.1 padding, clamping, round-half-even pixel box, the eval_zoom resize
  with Pillow bicubic, as `Episode.step` does); then the engine's resize to train.MAX_PIXELS (pr_env.engine_resize). The
  engine resizes with its own code (transformers.js + sharp in Node); engine_resize emulates that with Pillow, so these
  crops differ slightly from the engine's (and from --data's, which were also stored as JPEG). The target's centre in
  the crop is the scene's true target centre (target.px) mapped through the integer crop box. Every scene image is
  decoded and resized once; only the part any call box can reach is kept in memory (a fraction of the image).
  Only ring-digits / tag-letter samples whose answer fits train.GLYPH_SLOTS / train.GLYPHS are used (easy ones too).
Held out: 10 % of the scenes by qid (over both sources together); a held-out --scenes scene gets ONE crop, drawn once
from a generator seeded by (--seed, qid), so validation is the same at every evaluation and across runs.

--shift: random translation of each training crop by up to this many pixels (edge-replicated), the target moving with it.
--workers: threads cutting the next batch's scene crops while the current one trains (Pillow releases the GIL).
--save-crops K: also write the first K held-out scene crops to OUT/crops/ as PNG, the 3x3 neighbourhood drawn in green.
Writes OUT/model.safetensors (the whole model, tower updated) + OUT/aux_heads.safetensors (with the reading head, so
train.py --init OUT keeps it) + OUT/metrics.json; console lines in verl's format.
"""
import argparse, json, math, os, random, shutil, sys, time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pr_env as E  # noqa: E402
import qwen_torch as qt  # noqa: E402
import train  # noqa: E402

# A sample is (uint8 [H, W, 3] engine input, grid [1, gh, gw], target centre in it (x, y) normalized, glyph labels,
# category, qid).


def items_from(recs, pix):
    """A sample for each whole zoom trajectory of prepared data (its crop image as recorded)."""
    out = []
    for r in recs:
        if r.get("ctgt"):
            im = r["images"][1]
            out.append((pix[im["key"]], im["grid"], r["ctgt"], r["glyph"], r["category"], r["qid"]))
    return out


# ---- loupe-synth scenes, crops cut on the fly

GROW, JITTER, PAD = (0.3, 0.8), 0.15, 0.1  # trajectories.ts callBox: grow range, per-side jitter; Pixel Reasoner's padding


def r2(v):
    """trajectories.ts r2: Math.round to 2 decimals (half up), clamped to [0, 0.99] (the call stays normalized)."""
    return min(0.99, max(0.0, math.floor(v * 100 + 0.5) / 100))


def call_box(rng, norm):
    """trajectories.ts callBox(rng, norm, rng.range(0.3, 0.8)): grown by `grow` of the size on each side, each side jittered."""
    grow = rng.uniform(*GROW)
    w, h = norm[2] - norm[0], norm[3] - norm[1]
    j = lambda: rng.uniform(-JITTER, JITTER)  # noqa: E731
    return [r2(norm[0] - w * (grow + j())), r2(norm[1] - h * (grow + j())), r2(norm[2] + w * (grow + j())), r2(norm[3] + h * (grow + j()))]


def reach(norm, iw, ih):
    """Pixel box (on the initially resized image) holding every crop a call box around `norm` can produce."""
    m = GROW[1] + JITTER
    w, h = norm[2] - norm[0], norm[3] - norm[1]
    return (max(0, math.floor((norm[0] - m * w - PAD - 0.006) * iw) - 1), max(0, math.floor((norm[1] - m * h - PAD - 0.006) * ih) - 1),
            min(iw, math.ceil((norm[2] + m * w + PAD + 0.006) * iw) + 1), min(ih, math.ceil((norm[3] + m * h + PAD + 0.006) * ih) + 1))


def read_scenes(spec):
    """Usable samples of loupe-synth folders -> (scene dicts, skipped count). A scene: qid, path, category, glyph labels,
    target norm box (what callBox starts from) and true centre (from target.px)."""
    out, skipped = [], 0
    for d in [x.strip() for x in spec.split(",") if x.strip()]:
        for line in open(os.path.join(d, "samples.jsonl")):
            if not line.strip():
                continue
            s = json.loads(line)
            ans = str(s.get("answer", "")).upper()
            if (s.get("isVideo") or not s.get("image") or s.get("category") not in ("ring-digits", "tag-letter")
                    or not (0 < len(ans) <= train.GLYPH_SLOTS) or any(c not in train.GLYPHS for c in ans)):
                skipped += 1
                continue
            px, W, H = s["target"]["px"], s["width"], s["height"]
            out.append({"qid": s["qid"], "path": os.path.join(d, s["image"]), "category": s["category"], "answer": ans,
                        "glyph": [train.GLYPHS.index(c) for c in ans] + [len(train.GLYPHS)] * (train.GLYPH_SLOTS - len(ans)),
                        "norm": [float(v) for v in s["target"]["norm"]], "centre": ((px[0] + px[2]) / 2 / W, (px[1] + px[3]) / 2 / H)})
    return out, skipped


def load_scene(sc, global_max_pixels=None):
    """Decode the scene image once, resize it as Pixel Reasoner's initial resize does (pr_env.initial_image, eval mode),
    keep the reachable part: sc['size'] (the resized image's [w, h]), sc['origin'], sc['region'] (PIL RGB); with
    global_max_pixels also sc['global'], the whole image through the engine resize (uint8 [H, W, 3] tensor)."""
    im = E.initial_image(sc["path"], "eval")
    box = reach(sc["norm"], *im.size)
    sc["size"], sc["origin"], sc["region"] = list(im.size), box[:2], im.crop(box)
    if global_max_pixels:
        sc["global"] = torch.from_numpy(np.array(E.engine_resize(im, global_max_pixels)))
    return sc


def tool_crop(sc, bbox):
    """What a `crop_image_normalized` call with `bbox` on image 1 returns (pr_env.plan_turn's geometry; crop and zoom
    resize as Episode.step does them), cut from the cached region -> (plan, PIL image), or None where the tool refuses
    the box."""
    _, plan = E.plan_turn("crop_image_normalized", {"bbox_2d": bbox, "target_image": 1}, E.Sizes(False, [sc["size"]]), "eval")
    if plan["kind"] != "crop":
        return None
    x0, y0, x1, y1 = plan["cropBox"]
    ox, oy = sc["origin"]
    rw, rh = sc["region"].size
    if not (ox <= x0 and oy <= y0 and x1 <= ox + rw and y1 <= oy + rh):
        raise RuntimeError(f"pretrain_reading.py: {sc['qid']}: crop {plan['cropBox']} leaves the cached region at {sc['origin']} of {rw}x{rh}")
    return plan, E.pil_resize(sc["region"].crop((x0 - ox, y0 - oy, x1 - ox, y1 - oy)), *plan["resizedSize"])


def cut(sc, bbox, max_pixels):
    """tool_crop through the engine resize -> (uint8 [H, W, 3], grid, target centre in the crop), or None where the tool
    refuses the box."""
    got = tool_crop(sc, bbox)
    if got is None:
        return None
    plan, crop = got
    x0, y0, x1, y1 = plan["cropBox"]
    rgb = np.array(E.engine_resize(crop, max_pixels))
    (cx, cy), (iw, ih) = sc["centre"], sc["size"]
    return torch.from_numpy(rgb), [1, rgb.shape[0] // 14, rgb.shape[1] // 14], ((cx * iw - x0) / (x1 - x0), (cy * ih - y0) / (y1 - y0))


def draw(sc, rng, max_pixels):
    """A fresh sample of the scene: a random call box around its target, cut."""
    for _ in range(8):
        bbox = call_box(rng, sc["norm"])
        got = cut(sc, bbox, max_pixels)
        if got is not None:
            img, grid, ctgt = got
            return img, grid, ctgt, sc["glyph"], sc["category"], sc["qid"]
    raise RuntimeError(f"pretrain_reading.py: {sc['qid']}: the crop tool refused 8 call boxes around {sc['norm']}")


def save_crop(path, sample, merge=2):
    """The crop as PNG with the 3x3 merged-token neighbourhood the reading head reads drawn in green, the centre in magenta."""
    from PIL import Image, ImageDraw
    img, grid, (cx, cy) = sample[:3]
    H, W = grid[1] // merge, grid[2] // merge
    row, col, s = int(cy * H), int(cx * W), 14 * merge
    im = Image.fromarray(img.numpy())
    d = ImageDraw.Draw(im)
    d.rectangle([max(0, col - 1) * s, max(0, row - 1) * s, (min(W - 1, col + 1) + 1) * s - 1, (min(H - 1, row + 1) + 1) * s - 1], outline=(0, 200, 0), width=2)
    x, y = cx * img.shape[1], cy * img.shape[0]
    d.line([x - 5, y, x + 5, y], fill=(255, 0, 255), width=1)
    d.line([x, y - 5, x, y + 5], fill=(255, 0, 255), width=1)
    im.save(path)


# ---- batches


def shifted(img, dx, dy):
    """uint8 [H, W, 3] moved by (dx, dy) pixels, edges replicated (same size)."""
    if dx == 0 and dy == 0:
        return img
    H, W = img.shape[:2]
    ys = (torch.arange(H) - dy).clamp(0, H - 1)
    xs = (torch.arange(W) - dx).clamp(0, W - 1)
    return img[ys][:, xs]


def batch(items, dev, merge, shift):
    pvs, grids, nb, labs, off = [], [], [], [], 0
    for img, grid, (cx, cy), glyph, _, _ in items:
        H_, W_ = img.shape[:2]
        dx, dy = (random.randint(-shift, shift), random.randint(-shift, shift)) if shift else (0, 0)
        img = shifted(img, dx, dy)
        cx, cy = min(0.999, max(0.0, cx + dx / W_)), min(0.999, max(0.0, cy + dy / H_))
        pvs.append(train.patches(img, dev))
        grids.append(grid)
        H, W = grid[1] // merge, grid[2] // merge
        nb.append([off + k for k in train.neighbourhood(int(cy * H), int(cx * W), H, W)])
        labs.append(glyph)
        off += H * W
    return torch.cat(pvs), torch.tensor(grids, device=dev), torch.tensor(nb, device=dev), torch.tensor(labs, device=dev)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", help="prepared data folder(s) (manifest.jsonl), comma-separated")
    ap.add_argument("--scenes", help="loupe synth folder(s) (samples.jsonl + images/), comma-separated: crops cut on the fly")
    ap.add_argument("--init", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tok", default=os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--bs", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--shift", type=int, default=14)
    ap.add_argument("--max-pixels", type=int, default=train.MAX_PIXELS, help="engine resize of --scenes crops")
    ap.add_argument("--workers", type=int, default=2, help="threads cutting --scenes crops ahead (0: inline)")
    ap.add_argument("--save-crops", type=int, default=0)
    ap.add_argument("--val-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if not (a.data or a.scenes):
        raise SystemExit("pretrain_reading.py: give --data and/or --scenes")
    if a.threads:
        torch.set_num_threads(a.threads)
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = qt.QwenVL.from_pretrained(a.init, dtype=torch.float32, device=dev)
    items = []
    if a.data:
        from tok import load_hf_style
        tk = load_hf_style(a.tok)
        recs, pix = train.load_data(train.expand_dirs(a.data))
        train.annotate(recs, tk)
        items = items_from(recs, pix)
        if not items:
            raise SystemExit("pretrain_reading.py: no whole zoom trajectories with a readable answer in --data")
    scenes = []
    ex = ThreadPoolExecutor(a.workers) if a.workers > 0 else None
    if a.scenes:
        t_ = time.time()
        scenes, skipped = read_scenes(a.scenes)
        if not scenes:
            raise SystemExit("pretrain_reading.py: no ring-digits / tag-letter samples with a readable answer in --scenes")
        with ThreadPoolExecutor(min(32, os.cpu_count() or 2)) as lx:
            scenes = list(lx.map(load_scene, scenes))
        mb = sum(sc["region"].size[0] * sc["region"].size[1] * 3 for sc in scenes) / 2**20
        print(f"scenes: {len(scenes)} loaded ({skipped} skipped: other kinds or unreadable answers), {mb:.0f} MB cached, {time.time() - t_:.1f} s", flush=True)
    qids = sorted({it[5] for it in items} | {sc["qid"] for sc in scenes})
    val_q = set(random.Random(1).sample(qids, min(len(qids), max(2, len(qids) // 10))))
    tr = [it for it in items if it[5] not in val_q]
    va = [it for it in items if it[5] in val_q]
    tr_sc = [sc for sc in scenes if sc["qid"] not in val_q]
    va_sc = [sc for sc in scenes if sc["qid"] in val_q]
    t_ = time.time()
    # one fixed crop per held-out scene, from a generator seeded by its qid alone: the same across runs and --seed
    va_new = [draw(sc, random.Random(f"val:{sc['qid']}"), a.max_pixels) for sc in va_sc]
    if va_sc:
        print(f"val scene crops: {len(va_new)} in {time.time() - t_:.2f} s", flush=True)
    va += va_new
    if a.save_crops and va_new:
        os.makedirs(os.path.join(a.out, "crops"), exist_ok=True)
        for s_, sc in zip(va_new[:a.save_crops], va_sc):
            save_crop(os.path.join(a.out, "crops", f"{sc['qid']}-{sc['answer']}.png"), s_)
    pool = tr + tr_sc  # tuples: fixed samples; dicts: scenes drawn anew each time
    if not pool or not va:
        raise SystemExit(f"pretrain_reading.py: too few scenes to split ({len(qids)})")
    print(f"reading items: train {len(pool)}, val {len(va)} (scenes {len(qids) - len(val_q)} / {len(val_q)};"
          f" from --scenes: train {len(tr_sc)} drawn anew each time, val {len(va_new)} fixed crops)", flush=True)
    vis = model.model.visual
    heads = train.AuxHeads(vis.merger.mlp[2].out_features, model.tc["hidden"]).to(dev)
    aux_init = os.path.join(a.init, "aux_heads.safetensors")
    if os.path.exists(aux_init):
        heads.load_state_dict({k: v.float() for k, v in qt.load_safetensors(aux_init).items()}, strict=False)
    merge = model.vc["merge"]
    params = list(vis.parameters()) + list(heads.glyph.parameters())
    opt = torch.optim.AdamW(params, lr=a.lr, betas=(0.9, 0.98), weight_decay=0.05)

    def run(its, shift):
        pv, grid, nb, lab = batch(its, dev, merge, shift)
        lg = heads.glyph_logits(vis(pv, grid), nb)
        return torch.nn.functional.cross_entropy(lg.transpose(1, 2), lab), lg.argmax(-1), lab

    def evaluate():
        vis.eval()
        slots = exact = 0
        per = {}
        with torch.no_grad():
            for i in range(0, len(va), a.bs):
                its = va[i:i + a.bs]
                _, pred, lab = run(its, 0)
                ok = (pred == lab).all(-1)
                slots += int((pred == lab).sum())
                exact += int(ok.sum())
                for it, o in zip(its, ok.tolist()):
                    c = per.setdefault(it[4], [0, 0])
                    c[0] += int(o)
                    c[1] += 1
        vis.train()
        return slots / (len(va) * train.GLYPH_SLOTS), exact / len(va), {k: v[0] / v[1] for k, v in per.items()}

    def index_batches():
        order = []
        while True:
            if len(order) < a.bs:
                order = list(range(len(pool)))
                random.shuffle(order)
            yield order[:a.bs]
            order = order[a.bs:]

    def make(idx, step):
        """The batch's samples, scene crops started on the workers (each from its own seeded generator)."""
        out = []
        for k, j in enumerate(idx):
            p = pool[j]
            if isinstance(p, dict):
                rng = random.Random(f"{a.seed}:{step}:{k}")
                p = ex.submit(draw, p, rng, a.max_pixels) if ex else draw(p, rng, a.max_pixels)
            out.append(p)
        return out

    curve, vcurve, step, t0 = [], [], 0, time.time()
    ib = index_batches()
    nxt, wait_s = make(next(ib), 0), 0.0
    vis.train()
    while time.time() - t0 < a.minutes * 60:
        tw = time.time()
        its = [p.result() if isinstance(p, Future) else p for p in nxt]
        wait_s += time.time() - tw
        nxt = make(next(ib), step + 1)
        frac = (time.time() - t0) / (a.minutes * 60)
        for g in opt.param_groups:
            g["lr"] = a.lr * min(1.0, frac / 0.05) * (0.5 * (1 + torch.cos(torch.tensor(frac * 3.14159)).item()))
        loss, pred, lab = run(its, a.shift)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        if step % 10 == 0 or step == 1:
            curve.append({"step": step, "loss": loss.item(), "exact": float((pred == lab).all(-1).float().mean())})
            print(f"step:{step} - train/glyph_loss:{loss.item():.4f} - train/glyph_exact:{curve[-1]['exact']:.3f} - perf/elapsed_s:{time.time() - t0:.0f}"
                  + (f" - perf/data_wait_s:{wait_s:.1f}" if tr_sc else ""), flush=True)
        if step % a.val_every == 0:
            s_, e_, per = evaluate()
            vcurve.append({"step": step, "slots": s_, "exact": e_, **{f"exact_{k}": v for k, v in per.items()}})
            print(f"step:{step} - val/glyph_slots:{s_:.3f} - val/glyph_exact:{e_:.3f}" + "".join(f" - val/exact_{k}:{v:.3f}" for k, v in per.items()), flush=True)
    if ex:
        ex.shutdown(wait=True, cancel_futures=True)
    s_, e_, per = evaluate()
    vcurve.append({"step": step, "slots": s_, "exact": e_, **{f"exact_{k}": v for k, v in per.items()}})
    print(f"final/glyph_slots:{s_:.3f} - final/glyph_exact:{e_:.3f}" + "".join(f" - final/exact_{k}:{v:.3f}" for k, v in per.items()), flush=True)
    os.makedirs(a.out, exist_ok=True)
    model.float().cpu().save_pretrained(a.out)
    for f in ("config.json",):
        if not os.path.exists(os.path.join(a.out, f)):
            shutil.copy(os.path.join(a.init, f), a.out)
    qt.save_safetensors({k: v.detach().float().cpu() for k, v in heads.state_dict().items()}, os.path.join(a.out, "aux_heads.safetensors"))
    json.dump({"steps": step, "train_items": len(pool), "val_items": len(va), "train_scenes": len(tr_sc), "val_scenes": len(va_sc),
               "data": a.data, "scenes": a.scenes, "max_pixels": a.max_pixels, "data_wait_s": round(wait_s, 2),
               "curve": curve, "val_curve": vcurve, "init": a.init,
               "bs": a.bs, "lr": a.lr, "shift": a.shift, "minutes": a.minutes}, open(os.path.join(a.out, "metrics.json"), "w"), indent=1)
    print(f"done: {a.out}", flush=True)


if __name__ == "__main__":
    main()
