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
import qwen_torch as qt  # noqa: E402
import pretrain_reading as PR  # noqa: E402
import train as T  # noqa: E402

KINDS = ("ring-digits", "tag-letter", "box-dots", "left-of")
_DRAW = itertools.count()  # unique image keys across threads


def read_out(s):
    """trajectories.ts readOut: what the crop shows, then the boxed answer. Dots are counted one by one ("I count 1, 2,
    3: \\boxed{3}"), so each number is a look at one more dot (the glyph pointer below) and the answer is the last one."""
    f = s["facts"]
    if s["category"] == "ring-digits":
        return f"The ring shows {', '.join(str(f['digits']))}: \\boxed{{{s['answer']}}}"
    if s["category"] == "box-dots":
        return f"I count {', '.join(str(k) for k in range(1, int(f['count']) + 1))}: \\boxed{{{s['answer']}}}"
    if s["category"] == "left-of":
        # trajectories.ts: option (A)'s letter copied from the question, then (B)'s where (A) is not the letter read
        said, o = f"The left tag shows {f['left']}", s.get("options") or []
        if len(o) != 2:
            return f"{said}: \\boxed{{{s['answer']}}}"
        opts = f"(A) {o[0]}" if o[0] == f["left"] else f"(A) {o[0]}, (B) {o[1]}"
        return f"{said}; {opts}: \\boxed{{{s['answer']}}}"
    return f"The tag shows {f['letter']}: \\boxed{{{s['answer']}}}"


# trajectories.ts CLOSER_KINDS: after the first crop, a closer one on it (target_image 2), the detail about 2.5x larger
CLOSER_KINDS = ("box-dots", "left-of")


def closer_target(s):
    """trajectories.ts closerTarget: the green box; for left-of the left tag (the pair region's left edge, 8.6 font pixels
    wide, the region's height), in the scene's pixels."""
    x1, y1, x2, y2 = s["target"]["px"]
    if s["category"] != "left-of":
        return [x1, y1, x2, y2]
    return [x1, y1, x1 + 8.6 * float(s["facts"]["fontPixel"]), y2]


def closer_norm(s, crop_box, size, box=None):
    """trajectories.ts closerNorm: the closer target (or `box`, scene pixels) normalized to the crop `crop_box` of the
    initially resized image of `size` [w, h], clamped to [0, 1]."""
    sx, sy = size[0] / s["width"], size[1] / s["height"]
    x0, y0, x1, y1 = crop_box
    t = box or closer_target(s)
    c = lambda v: min(1.0, max(0.0, v))  # noqa: E731
    return [c((t[0] * sx - x0) / (x1 - x0)), c((t[1] * sy - y0) / (y1 - y0)), c((t[2] * sx - x0) / (x1 - x0)), c((t[3] * sy - y0) / (y1 - y0))]


def closer_turn(s, norm, bbox, image):
    """trajectories.ts's closer turn: what it looks at, where in the crop, and the crop call on that crop (image N)."""
    what = "The left tag" if s["category"] == "left-of" else s["target"]["label"][0].upper() + s["target"]["label"][1:]
    return f"{what} is {T.where((norm[0] + norm[2]) / 2, (norm[1] + norm[3]) / 2)} of this crop. Let me zoom in closer.\n" + T.crop_call(bbox, image)


def verb(s):
    """trajectories.ts verb: the left-of target is two tags."""
    return "are" if s["category"] == "left-of" else "is"


def first_turn(s, bbox):
    label, n = s["target"]["label"], s["target"]["norm"]
    return T.first_turn_text(label[0].upper() + label[1:], verb(s), (n[0] + n[2]) / 2, (n[1] + n[3]) / 2, bbox)


def encoder(tok_dir, max_pixels):
    """(tokenizer, rl.Encoder): the encoding path rl.py --check-manifest proves equal to the engine's."""
    import rl
    tok = rl.load_tokenizer(tok_dir)
    return tok, rl.Encoder(tok, max_pixels)


def probe_model(model_dir, max_pixels, mrope_section=None):
    """(tokenizer, encoder, model) for the probes: the model in fp32 on the CPU, in eval mode, under `mrope_section`
    ("T,H,W", train.with_mrope_section) when given."""
    tok, enc = encoder(model_dir, max_pixels)
    model = qt.QwenVL.from_pretrained(model_dir, dtype=torch.float32, device="cpu")
    if mrope_section:
        model = T.with_mrope_section(model, [int(v) for v in mrope_section.split(",")])
    return tok, enc, model.eval()


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

OPTION_SWAP = 0.0  # train.py --option-swap: the share of left-of draws made with the options in the other order
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
    # the target's own box in the frame the crop call names, normalized (the target stands still in the frames that show
    # it; a frame is the video resized whole, so normalized coordinates hold in every resize): train.py --video-pointer
    x1, y1, x2, y2 = s["target"]["px"]
    rec = {"qid": s["qid"], "kind": "frames-zoom", "category": s["category"], "answer": s["answer"], "ids": ids,
           "spans": [[a0, e0], [a1, e1], [a2, len(ids)]], "images": images + [{"key": kc, "grid": gc}], "fresh": True,
           "glyphs": glyph_pointers(s, read_out(s), a2, tok, plan["cropBox"], fsize, sc),
           "frame_target": [x1 / s["width"], y1 / s["height"], x2 / s["width"], y2 / s["height"]]}
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
           "spans": [[a0, e0], [a1, len(ids)]], "images": [{"key": kg, "grid": g0}, {"key": kc, "grid": g1}], "fresh": True,
           "glyphs": glyph_pointers(s, t2, a1, tok, plan["cropBox"], sc["size"], sc)}
    return rec, {kg: g, kc: c}


def build2(sc, bbox, bbox2, enc, tok, max_pixels, rng=None):
    """One zoom2 trajectory of scene `sc` (CLOSER_KINDS): the crop call `bbox` on image 1, then the closer call on that
    crop (image 2) with `bbox2`, or with rng a new call box around the closer target (PR.call_box), then the reading turn
    -> (record, {key: uint8 image}) as build gives them, or None where a tool refuses a box. The record's frame_target is
    the closer target's box in the first crop (normalized; for left-of the left tag's own height, read off the image),
    the target of train.py's crop-turn pointer (--video-pointer) for the closer call; its glyph pointers are on the
    closer crop."""
    s = sc["sample"]
    got = PR.tool_crop(sc, bbox)
    if got is None:
        return None
    plan, crop = got
    n2 = closer_norm(s, plan["cropBox"], sc["size"])
    if bbox2 is None:
        bbox2 = PR.call_box(rng, n2)
    tr2, plan2 = E.plan_turn("crop_image_normalized", {"bbox_2d": list(bbox2), "target_image": 2},
                             E.Sizes(False, [sc["size"]], prior=[list(plan["resizedSize"])]), "eval")
    if plan2["kind"] != "crop" or tr2["exceedsMaxImages"]:
        return None
    crop2 = E.pil_resize(crop.crop(tuple(plan2["cropBox"])), *plan2["resizedSize"])
    c1 = torch.from_numpy(np.array(E.engine_resize(crop, max_pixels)))
    c2 = torch.from_numpy(np.array(E.engine_resize(crop2, max_pixels)))
    g = sc["global"]
    grid = lambda im: [1, im.shape[0] // 14, im.shape[1] // 14]  # noqa: E731
    g0, g1, g2 = grid(g), grid(c1), grid(c2)
    t1, t2, t3 = first_turn(s, bbox), closer_turn(s, n2, bbox2, 2), read_out(s)
    ids = enc.encode(E.render_first_turn(E.synth_question(s), 1, "vcot"), [g0[1] * g0[2] // 4])
    a0 = len(ids)
    ids += tok.encode(t1)
    e0 = len(ids) + 1
    ids += enc.encode(E.render_observation_turn(E.crop_observation(*plan["resizedSize"]), 1), [g1[1] * g1[2] // 4])
    a1 = len(ids)
    ids += tok.encode(t2)
    e1 = len(ids) + 1
    ids += enc.encode(E.render_observation_turn(tr2["observation"], 1), [g2[1] * g2[2] // 4])
    a2 = len(ids)
    ids += tok.encode(t3) + [enc.im_end]
    # the closer crop in the initially resized image's pixels (the first crop's box scaled from its resized size)
    x0, y0, x1, y1 = plan["cropBox"]
    kx, ky = (x1 - x0) / plan["resizedSize"][0], (y1 - y0) / plan["resizedSize"][1]
    b2 = plan2["cropBox"]
    box2 = (x0 + b2[0] * kx, y0 + b2[1] * ky, x0 + b2[2] * kx, y0 + b2[3] * ky)
    # the closer target as drawn (scene pixels): the green box; the left tag with its own height, read off the image
    tbox = closer_target(s)
    if s["category"] == "left-of" and (tags := pair_tags(sc)):
        _, cx, cy, _, _ = tags[0]
        p = float(s["facts"]["fontPixel"])
        tbox = [cx - 4.3 * p, cy - 5 * p, cx + 4.3 * p, cy + 5 * p]  # a tag is 8.6 p wide, 10 p high (scene.ts tagSize)
    target = closer_norm(s, plan["cropBox"], sc["size"], tbox)  # in the first crop: the closer call's pointer
    inner = closer_norm(s, box2, sc["size"], tbox)  # in the closer crop: the reading head's place (train.py)
    ctgt = [(inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2]
    reads = str(s["facts"]["left"]) if s["category"] == "left-of" else str(s["answer"])
    n = next(_DRAW)
    kg, k1, k2 = f"scene:{s['qid']}:g", f"scene:{s['qid']}:c{n}", f"scene:{s['qid']}:d{n}"
    rec = {"qid": s["qid"], "kind": "zoom2", "category": s["category"], "answer": s["answer"], "ids": ids,
           "spans": [[a0, e0], [a1, e1], [a2, len(ids)]], "images": [{"key": kg, "grid": g0}, {"key": k1, "grid": g1}, {"key": k2, "grid": g2}],
           "fresh": True, "frame_target": target, "closer_target": ctgt, "closer_reads": reads,
           "glyphs": glyph_pointers(s, t3, a2, tok, box2, sc["size"], sc), "text_ptr": option_pointer(s, ids, a0, t3, a2, tok)}
    return rec, {kg: g, k1: c1, k2: c2}


SEG_ASPECT, SEG_GAP = 0.56, 0.24  # app/synth/glyphs.ts: a seven-segment digit is 0.56 h wide, digits 0.8 h apart


def glyph_boxes(s):
    """Each glyph of the answer as the generator drew it: [(char, cx, cy, w, h)] in the scene's own pixels. Ring digits
    are a seven-segment number centred in the ring (scene.ts ringWithDigits); a tag's letter is a 5x7 block glyph of font
    pixel p centred on the tag (tagWithLetter)."""
    x1, y1, x2, y2 = s["target"]["px"]
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    f = s.get("facts", {})
    if s["category"] == "ring-digits":
        d, h = str(f["digits"]), float(f["glyphHeight"])
        return [(ch, cx + (k - (len(d) - 1) / 2) * h * (SEG_ASPECT + SEG_GAP), cy, h * SEG_ASPECT, h) for k, ch in enumerate(d)]
    if s["category"] == "tag-letter":
        p = float(f["fontPixel"])
        return [(str(f["letter"]), cx, cy, 5 * p, 7 * p)]
    return []


def _region_px(sc):
    """A function (x, y) in the scene's own pixels -> the RGB value at that point of the cached region (the initially
    resized image, or the video's target frame at the tool's size), or None outside it."""
    s = sc["sample"]
    reg = np.asarray(sc["region"])
    ox, oy = sc["origin"]
    sx, sy = sc["size"][0] / s["width"], sc["size"][1] / s["height"]

    def at(x, y):
        c, r = int(x * sx - ox), int(y * sy - oy)
        return reg[r, c].astype(np.int32) if 0 <= r < reg.shape[0] and 0 <= c < reg.shape[1] else None
    return at, sx, sy


def dot_cells(sc):
    """box-dots: the dots of the target box as the generator drew them (scene.ts boxWithDots: a 3 x 3 grid, 4 x 3 for
    more than 6 dots, cells 1.8 dot wide inside a pad of stroke + 0.8 dot), read off the image: a cell holds a dot where
    its centre is dark. -> ([(cx, cy, d)] of the dots in reading order (rows top to bottom, each left to right),
    [(cx, cy, d)] of every cell in the same order), in the scene's pixels; None where the cells found do not add up to
    the sample's count (then the scene gets no pointers)."""
    s = sc["sample"]
    f = s.get("facts", {})
    count, d = int(f.get("count", 0)), float(f.get("dotDiameter", 0))
    if not (1 <= count <= 12 and d > 0 and sc.get("region") is not None):
        return None
    at, _, _ = _region_px(sc)
    x1, y1 = s["target"]["px"][:2]
    cols, cell, pad = (4 if count > 6 else 3), 1.8 * d, max(2.0, 0.45 * d) + 0.8 * d
    cells = [(x1 + pad + (i % cols) * cell + cell / 2, y1 + pad + (i // cols) * cell + cell / 2, d) for i in range(cols * 3)]
    dots = []
    for c in cells:
        v = at(c[0], c[1])
        if v is None:
            return None
        if v.mean() < 110:  # a dot is #1c1c1c on #f6f5ee; the resize blurs its rim, not its centre
            dots.append(c)
    return (dots, cells) if len(dots) == count else None


def pair_tags(sc):
    """left-of: the two yellow tags' letters as drawn (scene.ts: the left tag at the region's left edge, the right one
    at its right edge, each 8.6 p wide and 10 p high, the letter 5 x 7 p in the middle; one of them lower by up to 2.5
    tag heights): each tag's vertical centre is the middle of the yellow run in a column of its left padding. ->
    [(left letter, cx, cy, w, h), (right letter, ...)] in the scene's pixels, or None."""
    s = sc["sample"]
    f = s.get("facts", {})
    p = float(f.get("fontPixel", 0))
    if p <= 0 or sc.get("region") is None:
        return None
    at, _, sy = _region_px(sc)
    x1, y1, x2, y2 = s["target"]["px"]
    tw = 8.6 * p
    out = []
    for letter, cx in ((f["left"], x1 + tw / 2), (f["right"], x2 - tw / 2)):
        col = cx - tw / 2 + 0.9 * p
        ys = [y1 + (y2 - y1) * k / 200 for k in range(201)]
        yellow = [y for y in ys if (v := at(col, y)) is not None and v[0] > 170 and v[1] > 130 and v[2] < 120]
        if not yellow:
            return None
        out.append((str(letter), cx, (yellow[0] + yellow[-1]) / 2, 5 * p, 7 * p))
    return out


def token_at(tok, text):
    """A function: character position in `text` -> the index of the token of tok.encode(text) that holds it
    (train.token_index on those ids)."""
    return T.token_index(tok.decode, tok.encode(text))


def glyph_pointers(s, text, at, tok, crop_box, size, sc=None):
    """The reading turn's glyphs, for train.py's glyph pointer (--aux-digit): [(query, cx, cy, w, h, kind)] per glyph the
    turn says ("The ring shows 7, 1, 3, 9", "The tag shows X"), in order, where `query` is the sequence position whose
    output predicts the token that starts with that glyph (the turn starts at position `at`), and the box is the glyph's
    in the crop image, normalized to it (crop_box: the crop in the initially resized image of `size` [w, h]); kind 0.
    Then, for a ring, one entry of kind 1 per digit: its query is the digit's own token (whose output says whether
    another digit follows: ',' or ':') and its box the next digit's place, one digit pitch to the right (after the last
    digit: the empty inside of the ring), so the model looks there before it decides how many digits there are.
    With the scene `sc` (its cached region), the two kinds that need more than one glyph's look:
    - box-dots ("I count 1, 2, 3"): number k looks at the k-th dot (reading order); kind 1 from number k's own token
      to the next dot, after the last one to every empty cell after it (equal shares: one entry each), so whether the
      count goes on is decided by looking at what is left of the box;
    - left-of ("K is left of R"): the first letter looks at the left tag's letter, the second at the right tag's."""
    sx, sy = size[0] / s["width"], size[1] / s["height"]
    x0, y0, x1, y1 = crop_box
    tok_at = token_at(tok, text)
    norm = lambda cx, cy, w, h: ((cx * sx - x0) / (x1 - x0), (cy * sy - y0) / (y1 - y0), w * sx / (x1 - x0), h * sy / (y1 - y0))  # noqa: E731
    if s["category"] == "box-dots":
        got = dot_cells(sc) if sc is not None else None
        m = re.match(r"I count ", text)
        if not got or not m:
            return []
        dots, cells = got
        out = []
        for k, (cx, cy, d) in enumerate(dots):
            pos = m.end() + 3 * k  # "1, 2, 3": a number every three characters (at most 12 dots: 10-12 take a second digit)
            if k >= 9 or text[pos:pos + 1] != str(k + 1):
                return out
            t = tok_at(pos)
            out.append((at + t - 1, *norm(cx, cy, d, d), 0))
            later = dots[k + 1:k + 2] or cells[cells.index((cx, cy, d)) + 1:]
            out += [(at + t, *norm(nx, ny, nd, nd), 1) for nx, ny, nd in later]
        return out
    if s["category"] == "left-of":
        # "The left tag shows K": the letter looks at the left tag's letter (in the closer crop, the tag in its middle)
        got = pair_tags(sc) if sc is not None else None
        head = "The left tag shows "
        if not got or not text.startswith(head + got[0][0]):
            return []
        _, cx, cy, w, h = got[0]
        return [(at + tok_at(len(head)) - 1, *norm(cx, cy, w, h), 0)]
    boxes = glyph_boxes(s)
    m = re.match(r"The (?:ring|tag) shows ", text)
    if not boxes or not m:
        return []
    out = []
    for k, (ch, cx, cy, w, h) in enumerate(boxes):
        pos = m.end() + 3 * k  # "7, 1, 3": a glyph every three characters
        if text[pos:pos + 1] != ch:
            return []
        t = tok_at(pos)
        box = norm(cx, cy, w, h)
        out.append((at + t - 1, *box, 0))
        if s["category"] == "ring-digits":
            pitch = h * (SEG_ASPECT + SEG_GAP) * sx / (x1 - x0)
            out.append((at + t, box[0] + pitch, *box[1:], 1))
    return out


def option_pointer(s, ids, a0, text, at, tok):
    """left-of, the reading turn "The left tag shows K; (A) R, (B) K: \\boxed{B}" (read_out): three kinds of look back,
    for train.py's text pointer -> [(query, [key positions])] in the record's ids (the question is in ids[:a0], the turn
    starts at `at`), or [] for the other kinds or where a line is not found:
    - copy: the query before each option's letter in the turn looks at that option's letter in the question's line
      "(A) R" (the token that holds "R", after "(", "A", ")");
    - compare: each option's letter in the turn looks at the letter read ("shows K"), since its next token says whether
      they are the same (":" ends the list) or not ("," and the next option);
    - answer: the query before the boxed letter looks at the letter of the last option written ("(B)"'s B).
    A one-token lookup from the letter read to its option letter was what v13-v18 were trained on; none learned it."""
    if s["category"] != "left-of" or len(s.get("options") or []) != 2:
        return []
    m = re.match(r"The left tag shows (\w); ", text)
    if not m:
        return []
    line, d = {}, lambda i: tok.decode([ids[i]])  # noqa: E731
    for o, letter in enumerate(s["options"]):
        head = tok.encode("(") + tok.encode(chr(65 + o)) + tok.encode(")")
        # the option's letter after its "(A)": a token of its own after " ", or one with the space (" C")
        line[chr(65 + o)] = next((k for i in range(a0 - len(head) - 1) if ids[i:i + len(head)] == head
                                  for k in (i + len(head), i + len(head) + 1) if d(k).strip() == letter
                                  and tok.decode(ids[i + len(head):k + 1]) == " " + letter), None)
    if None in line.values():
        return []
    t = token_at(tok, text)
    read = at + t(m.start(1))
    out, last = [], None
    for o in re.finditer(r"\(([AB])\) (\w)", text[m.end():]):
        p = m.end() + o.start(2)
        out.append((at + t(p) - 1, [line[o.group(1)]]))
        out.append((at + t(p), [read]))
        last = at + t(m.end() + o.start(1))
    j = text.rfind("{") + 1
    if last is None or j <= 0:
        return []
    out.append((at + t(j) - 1, [last]))
    return out


def option_pointer_ok(r, tok, left):
    """Whether a record's text pointer (option_pointer) says what its tokens say: each copy's next token is the letter its
    key holds in the question (ids[:spans[0][0]]); each compare looks at the letter read (`left`) and its next token is
    ":" where its own letter is that one, else ","; the last entry's next token is the boxed answer, which its key holds.
    -> (entries, right ones); the --check-glyphs report and check_train_aux use it."""
    ids, ptr = r["ids"], r.get("text_ptr") or []
    d = lambda i: tok.decode([ids[i]]).strip()  # noqa: E731
    ok = 0
    for k, (q, keys) in enumerate(ptr):
        if k == len(ptr) - 1:
            ok += int(d(q + 1) == str(r["answer"]) == d(keys[0]))
        elif k % 2 == 0:
            ok += int(keys[0] < r["spans"][0][0] and d(q + 1) == d(keys[0]) != "")
        else:
            ok += int(d(keys[0]) == str(left) and d(q + 1).startswith(":" if d(q) == str(left) else ","))
    return len(ptr), ok


def draw(sc, rng, enc, tok, max_pixels):
    """A new trajectory of the scene: a random call box around its target (and for a video a random frame pick), up to 8
    tries. With OPTION_SWAP > 0, that share of left-of draws asks the question with the two options in the other order
    (E.options_swapped): a scene drawn again and again then has no fixed answer letter to remember, only the letter of
    the option it reads."""
    s = sc["sample"]
    if OPTION_SWAP > 0 and s["category"] == "left-of" and len(s.get("options") or []) == 2 and rng.random() < OPTION_SWAP:
        sc = dict(sc, sample=E.options_swapped(s))
    for _ in range(8):
        if sc.get("video"):
            picks = frame_picks(rng, sc["sample"])
            got = build_video(sc, picks, PR.call_box(rng, sc["norm"]), enc, tok, max_pixels)
        elif sc["sample"]["category"] in CLOSER_KINDS:
            got = build2(sc, PR.call_box(rng, sc["norm"]), None, enc, tok, max_pixels, rng)
        else:
            got = build(sc, PR.call_box(rng, sc["norm"]), enc, tok, max_pixels)
        if got is not None:
            return got
    return None


PICKS = re.compile(r'"target_frames": \[([^\]]*)\]')


def check_manifest(prep, scene_dir, tok_dir, max_pixels):
    tok, enc = encoder(tok_dir, max_pixels)
    scenes = {sc["qid"]: sc for sc in load_scenes([scene_dir], max_pixels)}
    n = {"zoom": 0, "zoom2": 0, "frames-zoom": 0}
    same = {"zoom": 0, "zoom2": 0, "frames-zoom": 0}
    px = {"zoom": [], "zoom2": [], "frames-zoom": []}
    first_bad = None
    for line in open(os.path.join(prep, "manifest.jsonl")):
        if not line.strip():
            continue
        r = json.loads(line)
        sc = scenes.get(r["qid"])
        kind = r["kind"]
        if kind not in n or sc is None or bool(sc.get("video")) != (kind == "frames-zoom"):
            continue
        if kind in ("zoom", "zoom2") and sc["sample"].get("needsZoom") is False:
            continue
        got = None
        if kind == "zoom":
            m = T.BOX.search(tok.decode(r["ids"][r["spans"][0][0]:r["spans"][0][1]]))
            got = build(sc, [float(v) for v in m.group(1).split(",")], enc, tok, max_pixels) if m else None
        elif kind == "zoom2" and len(r["spans"]) >= 3:
            m = T.BOX.search(tok.decode(r["ids"][r["spans"][0][0]:r["spans"][0][1]]))
            m2 = T.BOX.search(tok.decode(r["ids"][r["spans"][1][0]:r["spans"][1][1]]))
            if m and m2:
                got = build2(sc, [float(v) for v in m.group(1).split(",")], [float(v) for v in m2.group(1).split(",")], enc, tok, max_pixels)
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
           "zoom2_trajectories": n["zoom2"], "zoom2_identical": same["zoom2"], "zoom2_mean_abs_pixel_diff": mean(px["zoom2"]),
           "frames_zoom_trajectories": n["frames-zoom"], "frames_zoom_identical": same["frames-zoom"], "frames_zoom_mean_abs_pixel_diff": mean(px["frames-zoom"]),
           "first_difference": first_bad}
    print(json.dumps(rep))
    return 0 if sum(n.values()) and same == n else 1


def check_glyphs(scene_dir, tok_dir, max_pixels, draws=4):
    """train.py's glyph pointer targets on real scenes: for `draws` fresh zoom (image scenes) or frames-zoom (videos)
    trajectories of every scene, each glyph's query is the position just before the token that starts with that glyph,
    the glyphs run left to right, and the merged tokens of the crop the pointer looks at (train.glyph_keys) hold the
    glyph's ink: pixels far from the glyph box's border (the digits are #111111 on white, a tag's letter dark or white on
    its colour). A ring's look-ahead entries (kind 1) sit on the digit's own token, followed by ',' or, after the last
    digit, ':'. Reports counts; exit status 0 only when every glyph passes."""
    tok, enc = encoder(tok_dir, max_pixels)
    scenes = load_scenes([scene_dir], max_pixels)
    rng = random.Random(0)
    n = ok_query = ok_order = ok_ink = n_after = ok_after = n_opt = ok_opt = 0
    kinds = collections.Counter()
    bad = []
    for sc in scenes:
        for _ in range(draws):
            got = draw(sc, rng, enc, tok, max_pixels)
            if got is None:
                continue
            r, pix = got
            kinds[r["kind"]] += 1
            crop = pix[r["images"][-1]["key"]].numpy().astype(float).mean(-1)  # grey, [H*14, W*14]
            H, W = r["images"][-1]["grid"][1] // 2, r["images"][-1]["grid"][2] // 2
            glyphs = [g for g in r["glyphs"] if g[5] == 0]
            after = [g for g in r["glyphs"] if g[5] == 1] if r["category"] == "ring-digits" else []
            # what each glyph's token says: the answer's characters; a count's numbers 1..n; left-of's left letter
            f = sc["sample"].get("facts", {})
            says = ([str(k + 1) for k in range(int(r["answer"]))] if r["category"] == "box-dots"
                    else [str(f.get("left"))] if r["category"] == "left-of" else list(str(r["answer"])))
            # left-of: the option letters copied from the question, compared with the letter read, and the answer (option_pointer)
            if r["category"] == "left-of":
                got = option_pointer_ok(r, tok, f.get("left"))
                n_opt, ok_opt = n_opt + got[0], ok_opt + got[1]
            xs = [g[1] for g in glyphs]
            in_order = len(glyphs) == len(says) and (xs == sorted(xs) or r["category"] == "box-dots")  # dots: rows, each left to right
            ok_order += int(in_order)
            if not in_order and len(bad) < 5:
                bad.append({"qid": r["qid"], "kind": r["kind"], "glyphs": len(glyphs), "says": says})
            # kind 1: the query is the digit's own token; the next token says ',' (another digit) or ':' (the last)
            for j, g in enumerate(after):
                n_after += 1
                ok_after += int(tok.decode([r["ids"][g[0]]]).strip() == str(r["answer"])[j]
                                and tok.decode([r["ids"][g[0] + 1]]).strip() == ("," if j < len(after) - 1 else ":"))
            for (q, cx, cy, w, h, _), (_, keys) in zip(glyphs, T.glyph_keys(glyphs, H, W)):
                n += 1
                nxt = tok.decode([r["ids"][q + 1]]).strip()
                j = len([g for g in glyphs if g[0] < q])
                ch = says[j] if j < len(says) else "?"
                ok_query += int(nxt.startswith(ch))
                # ink: the glyph box's pixels farthest from its border's median, inside the pointed tokens' union
                Hp, Wp = crop.shape
                bx0, bx1 = int(max(0, (cx - w / 2) * Wp)), int(min(Wp, (cx + w / 2) * Wp + 1))
                by0, by1 = int(max(0, (cy - h / 2) * Hp)), int(min(Hp, (cy + h / 2) * Hp + 1))
                box = crop[by0:by1, bx0:bx1]
                ring = np.concatenate([crop[max(0, by0 - 2), bx0:bx1], crop[min(Hp - 1, by1 + 1), bx0:bx1]])
                far = np.abs(box - np.median(ring)) > 60
                mask = np.zeros_like(crop, dtype=bool)
                for k in keys:
                    mask[(k // W) * 28:(k // W + 1) * 28, (k % W) * 28:(k % W + 1) * 28] = True
                inside = far & mask[by0:by1, bx0:bx1]
                hit = far.sum() > 4 and inside.sum() >= 0.5 * far.sum()
                ok_ink += int(hit)
                if not hit and len(bad) < 5:
                    bad.append({"qid": r["qid"], "glyph": ch, "ink_px": int(far.sum()), "ink_in_pointed": int(inside.sum())})
    rep = {"trajectories": dict(kinds), "glyphs": n, "query_before_glyph": ok_query, "ink_under_pointer": ok_ink, "trajectories_in_order": ok_order,
           "after_digit": n_after, "after_digit_query_ok": ok_after, "option_pointer": n_opt, "option_pointer_ok": ok_opt, "bad": bad}
    print(json.dumps(rep))
    return 0 if n and ok_query == n and ok_ink == n and ok_after == n_after and ok_opt == n_opt else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-manifest", help="a prepared folder (manifest.jsonl + images/)")
    ap.add_argument("--check-glyphs", action="store_true", help="check train.py's glyph pointer targets on --scenes (below)")
    ap.add_argument("--scenes", required=True, help="the loupe-synth folder it was prepared from")
    ap.add_argument("--tok", default=os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl"))
    ap.add_argument("--max-pixels", type=int, default=T.MAX_PIXELS)
    a = ap.parse_args()
    random.seed(0)
    if a.check_glyphs:
        sys.exit(check_glyphs(a.scenes, a.tok, a.max_pixels))
    if not a.check_manifest:
        ap.error("--check-manifest or --check-glyphs is required")
    sys.exit(check_manifest(a.check_manifest, a.scenes, a.tok, a.max_pixels))
