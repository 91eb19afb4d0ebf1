#!/usr/bin/env python3
"""Does loupe-tiny's vision tower carry a green box's dot count in the crop the model reads? A linear probe on the
tower's merged tokens around the box, in the crops scene_traj.py cuts (the call box, Pixel Reasoner's padding, the
engine resize: what the reading turn sees; since 2026-12-07 the closer crop on the first, scene_traj.build2).

  probe_count.py --model DIR --scenes SYNTH_DIR[,SYNTH_DIR] [--draws 6]

For every box-dots scene, --draws fresh zoom trajectories (new call boxes); the feature is the 3 x 3 merged tokens
around the box's centre in the crop (train.py's reading-head input, --aux-glyph), concatenated. A softmax regression
feature -> count (1-9) is fitted on 70 % of the scenes and scored on the other 30 % (split by scene, so a scene's
count is never seen in both); chance is about 1/9. Run for the given weights and for a random init of the same config:
the gap says how much of the count the trained tower already makes linearly readable.
"""
import argparse, json, os, random, sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt  # noqa: E402
import scene_traj  # noqa: E402
import train  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--model", required=True)
ap.add_argument("--scenes", required=True)
ap.add_argument("--draws", type=int, default=6)
ap.add_argument("--tok", default=os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl"))
a = ap.parse_args()
torch.manual_seed(0)
tok, enc = scene_traj.encoder(a.tok, train.MAX_PIXELS)
tk = train.load_hf_style(a.tok)
scenes = [sc for sc in scene_traj.load_scenes(a.scenes.split(","), train.MAX_PIXELS, 2, video=False) if sc["sample"]["category"] == "box-dots"]
rng = random.Random(0)
crops = []  # (scene index, count, crop uint8 tensor, grid, target centre in the crop)
for i, sc in enumerate(scenes):
    for _ in range(a.draws):
        got = scene_traj.draw(sc, rng, enc, tok, train.MAX_PIXELS)
        if got is None:
            continue
        r, pix = got
        train.annotate([r], tk)
        if not r.get("ctgt"):
            continue
        j = r.get("cimg") or 1  # the crop the reading turn reads: zoom2's closer crop, else the one crop
        crops.append((i, int(sc["sample"]["answer"]), pix[r["images"][j]["key"]], r["images"][j]["grid"], r["ctgt"]))
cfg = json.load(open(os.path.join(a.model, "config.json")))


def feats(model):
    X = []
    for _, _, c, grid, (cx, cy) in crops:
        with torch.no_grad():
            f = model.model.visual(train.patches(c, "cpu"), torch.tensor([grid])).float()
        H, W = grid[1] // 2, grid[2] // 2
        idx = train.neighbourhood(int(min(H - 1, cy * H)), int(min(W - 1, cx * W)), H, W)
        X.append(f[idx].flatten())
    return torch.stack(X)


def probe(X, name):
    y = torch.tensor([n - 1 for _, n, _, _, _ in crops])
    sid = sorted({s for s, *_ in crops})
    random.Random(1).shuffle(sid)
    test_s = set(sid[:max(1, int(len(sid) * 0.3))])
    te = torch.tensor([s in test_s for s, *_ in crops])
    mu, sd = X[~te].mean(0), X[~te].std(0) + 1e-6
    Z = (X - mu) / sd
    lin = torch.nn.Linear(Z.shape[1], 9)
    opt = torch.optim.Adam(lin.parameters(), lr=3e-3, weight_decay=1e-3)
    for _ in range(400):
        loss = torch.nn.functional.cross_entropy(lin(Z[~te]), y[~te])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        p = lin(Z).argmax(-1)
    print(json.dumps({"model": name, "scenes": len(sid), "test_scenes": len(test_s), "crops": len(crops),
                      "train_acc": round(float((p[~te] == y[~te]).float().mean()), 3),
                      "test_acc": round(float((p[te] == y[te]).float().mean()), 3),
                      "test_within_1": round(float(((p[te] - y[te]).abs() <= 1).float().mean()), 3),
                      "majority_test": round(float((y[te] == torch.mode(y[~te]).values).float().mean()), 3)}))


trained = qt.QwenVL(cfg, init=False)
trained.load_state_dict({k: v.float() for k, v in qt.load_safetensors(os.path.join(a.model, "model.safetensors")).items()}, strict=False)
probe(feats(trained.eval()), a.model)
probe(feats(qt.QwenVL(cfg).eval()), "random init")
