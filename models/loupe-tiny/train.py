#!/usr/bin/env python3
"""loupe-tiny SFT: a small Qwen2.5-VL (plain torch, qwen_torch.py — no HF transformers needed to train) on loupe-synth
trajectories made by prepare.ts / scripts/device/datagen.ts through Loupe's own loop and engine preprocessing.

  train.py --data DIR[,DIR...] --out OUT [--init MODEL_DIR | --fresh-from MODEL_DIR | --arch v2] [--tok MODEL_DIR] [--device auto|cpu|cuda]
           [--minutes M | --max-steps N] [--bs 32] [--lr 1.5e-3] [--val-every 100] [--log-every 10]
           [--export none|q8|fp32,q8] [--aug-flips]

--data: prepared folders (manifest.jsonl + images/); a folder without manifest.jsonl stands for all its subfolders that have one.
--init: start from MODEL_DIR/model.safetensors (+ its config.json); else a fresh model of --arch.
--tok: tokenizer/chat template/preprocessor source (default: --init, else models/tiny-random-qwen25vl).
Loss on assistant tokens only (the spans prepare.ts recorded, each ending with its <|im_end|>). The learning rate warms up
over 4 % of the run and follows a cosine to 0 at --max-steps, or on wall-clock time at --minutes (so a GPU run ends on time).
Console lines in verl's format (`step:N - train/loss:X - ...`), which Loupe's Training page charts.
Writes OUT/{config.json, model.safetensors, generation_config.json, preprocessor_config.json, tokenizer*.json, metrics.json,
curves.png} and with --export the ONNX files (onnx/*.onnx, transformers.js layout; needs transformers + onnx, through
models/make_tiny_qwen25vl.py).
"""
import argparse, json, math, os, random, re, shutil, sys, time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt  # noqa: E402
from tok import load_hf_style  # noqa: E402

MAX_PIXELS = 128 * 28 * 28  # = prepare.ts LOUPE_TINY_MAX_PIXELS
MEAN = torch.tensor([0.48145466, 0.4578275, 0.40821073])
STD = torch.tensor([0.26862954, 0.26130258, 0.27577711])

# Model sizes. v1: the first loupe-tiny (5.3 M). v2: wider and deeper text and vision (~12 M), still fast on a laptop CPU.
ARCH = {
    "v1": dict(text=dict(hidden_size=256, intermediate_size=640, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
               vision=dict(depth=4, hidden_size=160, intermediate_size=480, num_heads=2, fullatt_block_indexes=[1, 3])),
    "v2": dict(text=dict(hidden_size=384, intermediate_size=1024, num_hidden_layers=5, num_attention_heads=6, num_key_value_heads=2),
               vision=dict(depth=5, hidden_size=192, intermediate_size=576, num_heads=3, fullatt_block_indexes=[2, 4])),
}


def log(s):
    print(s, flush=True)


def with_mrope_section(model, sec):
    """`model`'s weights under another M-RoPE split `sec` = [t, h, w] of the text model's rotary frequency pairs (summing
    to head_dim / 2). The three sections take the frequencies in order, fastest first, so width (w) gets the slowest: with
    [8, 12, 12] at rope_theta 1e5 a step of one token column turns the rotary phase by at most 7.5e-4 rad, so a later
    image's columns are all but invisible to attention (probe_positions.py: a picked frame's x cannot be read from the
    text model's states, its y can). A text token has t = h = w, so its rotation, and every text-only output, is the
    same under any split; only image tokens change."""
    cfg = json.loads(json.dumps(model.config))
    tc = cfg["text_config"]
    tc["rope_parameters"] = {**tc.get("rope_parameters", {}), "mrope_section": [int(v) for v in sec]}
    out = qt.QwenVL(cfg, init=False)
    out.load_state_dict(model.state_dict())
    return out.to(next(model.parameters()).device)


def build_config(tok_dir, arch):
    """A Qwen2.5-VL config.json dict (transformers 5 layout) of size `arch`, with the tokenizer's special ids."""
    base = json.load(open(os.path.join(tok_dir, "config.json")))
    t, a = base["text_config"], ARCH[arch]
    head_dim = a["text"]["hidden_size"] // a["text"]["num_attention_heads"]
    assert head_dim == 64, "mrope_section [8, 12, 12] assumes head_dim 64"
    text = dict(t)
    text.update(a["text"], vocab_size=t["vocab_size"], max_position_embeddings=32768, rms_norm_eps=1e-6,
                rope_parameters={"rope_type": "default", "rope_theta": 1e5, "mrope_section": [8, 12, 12]},
                layer_types=["full_attention"] * a["text"]["num_hidden_layers"], tie_word_embeddings=False)
    text.pop("rope_scaling", None)
    text.pop("rope_theta", None)
    vis = dict(base["vision_config"])
    vis.update(a["vision"], out_hidden_size=a["text"]["hidden_size"], patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
               window_size=112, tokens_per_second=2)
    cfg = {k: v for k, v in base.items() if k not in ("text_config", "vision_config")}
    cfg.update(text_config=text, vision_config=vis, tie_word_embeddings=False, architectures=["Qwen2_5_VLForConditionalGeneration"],
               model_type="qwen2_5_vl")
    return cfg


def expand_dirs(spec):
    out = []
    for d in spec.split(","):
        d = d.strip()
        if not d:
            continue
        if os.path.exists(os.path.join(d, "manifest.jsonl")):
            out.append(d)
            continue
        subs = sorted(os.path.join(d, s) for s in os.listdir(d) if os.path.exists(os.path.join(d, s, "manifest.jsonl")))
        if not subs:
            raise SystemExit(f"train.py: {d} has no manifest.jsonl and no prepared subfolders (make them with models/loupe-tiny/prepare.ts)")
        out += subs
    return out


def read_rgb(path):
    from PIL import Image
    return np.asarray(Image.open(path).convert("RGB"))


def load_data(dirs):
    """Trajectories and their images (uint8 RGB, shared between trajectories that reference the same file; decoded by a
    thread pool — PIL releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor
    recs, want = [], {}
    for d in dirs:
        for line in open(os.path.join(d, "manifest.jsonl")):
            if not line.strip():
                continue
            r = json.loads(line)
            for im in r["images"]:
                im["key"] = os.path.normpath(os.path.join(d, "images", im["file"]))
                want.setdefault(im["key"], im["grid"])
            recs.append(r)

    def load(item):
        key, grid = item
        rgb = read_rgb(key)
        if [rgb.shape[0] // 14, rgb.shape[1] // 14] != grid[1:]:
            raise SystemExit(f"train.py: {key} is {rgb.shape[1]}x{rgb.shape[0]}, its manifest says grid {grid}")
        return key, torch.from_numpy(np.array(rgb))

    with ThreadPoolExecutor(max_workers=min(32, (os.cpu_count() or 2))) as ex:
        pix = dict(ex.map(load, want.items()))
    return recs, pix


def patches(rgb, dev):
    """uint8 [H, W, 3] -> pixel_values [N, 3*2*14*14] in the Qwen2-VL processor's layout (= qwen_torch.patches_from_rgb), on dev."""
    x = rgb.to(dev, non_blocking=True).float().div_(255)
    x = ((x - MEAN.to(dev)) / STD.to(dev)).permute(2, 0, 1)[None].expand(2, -1, -1, -1)
    h, w = rgb.shape[0], rgb.shape[1]
    gh, gw = h // 14, w // 14
    x = x.reshape(1, 2, 3, gh // 2, 2, 14, gw // 2, 2, 14).permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gh * gw, 3 * 2 * 14 * 14)


def where(cx, cy):
    """app/synth/trajectories.ts where(), on a box centre."""
    v = "upper" if cy < 0.34 else "lower" if cy > 0.66 else "middle"
    hz = "left" if cx < 0.34 else "right" if cx > 0.66 else "centre"
    if v == "middle" and hz == "centre":
        return "near the centre"
    if v == "middle":
        return f"on the {hz} side"
    return f"in the {v} {'middle' if hz == 'centre' else hz}"


def fmt(x):
    """Python json.dumps of a 2-decimal box value as the TS generator writes it (r2: clamp to [0, 0.99])."""
    x = min(0.99, max(0.0, round(x, 2)))
    return "0" if x == 0 else repr(x)


def crop_call(box, image=1):
    """trajectories.ts's toolCall for a crop: the <tool_call> block on image `image` with `box` (2 decimals)."""
    return (f'<tool_call>\n{{"name": "crop_image_normalized", "arguments": {{"bbox_2d": [{", ".join(fmt(v) for v in box)}], '
            f'"target_image": {image}}}}}\n</tool_call>')


def first_turn_text(label, verb, cx, cy, box):
    """trajectories.ts's zoom first turn: '{Label} is {where}. Let me zoom in.' and the crop call on image 1 with `box`
    (the mirrored first turns here and scene_traj.py's fresh trajectories both write it)."""
    return f"{label} {verb} {where(cx, cy)}. Let me zoom in.\n" + crop_call(box)


FIRST_TURN = re.compile(r"^(.+?) (is|are) (in the \w+ \w+|on the \w+ side|near the centre)\. Let me zoom in\.\n<tool_call>\n"
                        r'\{"name": "crop_image_normalized", "arguments": \{"bbox_2d": \[([^\]]+)\], "target_image": 1\}\}\n</tool_call>$')


def flip_first_turns(recs, pix, tk):
    """Localization data for free: the first turn of each zoom trajectory (global image -> crop call) on the image mirrored
    left-right, top-bottom and both, with the call box and the 'where' phrase mirrored to match. The prompt tokens do not
    change (same grid), so only the image and the assistant text are new."""
    out, bad = [], 0
    im_end = tk.token_to_id("<|im_end|>")
    for r in recs:
        s0, e0 = r["spans"][0]
        m = FIRST_TURN.match(tk.decode(r["ids"][s0:e0 - 1], skip_special_tokens=False))
        if not m:
            bad += 1
            continue
        box = [float(v) for v in m.group(4).split(",")]
        im = r["images"][0]
        for name, fx, fy in (("h", True, False), ("v", False, True), ("hv", True, True)):
            x1, y1, x2, y2 = box
            if fx:
                x1, x2 = 1 - x2, 1 - x1
            if fy:
                y1, y2 = 1 - y2, 1 - y1
            key = f"{im['key']}#{name}"
            if key not in pix:
                img = pix[im["key"]]
                img = img.flip(1) if fx else img
                pix[key] = (img.flip(0) if fy else img).contiguous()
            new = first_turn_text(m.group(1), m.group(2), (x1 + x2) / 2, (y1 + y2) / 2, (x1, y1, x2, y2))
            ids = r["ids"][:s0] + tk.encode(new).ids + [im_end]
            out.append({"qid": r["qid"], "kind": f"zoom-first-{name}", "ids": ids, "spans": [[s0, len(ids)]], "images": [{**im, "key": key}]})
    log(f"mirrored first turns: {len(out)} from {len(recs)} zoom trajectories ({bad} did not match the template)")
    return out


BOX = re.compile(r'"bbox_2d": \[([^\]]+)\]')
TARGET_IMAGE = re.compile(r'"target_image": (\d+)')
PICKS = re.compile(r'"target_frames": \[([^\]]*)\]')
CATS = {"ring-digits": 0, "tag-letter": 1, "box-dots": 2, "left-of": 3}
ZOOM_KINDS = ("zoom", "zoom2")  # a crop of the global view first (zoom2: then a closer crop on it; trajectories.ts)


def box_span(r, tk, s0, e0):
    """Sequence positions [start, end) of the four box numbers of the crop call in the assistant span [s0, e0), and the
    closing bracket's token after them; None without a bbox_2d list."""
    toks = [tk.id_to_token(i) or "" for i in r["ids"][s0:e0]]
    try:
        k = next(i for i, t in enumerate(toks) if "bbox" in t)
        a = next(i for i in range(k, len(toks)) if "[" in toks[i])
        b = next(i for i in range(a, len(toks)) if "]" in toks[i])
    except StopIteration:
        return None
    return (s0 + a + 1, s0 + b + 1)  # the numbers and the closing bracket


def annotate(recs, tk):
    """What the auxiliary losses and the box weight need, per trajectory: the target's centre on the global view (the centre
    of the first crop call of a zoom trajectory, mirrored with it for the flipped copies; None for recover/direct/video, whose
    first call is deliberately off or absent) and the token positions of that call's four box numbers. Video (frames-zoom)
    trajectories get theirs in separate fields (annotate_video), so nothing that filters on r["tgt"] changes meaning."""
    n = 0
    for r in recs:
        r["tgt"], r["box_at"], r["ctgt"], r["glyph"] = None, None, None, None
        r["vtgt"], r["vbox_at"], r["vimg"], r["cimg"] = None, None, None, None
        r["fimg"], r["fpick_at"] = None, None
        if r["kind"] == "frames-zoom":
            annotate_video(r, tk)
            continue
        if r["kind"] == "zoom2":
            annotate_closer(r, tk)
        if not (r["kind"] in ZOOM_KINDS or r["kind"].startswith("zoom-first")) or not r["images"] or r["images"][0]["grid"][0] != 1:
            continue
        s0, e0 = r["spans"][0]
        m = BOX.search(tk.decode(r["ids"][s0:e0], skip_special_tokens=False))
        if not m:
            continue
        x1, y1, x2, y2 = [float(v) for v in m.group(1).split(",")]
        r["tgt"] = ((x1 + x2) / 2, (y1 + y2) / 2)
        if r["kind"] != "zoom2":  # zoom2: annotate_closer's, on the closer crop
            r["ctgt"], r["glyph"] = crop_target(r, (x1, y1, x2, y2))
        r["box_at"] = box_span(r, tk, s0, e0)
        n += 1
    return n


def annotate_video(r, tk):
    """A frames-zoom trajectory (select_frames, the picked frames as images, a crop call on one of them, the crop, the
    reading turn): for --video-pointer, r["vimg"] (the index in r["images"] of the picked frame the crop call names: the
    images are the video's frames, then the k picks, then the crop, and `target_image` N is pick N - 2, the video being
    image 1), r["vtgt"] (the target's centre in that frame, normalized: from the target box scene_traj.build_video
    carries in r["frame_target"], else the centre of the call box, which trajectories.ts / scene_traj draw around the
    true target, jittered; video trajectories have no deliberately-off box) and r["vbox_at"] (the call's box numbers)."""
    if len(r.get("spans", [])) < 3 or not r.get("images"):
        return
    (s0, e0), (s1, e1) = r["spans"][0], r["spans"][1]
    p = PICKS.search(tk.decode(r["ids"][s0:e0], skip_special_tokens=False))
    t2 = tk.decode(r["ids"][s1:e1], skip_special_tokens=False)
    m, ti = BOX.search(t2), TARGET_IMAGE.search(t2)
    if not (p and m and ti):
        return
    k, image = len(p.group(1).split(",")), int(ti.group(1))
    j = len(r["images"]) - 1 - k + (image - 2)
    if not (0 <= image - 2 < k and len(r["images"]) >= k + 2) or r["images"][j]["grid"][0] != 1:
        return
    try:
        x1, y1, x2, y2 = r.get("frame_target") or [float(v) for v in m.group(1).split(",")]
    except ValueError:
        return
    r["vimg"], r["vtgt"], r["vbox_at"] = j, ((x1 + x2) / 2, (y1 + y2) / 2), box_span(r, tk, s1, e1)
    # --frame-pointer: the frame the crop is cut from (the pick `target_image` names) among the video's own frames, the
    # first images (frame F is image F - 1), and the position of that frame's number in the select_frames call
    picks = [v.strip() for v in p.group(1).split(",")]
    f = int(picks[image - 2])
    if 1 <= f <= len(r["images"]) - 1 - k and r["images"][f - 1]["grid"][0] == 1:
        r["fimg"], r["fpick_at"] = f - 1, pick_at(r, tk, s0, e0, image - 2)


def token_index(decode, ids):
    """A function: character position in decode(ids) -> the index in `ids` of the token that holds it (byte-level BPE on
    ASCII text: decoding a prefix of the tokens is exact); StopIteration past the end."""
    ends = [len(decode(ids[:i + 1])) for i in range(len(ids))]
    return lambda pos: next(i for i, e in enumerate(ends) if e > pos)


def pick_at(r, tk, s0, e0, n):
    """The sequence position of the first token of the n-th (0-based) number of the select_frames call's target_frames
    in the assistant span [s0, e0); None where the call has no such number."""
    decode = lambda x: tk.decode(x, skip_special_tokens=False)  # noqa: E731
    m = PICKS.search(decode(r["ids"][s0:e0]))
    if not m:
        return None
    items = m.group(1).split(",")
    if n >= len(items) or not items[n].strip():
        return None
    c = m.start(1) + sum(len(x) + 1 for x in items[:n]) + (len(items[n]) - len(items[n].lstrip()))
    try:
        return s0 + token_index(decode, r["ids"][s0:e0])(c)
    except StopIteration:
        return None


def annotate_closer(r, tk):
    """A zoom2 trajectory (scene_traj.build2, trajectories.ts CLOSER_KINDS: global view, a crop, a closer crop on it, the
    reading turn): the closer call is a crop call on an image the model has seen, as a video's crop call on a picked
    frame, so --video-pointer's fields point it there: r["vimg"] = 1 (the first crop), r["vtgt"] (the closer target's
    centre in it: from r["frame_target"] for fresh draws, else the centre of the call box, drawn around the true target)
    and r["vbox_at"] (the call's box numbers)."""
    if len(r.get("spans", [])) < 3 or len(r.get("images", [])) < 3 or r["images"][1]["grid"][0] != 1:
        return
    s1, e1 = r["spans"][1]
    t2 = tk.decode(r["ids"][s1:e1], skip_special_tokens=False)
    m, ti = BOX.search(t2), TARGET_IMAGE.search(t2)
    if not (m and ti and int(ti.group(1)) == 2):
        return
    try:
        x1, y1, x2, y2 = r.get("frame_target") or [float(v) for v in m.group(1).split(",")]
    except ValueError:
        return
    r["vimg"], r["vtgt"], r["vbox_at"] = 1, ((x1 + x2) / 2, (y1 + y2) / 2), box_span(r, tk, s1, e1)
    # fresh draws also carry the closer target's centre in the closer crop and what it shows (the count, the left tag's
    # letter): the reading head and the reading-turn pointer (--aux-glyph, --aux-attn2) on the closer crop, image 2
    ct, reads = r.get("closer_target"), str(r.get("closer_reads", "")).upper()
    if ct and 0 < len(reads) <= GLYPH_SLOTS and all(c in GLYPHS for c in reads):
        r["ctgt"], r["cimg"] = (min(1.0, max(0.0, ct[0])), min(1.0, max(0.0, ct[1]))), 2
        r["glyph"] = [GLYPHS.index(c) for c in reads] + [len(GLYPHS)] * (GLYPH_SLOTS - len(reads))


GLYPHS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # + "none" at index len(GLYPHS)
GLYPH_SLOTS = 4  # ring-digits has 2-4 digits, tag-letter one letter, box-dots the count (1-9) as one digit


def crop_target(r, box):
    """For a whole zoom trajectory (global view, then the crop its first call made): the target's centre inside the crop
    image (normalized), and the answer as glyph classes for the reading head. The crop is the call box padded by 0.1 on
    each side and clamped to the image (Pixel Reasoner's rule, the one the dialect's crop tool applies)."""
    if r["kind"] != "zoom" or len(r["images"]) < 2 or r["images"][1]["grid"][0] != 1 or len(r.get("spans", [])) < 2:
        return None, None
    ans = str(r.get("answer", "")).upper()
    if r.get("category") not in ("ring-digits", "tag-letter", "box-dots") or not (0 < len(ans) <= GLYPH_SLOTS) or any(c not in GLYPHS for c in ans):
        return None, None
    x1, y1, x2, y2 = box
    px1, py1, px2, py2 = max(0.0, x1 - 0.1), max(0.0, y1 - 0.1), min(1.0, x2 + 0.1), min(1.0, y2 + 0.1)
    if px2 <= px1 or py2 <= py1:
        return None, None
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    glyph = [GLYPHS.index(c) for c in ans] + [len(GLYPHS)] * (GLYPH_SLOTS - len(ans))
    return ((cx - px1) / (px2 - px1), (cy - py1) / (py2 - py1)), glyph


def neighbourhood(row, col, H, W):
    """Row-major indices of the 3x3 merged tokens around (row, col), clamped at the border (a border token repeats)."""
    return [min(H - 1, max(0, rr)) * W + min(W - 1, max(0, cc)) for rr in (row - 1, row, row + 1) for cc in (col - 1, col, col + 1)]


class AuxHeads(torch.nn.Module):
    """Training-only heads (not exported): `tgt` scores the vision tower's merged tokens for "this is the target" (with a
    learned per-category bias, since the tower does not see the question); `pos` reads each global-view token's own
    normalized centre (x, y) from the text model's hidden state after layer --aux-pos-layer. The first gives the text model
    a key to attend to; the second puts the token's absolute position into the value it then reads — rotary positions alone
    give attention weights, not values, and a uniform background is the same everywhere."""

    def __init__(self, vis_dim, txt_dim):
        super().__init__()
        self.tgt = torch.nn.Linear(vis_dim, 1)
        self.cat = torch.nn.Embedding(len(CATS), vis_dim)
        torch.nn.init.zeros_(self.cat.weight)
        self.pos = torch.nn.Linear(txt_dim, 2)
        self.read = torch.nn.Linear(txt_dim, 2)
        # reading: the crop's 3x3 tokens around the target -> the answer's glyphs, slot by slot (tower-side signal)
        self.glyph = torch.nn.Linear(9 * vis_dim, GLYPH_SLOTS * (len(GLYPHS) + 1))

    def glyph_logits(self, vis_out, idx):
        """Reading head: the tower's output rows `idx` [G, 9] (a crop's 3x3 target tokens) -> logits [G, SLOTS, classes]."""
        f = vis_out.float()[idx].flatten(1)
        return self.glyph(torch.tanh(f)).view(len(idx), GLYPH_SLOTS, -1)


def aux_losses(b, store, heads):
    """{tgt, top1, pos, read, glyph, glyph_exact; with --video-pointer's rows also vtgt, vtop1, vread} for the batch `b` from
    the hooked activations in `store` (each only when hooked)."""
    out = {}
    if b["aux_tgt"] is not None and "vis" in store:
        out["tgt"], out["top1"] = target_loss(b["aux_tgt"], store["vis"], heads)
    if b.get("aux_vtgt") is not None and "vis" in store:  # --video-pointer: the named frame of a video's crop call
        out["vtgt"], out["vtop1"] = target_loss(b["aux_vtgt"], store["vis"], heads)
    if b.get("aux_glyph") is not None and "vis" in store:
        idx, lab = b["aux_glyph"]                            # [G, 9] token rows into the tower's output, [G, SLOTS]
        lg = heads.glyph_logits(store["vis"], idx)
        out["glyph"] = torch.nn.functional.cross_entropy(lg.transpose(1, 2), lab)
        out["glyph_exact"] = (lg.argmax(-1) == lab).all(-1).float().mean()
    if b["aux_pos"] is not None and "llm" in store:
        rows, cols, xy = b["aux_pos"]
        h = store["llm"].float()[rows, cols]
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)  # the residual stream's scale drifts; the probe should not care
        out["pos"] = torch.nn.functional.mse_loss(heads.pos(h), xy)
    if b["aux_attn"] is not None and "read" in store:
        out["read"] = read_loss(b["aux_attn"], b["aux_read"], store["read"], heads)
    if b.get("aux_vattn") is not None and "read" in store:  # --video-pointer: the crop turn's queries, the frame's target
        out["vread"] = read_loss(b["aux_vattn"], b["aux_vread"], store["read"], heads)
    return out


def target_loss(rows, vis, heads):
    """(loss, top-1) of the vision head's 'this is the target' scores over each row's image tokens (make_batch's aux_tgt)."""
    idx, valid, tgt, cats = rows
    f = vis.float()[idx] + heads.cat(cats)[:, None]
    s = heads.tgt(torch.tanh(f)).squeeze(-1).masked_fill(~valid, -1e4)
    return torch.nn.functional.cross_entropy(s, tgt), (s.argmax(-1) == tgt).float().mean()


def read_loss(attn_rows, xy, hidden, heads):
    """Read-out probe: the pointer rows' query positions in `hidden` (the --aux-read-layer output) give the target's centre
    `xy` [R, 2]; MSE averaged over the valid queries."""
    rows, P, Pok, _ = attn_rows
    h = hidden.float()[rows[:, None], P]            # [R, Pmax, D]: the turn's query positions
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    err = (heads.read(h) - xy[:, None, :]).pow(2).mean(-1)
    return (err * Pok).sum() / Pok.sum().clamp(min=1)


def option_pointer_kind(k, n):
    """What entry k of a left-of record's n text pointers (scene_traj.option_pointer) is: per option listed a 'copy' (its
    letter from the question) then a 'compare' (with the letter read), and the 'answer' last."""
    return "answer" if k == n - 1 else ("copy", "compare")[k % 2]


def copy_loss(rows, hidden, model):
    """--aux-copy: at each copy's query, the LM head's reading of the --aux-digit-layer output (the final norm, then
    lm_head: a logit lens) should be the letter the query copies, so the letter the pointer finds at that layer is carried
    to the output (probe_option_copy.py: the CPU trial's pointer found it on 48 of 62 copies, the next token was it on
    14). -> (cross-entropy, share right)."""
    r, q, y = rows
    h = model.model.language_model.norm(hidden[r, q])
    lg = model.lm_head(h).float()
    return torch.nn.functional.cross_entropy(lg, y), (lg.argmax(-1) == y).float().mean()


def attn_loss(b, store, attn_mod, heads_n):
    """Pointer supervision: at the first turn's tokens up to the end of the crop box (the 'where' phrase and the box
    numbers), the first `heads_n` query heads of one text layer should put their attention on the target's global-view
    tokens (its merged token and the 8 around it). -log of that attention mass, averaged. Without it the text model learns
    the marginal box and never looks (the v2 runs); the gradient through the value path alone is ~1/117 as strong.
    Batched over rows: queries padded to the longest span, keys to the longest prefix."""
    if b["aux_attn"] is None or "attn_in" not in store:
        return None
    x, cos, sin = store["attn_in"]
    m = attn_mod
    hd, H, KV = m.hd, m.h, m.kv
    rows, P, Pok, T = b["aux_attn"]  # [R], [R, Pmax] query positions, [R, Pmax] valid, [R, Lmax] target-key mask
    L = T.shape[1]
    xr = x[rows, :L].float()                                   # [R, L, D]
    c, s_ = cos[rows, 0, :L].float(), sin[rows, 0, :L].float()  # [R, L, hd]
    k = torch.nn.functional.linear(xr, m.k_proj.weight.float(), m.k_proj.bias.float()).view(len(rows), L, KV, hd)
    k = k * c[:, :, None] + qt._rot(k) * s_[:, :, None]
    k = k[:, :, torch.arange(heads_n, device=k.device) // (H // KV)]             # [R, L, nh, hd]
    g = lambda t: torch.gather(t, 1, P[:, :, None].expand(-1, -1, t.shape[-1]))
    xq, cq, sq = g(xr), g(c), g(s_)                            # [R, Pmax, *]
    q = torch.nn.functional.linear(xq, m.q_proj.weight.float(), m.q_proj.bias.float()).view(len(rows), P.shape[1], H, hd)[:, :, :heads_n]
    q = q * cq[:, :, None] + qt._rot(q) * sq[:, :, None]
    sc = torch.einsum("rphd,rlhd->rhpl", q, k) * hd ** -0.5   # [R, nh, Pmax, L]
    causal = torch.arange(L, device=sc.device)[None, None, :] > P[:, :, None]   # [R, Pmax, L]
    lp = torch.log_softmax(sc.masked_fill(causal[:, None], -1e4), -1)
    on = torch.logsumexp(lp.masked_fill(~T[:, None, None, :], -1e4), -1)       # [R, nh, Pmax]
    w = Pok[:, None, :].float().expand_as(on)
    return -(on * w).sum() / w.sum().clamp(min=1)


def first_turns(recs, keep_full):
    """Zoom trajectories cut after their first turn (global view -> crop call), plus every `keep_full`-th trajectory whole:
    a short-sequence diet for teaching localization on a CPU."""
    out = []
    for j, r in enumerate(recs):
        if keep_full and j % keep_full == 0:
            out.append(r)
        if r["kind"] in ZOOM_KINDS or r["kind"].startswith("zoom-first"):
            s0, e0 = r["spans"][0]
            out.append({**r, "ids": r["ids"][:e0], "spans": [[s0, e0]], "images": r["images"][:1], "kind": "zoom-first" if r["kind"] in ZOOM_KINDS else r["kind"]})
    return out


def position_ids(model, r):
    """The record's M-RoPE position ids [3, L] (cached: rope_index is a Python loop, and it would run every step)."""
    if "_pos" not in r:
        ids = torch.tensor([r["ids"]])
        grids = torch.tensor([im["grid"] for im in r["images"]]) if r["images"] else None
        r["_pos"] = model.rope_index(ids, grids)[0][:, 0].to(torch.int32)
    return r["_pos"]


AUX_KEYS = ("labels", "weights", "aux_tgt", "aux_pos", "aux_attn", "aux_read", "aux_attn2", "aux_glyph", "aux_digit", "aux_vtgt", "aux_vattn", "aux_vread", "aux_fattn", "aux_copy")


def make_batch(recs, pix, pad, dev, model=None, box_weight=1.0, merge=2, image_token_id=None, answer_weight=1.0, video=False, frame=False):
    """Tensors for one batch. With `model`: cached position ids, per-token loss weights (`box_weight` on the crop-box numbers,
    `answer_weight` on the last turn of a trajectory with a tool call: the turn that reads the crop and answers)
    and the auxiliary targets (global views only). With `video` (--video-pointer) also for frames-zoom trajectories' crop
    turn (annotate_video): `box_weight` on its box numbers, the vision head's target on the frame it names (aux_vtgt), and
    the pointer rows (aux_vattn: the turn's queries up to the end of the box -> the target's 3x3 tokens in that frame) with
    the read-out targets (aux_vread). Without it the batch is what it was before the flag existed. With `frame`
    (--frame-pointer) also the frame pointer rows (aux_fattn): a frames-zoom trajectory's select_frames turn, its queries
    up to the number of the frame the crop is later cut from -> the target's 3x3 tokens in that frame among the video's
    own frames, so the pick is made by looking at the frame that shows the target."""
    L = max(len(r["ids"]) for r in recs)
    ids = torch.full((len(recs), L), pad, dtype=torch.long)
    lab = torch.full((len(recs), L), -100, dtype=torch.long)
    att = torch.zeros((len(recs), L), dtype=torch.long)
    wts = torch.ones((len(recs), L))
    pos = torch.zeros((3, len(recs), L), dtype=torch.long)
    pvs, thws = [], []
    tgt_rows, pos_rows, glyph_rows, vtgt_rows, off = [], [], [], [], 0
    for i, r in enumerate(recs):
        n = len(r["ids"])
        ids[i, :n] = torch.tensor(r["ids"])
        att[i, :n] = 1
        for s, e in r["spans"]:
            lab[i, s:e] = ids[i, s:e]
        if model is not None:
            pos[:, i, :n] = position_ids(model, r)
            if r.get("box_at") and box_weight != 1.0:
                wts[i, r["box_at"][0]:r["box_at"][1]] = box_weight
            if video and r.get("vbox_at") and box_weight != 1.0:
                wts[i, r["vbox_at"][0]:r["vbox_at"][1]] = box_weight
            if answer_weight != 1.0 and len(r["spans"]) >= 2:
                wts[i, r["spans"][-1][0]:r["spans"][-1][1]] = answer_weight
        for j, im in enumerate(r["images"]):
            pvs.append(patches(pix[im["key"]], dev))
            thws.append(im["grid"])
            t, h, w = im["grid"]
            ntok = t * h * w // (merge * merge)
            if j == 0 and t == 1 and model is not None:
                H, W = h // merge, w // merge
                if r.get("tgt"):
                    cx, cy = r["tgt"]
                    tgt_rows.append((off, ntok, int(min(H - 1, cy * H)) * W + int(min(W - 1, cx * W)), CATS.get(r.get("category"), 0)))
                pos_rows.append((i, j, H, W))
            if j == (r.get("cimg") or 1) and t == 1 and model is not None and r.get("ctgt"):
                H, W = h // merge, w // merge
                cx, cy = r["ctgt"]
                row, col = int(min(H - 1, cy * H)), int(min(W - 1, cx * W))
                glyph_rows.append(([off + k for k in neighbourhood(row, col, H, W)], r["glyph"]))
            if video and model is not None and r.get("vtgt") and j == r.get("vimg") and t == 1:
                H, W = h // merge, w // merge
                cx, cy = r["vtgt"]
                vtgt_rows.append((off, ntok, int(min(H - 1, cy * H)) * W + int(min(W - 1, cx * W)), CATS.get(r.get("category"), 0)))
                # the position probe on that image too: a crop call writes coordinates in the image it names, and the
                # text model reads a token's place from its value only where it was taught to (the global view's, above;
                # v14's closer calls wrote nearly the same box whatever the first crop showed)
                pos_rows.append((i, j, H, W))
            off += ntok
    b = dict(input_ids=ids.to(dev), attention_mask=att.to(dev), labels=lab.to(dev), pixel_values=torch.cat(pvs) if pvs else None,
             image_grid_thw=torch.tensor(thws, device=dev) if thws else None)
    b["aux_tgt"] = b["aux_pos"] = b["aux_attn"] = b["aux_attn2"] = b["aux_glyph"] = b["aux_digit"] = None
    b["aux_vtgt"] = b["aux_vattn"] = b["aux_vread"] = b["aux_fattn"] = b["aux_copy"] = None
    if model is None:
        return b
    b["position_ids"] = pos.to(dev)
    b["weights"] = wts.to(dev)
    if tgt_rows:
        b["aux_tgt"] = target_rows(tgt_rows, dev)
    if vtgt_rows:
        b["aux_vtgt"] = target_rows(vtgt_rows, dev)
    if glyph_rows:
        b["aux_glyph"] = (torch.tensor([g for g, _ in glyph_rows], device=dev), torch.tensor([l for _, l in glyph_rows], device=dev))
    attn_rows, attn2_rows, glyph_ptr_rows, vattn_rows, fattn_rows, copy_rows = [], [], [], [], [], []
    for i, r in enumerate(recs):
        if frame and r.get("vtgt") and r.get("fimg") is not None and r.get("fpick_at") and image_token_id is not None:
            at, H, W = image_token_positions(ids[i], r, r["fimg"], merge, image_token_id)
            cx, cy = r["vtgt"]
            row, col = int(min(H - 1, cy * H)), int(min(W - 1, cx * W))
            fattn_rows.append((i, list(range(r["spans"][0][0] - 1, r["fpick_at"])), sorted({int(at[k]) for k in neighbourhood(row, col, H, W)})))
        if video and r.get("vtgt") and r.get("vbox_at") and image_token_id is not None:  # the crop turn looks at the frame's target
            at, H, W = image_token_positions(ids[i], r, r["vimg"], merge, image_token_id)
            cx, cy = r["vtgt"]
            row, col = int(min(H - 1, cy * H)), int(min(W - 1, cx * W))
            T = sorted({int(at[k]) for k in neighbourhood(row, col, H, W)})
            vattn_rows.append((i, list(range(r["spans"][1][0] - 1, r["vbox_at"][1] - 1)), T))
        if r.get("ctgt") and image_token_id is not None:  # the reading turn looks at the target inside the crop
            at, H, W = crop_token_positions(ids[i], r, merge, image_token_id)
            cx, cy = r["ctgt"]
            row, col = int(min(H - 1, cy * H)), int(min(W - 1, cx * W))
            T = sorted({int(at[k]) for k in neighbourhood(row, col, H, W)})
            s1, e1 = r["spans"][-1]  # the reading turn (zoom: the second; zoom2: the third)
            attn2_rows.append((i, list(range(s1 - 1, e1 - 1)), T))
        if r.get("glyphs") and image_token_id is not None and len(r["images"]) >= 2:  # each glyph's query looks at that glyph
            at, H, W = crop_token_positions(ids[i], r, merge, image_token_id)
            for q, keys in glyph_keys(r["glyphs"], H, W):
                glyph_ptr_rows.append((i, [q], sorted(int(at[k]) for k in keys)))
        ptr = r.get("text_ptr") or []
        for k, (q, keys) in enumerate(ptr):  # left-of: the option letter's query looks at its option line (scene_traj)
            glyph_ptr_rows.append((i, [q], list(keys)))
            if option_pointer_kind(k, len(ptr)) == "copy":
                copy_rows.append((i, q, int(r["ids"][q + 1])))
        if not (r.get("tgt") and r.get("box_at") and image_token_id is not None):
            continue
        t, h, w = r["images"][0]["grid"]
        H, W = h // merge, w // merge
        at = (ids[i] == image_token_id).nonzero().flatten()[:H * W]
        cx, cy = r["tgt"]
        row, col = int(min(H - 1, cy * H)), int(min(W - 1, cx * W))
        T = [int(at[rr * W + cc]) for rr in range(max(0, row - 1), min(H, row + 2)) for cc in range(max(0, col - 1), min(W, col + 2))]
        attn_rows.append((i, list(range(r["spans"][0][0] - 1, r["box_at"][1] - 1)), T))
    if attn_rows:
        b["aux_attn"] = pointer_rows(attn_rows, dev)
        b["aux_read"] = torch.tensor([recs[i]["tgt"] for i, _, _ in attn_rows], device=dev, dtype=torch.float32)
    if attn2_rows:
        b["aux_attn2"] = pointer_rows(attn2_rows, dev)
    if glyph_ptr_rows:
        b["aux_digit"] = pointer_rows(glyph_ptr_rows, dev)
    if copy_rows:  # (row, query position, the letter the query's next token copies)
        b["aux_copy"] = tuple(torch.tensor([c[j] for c in copy_rows], device=dev) for j in range(3))
    if fattn_rows:
        b["aux_fattn"] = pointer_rows(fattn_rows, dev)
    if vattn_rows:
        b["aux_vattn"] = pointer_rows(vattn_rows, dev)
        b["aux_vread"] = torch.tensor([recs[i]["vtgt"] for i, _, _ in vattn_rows], device=dev, dtype=torch.float32)
    if pos_rows and image_token_id is not None:
        rows, cols, xy = [], [], []
        for i, j, H, W in pos_rows:
            at = (ids[i] == image_token_id).nonzero().flatten()[:H * W] if j == 0 else image_token_positions(ids[i], recs[i], j, merge, image_token_id)[0]
            q = torch.arange(H * W)
            rows.append(torch.full((H * W,), i))
            cols.append(at)
            xy.append(torch.stack([(q % W + 0.5) / W, (q // W + 0.5) / H], -1))
        b["aux_pos"] = (torch.cat(rows).to(dev), torch.cat(cols).to(dev), torch.cat(xy).to(dev))
    return b


def crop_token_positions(row_ids, r, merge, image_token_id):
    """The sequence positions of the crop's merged tokens in one record's ids (the crop is its last image: zoom = global
    view, crop; frames-zoom = frames, picks, crop), row-major, and the crop's token grid (H, W)."""
    return image_token_positions(row_ids, r, len(r["images"]) - 1, merge, image_token_id)


def image_token_positions(row_ids, r, j, merge, image_token_id):
    """The sequence positions of image j's merged tokens in one record's ids (the images' pads come in order; the merged
    tokens of those before it counted from their grids), row-major, and its token grid (H, W)."""
    n0 = sum(t * h * w for t, h, w in (im["grid"] for im in r["images"][:j])) // (merge * merge)
    _, h1, w1 = r["images"][j]["grid"]
    H, W = h1 // merge, w1 // merge
    return (row_ids == image_token_id).nonzero().flatten()[n0:n0 + H * W], H, W


def target_rows(rows, dev):
    """(token rows [R, Nmax] into the tower's output, valid [R, Nmax], target index, category) for target_loss, from
    (offset of the image's tokens, their count, the target token's index, category)."""
    mx = max(n for _, n, _, _ in rows)
    ar = torch.arange(mx)
    idx = torch.stack([o + ar.clamp(max=n - 1) for o, n, _, _ in rows])
    valid = torch.stack([ar < n for _, n, _, _ in rows])
    return (idx.to(dev), valid.to(dev), torch.tensor([t for _, _, t, _ in rows], device=dev),
            torch.tensor([c for _, _, _, c in rows], device=dev))


GRID5 = (-0.45, -0.225, 0.0, 0.225, 0.45)


def glyph_keys(glyphs, H, W):
    """For scene_traj's glyph pointers [(query, cx, cy, w, h, kind)] (normalized to the crop) on a crop of H x W merged tokens:
    [(query, merged-token indices)], the tokens under the glyph (a 5 x 5 grid of points over the middle 0.9 of its box: a
    glyph 10 x 18 px can straddle two 28-px token rows or columns), glyphs outside the crop left out."""
    def cell(v, n):
        return int(min(n - 1, max(0.0, v) * n))

    out = []
    for q, cx, cy, w, h, *_ in glyphs:
        if not (0 <= cx < 1 and 0 <= cy < 1):
            continue
        keys = sorted({cell(y, H) * W + cell(x, W) for y in (cy + f * h for f in GRID5) for x in (cx + f * w for f in GRID5)})
        out.append((q, keys))
    return out


def pointer_rows(rows, dev):
    """(row ids, query positions [R, Pmax], valid [R, Pmax], target-key mask [R, Lk]) for attn_loss, from (row, queries, keys)."""
    pm = max(len(p) for _, p, _ in rows)
    Lk = max(max(p) for _, p, _ in rows) + 1
    P = torch.zeros(len(rows), pm, dtype=torch.long)
    Pok = torch.zeros(len(rows), pm, dtype=torch.bool)
    Tm = torch.zeros(len(rows), Lk, dtype=torch.bool)
    for j, (_, p, T) in enumerate(rows):
        P[j, :len(p)] = torch.tensor(p)
        P[j, len(p):] = p[-1]
        Pok[j, :len(p)] = True
        Tm[j, [t for t in T if t < Lk]] = True
    return (torch.tensor([i for i, _, _ in rows], device=dev), P.to(dev), Pok.to(dev), Tm.to(dev))


def lm_loss(logits, labels, weights):
    """Next-token cross entropy on the labelled tokens, each weighted (weights 1 = the model's own mean loss)."""
    lab = torch.nn.functional.pad(labels, (0, 1), value=-100)[:, 1:]
    w = torch.nn.functional.pad(weights, (0, 1), value=0.0)[:, 1:] * (lab != -100)
    ce = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), lab.clamp(min=0), reduction="none")
    return (ce * w).sum() / w.sum().clamp(min=1e-6)


def crop_eval(model, recs, pix, tk, dev, eos):
    """Greedy first turns on held-out zoom trajectories: does the crop box contain the target's centre, and is the 'where'
    phrase right? (The engine-side evaluation, models/loupe-tiny/evaluate.ts, measures the whole trajectory.)"""
    hit = where_ok = parsed = 0
    for r in recs:
        s0 = r["spans"][0][0]
        im = r["images"][0]
        with torch.no_grad():
            g = model.generate(torch.tensor([r["ids"][:s0]], device=dev), patches(pix[im["key"]], dev), torch.tensor([im["grid"]], device=dev),
                               max_new_tokens=100, eos_ids=eos, temperature=0)
        text = tk.decode(g[0].tolist(), skip_special_tokens=False)
        cx, cy = r["tgt"]
        where_ok += int(where(cx, cy) in text)
        m = BOX.search(text)
        try:
            x1, y1, x2, y2 = [float(v) for v in m.group(1).split(",")] if m else (None,) * 4
        except ValueError:
            x1 = None
        if x1 is None:
            continue
        parsed += 1
        hit += int(x1 <= cx <= x2 and y1 <= cy <= y2)
    n = max(1, len(recs))
    return {"n": len(recs), "hit": hit / n, "where": where_ok / n, "parsed": parsed / n}


BOXED = re.compile(r"\\boxed\{([^}]*)\}")


def read_eval(model, recs, pix, tk, dev, eos):
    """Greedy reading turns on held-out zoom trajectories, given the gold first turn and the crop it made: is the boxed
    answer right, and does it equal what the turn says it read (the glyphs listed before it)?"""
    ok = consistent = 0
    for r in recs:
        s1 = r["spans"][1][0]
        ims = r["images"][:2]
        with torch.no_grad():
            g = model.generate(torch.tensor([r["ids"][:s1]], device=dev), torch.cat([patches(pix[im["key"]], dev) for im in ims]),
                               torch.tensor([im["grid"] for im in ims], device=dev), max_new_tokens=60, eos_ids=eos, temperature=0)
        text = tk.decode(g[0].tolist(), skip_special_tokens=False)
        m = BOXED.search(text)
        got = m.group(1).strip().upper() if m else None
        ok += int(got == str(r["answer"]).upper())
        said = re.search(r"shows (.*?): \\boxed", text)
        said = said.group(1).replace(", ", "").upper() if said else None
        consistent += int(got is not None and said == got)
    n = max(1, len(recs))
    return {"n": len(recs), "acc": ok / n, "consistent": consistent / n}


def write_model(model, out, tok_dir, export, tk=None):
    """The model folder: config + weights (+ ONNX through make_tiny's exporter when asked and possible)."""
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(tok_dir, f), os.path.join(out, f))
    pp = json.load(open(os.path.join(tok_dir, "preprocessor_config.json")))
    pp["max_pixels"] = MAX_PIXELS
    pp["size"] = {"shortest_edge": pp.get("min_pixels", 3136), "longest_edge": MAX_PIXELS}
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(pp, f, indent=1)
    dtypes = {d for d in export.split(",") if d and d != "none"}
    if not dtypes:
        return None
    try:
        import transformers  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        log(f"export skipped: ONNX export needs transformers>=5 and onnx ({e}); the weights are in {out}/model.safetensors")
        return None
    sys.path.insert(0, os.path.dirname(HERE))
    import make_tiny_qwen25vl as mk
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    cfg = Qwen2_5_VLConfig(**json.load(open(os.path.join(out, "config.json"))))
    cfg._attn_implementation = "eager"
    hf = Qwen2_5_VLForConditionalGeneration(cfg).eval()
    missing, unexpected = hf.load_state_dict({k: v.float().cpu() for k, v in model.state_dict().items()}, strict=False)
    if [k for k in missing if not k.endswith("inv_freq")] or unexpected:
        raise SystemExit(f"train.py: weights do not fit the HF model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    t1 = time.time()
    # the check reads the fp32 graphs, so q8 alone exports them too and removes them after the check (`--export q8`
    # used to fail there: NO_SUCHFILE embed_tokens.onnx)
    extra = {"fp32"} if tk is not None and "fp32" not in dtypes and "q8" in dtypes else set()
    chunks = mk.export_onnx(hf, out, dtypes | extra, log)
    fp32_files = {f"{n}.onnx" for n in ("embed_tokens", "vision_encoder", "decoder_model_merged")} if extra else set()
    mk.write_model_files(hf, out, {k: v for k, v in chunks.items() if k not in fp32_files})
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):  # write_model_files may rewrite them
        shutil.copy(os.path.join(tok_dir, f), os.path.join(out, f))
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(pp, f, indent=1)
    check = None
    if tk is not None:
        check = mk.check_and_parity(hf, out, lambda s: tk.encode(s).ids, mk.render_with_jinja(mk.QWEN_VL_TEMPLATE), mk.synthetic_images(), log,
                                    write_parity=False, eos=[cfg.text_config.eos_token_id, cfg.text_config.pad_token_id])
    for f in fp32_files:
        for p in (f"{out}/onnx/{f}", f"{out}/onnx/{f}_data"):
            if os.path.exists(p):
                os.remove(p)
    log(f"export {sorted(dtypes)} + check {time.time() - t1:.0f}s")
    return check


def plot_curves(metrics, path):
    """train.py's curves.png from its metrics.json: losses, held-out checks, auxiliary losses (held-out; the glyph pointer's
    from the training batches, since only fresh trajectories carry its targets).
    python3 -c 'import json, train; train.plot_curves(json.load(open("metrics.json")), "curves.png")' redraws one."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    curve, vcurve, ccurve = metrics["curve"], metrics["val_curve"], metrics["crop_curve"]
    fig, ax = plt.subplots(1, 3, figsize=(15, 3.6))
    ax[0].plot([c["step"] for c in curve], [c["loss"] for c in curve], lw=0.8, label="train (batch)")
    ax[0].plot([c["step"] for c in vcurve], [c["val_loss"] for c in vcurve], "o-", ms=3, label="val (held-out scenes)")
    ax[0].set_yscale("log"); ax[0].set_xlabel("step"); ax[0].set_ylabel("loss (assistant tokens)"); ax[0].legend()
    ax[1].plot([c["step"] for c in vcurve], [c["val_seq_exact"] for c in vcurve], "o-", ms=3, label="whole trajectory exact (teacher-forced)")
    if any("val_aux_top1" in c for c in vcurve):
        ax[1].plot([c["step"] for c in vcurve], [c.get("val_aux_top1", float("nan")) for c in vcurve], "s-", ms=3, label="vision head: target token top-1")
    if ccurve:
        ax[1].plot([c["step"] for c in ccurve], [c["crop_hit"] for c in ccurve], "^-", ms=3, label="greedy crop contains target")
        ax[1].plot([c["step"] for c in ccurve], [c["where_ok"] for c in ccurve], "v-", ms=3, label="greedy 'where' phrase right")
        if any("read_acc" in c for c in ccurve):
            ax[1].plot([c["step"] for c in ccurve], [c.get("read_acc", float("nan")) for c in ccurve], "D-", ms=3, label="greedy reading (gold crop) right")
    if any("val_aux_glyph_exact" in c for c in vcurve):
        ax[1].plot([c["step"] for c in vcurve], [c.get("val_aux_glyph_exact", float("nan")) for c in vcurve], "x-", ms=3, label="reading head: glyphs exact")
    ax[1].set_xlabel("step"); ax[1].set_ylabel("held-out"); ax[1].set_ylim(0, 1); ax[1].legend(fontsize=7)
    for key, lab in (("val_aux_pos", "position probe MSE"), ("val_aux_attn", "pointer loss (-log attention on target)"), ("val_aux_tgt", "vision target loss"), ("val_aux_read", "read-out probe MSE"), ("val_aux_glyph", "reading head loss"), ("val_aux_attn2", "reading pointer loss"), ("val_aux_vattn", "video crop-turn pointer loss")):
        if any(key in c for c in vcurve):
            ax[2].plot([c["step"] for c in vcurve], [c.get(key, float("nan")) for c in vcurve], "o-", ms=3, label=lab)
    if any("aux_digit" in c for c in curve):
        ax[2].plot([c["step"] for c in curve if "aux_digit" in c], [c["aux_digit"] for c in curve if "aux_digit" in c], "--", lw=0.8, label="glyph pointer loss (train batches)")
    ax[2].set_yscale("log"); ax[2].set_xlabel("step"); ax[2].set_ylabel("auxiliary losses")
    if ax[2].lines:
        ax[2].legend(fontsize=7)
    fig.suptitle("loupe-tiny SFT"); fig.tight_layout(); fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--init", help="start from this model folder (config.json + model.safetensors)")
    ap.add_argument("--fresh-from", help="a fresh (random) model with this folder's config.json (for a folder without trainable weights)")
    ap.add_argument("--arch", default="v2", choices=sorted(ARCH))
    ap.add_argument("--tok", help="tokenizer / chat template / preprocessor folder (default: --init, else models/tiny-random-qwen25vl)")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--minutes", type=float, default=None)
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--bs", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--warmup", type=float, default=0.04)
    ap.add_argument("--val-every", type=int, default=100)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--export", default="fp32,q8", help="none | q8 | fp32,q8")
    ap.add_argument("--aug-flips", action="store_true", help="add mirrored first turns of the zoom trajectories (localization data)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--aux-target", type=float, default=0.0, help="weight of the per-token 'where is the target' loss on the vision tower's output")
    ap.add_argument("--aux-pos", type=float, default=0.0, help="weight of the absolute-position loss on the text model's image tokens")
    ap.add_argument("--aux-pos-layer", type=int, default=1, help="text layer (0-based) whose output carries the position")
    ap.add_argument("--aux-attn", type=float, default=0.0, help="weight of the pointer loss: first-turn queries attend to the target's tokens")
    ap.add_argument("--aux-attn-layer", type=int, default=2)
    ap.add_argument("--aux-attn-heads", type=int, default=2, help="how many query heads of that layer are supervised")
    ap.add_argument("--aux-read", type=float, default=0.0, help="weight of the read-out probe: the first turn's hidden states (layer --aux-read-layer) give the target's centre")
    ap.add_argument("--aux-read-layer", type=int, default=-1, help="text layer whose output the read-out probe sees (-1: the last)")
    ap.add_argument("--aux-glyph", type=float, default=0.0, help="weight of the reading head: the crop's 3x3 tokens around the target give the answer's glyphs (vision tower)")
    ap.add_argument("--aux-attn2", type=float, default=0.0, help="weight of the reading pointer: the reading turn's queries (layer --aux-attn-layer) attend to the target inside the crop")
    ap.add_argument("--aux-digit", type=float, default=0.0, help="weight of the glyph pointer: in fresh reading turns (--scenes), the query that says each digit (or the letter) attends to that glyph's tokens in the crop (heads of --aux-digit-layer)")
    ap.add_argument("--aux-digit-layer", type=int, default=-2, help="text layer of the glyph pointer (default: the second to last; 3 of loupe-tiny's 5)")
    ap.add_argument("--mrope-section", help="T,H,W: split the text model's rotary frequencies this way instead of the config's "
                    "(the weights kept; text-only inputs are unchanged). The split gives width the last, lowest frequencies; see "
                    "with_mrope_section. A model trained so must be exported again (export.py): a graft keeps the graph's split")
    ap.add_argument("--frame-pointer", type=float, default=0.0,
                    help="weight of the frame pointer: in frames-zoom trajectories, the select_frames turn's queries up to the number of "
                         "the frame the crop is cut from attend to the target's tokens in that frame (the video's own frame images), "
                         "on --aux-attn-layer's heads; 0: off")
    ap.add_argument("--video-pointer", type=float, default=0.0,
                    help="weight of the video crop turn's pointer: in frames-zoom trajectories, turn 2's queries up to the end of its box "
                         "(heads of --aux-attn-layer) attend to the target's 3x3 tokens in the picked frame the crop call names; also "
                         "gives that call's box numbers --box-weight, the --aux-read probe on those queries and the --aux-target head "
                         "on that frame (each at its own weight; 0: video crop turns get none of it, as before)")
    ap.add_argument("--read-eval", type=int, default=40, help="held-out reading turns to generate at the end (gold first turn and crop given): answer accuracy")
    ap.add_argument("--first-turns", type=int, default=0, help="train on zoom first turns only, plus every N-th whole trajectory (0: off)")
    ap.add_argument("--box-weight", type=float, default=1.0, help="loss weight of the crop-box number tokens of zoom trajectories (with --video-pointer also of frames-zoom crop calls)")
    ap.add_argument("--answer-weight", type=float, default=1.0, help="loss weight of the answering turn (the last turn) of trajectories with a tool call")
    ap.add_argument("--crop-every", type=int, default=0, help="also generate --crop-every-n held-out first turns every N steps (0: only at the end)")
    ap.add_argument("--crop-every-n", type=int, default=12)
    ap.add_argument("--scenes", help="loupe-synth folder(s), comma-separated: zoom trajectories (image samples) and frames-zoom trajectories (video samples) made afresh from them every step (scene_traj.py)")
    ap.add_argument("--scene-frac", type=float, default=0.5, help="share of each batch drawn fresh from --scenes")
    ap.add_argument("--scene-video-frac", type=float, default=0.15, help="share of the steps whose fresh draws are frames-zoom trajectories of --scenes' video samples (when it has any; 0: none); the other steps draw image zoom trajectories")
    ap.add_argument("--scene-video-max", type=int, default=24, help="at most this many fresh videos on a video step (its batch is that many shorter)")
    ap.add_argument("--aux-copy", type=float, default=0.0, help="weight of the copy read-out loss: at left-of's copy queries the LM head's reading of the --aux-digit-layer output should be the letter copied (copy_loss; 0: off)")
    ap.add_argument("--option-swap", type=float, default=0.0, help="share of the fresh left-of draws asked with their two options in the other order (scene_traj.OPTION_SWAP; 0: never)")
    ap.add_argument("--scene-video-cache", type=int, default=128, help="video scenes whose decoded frames stay in memory (LRU; ~4.5 MB each)")
    ap.add_argument("--scene-workers", type=int, default=8, help="threads building the next step's fresh trajectories")
    ap.add_argument("--crop-eval", type=int, default=64, help="held-out zoom first turns to generate at the end (crop hit rate)")
    a = ap.parse_args()
    if a.minutes is None and a.max_steps is None:
        a.minutes = 5.0
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    dev = "cuda" if (a.device == "cuda" or (a.device == "auto" and torch.cuda.is_available())) else "cpu"
    if dev == "cuda" and not torch.cuda.is_available():
        raise SystemExit("train.py: --device cuda, but torch sees no CUDA device")
    tok_dir = a.tok or a.init or os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl")
    for f in ("tokenizer.json", "config.json", "preprocessor_config.json"):
        if not os.path.exists(os.path.join(tok_dir, f)):
            raise SystemExit(f"train.py: {tok_dir} has no {f} (want a model folder such as models/loupe-tiny/model)")
    if a.init:
        if not os.path.exists(os.path.join(a.init, "model.safetensors")):
            raise SystemExit(f"train.py: --init {a.init} has no model.safetensors")
        model = qt.QwenVL.from_pretrained(a.init, dtype=torch.float32, device=dev)
        log(f"initialized from {a.init}")
    elif a.fresh_from:
        model = qt.QwenVL(json.load(open(os.path.join(a.fresh_from, "config.json")))).to(dev)
        log(f"fresh model with the config of {a.fresh_from}")
    else:
        model = qt.QwenVL(build_config(tok_dir, a.arch)).to(dev)
    if a.mrope_section:
        sec = [int(v) for v in a.mrope_section.split(",")]
        model = with_mrope_section(model, sec)
        log(f"mrope_section {sec} (t, h, w)")
    nparam = sum(p.numel() for p in model.parameters())
    nvis = sum(p.numel() for n, p in model.named_parameters() if n.startswith("model.visual."))
    log(f"params {nparam / 1e6:.2f} M (vision {nvis / 1e6:.2f} M), device {dev}")

    dirs = expand_dirs(a.data)
    t0 = time.time()
    recs, pix = load_data(dirs)
    log(f"{len(recs)} trajectories, {len(pix)} images from {len(dirs)} folder(s) in {time.time() - t0:.0f}s")
    if not recs:
        raise SystemExit("train.py: no trajectories in --data")
    qids = sorted({r["qid"] for r in recs})
    rnd = random.Random(1)
    val_q = set(rnd.sample(qids, min(max(2, len(qids) // 25), 400))) if len(qids) > 4 else set()
    train = [r for r in recs if r["qid"] not in val_q]
    val = [r for r in recs if r["qid"] in val_q]
    log(f"train {len(train)} trajectories ({len(qids) - len(val_q)} scenes), val {len(val)} ({len(val_q)} scenes)")
    tk = load_hf_style(tok_dir)
    if a.aug_flips:
        train = train + flip_first_turns([r for r in train if r["kind"] in ZOOM_KINDS], pix, tk)
        log(f"train with mirrored first turns: {len(train)}")
    pad = json.load(open(os.path.join(tok_dir, "config.json")))["text_config"].get("pad_token_id", 0) or 0
    if a.first_turns:
        train = first_turns(train, a.first_turns)
        log(f"first-turn diet: {len(train)} training sequences")
    n_ann = annotate(train, tk) + annotate(val, tk)
    log(f"zoom trajectories with a target box: {n_ann} (train + val)")
    if a.video_pointer > 0:
        log(f"frames-zoom trajectories with a crop-turn target (--video-pointer): {sum(1 for r in train + val if r.get('vtgt') and r['kind'] == 'frames-zoom')} (train + val)")
        log(f"zoom2 trajectories with a closer-call target (--video-pointer): {sum(1 for r in train + val if r.get('vtgt') and r['kind'] == 'zoom2')} (train + val)")
    heads = AuxHeads(model.model.visual.merger.mlp[2].out_features, model.tc["hidden"]).to(dev)
    aux_init = os.path.join(a.init, "aux_heads.safetensors") if a.init else None
    if aux_init and os.path.exists(aux_init):  # a run resumed from one that trained the heads: keep them
        missing, _ = heads.load_state_dict({k: v.float() for k, v in qt.load_safetensors(aux_init).items()}, strict=False)
        if missing:
            log(f"auxiliary heads new in this run: {', '.join(missing)}")
        log(f"auxiliary heads from {aux_init}")
    n_layers = len(model.model.language_model.layers)
    attn_hook = a.aux_attn > 0 or a.aux_attn2 > 0 or a.video_pointer > 0 or a.frame_pointer > 0  # a pointer on --aux-attn-layer
    for flag, on, layer in (("--aux-attn-layer", attn_hook, a.aux_attn_layer), ("--aux-pos-layer", a.aux_pos > 0, a.aux_pos_layer),
                            ("--aux-digit-layer", a.aux_digit > 0 or a.aux_copy > 0, a.aux_digit_layer),
                            ("--aux-read-layer", a.aux_read > 0, a.aux_read_layer)):
        if on and not -n_layers <= layer < n_layers:
            raise SystemExit(f"train.py: {flag} {layer} is out of range: this model has {n_layers} text layers (0..{n_layers - 1})")
    store = {}
    use_aux = a.aux_target > 0 or a.aux_pos > 0 or a.aux_glyph > 0
    if attn_hook:
        model.model.language_model.layers[a.aux_attn_layer].self_attn.register_forward_pre_hook(
            lambda m, args: store.__setitem__("attn_in", (args[0], args[1], args[2])))
    if a.aux_digit > 0:
        model.model.language_model.layers[a.aux_digit_layer].self_attn.register_forward_pre_hook(
            lambda m, args: store.__setitem__("attn_in_digit", (args[0], args[1], args[2])))
    if a.aux_read > 0:
        model.model.language_model.layers[a.aux_read_layer].register_forward_hook(lambda m, i, o: store.__setitem__("read", o))
    if a.aux_copy > 0:
        model.model.language_model.layers[a.aux_digit_layer].register_forward_hook(lambda m, i, o: store.__setitem__("copy_h", o))
    if use_aux:
        model.model.visual.register_forward_hook(lambda m, i, o: store.__setitem__("vis", o))
        model.model.language_model.layers[a.aux_pos_layer].register_forward_hook(lambda m, i, o: store.__setitem__("llm", o))
    mb = dict(model=model, box_weight=a.box_weight, merge=model.vc["merge"], image_token_id=model.image_token_id, answer_weight=a.answer_weight,
              video=a.video_pointer > 0, frame=a.frame_pointer > 0)
    fresh_k, sx, drawn = 0, None, {}
    if a.scenes:
        import scene_traj
        from concurrent.futures import ThreadPoolExecutor
        t_ = time.time()
        sdirs = [d for d in a.scenes.split(",") if d.strip()]
        scene_traj.VIDEO_CACHE = a.scene_video_cache
        if not 0.0 <= a.option_swap <= 1.0:
            raise SystemExit(f"train.py: --option-swap is a share of the left-of draws, 0 to 1 (got {a.option_swap})")
        scene_traj.OPTION_SWAP = a.option_swap
        loaded = [sc for sc in scene_traj.load_scenes(sdirs, MAX_PIXELS, a.scene_workers, video=a.scene_video_frac > 0) if sc["qid"] not in val_q]
        scenes = [sc for sc in loaded if not sc.get("video")]
        vscenes = [sc for sc in loaded if sc.get("video")]
        if not scenes and not vscenes:
            raise SystemExit("train.py: no ring-digits / tag-letter samples in --scenes")
        vfrac = min(1.0, a.scene_video_frac) if vscenes else 0.0
        if not scenes:
            vfrac = 1.0
        stok, senc = scene_traj.encoder(tok_dir, MAX_PIXELS)
        fresh_k = max(1, min(a.bs, round(a.bs * a.scene_frac)))
        sx = ThreadPoolExecutor(a.scene_workers)
        log(f"fresh zoom trajectories: {len(scenes)} scenes from {len(sdirs)} folder(s) ({time.time() - t_:.0f}s), {fresh_k} of every batch of {a.bs}")

        # A video trajectory is ~3.2k tokens (16 frame images, the picks, the crop), an image one ~850, and a batch is padded
        # to its longest: so the fresh draws of one step are all video or all image. Every round(1/vfrac)-th step, the
        # first included, is a video step (the right share, and a short run sees both kinds).
        vperiod = max(1, round(1 / vfrac)) if vfrac > 0 else 0
        log(f"fresh frames-zoom trajectories: {len(vscenes)} video scenes, every {vperiod}-th step's fresh draws" if vperiod else "fresh frames-zoom trajectories: none")

        def submit_fresh(step_):
            vstep = bool(vperiod) and (step_ % vperiod == 0 or not scenes)
            # at most --scene-video-max videos in a step: 48 of them (150k tokens) made cuDNN's attention fail on an H100
            n = min(fresh_k, a.scene_video_max) if vstep else fresh_k
            return [sx.submit(scene_traj.draw, random.Random(f"{a.seed}:{step_}:{k}").choice(vscenes if vstep else scenes),
                              random.Random(f"{a.seed}:{step_}:{k}:b"), senc, stok, MAX_PIXELS) for k in range(n)]
        nxt_fresh = submit_fresh(0)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2] + [heads.tgt.weight, heads.pos.weight, heads.read.weight, heads.glyph.weight]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2] + [heads.tgt.bias, heads.pos.bias, heads.cat.weight, heads.read.bias, heads.glyph.bias]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": nodecay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.98))
    amp = dict(device_type="cuda", dtype=torch.bfloat16) if dev == "cuda" else None
    curve, vcurve, ccurve = [], [], []

    def forward(b):
        """(total loss, lm loss, aux dict) for a batch."""
        store.clear()
        out = model(**{k: v for k, v in b.items() if k not in AUX_KEYS})
        lm = lm_loss(out.logits, b["labels"], b["weights"])
        aux = aux_losses(b, store, heads) if (use_aux or a.aux_read > 0) else {}
        attn_mod = model.model.language_model.layers[a.aux_attn_layer].self_attn if attn_hook else None
        if a.aux_attn > 0:
            al = attn_loss(b, store, attn_mod, a.aux_attn_heads)
            if al is not None:
                aux["attn"] = al
        if a.aux_attn2 > 0 and b["aux_attn2"] is not None:
            aux["attn2"] = attn_loss({"aux_attn": b["aux_attn2"]}, store, attn_mod, a.aux_attn_heads)
        if a.aux_digit > 0 and b["aux_digit"] is not None and "attn_in_digit" in store:
            aux["digit"] = attn_loss({"aux_attn": b["aux_digit"]}, {"attn_in": store["attn_in_digit"]},
                                     model.model.language_model.layers[a.aux_digit_layer].self_attn, a.aux_attn_heads)
        if a.aux_copy > 0 and b.get("aux_copy") is not None and "copy_h" in store:
            aux["copy"], aux["copy_right"] = copy_loss(b["aux_copy"], store["copy_h"], model)
        tot = (lm + a.aux_copy * aux.get("copy", 0.0) + a.aux_target * aux.get("tgt", 0.0) + a.aux_pos * aux.get("pos", 0.0) + a.aux_attn * aux.get("attn", 0.0) + a.aux_read * aux.get("read", 0.0)
               + a.aux_glyph * aux.get("glyph", 0.0) + a.aux_attn2 * aux.get("attn2", 0.0) + a.aux_digit * aux.get("digit", 0.0))
        if a.video_pointer > 0:  # the video crop turn (make_batch's aux_v* rows; only built with the flag)
            if b["aux_vattn"] is not None:
                aux["vattn"] = attn_loss({"aux_attn": b["aux_vattn"]}, store, attn_mod, a.aux_attn_heads)
            tot = tot + a.video_pointer * aux.get("vattn", 0.0) + a.aux_read * aux.get("vread", 0.0) + a.aux_target * aux.get("vtgt", 0.0)
        if a.frame_pointer > 0 and b["aux_fattn"] is not None:  # the select_frames turn looks at the target's frame
            aux["fattn"] = attn_loss({"aux_attn": b["aux_fattn"]}, store, attn_mod, a.aux_attn_heads)
            tot = tot + a.frame_pointer * aux["fattn"]
        return tot, lm, aux, out

    def evaluate():
        """Held-out: loss, whole-trajectory exact (teacher-forced), crop-box tokens exact, and the auxiliary heads."""
        model.eval()
        tot, n, ok_n, seqs, box_ok, box_n, vbox_ok, vbox_n = 0.0, 0, 0, 0, 0, 0, 0, 0
        auxs = {}
        with torch.no_grad():
            for i in range(0, len(val), a.bs):
                b = make_batch(val[i:i + a.bs], pix, pad, dev, **mb)
                with torch.autocast(**amp) if amp else torch.no_grad():
                    _, _, aux, out = forward(b)
                for k, v in aux.items():
                    auxs.setdefault(k, []).append(float(v))
                lab = b["labels"][:, 1:]
                m = lab != -100
                lg = out.logits[:, :-1].float()
                ce = torch.nn.functional.cross_entropy(lg.transpose(1, 2), lab.clamp(min=0), reduction="none")
                tot += float((ce * m).sum())
                n += int(m.sum())
                hit = lg.argmax(-1) == lab
                ok = hit | ~m
                ok_n += int(ok.all(-1).sum())
                seqs += ok.shape[0]
                for j, r in enumerate(val[i:i + a.bs]):
                    if r.get("box_at"):
                        s_, e_ = r["box_at"]
                        box_ok += int(hit[j, s_ - 1:e_ - 1].all())
                        box_n += 1
                    if a.video_pointer > 0 and r.get("vbox_at"):
                        s_, e_ = r["vbox_at"]
                        vbox_ok += int(hit[j, s_ - 1:e_ - 1].all())
                        vbox_n += 1
        model.train()
        if vbox_n:  # the video crop calls' boxes, teacher-forced (held-out frames-zoom trajectories)
            auxs["vbox_exact"] = [vbox_ok / vbox_n]
        return tot / max(n, 1), ok_n / max(seqs, 1), box_ok / max(box_n, 1), {k: sum(v) / len(v) for k, v in auxs.items()}

    def vline(step):
        vl, va, vb, aux = evaluate()
        vcurve.append({"step": step, "t": round(time.time() - t0, 1), "val_loss": vl, "val_seq_exact": va, "val_box_exact": vb,
                       **{f"val_aux_{k}": v for k, v in aux.items()}})
        log(f"step:{step} - val/loss:{vl:.4f} - val/seq_exact:{va:.3f} - val/box_exact:{vb:.3f}"
            + "".join(f" - val/aux_{k}:{v:.4f}" for k, v in aux.items()))

    order, step, epoch = [], 0, 0
    t0 = time.time()
    if val and a.init and os.path.exists(os.path.join(a.init, "model.safetensors")):
        # the starting model's validation, before any update: a fine-tune of the shipped weights starts where the shipped
        # model is (its first logged validation is the shipped model's on the same data)
        vline(0)
    model.train()
    while True:
        el = time.time() - t0
        if a.max_steps is not None and step >= a.max_steps:
            break
        if a.minutes is not None and el > a.minutes * 60:
            break
        frac = step / a.max_steps if a.max_steps is not None else el / (a.minutes * 60)
        lr = a.lr * (frac / a.warmup if frac < a.warmup else 0.5 * (1 + math.cos(math.pi * min(1.0, (frac - a.warmup) / (1 - a.warmup)))))
        for g in opt.param_groups:
            g["lr"] = lr
        if not order:
            order = list(range(len(train)))
            random.shuffle(order)
            # similar lengths together: less padding
            chunks = [order[i:i + a.bs * 8] for i in range(0, len(order), a.bs * 8)]
            order = [j for c in chunks for j in sorted(c, key=lambda k: len(train[k]["ids"]))]
            bl = [order[i:i + a.bs] for i in range(0, len(order), a.bs)]
            random.shuffle(bl)
            order = [j for b_ in bl for j in b_]
            epoch += 1
        idx, order = order[:a.bs - fresh_k], order[a.bs - fresh_k:]
        ts = time.time()
        items, fresh_keys = [train[i] for i in idx], []
        if fresh_k:
            got = [f.result() for f in nxt_fresh]
            nxt_fresh = submit_fresh(step + 1)
            for g in got:
                if g is not None:
                    if g[0]["kind"] not in drawn:
                        log(f"first fresh {g[0]['kind']} trajectory at step {step + 1}: {g[0]['qid']}, {len(g[0]['ids'])} tokens, {len(g[0]['images'])} images")
                    drawn[g[0]["kind"]] = drawn.get(g[0]["kind"], 0) + 1
                    pix.update(g[1])
                    fresh_keys += list(g[1])
                    items.append(g[0])
            annotate([it for it in items if it.get("fresh")], tk)
        b = make_batch(items, pix, pad, dev, **mb)
        for k in fresh_keys:
            pix.pop(k, None)  # a scene drawn twice in one batch shares its global view's key
        if amp:
            with torch.autocast(**amp):
                loss, lm, aux, _ = forward(b)
        else:
            loss, lm, aux, _ = forward(b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = float(torch.nn.utils.clip_grad_norm_(list(model.parameters()) + list(heads.parameters()), 1.0))
        opt.step()
        step += 1
        if step % a.log_every == 0 or step == 1:
            lv = lm.item()
            av = {k: v.item() for k, v in aux.items()}
            curve.append({"step": step, "t": round(time.time() - t0, 1), "loss": lv, "lr": lr, "grad_norm": gn, "epoch": epoch, **{f"aux_{k}": v for k, v in av.items()}})
            log(f"step:{step} - train/loss:{lv:.4f} - train/lr:{lr:.3e} - train/grad_norm:{gn:.3f} - train/epoch:{epoch}"
                + "".join(f" - train/aux_{k}:{v:.4f}" for k, v in av.items()) + f" - perf/sec_per_step:{time.time() - ts:.3f}")
        if val and step % a.val_every == 0:
            vline(step)
        if val and a.crop_every and step % a.crop_every == 0:
            model.eval()
            c = crop_eval(model, [r for r in val if r.get("tgt") and r["kind"] == "zoom"][:a.crop_every_n], pix, tk, dev, [2, pad])
            rd = read_eval(model, [r for r in val if r.get("ctgt")][:a.crop_every_n], pix, tk, dev, [2, pad])
            model.train()
            ccurve.append({"step": step, "t": round(time.time() - t0, 1), "crop_hit": c["hit"], "where_ok": c["where"], "n": c["n"], "read_acc": rd["acc"]})
            log(f"step:{step} - val/crop_hit:{c['hit']:.3f} - val/where_ok:{c['where']:.3f} - val/read_acc:{rd['acc']:.3f} (n={c['n']})")
    if val:
        vline(step)
    train_s = time.time() - t0

    # greedy first turns on held-out scenes (PyTorch), to see tool calls before export
    model.eval()
    samples = []
    eos = [2, pad]
    for r in [x for x in val if x["kind"] in ("zoom", "recover")][:6]:
        s0 = r["spans"][0][0]
        im = r["images"][0]
        with torch.no_grad():
            g = model.generate(torch.tensor([r["ids"][:s0]], device=dev), patches(pix[im["key"]], dev), torch.tensor([im["grid"]], device=dev),
                               max_new_tokens=100, eos_ids=eos, temperature=0)
        samples.append({"qid": r["qid"], "kind": r["kind"], "generated": tk.decode(g[0].tolist(), skip_special_tokens=False),
                        "reference": tk.decode(r["ids"][s0:r["spans"][0][1]], skip_special_tokens=False)})
    for s in samples[:3]:
        log(f"sample {s['qid']}: {json.dumps(s['generated'])[:240]}")
    if sx:
        sx.shutdown(wait=False, cancel_futures=True)
        log("fresh trajectories drawn: " + ", ".join(f"{v} {k}" for k, v in sorted(drawn.items())))
    crop = crop_eval(model, [r for r in val if r.get("tgt") and r["kind"] == "zoom"][:a.crop_eval], pix, tk, dev, eos)
    log(f"final/crop_hit:{crop['hit']:.3f} - final/where_ok:{crop['where']:.3f} - final/crop_parsed:{crop['parsed']:.3f} (n={crop['n']}, greedy first turns on held-out scenes)")
    read = read_eval(model, [r for r in val if r.get("ctgt")][:a.read_eval], pix, tk, dev, eos)
    log(f"final/read_acc:{read['acc']:.3f} - final/read_said_eq_boxed:{read['consistent']:.3f} (n={read['n']}, greedy reading turns on held-out scenes, gold crop)")

    model = model.float().cpu().eval()
    check = write_model(model, a.out, tok_dir, a.export, tk)
    if use_aux or a.aux_read > 0:  # training-only, beside the model (never exported): lets a later run resume them
        qt.save_safetensors({k: v.detach().float().cpu() for k, v in heads.state_dict().items()}, os.path.join(a.out, "aux_heads.safetensors"))
    metrics = {"params": nparam, "vision_params": nvis, "steps": step, "epochs": epoch, "batch_size": a.bs, "lr": a.lr, "minutes": a.minutes,
               "max_steps": a.max_steps, "train_seconds": round(train_s, 1), "init": a.init, "arch": None if (a.init or a.fresh_from) else a.arch, "fresh_from": a.fresh_from,
               "train_trajectories": len(train), "val_trajectories": len(val), "train_scenes": len(qids) - len(val_q), "val_scenes": len(val_q),
               "fresh": {"scene_folders": len(a.scenes.split(",")), "scenes": len(scenes), "per_batch": fresh_k, "video_scenes": len(vscenes),
                         "video_frac": vfrac, "drawn": drawn} if a.scenes else None,
               "curve": curve, "val_curve": vcurve, "crop_curve": ccurve, "greedy_samples": samples, "crop_eval": crop, "read_eval": read, "onnx_check": check,
               "aux": {"target": a.aux_target, "pos": a.aux_pos, "pos_layer": a.aux_pos_layer, "attn": a.aux_attn, "attn_layer": a.aux_attn_layer,
                       "attn_heads": a.aux_attn_heads, "read": a.aux_read, "read_layer": a.aux_read_layer, "box_weight": a.box_weight, "answer_weight": a.answer_weight,
                       "glyph": a.aux_glyph, "attn2": a.aux_attn2, "digit": a.aux_digit, "digit_layer": a.aux_digit_layer, "copy": a.aux_copy, "video_pointer": a.video_pointer, "frame_pointer": a.frame_pointer},
               "device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "torch": torch.__version__}
    with open(os.path.join(a.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    try:
        plot_curves(metrics, os.path.join(a.out, "curves.png"))
    except Exception as e:  # the curves are a nicety; the model matters
        log(f"no curves.png: {e}")
    log(f"done: {a.out}")


if __name__ == "__main__":
    main()
