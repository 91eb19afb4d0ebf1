#!/usr/bin/env python3
"""Does loupe-tiny's vision tower see the target? Linear probes on its merged-token features of the global views.

  probe_vision.py --model DIR_OR_WEIGHTS --config config.json --prepared DIR --scenes SYNTH_DIR[,SYNTH_DIR] [--category ring-digits]

--prepared: a prepare.ts folder (its `zoom` trajectories' first image = the global view the model sees); --scenes: the
loupe synth folders those came from (target boxes). For the trained model and for a random init of the same config:
  target_token_top1: a linear scorer over tokens (softmax over an image's tokens, 70/30 split by image) picks the token
                     under the target's centre (train and held-out); chance = 1 / tokens per image;
  position_r2_row_col: ridge regression token feature -> its (row, col) in the grid: absolute position in the features.
Findings on 2026-11-26 are in the card (README.md).
"""
import argparse, json, os, sys, random
import numpy as np, torch
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt, train
from PIL import Image

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True, help="a model folder with model.safetensors, or a .safetensors file")
ap.add_argument("--config", help="config.json (default: the model folder's)")
ap.add_argument("--prepared", required=True)
ap.add_argument("--scenes", required=True)
ap.add_argument("--category")
a = ap.parse_args()
torch.manual_seed(0)
samples = {}
for d in a.scenes.split(","):
    for l in open(f"{d}/samples.jsonl"):
        s = json.loads(l); samples[s["qid"]] = s
recs = [json.loads(l) for l in open(f"{a.prepared}/manifest.jsonl")]
recs = [r for r in recs if r["kind"] == "zoom" and r["qid"] in samples and (a.category is None or r["category"] == a.category)]
weights = a.model if a.model.endswith(".safetensors") else os.path.join(a.model, "model.safetensors")
cfg = json.load(open(a.config or os.path.join(a.model, "config.json")))


def feats(model):
    out = []
    for r in recs:
        im = r['images'][0]
        rgb = np.asarray(Image.open(os.path.join(a.prepared, 'images', im['file'])).convert('RGB'))
        pv = train.patches(torch.from_numpy(np.array(rgb)), 'cpu')
        with torch.no_grad():
            f = model.model.visual(pv, torch.tensor([im['grid']]))
        t, gh, gw = im['grid']; H, W = gh // 2, gw // 2
        n = samples[r['qid']]['target']['norm']; cx, cy = (n[0] + n[2]) / 2, (n[1] + n[3]) / 2
        tgt = int(min(H - 1, cy * H)) * W + int(min(W - 1, cx * W))
        rows = torch.arange(H).repeat_interleave(W).float() / H; cols = torch.arange(W).repeat(H).float() / W
        out.append((f.float(), tgt, rows, cols))
    return out
def probe(data, name):
    random.Random(0).shuffle(data)
    k = int(len(data) * 0.7); tr, te = data[:k], data[k:]
    D = tr[0][0].shape[1]
    w = torch.zeros(D, requires_grad=True); b = torch.zeros(1, requires_grad=True)
    X = torch.cat([d[0] for d in tr]); mu, sd = X.mean(0), X.std(0) + 1e-6
    opt = torch.optim.Adam([w, b], lr=0.01)
    for it in range(300):
        loss = 0
        for f, tgt, _, _ in tr:
            s = ((f - mu) / sd) @ w + b
            loss = loss + torch.nn.functional.cross_entropy(s[None], torch.tensor([tgt]))
        opt.zero_grad(); (loss / len(tr) + 1e-2 * w.pow(2).sum()).backward(); opt.step()
    hit = sum(int((((f - mu) / sd) @ w).argmax() == tgt) for f, tgt, _, _ in te)
    # absolute position: ridge regression feature -> (row, col)
    Y = torch.cat([torch.stack([d[2], d[3]], 1) for d in tr]); Xs = (X - mu) / sd
    ym = Y.mean(0); A = torch.linalg.solve(Xs.T @ Xs + 1000 * torch.eye(D), Xs.T @ (Y - ym))
    Xt = torch.cat([(d[0] - mu) / sd for d in te]); Yt = torch.cat([torch.stack([d[2], d[3]], 1) for d in te])
    r2 = 1 - ((Xt @ A + ym - Yt) ** 2).sum(0) / ((Yt - Yt.mean(0)) ** 2).sum(0)
    ntok = sum(d[0].shape[0] for d in te) / len(te)
    tr_hit = sum(int((((f - mu) / sd) @ w).argmax() == tgt) for f, tgt, _, _ in tr)
    print(json.dumps({"train_top1": round(tr_hit / len(tr), 3), "model": name, "train_images": len(tr), "test_images": len(te), "tokens_per_image": round(ntok, 1),
                      "target_token_top1": round(hit / len(te), 3), "chance": round(1 / ntok, 3),
                      "token_feature_std_over_mean_norm": round(float(X.std(0).norm() / X.mean(0).norm()), 4), "position_r2_row_col": [round(float(x), 3) for x in r2]}))
trained = qt.QwenVL(cfg, init=False); trained.load_state_dict({k: v.float() for k, v in qt.load_safetensors(weights).items()}, strict=False); trained.eval()
fresh = qt.QwenVL(cfg).eval()
print(len(recs), 'images')
probe(feats(trained), 'trained')
probe(feats(fresh), 'random init')
