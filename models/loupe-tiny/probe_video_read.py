#!/usr/bin/env python3
"""Where video answers are lost: the reading turn given a good crop, against the model's own frame pick and crop.

  python3 probe_video_read.py --scenes SYNTH_DIR --model MODEL_DIR [--n 12] [--engine-run RUN/samples.jsonl]

1. Gold context: for each video scene of SYNTH_DIR, a fresh frames-zoom trajectory (scene_traj.draw: the target frame
   picked, a call box around the target, the crop cut from that frame), encoded as train.py encodes it; the model
   (PyTorch, fp32, CPU, MODEL_DIR/model.safetensors) writes the reading turn greedily after the crop. Counts answers right.
2. With --engine-run (an `npx loupe eval` run of the same scenes): rebuilds each sample with the engine's own frame
   pick and crop box, and reports whether the pick holds the first target frame and whether the crop stays inside the
   target's reachable region (what scene_traj.build_video refuses otherwise), next to the engine's reading turn.
Between the two, the crop turn alone: the gold trajectories up to the crop call (the target frame picked and shown), the
model writes the call; its box's centre against the target's, in x and in y. The engine's own calls can be set beside it.
"""
import argparse, json, os, random, re, sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scene_traj as S  # noqa: E402
import train as T  # noqa: E402


def read(model, rec, pix, eos, turn=-1, max_new=40):
    """The model's greedy text for assistant turn `turn` of `rec`, given everything before it (the images up to it)."""
    s = rec["spans"][turn][0]
    ims = rec["images"] if turn == -1 else rec["images"][:-1]  # the crop turn comes before the crop's image
    with torch.no_grad():
        g = model.generate(torch.tensor([rec["ids"][:s]]), torch.cat([T.patches(pix[im["key"]], "cpu") for im in ims]),
                           torch.tensor([im["grid"] for im in ims]), max_new_tokens=max_new, eos_ids=eos, temperature=0)
    return g[0].tolist()


def numbers(m):
    """The comma-separated numbers of a BOX match as floats, or None (no match, or a value that is not a number)."""
    try:
        return [float(v) for v in m.group(1).split(",")] if m else None
    except ValueError:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--engine-run")
    a = ap.parse_args()
    mp = T.MAX_PIXELS
    tok, enc, model = S.probe_model(a.model, mp)
    eos = [tok.token_to_id("<|im_end|>")]
    scenes = [sc for sc in S.load_scenes([a.scenes], mp, workers=2) if sc.get("video")][: a.n]
    # one fresh frames-zoom trajectory per scene (the target frame picked, a call box around the target), for both parts
    rng = random.Random(a.seed)
    drawn = [(sc, *got) for sc in scenes if (got := S.draw(sc, rng, enc, tok, mp)) is not None]
    ok = n = 0
    for sc, rec, pix in drawn:
        text = tok.decode(read(model, rec, pix, eos))
        m = T.BOXED.search(text)
        right = bool(m) and m.group(1).strip().upper() == str(rec["answer"]).upper()
        ok += right
        n += 1
        print(f"gold context  {sc['qid']} {sc['sample']['category']:<11} gold {rec['answer']:<5} {'OK' if right else '--'} {text.strip()[:60]!r}")
    print(f"gold context: {ok}/{n} read right after a crop of the target frame")
    # 2. The crop call after a right pick: the same trajectories up to the crop turn (the target frame picked and shown);
    # the model writes the call. Its box against the target's own box in that frame (normalized).
    hit = n = k = 0
    ex = ey = 0.0
    for sc, rec, pix in drawn:
        text = tok.decode(read(model, rec, pix, eos, turn=1, max_new=80))
        box = numbers(T.BOX.search(text))
        x1, y1, x2, y2 = rec["frame_target"]
        n += 1
        if box is None or len(box) != 4:
            print(f"crop turn     {sc['qid']} no readable crop call {text.strip()[-60:]!r}")
            continue
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        tx, ty = (x1 + x2) / 2, (y1 + y2) / 2
        k += 1
        ex += abs(cx - tx)
        ey += abs(cy - ty)
        inside = box[0] <= tx <= box[2] and box[1] <= ty <= box[3]
        hit += inside
        print(f"crop turn     {sc['qid']} target [{x1:.2f}, {y1:.2f}, {x2:.2f}, {y2:.2f}] call {box} "
              f"{'holds' if inside else 'misses'} the target's centre")
    if k:
        print(f"crop turn: {hit}/{n} boxes hold the target's centre; mean centre error x {ex / k:.3f}, y {ey / k:.3f} "
              f"(normalized, over the {k} readable calls)")
    if not a.engine_run:
        return
    byq = {sc["qid"]: sc for sc in scenes}
    held = inside = total = 0
    for line in open(a.engine_run):
        r = json.loads(line)
        sc = byq.get(r["qid"])
        t = r["trajectory"]["turns"]
        if sc is None:
            continue
        total += 1
        pm = T.PICKS.search(t[0].get("text", "")) if len(t) >= 3 else None
        bm = T.BOX.search(t[1].get("text", "")) if len(t) >= 3 else None
        first = int(sc["sample"]["target"]["frames"][0])
        picks = [int(v) for v in re.findall(r"\d+", pm.group(1))] if pm else None
        box = numbers(bm)
        if picks is None or box is None:
            why = "no select_frames then crop call (or unreadable)"
        else:
            try:
                built = S.build_video(sc, picks, box, enc, tok, mp)
                held += 1
                inside += built is not None
                why = "ok" if built is not None else "a tool refuses the call"
            except ValueError:
                why = f"pick {picks} leaves out target frame {first}"
            except RuntimeError:
                held += 1
                why = "crop leaves the target's region"
        print(f"engine        {r['qid']} {r['category']:<11} gold {r['answer']:<5} {why:<44} {(t[-1].get('text', '') if t else '').strip()[:40]!r}")
    print(f"engine run: pick holds the first target frame {held}/{total}; crop inside the target's region {inside}/{total}")


if __name__ == "__main__":
    main()
