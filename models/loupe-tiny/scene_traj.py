#!/usr/bin/env python3
"""Zoom trajectories made on the fly from loupe-synth scenes, for train.py --scenes.

Prepared data (prepare.ts through Loupe's loop) costs about a second of CPU per scene, so a GPU run sees a few thousand
reading turns, each many times: the text model memorizes the answers instead of reading the crop. Here every draw of a
scene is a new trajectory: a new call box (trajectories.ts callBox: grown by 0.3-0.8 of the target's size on each side,
each side jittered), Pixel Reasoner's crop of it (pr_env.plan_turn: 0.1 padding, clamping, the eval_zoom resize), the
engine resize of both images (pr_env.engine_resize) and the token ids as Loupe's engine encodes the conversation
(render_first_turn / render_observation_turn with the image pads expanded, as rl.py's Encoder does; rl.py
--check-manifest shows that path reproduces prepare.ts's ids exactly).

Image scenes get trajectories.ts's `zoom` kind: "{Label} is {where}. Let me zoom in.\\n<tool_call>...</tool_call>", then the
reading turn ("The ring shows 7, 1, 3, 9: \\boxed{7139}" / "The tag shows X: \\boxed{X}"). Easy scenes (needsZoom false)
get a zoom trajectory too (prepare.ts gives them a direct answer): a crop is still a right way to answer them.

Video scenes (16 frames, the target in one or two of them) get trajectories.ts's `frames-zoom` kind: "The question is
about {label}, which only appears briefly. Let me select frames to find it." + select_frames (the target frames plus
random neighbours within 3 of the first, sorted, at most 8: a new pick every draw), the frames observation, "{Label} is
in image N (frame F), {where}. Let me zoom in." + a crop call (a new call box) on the first target frame, the crop
observation, the reading turn. As Loupe's loop and engine run it (eval mode): every frame resized to the video_frame
preset (Pillow bicubic, as SharpImageOps), the video given to the engine as its frames, each an image block of its own
(app/engines/local/prompt.ts videoBlocksToImages: no <|video_pad|>, every grid [1, h, w]); the selected frames are the
same images again (eval mode does not resize them); the crop is cut from the selected target frame at the video_frame
size. A record holds 16 + k + 1 images (about 3.2k tokens at train.MAX_PIXELS, four times a zoom trajectory). Each video
scene keeps the reachable part of its target frame in memory; its 16 engine-resized frames are decoded on first use
(about 0.35 s) and kept in an LRU cache of VIDEO_CACHE scenes (about 4.5 MB a scene at train.MAX_PIXELS; train.py
--scene-video-cache sets it); a draw of a cached scene takes about 10 ms, as a zoom trajectory does.

  python3 scene_traj.py --check-manifest PREP_DIR --scenes SYNTH_DIR [--tok MODEL_DIR]
rebuilds every zoom trajectory of a prepared folder from its scene, with the call box its first turn wrote, and every
frames-zoom trajectory with the frames its first turn selected and the call box its second turn wrote, and reports per
kind how many are identical (token ids, loss spans and image grids) and how far the engine-resize emulation is from the
stored pixels (mean absolute difference over all images, 0-255). Exit status 0 only when there is at least one and every
one is identical.
"""
import argparse, collections, itertools, json, os, random, re, sys, threading

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


def load_scenes(dirs, max_pixels, workers=8, video=True):
    """Samples of the reading kinds -> scene dicts ready for draw(). Image samples: the engine's global view (uint8)
    cached and the region any call box can reach (pretrain_reading.load_scene). Video samples (with `video`): sc['video']
    True, the frame files, and the reachable region of the first target frame at the video_frame size (load_video_scene);
    their engine-resized frames are decoded on first use (video_frames)."""
    from concurrent.futures import ThreadPoolExecutor
    scenes = []
    for d in dirs:
        for line in open(os.path.join(d, "samples.jsonl")):
            if not line.strip():
                continue
            s = json.loads(line)
            if s.get("category") not in KINDS:
                continue
            norm = [float(v) for v in s["target"]["norm"]]
            if s.get("isVideo"):
                if video and s.get("frames") and s["target"].get("frames"):
                    scenes.append({"qid": s["qid"], "sample": s, "video": True, "frames": [os.path.join(d, f) for f in s["frames"]], "norm": norm})
            elif s.get("image"):
                scenes.append({"qid": s["qid"], "sample": s, "path": os.path.join(d, s["image"]), "norm": norm})
    with ThreadPoolExecutor(max(1, workers)) as ex:
        return list(ex.map(lambda sc: load_video_scene(sc) if sc.get("video") else PR.load_scene(sc, max_pixels), scenes))


# ---- video scenes

VIDEO_CACHE = 128  # video scenes whose 16 engine-resized frames stay decoded (LRU)
_frames = collections.OrderedDict()
_frames_lock = threading.Lock()


def frame_size(s):
    """The frames' size as the loop gives them to the model: the video_frame preset of the video's size (runEpisode)."""
    return E.resize_with_preset([s["width"], s["height"]], "video_frame")


def video_frame(path, size):
    """One frame file as the loop stores it: RGB, resized to `size` with Pillow bicubic (SharpImageOps 'pillow')."""
    im = E.load_rgb(path)
    return E.pil_resize(im, *size)


def load_video_scene(sc):
    """sc['size'] (the frame size the tool sees), and sc['origin'] / sc['region']: the part of the first target frame any
    call box around the target can reach (what the crop is cut from)."""
    s = sc["sample"]
    sc["size"] = frame_size(s)
    im = video_frame(sc["frames"][s["target"]["frames"][0] - 1], sc["size"])
    box = PR.reach(sc["norm"], *im.size)
    sc["origin"], sc["region"] = box[:2], im.crop(box)
    return sc


def video_frames(sc, max_pixels):
    """The video as the engine sees it: every frame at the video_frame size through the engine resize (uint8 [H, W, 3]
    tensors), padded to an even count by repeating the last frame (runEpisode, Qwen's frame lists). Cached (LRU)."""
    key = (sc["qid"], max_pixels)
    with _frames_lock:
        got = _frames.get(key)
        if got is not None:
            _frames.move_to_end(key)
            return got
    out = [torch.from_numpy(np.array(E.engine_resize(video_frame(f, sc["size"]), max_pixels))) for f in sc["frames"]]
    out += [out[-1]] * (E.padded_frame_count(len(out)) - len(out))
    with _frames_lock:
        _frames[key] = out
        while len(_frames) > max(0, VIDEO_CACHE):
            _frames.popitem(last=False)
    return out


def frames_first_turn(s, picks):
    """trajectories.ts's frames-zoom first turn."""
    return (f"The question is about {s['target']['label']}, which only appears briefly. Let me select frames to find it.\n<tool_call>\n"
            f'{{"name": "select_frames", "arguments": {{"target_frames": [{", ".join(str(p) for p in picks)}]}}}}\n</tool_call>')


def frames_crop_turn(s, image, frame, bbox):
    """trajectories.ts's frames-zoom second turn: where the target is, and the crop call on that frame's image."""
    label, n = s["target"]["label"], s["target"]["norm"]
    return (f"{label[0].upper() + label[1:]} is in image {image} (frame {frame}), {T.where((n[0] + n[2]) / 2, (n[1] + n[3]) / 2)}. Let me zoom in.\n"
            + T.crop_call(bbox, image))


def frame_picks(rng, s):
    """trajectories.ts's pick: the target frames plus neighbours of the first (within 3, clamped to the video) until there
    are two more (at most 8), sorted."""
    tf = [int(f) for f in s["target"]["frames"]]
    n = len(s["frames"])
    picks = set(tf)
    while len(picks) < min(len(tf) + 2, 8):
        picks.add(min(n, max(1, tf[0] + rng.randint(-3, 3))))
    return sorted(picks)


def build_video(sc, picks, bbox, enc, tok, max_pixels):
    """One frames-zoom trajectory of video scene `sc`: select_frames `picks` (1-based), then a crop call with `bbox` on the
    first target frame -> (record as train.py's load_data gives it, {key: uint8 image}), or None where a tool refuses the
    call. Image keys are 'scene:<qid>:f<i>' (frame i of the video, 0-based; a selected frame is the same image) and
    'scene:<qid>:c<n>'."""
    s = sc["sample"]
    first = int(s["target"]["frames"][0])
    if first not in picks:
        raise ValueError(f"scene_traj: {s['qid']}: the pick {picks} leaves out the target frame {first}")
    frames = video_frames(sc, max_pixels)
    fsize = list(sc["size"])
    video = {"numFrames": len(frames), "frameSize": fsize}
    tr, fplan = E.plan_turn("select_frames", {"target_frames": list(picks)}, E.Sizes(True, video=video), "eval")
    if fplan["kind"] != "frames" or tr["exceedsMaxImages"]:
        return None
    k, image = len(picks), 2 + list(picks).index(first)
    ctr, plan = E.plan_turn("crop_image_normalized", {"bbox_2d": list(bbox), "target_image": image},
                            E.Sizes(True, video=video, prior=[list(fplan["frameSize"])] * k), "eval")
    if plan["kind"] != "crop" or ctr["exceedsMaxImages"]:
        return None
    assert plan["list"] == "prior" and picks[plan["position"]] == first and list(fplan["frameSize"]) == fsize
    x0, y0, x1, y1 = plan["cropBox"]
    ox, oy = sc["origin"]
    rw, rh = sc["region"].size
    if not (ox <= x0 and oy <= y0 and x1 <= ox + rw and y1 <= oy + rh):
        raise RuntimeError(f"scene_traj: {s['qid']}: crop {plan['cropBox']} leaves the cached region at {sc['origin']} of {rw}x{rh}")
    crop = E.pil_resize(sc["region"].crop((x0 - ox, y0 - oy, x1 - ox, y1 - oy)), *plan["resizedSize"])
    c = torch.from_numpy(np.array(E.engine_resize(crop, max_pixels)))
    grid = lambda im: [1, im.shape[0] // 14, im.shape[1] // 14]  # noqa: E731
    ntok = lambda g: g[1] * g[2] // 4  # noqa: E731
    fg = [grid(f) for f in frames]
    fpos = [min(p, len(sc["frames"]) - 1) for p in range(len(frames))]  # a padded frame is the last frame's image
    kf = [f"scene:{s['qid']}:f{p}" for p in fpos]
    ids = enc.encode(E.render_first_turn(E.synth_question(s), len(frames), "vcot"), [ntok(g) for g in fg])
    a0 = len(ids)
    ids += tok.encode(frames_first_turn(s, picks))
    e0 = len(ids) + 1
    ids += enc.encode(E.render_observation_turn(tr["observation"], k), [ntok(fg[p]) for p in fplan["positions"]])
    a1 = len(ids)
    ids += tok.encode(frames_crop_turn(s, image, first, bbox))
    e1 = len(ids) + 1
    gc = grid(c)
    ids += enc.encode(E.render_observation_turn(ctr["observation"], 1), [ntok(gc)])
    a2 = len(ids)
    ids += tok.encode(read_out(s)) + [enc.im_end]
    kc = f"scene:{s['qid']}:c{next(_DRAW)}"
    images = [{"key": kf[i], "grid": fg[i]} for i in range(len(frames))] + [{"key": kf[p], "grid": fg[p]} for p in fplan["positions"]]
    rec = {"qid": s["qid"], "kind": "frames-zoom", "category": s["category"], "answer": s["answer"], "ids": ids,
           "spans": [[a0, e0], [a1, e1], [a2, len(ids)]], "images": images + [{"key": kc, "grid": gc}], "fresh": True}
    pix = {kf[i]: frames[i] for i in range(len(frames))}
    pix[kc] = c
    return rec, pix


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
    """A new trajectory of the scene: a random call box around its target (and for a video a random frame pick), up to 8
    tries."""
    for _ in range(8):
        if sc.get("video"):
            picks = frame_picks(rng, sc["sample"])
            got = build_video(sc, picks, PR.call_box(rng, sc["norm"]), enc, tok, max_pixels)
        else:
            got = build(sc, PR.call_box(rng, sc["norm"]), enc, tok, max_pixels)
        if got is not None:
            return got
    return None


PICKS = re.compile(r'"target_frames": \[([^\]]*)\]')


def check_manifest(prep, scene_dir, tok_dir, max_pixels):
    tok, enc = encoder(tok_dir, max_pixels)
    scenes = {sc["qid"]: sc for sc in load_scenes([scene_dir], max_pixels)}
    n = {"zoom": 0, "frames-zoom": 0}
    same = {"zoom": 0, "frames-zoom": 0}
    px = {"zoom": [], "frames-zoom": []}
    first_bad = None
    for line in open(os.path.join(prep, "manifest.jsonl")):
        if not line.strip():
            continue
        r = json.loads(line)
        sc = scenes.get(r["qid"])
        kind = r["kind"]
        if kind not in n or sc is None or bool(sc.get("video")) != (kind == "frames-zoom"):
            continue
        if kind == "zoom" and sc["sample"].get("needsZoom") is False:
            continue
        got = None
        if kind == "zoom":
            m = T.BOX.search(tok.decode(r["ids"][r["spans"][0][0]:r["spans"][0][1]]))
            got = build(sc, [float(v) for v in m.group(1).split(",")], enc, tok, max_pixels) if m else None
        elif len(r["spans"]) >= 2:
            p = PICKS.search(tok.decode(r["ids"][r["spans"][0][0]:r["spans"][0][1]]))
            m = T.BOX.search(tok.decode(r["ids"][r["spans"][1][0]:r["spans"][1][1]]))
            if p and m:
                got = build_video(sc, [int(v) for v in p.group(1).split(",")], [float(v) for v in m.group(1).split(",")], enc, tok, max_pixels)
        n[kind] += 1
        ok = got is not None and got[0]["ids"] == r["ids"] and got[0]["spans"] == r["spans"] and [im["grid"] for im in got[0]["images"]] == [im["grid"] for im in r["images"]]
        same[kind] += ok
        if not ok and first_bad is None:
            ids = got[0]["ids"] if got else []
            d = next((i for i, (a, b) in enumerate(zip(ids, r["ids"])) if a != b), min(len(ids), len(r["ids"])))
            first_bad = f"{r['qid']}: first difference at token {d} of {len(r['ids'])} (ours {len(ids)}): {tok.decode(r['ids'][max(0, d - 5):d + 10])!r}"
        if got:
            for im, ref in zip(got[0]["images"], r["images"]):
                a = got[1][im["key"]].numpy().astype(int)
                b = T.read_rgb(os.path.join(prep, "images", ref["file"])).astype(int)
                if a.shape == b.shape:
                    px[kind].append(float(np.abs(a - b).mean()))
    mean = lambda v: round(float(np.mean(v)), 3) if v else None  # noqa: E731
    rep = {"zoom_trajectories": n["zoom"], "ids_identical": same["zoom"], "mean_abs_pixel_diff": mean(px["zoom"]),
           "frames_zoom_trajectories": n["frames-zoom"], "frames_zoom_identical": same["frames-zoom"], "frames_zoom_mean_abs_pixel_diff": mean(px["frames-zoom"]),
           "first_difference": first_bad}
    print(json.dumps(rep))
    return 0 if sum(n.values()) and same == n else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-manifest", required=True, help="a prepared folder (manifest.jsonl + images/)")
    ap.add_argument("--scenes", required=True, help="the loupe-synth folder it was prepared from")
    ap.add_argument("--tok", default=os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl"))
    ap.add_argument("--max-pixels", type=int, default=T.MAX_PIXELS)
    a = ap.parse_args()
    random.seed(0)
    sys.exit(check_manifest(a.check_manifest, a.scenes, a.tok, a.max_pixels))
