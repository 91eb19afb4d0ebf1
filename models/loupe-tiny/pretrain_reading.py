#!/usr/bin/env python3
"""Can loupe-tiny's vision tower read the crop? The tower alone, with train.py's reading head (the crop's 3x3 merged
tokens around the target -> the answer's glyphs, slot by slot), trained on the crop images of prepared zoom trajectories
(the exact engine inputs that prepare.ts / datagen.ts record). A direct signal before SFT, as pretrain_vision.py is for
finding the target. Held-out scenes measure it: glyph slots right, whole answer right, per category.

  pretrain_reading.py --data DIR[,DIR...] --init MODEL_DIR --out OUT [--minutes 30] [--bs 16] [--lr 5e-4] [--shift 14]

--shift: random translation of each crop by up to this many pixels (edge-replicated), the target index moving with it.
Writes OUT/model.safetensors (the whole model, tower updated) + OUT/aux_heads.safetensors (with the reading head, so
train.py --init OUT keeps it) + OUT/metrics.json; console lines in verl's format.
"""
import argparse, json, os, random, shutil, sys, time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt  # noqa: E402
import train  # noqa: E402


def items_from(recs):
    """(image key, grid, target centre in the crop, glyph labels, category) for each whole zoom trajectory."""
    out = []
    for r in recs:
        if r.get("ctgt"):
            im = r["images"][1]
            out.append((im["key"], im["grid"], r["ctgt"], r["glyph"], r["category"], r["qid"]))
    return out


def shifted(img, dx, dy):
    """uint8 [H, W, 3] moved by (dx, dy) pixels, edges replicated (same size)."""
    if dx == 0 and dy == 0:
        return img
    H, W = img.shape[:2]
    ys = (torch.arange(H) - dy).clamp(0, H - 1)
    xs = (torch.arange(W) - dx).clamp(0, W - 1)
    return img[ys][:, xs]


def batch(items, pix, dev, merge, shift):
    pvs, grids, nb, labs, off = [], [], [], [], 0
    for key, grid, (cx, cy), glyph, _, _ in items:
        img = pix[key]
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
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tok", default=os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--bs", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--shift", type=int, default=14)
    ap.add_argument("--val-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(os.path.join(a.tok, "tokenizer.json"))
    model = qt.QwenVL.from_pretrained(a.init, dtype=torch.float32, device=dev)
    recs, pix = train.load_data(train.expand_dirs(a.data))
    train.annotate(recs, tk)
    items = items_from(recs)
    if not items:
        raise SystemExit("pretrain_reading.py: no whole zoom trajectories with a readable answer in --data")
    qids = sorted({it[5] for it in items})
    val_q = set(random.Random(1).sample(qids, max(2, len(qids) // 10)))
    tr = [it for it in items if it[5] not in val_q]
    va = [it for it in items if it[5] in val_q]
    print(f"reading items: train {len(tr)}, val {len(va)} (scenes {len(qids) - len(val_q)} / {len(val_q)})", flush=True)
    vis = model.model.visual
    heads = train.AuxHeads(vis.merger.mlp[2].out_features, model.tc["hidden"]).to(dev)
    aux_init = os.path.join(a.init, "aux_heads.safetensors")
    if os.path.exists(aux_init):
        heads.load_state_dict({k: v.float() for k, v in qt.load_safetensors(aux_init).items()}, strict=False)
    merge = model.vc["merge"]
    params = list(vis.parameters()) + list(heads.glyph.parameters())
    opt = torch.optim.AdamW(params, lr=a.lr, betas=(0.9, 0.98), weight_decay=0.05)

    def run(its, shift):
        pv, grid, nb, lab = batch(its, pix, dev, merge, shift)
        f = vis(pv, grid).float()[nb].flatten(1)
        lg = heads.glyph(torch.tanh(f)).view(len(its), train.GLYPH_SLOTS, -1)
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

    curve, vcurve, step, order, t0 = [], [], 0, [], time.time()
    vis.train()
    while time.time() - t0 < a.minutes * 60:
        if len(order) < a.bs:
            order = list(range(len(tr)))
            random.shuffle(order)
        its, order = [tr[j] for j in order[:a.bs]], order[a.bs:]
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
            print(f"step:{step} - train/glyph_loss:{loss.item():.4f} - train/glyph_exact:{curve[-1]['exact']:.3f} - perf/elapsed_s:{time.time() - t0:.0f}", flush=True)
        if step % a.val_every == 0:
            s_, e_, per = evaluate()
            vcurve.append({"step": step, "slots": s_, "exact": e_, **{f"exact_{k}": v for k, v in per.items()}})
            print(f"step:{step} - val/glyph_slots:{s_:.3f} - val/glyph_exact:{e_:.3f}" + "".join(f" - val/exact_{k}:{v:.3f}" for k, v in per.items()), flush=True)
    s_, e_, per = evaluate()
    vcurve.append({"step": step, "slots": s_, "exact": e_, **{f"exact_{k}": v for k, v in per.items()}})
    print(f"final/glyph_slots:{s_:.3f} - final/glyph_exact:{e_:.3f}" + "".join(f" - final/exact_{k}:{v:.3f}" for k, v in per.items()), flush=True)
    os.makedirs(a.out, exist_ok=True)
    model.float().cpu().save_pretrained(a.out)
    for f in ("config.json",):
        if not os.path.exists(os.path.join(a.out, f)):
            shutil.copy(os.path.join(a.init, f), a.out)
    qt.save_safetensors({k: v.detach().float().cpu() for k, v in heads.state_dict().items()}, os.path.join(a.out, "aux_heads.safetensors"))
    json.dump({"steps": step, "train_items": len(tr), "val_items": len(va), "curve": curve, "val_curve": vcurve, "init": a.init,
               "bs": a.bs, "lr": a.lr, "shift": a.shift, "minutes": a.minutes}, open(os.path.join(a.out, "metrics.json"), "w"), indent=1)
    print(f"done: {a.out}", flush=True)


if __name__ == "__main__":
    main()
