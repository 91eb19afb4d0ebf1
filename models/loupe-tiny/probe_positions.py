#!/usr/bin/env python3
"""Which images' token positions the model can read: a linear probe of each token's own place (x, y) in its image.

  python3 probe_positions.py --model MODEL_DIR --video-scenes SYNTH_DIR --image-scenes SYNTH_DIR [--n 12] [--mrope-section T,H,W]

For four kinds of image in fresh trajectories (scene_traj.draw, encoded as train.py encodes them): a video's first frame
(the first image of its sequence), the picked frame a frames-zoom crop call names (a later image), an image question's
global view (the first image) and its first crop (the second image). The model (PyTorch, fp32, CPU) runs each
trajectory whole; the image's merged tokens are taken from the vision tower's output ("vis") and from each text layer's
output, and a ridge regression is fitted from those states to the tokens' normalized centres on the first half of the
trajectories and scored (R² per axis) on the other half. R² near 1: the place is linearly readable there; at or below 0:
not at all.

--mrope-section: the same weights under another split of the rotary frequencies (train.with_mrope_section), untrained,
to see whether the split alone makes a later image's columns readable.
"""
import argparse, os, random, sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scene_traj as S  # noqa: E402
import train as T  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--video-scenes", required=True)
    ap.add_argument("--image-scenes", required=True)
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ridge", type=float, default=10.0)
    ap.add_argument("--mrope-section")
    a = ap.parse_args()
    mp = T.MAX_PIXELS
    tok, enc, model = S.probe_model(a.model, mp, a.mrope_section)
    merge = model.vc["merge"]
    img_tok = model.image_token_id
    store = {}
    layers = model.model.language_model.layers
    for li, layer in enumerate(layers):
        layer.register_forward_hook(lambda m, i, o, li=li: store.__setitem__(li, o[0] if isinstance(o, tuple) else o))
    model.model.visual.register_forward_hook(lambda m, i, o: store.__setitem__("vis", o[0] if isinstance(o, tuple) else o))

    def states(rec, pix, j):
        ims = rec["images"]
        ids = torch.tensor([rec["ids"]])
        with torch.no_grad():
            model(ids, pixel_values=torch.cat([T.patches(pix[im["key"]], "cpu") for im in ims]),
                  image_grid_thw=torch.tensor([im["grid"] for im in ims]))
        at, H, W = T.image_token_positions(ids[0], rec, j, merge, img_tok)
        n0 = sum(t * h * w for t, h, w in (im["grid"] for im in ims[:j])) // (merge * merge)
        q = torch.arange(H * W)
        xy = torch.stack([(q % W + 0.5) / W, (q // W + 0.5) / H], -1).numpy()
        out = {li: store[li][0, at].numpy() for li in range(len(layers))}
        out["vis"] = store["vis"][n0:n0 + H * W].numpy()
        return out, xy

    def named_pick(rec):
        """The index in rec["images"] of the picked frame the crop call names (train.annotate_video's arithmetic)."""
        (s0, e0), (s1, e1) = rec["spans"][0], rec["spans"][1]
        k = len(T.PICKS.search(tok.decode(rec["ids"][s0:e0])).group(1).split(","))
        image = int(T.TARGET_IMAGE.search(tok.decode(rec["ids"][s1:e1])).group(1))
        return len(rec["images"]) - 1 - k + (image - 2)

    kinds = (("video frame 1", a.video_scenes, True, lambda r: 0), ("picked frame", a.video_scenes, True, named_pick),
             ("global view", a.image_scenes, False, lambda r: 0), ("first crop", a.image_scenes, False, lambda r: 1))
    print(f"# model {os.path.basename(os.path.normpath(a.model))}, mrope_section "
          f"{model.config['text_config']['rope_parameters']['mrope_section']}, {a.n} trajectories per kind, ridge {a.ridge}")
    for name, d, video, which in kinds:
        rng = random.Random(a.seed)
        scenes = [sc for sc in S.load_scenes([d], mp, workers=2) if bool(sc.get("video")) == video][: a.n]
        data = []
        for sc in scenes:
            got = S.draw(sc, rng, enc, tok, mp)
            if got is None:
                continue
            rec, pix = got
            if len(rec["images"]) < 2:
                continue
            data.append(states(rec, pix, which(rec)))
        h = len(data) // 2
        if h < 2:
            print(f"{name:<14} too few trajectories ({len(data)})")
            continue
        for li in ["vis"] + list(range(len(layers))):
            xtr = np.concatenate([f[li] for f, _ in data[:h]])
            ytr = np.concatenate([y for _, y in data[:h]])
            xte = np.concatenate([f[li] for f, _ in data[h:]])
            yte = np.concatenate([y for _, y in data[h:]])
            mu, sd = xtr.mean(0), xtr.std(0) + 1e-6
            A, B = (xtr - mu) / sd, (xte - mu) / sd
            w = np.linalg.solve(A.T @ A + a.ridge * np.eye(A.shape[1]), A.T @ (ytr - ytr.mean(0)))
            p = B @ w + ytr.mean(0)
            r2 = 1 - ((p - yte) ** 2).sum(0) / ((yte - yte.mean(0)) ** 2).sum(0)
            where = "vision out" if li == "vis" else f"text layer {li}"
            print(f"{name:<14} {where:<12} R² x {r2[0]:7.3f}  y {r2[1]:7.3f}   ({len(data)} images, {len(xtr)} tokens fitted)")


if __name__ == "__main__":
    main()
