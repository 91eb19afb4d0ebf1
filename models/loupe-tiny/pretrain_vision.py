#!/usr/bin/env python3
"""Give loupe-tiny's vision tower a direct signal: a per-token "where is the target" objective on the global views.

  pretrain_vision.py --prepared DIR[,DIR] --scenes SYNTH_DIR[,...] --config config.json --out W.safetensors
                     [--init WEIGHTS] [--minutes M] [--lr 1e-3] [--device cpu|cuda] [--eval-prepared DIR --eval-scenes DIR]

For each `zoom` trajectory's global view (prepare.ts output) the tower's merged tokens are scored by a linear head and
trained with a softmax over the image's tokens towards the token under the target's centre (the generator's box). The
question says which object (red ring / blue tag), so the head gets the category as a learned bias vector added to the
tokens. Prints `step:N - vision/loss:X - vision/top1:Y` and held-out top-1 (chance = 1 / tokens). Writes the whole
model's weights (the tower trained, the rest as initialised) for train.py --init.
"""
import argparse, json, math, os, random, sys, time
import numpy as np, torch
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt, train
from PIL import Image


def load(prepared, scenes):
    samples = {}
    for d in scenes.split(","):
        for l in open(os.path.join(d, "samples.jsonl")):
            s = json.loads(l); samples[s["qid"]] = s
    out = []
    for p in prepared.split(","):
        for l in open(os.path.join(p, "manifest.jsonl")):
            r = json.loads(l)
            if r["kind"] != "zoom" or r["qid"] not in samples:
                continue
            im = r["images"][0]
            rgb = torch.from_numpy(np.array(Image.open(os.path.join(p, "images", im["file"])).convert("RGB")))
            _, gh, gw = im["grid"]; H, W = gh // 2, gw // 2
            n = samples[r["qid"]]["target"]["norm"]; cx, cy = (n[0] + n[2]) / 2, (n[1] + n[3]) / 2
            out.append((rgb, im["grid"], int(min(H - 1, cy * H)) * W + int(min(W - 1, cx * W)), r["category"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepared", required=True); ap.add_argument("--scenes", required=True)
    ap.add_argument("--config", required=True); ap.add_argument("--out", required=True)
    ap.add_argument("--init"); ap.add_argument("--minutes", type=float, default=5); ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--bs", type=int, default=8); ap.add_argument("--device", default="cpu")
    ap.add_argument("--eval-prepared"); ap.add_argument("--eval-scenes")
    a = ap.parse_args()
    torch.manual_seed(0); random.seed(0)
    model = qt.QwenVL(json.load(open(a.config)))
    if a.init:
        model.load_state_dict({k: v.float() for k, v in qt.load_safetensors(a.init).items()}, strict=False)
    model = model.to(a.device)
    tower = model.model.visual
    D = tower.merger.mlp[2].out_features if hasattr(tower.merger, "mlp") else 384
    cats = {"ring-digits": 0, "tag-letter": 1, "box-dots": 2, "left-of": 3}
    head = torch.nn.Linear(D, 1).to(a.device)
    cat_emb = torch.nn.Embedding(len(cats), D).to(a.device)
    torch.nn.init.zeros_(cat_emb.weight)
    data = load(a.prepared, a.scenes)
    ev = load(a.eval_prepared, a.eval_scenes) if a.eval_prepared else []
    print(f"{len(data)} training views, {len(ev)} held-out", flush=True)
    opt = torch.optim.AdamW(list(tower.parameters()) + list(head.parameters()) + list(cat_emb.parameters()), lr=a.lr, weight_decay=0.01)

    def scores(rgb, grid, cat):
        f = tower(train.patches(rgb, a.device), torch.tensor([grid], device=a.device))
        return head(torch.tanh(f + cat_emb(torch.tensor(cats[cat], device=a.device)))).squeeze(-1)

    def evaluate(items):
        tower.eval(); hit = 0
        with torch.no_grad():
            for rgb, grid, tgt, cat in items:
                hit += int(scores(rgb, grid, cat).argmax() == tgt)
        tower.train()
        return hit / max(1, len(items))

    step = 0
    if ev:
        print(f"step:0 - eval/top1:{evaluate(ev):.3f}", flush=True)
    t0 = time.time()
    while time.time() - t0 < a.minutes * 60:
        frac = (time.time() - t0) / (a.minutes * 60)
        for g in opt.param_groups:
            g["lr"] = a.lr * min(1.0, frac / 0.05) * 0.5 * (1 + math.cos(math.pi * frac))
        batch = random.sample(data, min(a.bs, len(data)))
        loss, hit = 0.0, 0
        for rgb, grid, tgt, cat in batch:
            s = scores(rgb, grid, cat)
            loss = loss + torch.nn.functional.cross_entropy(s[None], torch.tensor([tgt], device=a.device))
            hit += int(s.argmax() == tgt)
        opt.zero_grad(); (loss / len(batch)).backward(); opt.step(); step += 1
        if step % 10 == 0:
            print(f"step:{step} - vision/loss:{float(loss) / len(batch):.3f} - vision/top1:{hit / len(batch):.3f}", flush=True)
    if ev:
        print(f"step:{step} - eval/top1:{evaluate(ev):.3f} - chance:{1 / np.mean([g[1] * g[2] / 4 for _, g, _, _ in ev]):.4f}", flush=True)
    qt.save_safetensors({k: v.detach().cpu() for k, v in model.state_dict().items()}, a.out)
    print(f"done: {a.out}", flush=True)


if __name__ == "__main__":
    main()
