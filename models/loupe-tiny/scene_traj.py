#!/usr/bin/env python3
"""Zoom trajectories made on the fly from loupe-synth scenes, for train.py --scenes.

Prepared data (prepare.ts through Loupe's loop) costs about a second of CPU per scene, so a GPU run sees a few thousand
reading turns, each many times: the text model memorizes the answers instead of reading the crop. Here every draw of a
scene is a new trajectory: a new call box (trajectories.ts callBox: grown by 0.3-0.8 of the target's size on each side,
each side jittered), Pixel Reasoner's crop of it (pr_env.plan_turn: 0.1 padding, clamping, the eval_zoom resize), the
engine resize of both images (pr_env.engine_resize) and the token ids as Loupe's engine encodes the conversation
(render_first_turn / render_observation_turn with the image pads expanded, as rl.py's Encoder does; rl.py
--check-manifest shows that path reproduces prepare.ts's ids exactly).

The text is trajectories.ts's `zoom` kind: "{Label} is {where}. Let me zoom in.\\n<tool_call>...</tool_call>", then the
reading turn ("The ring shows 7, 1, 3, 9: \\boxed{7139}" / "The tag shows X: \\boxed{X}"). Easy scenes (needsZoom false)
get a zoom trajectory too (prepare.ts gives them a direct answer): a crop is still a right way to answer them.

  python3 scene_traj.py --check-manifest PREP_DIR --scenes SYNTH_DIR [--tok MODEL_DIR]
rebuilds every zoom trajectory of a prepared folder from its scene, with the call box its first turn wrote, and
reports how many are token-identical (and how far the engine-resize emulation is from the stored pixels).
"""
import argparse, itertools, json, os, random, sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pr_env as E  # noqa: E402
import pretrain_reading as PR  # noqa: E402
import train as T  # noqa: E402

KINDS = ("ring-digits", "tag-letter")
_DRAW = itertools.count()  # unique image keys across threads


def read_out(s):
    """trajectories.ts readOut for the two reading kinds."""
    f = s["facts"]
    if s["category"] == "ring-digits":
        return f"The ring shows {', '.join(str(f['digits']))}: \\boxed{{{s['answer']}}}"
    return f"The tag shows {f['letter']}: \\boxed{{{s['answer']}}}"


def first_turn(s, bbox):
    label, n = s["target"]["label"], s["target"]["norm"]
    return T.first_turn_text(label[0].upper() + label[1:], "is", (n[0] + n[2]) / 2, (n[1] + n[3]) / 2, bbox)


def encoder(tok_dir, max_pixels):
    """(tokenizer, rl.Encoder): the encoding path rl.py --check-manifest proves equal to the engine's."""
    import rl
    tok = rl.load_tokenizer(tok_dir)
    return tok, rl.Encoder(tok, max_pixels)


def load_scenes(dirs, max_pixels, workers=8):
    """Image samples of the reading kinds -> scene dicts with the engine's global view (uint8) cached and the region any
    call box can reach (pretrain_reading.load_scene), ready for draw()."""
    from concurrent.futures import ThreadPoolExecutor
    scenes = []
    for d in dirs:
        for line in open(os.path.join(d, "samples.jsonl")):
            if not line.strip():
                continue
            s = json.loads(line)
            if s.get("isVideo") or not s.get("image") or s.get("category") not in KINDS:
                continue
            scenes.append({"qid": s["qid"], "sample": s, "path": os.path.join(d, s["image"]), "norm": [float(v) for v in s["target"]["norm"]]})
    with ThreadPoolExecutor(max(1, workers)) as ex:
        return list(ex.map(lambda sc: PR.load_scene(sc, max_pixels), scenes))


def build(sc, bbox, enc, tok, max_pixels):
    """One zoom trajectory of scene `sc` with call box `bbox` -> (record as train.py's load_data gives it, {key: uint8
    image}), or None where the crop tool refuses the box. Image keys are 'scene:<qid>:g' and 'scene:<qid>:c<n>'."""
    s = sc["sample"]
    got = PR.tool_crop(sc, bbox)
    if got is None:
        return None
    plan, crop = got
    c = torch.from_numpy(np.array(E.engine_resize(crop, max_pixels)))
    g = sc["global"]
    g0 = [1, g.shape[0] // 14, g.shape[1] // 14]
    g1 = [1, c.shape[0] // 14, c.shape[1] // 14]
    t1, t2 = first_turn(s, bbox), read_out(s)
    ids = enc.encode(E.render_first_turn(E.synth_question(s), 1, "vcot"), [g0[1] * g0[2] // 4])
    a0 = len(ids)
    ids += tok.encode(t1)
    obs = E.render_observation_turn(E.crop_observation(*plan["resizedSize"]), 1)
    e0 = len(ids) + 1  # the span takes the turn's <|im_end|>, the first token of the observation
    ids += enc.encode(obs, [g1[1] * g1[2] // 4])
    a1 = len(ids)
    ids += tok.encode(t2) + [enc.im_end]
    n = next(_DRAW)
    kg, kc = f"scene:{s['qid']}:g", f"scene:{s['qid']}:c{n}"
    rec = {"qid": s["qid"], "kind": "zoom", "category": s["category"], "answer": s["answer"], "ids": ids,
           "spans": [[a0, e0], [a1, len(ids)]], "images": [{"key": kg, "grid": g0}, {"key": kc, "grid": g1}], "fresh": True}
    return rec, {kg: g, kc: c}


def draw(sc, rng, enc, tok, max_pixels):
    """A new trajectory of the scene: a random call box around its target (up to 8 tries)."""
    for _ in range(8):
        got = build(sc, PR.call_box(rng, sc["norm"]), enc, tok, max_pixels)
        if got is not None:
            return got
    return None


def check_manifest(prep, scene_dir, tok_dir, max_pixels):
    tok, enc = encoder(tok_dir, max_pixels)
    scenes = {sc["qid"]: sc for sc in load_scenes([scene_dir], max_pixels)}
    n = same = 0
    px = []
    first_bad = None
    for line in open(os.path.join(prep, "manifest.jsonl")):
        if not line.strip():
            continue
        r = json.loads(line)
        sc = scenes.get(r["qid"])
        if r["kind"] != "zoom" or sc is None or sc["sample"].get("needsZoom") is False:
            continue
        m = T.BOX.search(tok.decode(r["ids"][r["spans"][0][0]:r["spans"][0][1]]))
        got = build(sc, [float(v) for v in m.group(1).split(",")], enc, tok, max_pixels) if m else None
        n += 1
        ok = got is not None and got[0]["ids"] == r["ids"] and got[0]["spans"] == r["spans"] and [im["grid"] for im in got[0]["images"]] == [im["grid"] for im in r["images"]]
        same += ok
        if not ok and first_bad is None:
            ids = got[0]["ids"] if got else []
            d = next((i for i, (a, b) in enumerate(zip(ids, r["ids"])) if a != b), min(len(ids), len(r["ids"])))
            first_bad = f"{r['qid']}: first difference at token {d} of {len(r['ids'])} (ours {len(ids)}): {tok.decode(r['ids'][max(0, d - 5):d + 10])!r}"
        if got:
            for im, ref in zip(got[0]["images"], r["images"]):
                a = got[1][im["key"]].numpy().astype(int)
                b = T.read_rgb(os.path.join(prep, "images", ref["file"])).astype(int)
                if a.shape == b.shape:
                    px.append(float(np.abs(a - b).mean()))
    rep = {"zoom_trajectories": n, "ids_identical": same, "mean_abs_pixel_diff": round(float(np.mean(px)), 3) if px else None, "first_difference": first_bad}
    print(json.dumps(rep))
    return 0 if n and same == n else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-manifest", required=True, help="a prepared folder (manifest.jsonl + images/)")
    ap.add_argument("--scenes", required=True, help="the loupe-synth folder it was prepared from")
    ap.add_argument("--tok", default=os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl"))
    ap.add_argument("--max-pixels", type=int, default=T.MAX_PIXELS)
    a = ap.parse_args()
    random.seed(0)
    sys.exit(check_manifest(a.check_manifest, a.scenes, a.tok, a.max_pixels))
