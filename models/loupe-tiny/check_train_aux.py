#!/usr/bin/env python3
"""Checks train.py's auxiliary losses on a hand-built trajectory with the tiny random model (CPU, a few seconds):

1. annotate(): the target centre is the first crop box's centre, box_at covers exactly the four box numbers.
2. make_batch(): the pointer targets are the target's merged token and its neighbours (clipped at the border); the
   position targets are each global-view token's own centre; cached position ids equal rope_index's.
3. attn_loss() (batched) equals a naive per-query recomputation of the layer's attention probabilities, row by row.
4. The pointer loss can be learned: 40 Adam steps on it alone cut it by more than half.
5. crop_target(): the target's centre inside the padded, clamped crop and the answer's glyph classes on hand-worked
   cases, None where it does not apply; neighbourhood() at a corner and in the middle.
6. make_batch() on whole zoom trajectories (global view, then a crop of another size): the reading head's rows are the
   crop's 3x3 tokens in the tower's output (equal to the tower run on the crop alone), the reading pointer's keys are
   those tokens' sequence positions and its queries the reading turn; the first-turn pointer still looks at the global
   view. The batched reading-pointer loss equals the naive recomputation; the reading head can be learned (40 Adam
   steps on it alone, tower + head); read_eval() runs (only that: the random model reads nothing); --answer-weight
   weighs exactly the reading turn.
7. pretrain_reading.py --scenes on a hand-made scene (a red target near the top edge of an image the initial resize
   scales unevenly): each on-the-fly crop's target centre falls on the target's red pixels, and the crop cut from the
   cached region equals the crop pr_env's Episode returns for the same call on the whole image (then the engine resize).
8. With --video-scenes DIR (a loupe-synth folder with video samples, e.g. `loupe synth --seed 9 --n 0 --video 2 --kinds
   ring-digits,tag-letter`): --video-pointer's targets on fresh frames-zoom trajectories (scene_traj.draw) of every video,
   checked against what the sample itself says (video_pointer_check): the frame the crop call names is the pick that is
   the first target frame; the pointer's keys are the 3x3 merged tokens around the true target centre (the sample's
   target box on the frame's own grid, the image's pads found by counting <|vision_start|> blocks) and hold the target's
   ink (the pixels of its colour inside its box); the same check on keys moved one token to the right fails every time;
   the queries run from the crop turn's start to its box; vbox_at is exactly the call's box numbers (+ its bracket) and
   weighs --box-weight; the vision head's row is that frame's target token in the tower's output; the batched loss
   equals the naive one and can be learned; without the flag the batch has none of it, and tgt / box_at stay None.
   A trajectory without the carried target box (as prepare.ts's) falls back to the call box's centre: within a token.

Prints one JSON line {"ok": bool, "checks": {...}} and exits 1 on any failure.
  python3 models/loupe-tiny/check_train_aux.py [--model models/tiny-random-qwen25vl] [--video-scenes SYNTH_DIR]
"""
import argparse, copy, json, math, os, re, shutil, subprocess, sys, tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt  # noqa: E402
import train  # noqa: E402


def build_record(tk, grid, box, category="ring-digits", kind="zoom"):
    t, h, w = grid
    n = t * h * w // 4
    vs, ve, pad_img = (tk.token_to_id(s) for s in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>"))
    im_start, im_end = tk.token_to_id("<|im_start|>"), tk.token_to_id("<|im_end|>")
    ids = [im_start] + tk.encode("user\n").ids + [vs] + [pad_img] * n + [ve] + tk.encode("Read the digits inside the red circle.").ids
    ids += [im_end] + tk.encode("\n").ids + [im_start] + tk.encode("assistant\n").ids
    s0 = len(ids)
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    text = (f"The red ring is {train.where(cx, cy)}. Let me zoom in.\n"
            f'<tool_call>\n{{"name": "crop_image_normalized", "arguments": {{"bbox_2d": [{", ".join(train.fmt(v) for v in box)}], "target_image": 1}}}}\n</tool_call>')
    ids += tk.encode(text).ids + [im_end]
    return {"qid": "check-0", "kind": kind, "category": category, "ids": ids, "spans": [[s0, len(ids)]],
            "images": [{"key": "img", "grid": list(grid), "file": "img.png"}]}


def build_zoom_record(tk, grid0, grid1, box, answer, category):
    """A whole zoom trajectory: build_record's first turn, then the crop (image 2) in a user turn and the reading turn
    (trajectories.ts's sentences)."""
    r = build_record(tk, grid0, box, category=category)
    t, h, w = grid1
    vs, ve, pad_img = (tk.token_to_id(s) for s in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>"))
    im_start, im_end = tk.token_to_id("<|im_start|>"), tk.token_to_id("<|im_end|>")
    ids = r["ids"] + tk.encode("\n").ids + [im_start] + tk.encode("user\n").ids + [vs] + [pad_img] * (t * h * w // 4) + [ve]
    ids += tk.encode("Here is the cropped image.").ids + [im_end] + tk.encode("\n").ids + [im_start] + tk.encode("assistant\n").ids
    s1 = len(ids)
    text = (f"The ring shows {', '.join(answer)}: \\boxed{{{answer}}}" if category == "ring-digits"
            else f"The tag shows {answer}: \\boxed{{{answer}}}")
    ids += tk.encode(text).ids + [im_end]
    return {**r, "ids": ids, "spans": r["spans"] + [[s1, len(ids)]], "answer": answer,
            "images": r["images"] + [{"key": "crop", "grid": list(grid1), "file": "crop.png"}]}


def naive_pointer(model, layer, heads_n, x_in, cos, sin, row, positions, targets):
    """-log attention mass on `targets` for each (head, query), by the definition: softmax over keys 0..p."""
    m = model.model.language_model.layers[layer].self_attn
    hd, H, KV = m.hd, m.h, m.kv
    x = x_in[row].float()
    q = m.q_proj(x).view(-1, H, hd)
    k = m.k_proj(x).view(-1, KV, hd)
    c, s = cos[row, 0].float(), sin[row, 0].float()
    q = q * c[:, None] + qt._rot(q) * s[:, None]
    k = k * c[:, None] + qt._rot(k) * s[:, None]
    vals = []
    for h in range(heads_n):
        kv = h // (H // KV)
        for p in positions:
            sc = (k[:p + 1, kv] @ q[p, h]) * hd ** -0.5
            pr = torch.softmax(sc, -1)
            vals.append(-torch.log(pr[[t for t in targets if t <= p]].sum()))
    return torch.stack(vals)


TARGET_RGB = {"ring-digits": (0xE0, 0x1B, 0x1B), "tag-letter": (0x1F, 0x4F, 0xD8)}  # scene.ts TARGET_COLORS


def video_pointer_check(r, sample, frame, pads, keys):
    """One frames-zoom record's video pointer keys (sequence positions) against the sample: (keys are the 3x3 merged tokens
    around the true target centre, the tokens the target's box overlaps are among them, its ink lies under them).
    `frame` is the named frame image (uint8 [H, W, 3], as the model sees it) and `pads` the sequence positions of its
    merged tokens, row-major; nothing here comes from train.py's own mapping."""
    Hp, Wp = frame.shape[0], frame.shape[1]
    H, W = Hp // 28, Wp // 28
    x1, y1, x2, y2 = sample["target"]["px"]
    sx, sy = Wp / sample["width"], Hp / sample["height"]  # the frame is the whole video frame, resized
    cx, cy = (x1 + x2) / 2 * sx, (y1 + y2) / 2 * sy          # the target centre in the frame's pixels
    row, col = int(cy // 28), int(cx // 28)
    want = {int(pads[rr * W + cc]) for rr in range(max(0, row - 1), min(H, row + 2)) for cc in range(max(0, col - 1), min(W, col + 2))}
    keys = set(int(k) for k in keys)
    covered = {int(pads[rr * W + cc]) for rr in range(int(y1 * sy // 28), int((y2 * sy - 1e-6) // 28) + 1)
               for cc in range(int(x1 * sx // 28), int((x2 * sx - 1e-6) // 28) + 1)} <= keys
    # ink: pixels of the target's colour inside its box; they must lie in the pointed tokens
    bx0, by0, bx1, by1 = int(x1 * sx), int(y1 * sy), min(Wp, int(x2 * sx) + 1), min(Hp, int(y2 * sy) + 1)
    rgb = torch.tensor(TARGET_RGB[sample["category"]], dtype=torch.float32)
    ink = (frame[by0:by1, bx0:bx1].float() - rgb).abs().sum(-1) < 90
    mask = torch.zeros(Hp, Wp, dtype=torch.bool)
    token = {int(p): q for q, p in enumerate(pads)}  # sequence position -> the frame's merged token
    for q in (token[k] for k in keys if k in token):
        mask[(q // W) * 28:(q // W + 1) * 28, (q % W) * 28:(q % W + 1) * 28] = True
    inside = ink & mask[by0:by1, bx0:bx1]
    ink_ok = int(ink.sum()) >= 8 and int(inside.sum()) >= 0.95 * int(ink.sum())
    return keys == want, covered, ink_ok, {"qid": r["qid"], "ink": int(ink.sum()), "ink_under_keys": int(inside.sum())}


class _StopForward(Exception):
    """Raised by a forward pre-hook once the inputs a loss needs are stored."""


def _stop_forward(module, args):
    raise _StopForward


def check_option_swap(checks, tk, scene_dir, tok_dir):
    """--option-swap (scene_traj.OPTION_SWAP) on fresh zoom2 trajectories of the folder's left-of samples: off, the question
    lists the options as generated and the boxed letter is the sample's answer; on, the options are listed the other way,
    the boxed letter moves with them, the reading ("The left tag shows K") stays and lists the new order's options, the
    option pointers copy from the new lines (scene_traj.option_pointer_ok), and the scene's own sample is left as it was."""
    import random
    import scene_traj as S
    tok, enc = S.encoder(tok_dir, train.MAX_PIXELS)
    scenes = [sc for sc in S.load_scenes([scene_dir], train.MAX_PIXELS, 2) if not sc.get("video") and sc["sample"]["category"] == "left-of"]
    checks["option_swap_scenes"] = len(scenes)
    off_ok = on_ok = ptr_ok = kept_ok = n = 0
    try:
        for sc in scenes:
            s = sc["sample"]
            before = json.dumps(s, sort_keys=True)
            a, b = s["options"]
            flip = "B" if s["answer"] == "A" else "A"
            for d in range(2):
                S.OPTION_SWAP = 0.0
                r0 = S.draw(sc, random.Random(f"{s['qid']}:{d}"), enc, tok, train.MAX_PIXELS)
                S.OPTION_SWAP = 1.0
                r1 = S.draw(sc, random.Random(f"{s['qid']}:{d}"), enc, tok, train.MAX_PIXELS)
                if r0 is None or r1 is None:
                    continue
                n += 1
                t0 = tk.decode(r0[0]["ids"], skip_special_tokens=False)
                t1 = tk.decode(r1[0]["ids"], skip_special_tokens=False)
                left = s["facts"]["left"]
                said = lambda o: f"The left tag shows {left}; " + ("(A) " + o[0] if o[0] == left else f"(A) {o[0]}, (B) {o[1]}") + ": \\boxed{"  # noqa: E731
                off_ok += int(f"(A) {a}\n(B) {b}\n" in t0 and t0.endswith(said([a, b]) + s["answer"] + "}<|im_end|>") and r0[0]["answer"] == s["answer"])
                on_ok += int(f"(A) {b}\n(B) {a}\n" in t1 and t1.endswith(said([b, a]) + flip + "}<|im_end|>") and r1[0]["answer"] == flip)
                # the swapped draw's pointers: copies from the new lines, the compares, the answer on the moved letter
                got = S.option_pointer_ok(r1[0], tok, left)
                ptr_ok += int(got[0] == (3 if b == left else 5) and got[1] == got[0])
                kept_ok += int(json.dumps(sc["sample"], sort_keys=True) == before)
    finally:
        S.OPTION_SWAP = 0.0
    checks["option_swap_draws"] = n
    checks["option_swap_off"] = n > 0 and off_ok == n
    checks["option_swap_on"] = n > 0 and on_ok == n
    checks["option_swap_pointer"] = n > 0 and ptr_ok == n
    checks["option_swap_sample_kept"] = n > 0 and kept_ok == n


def check_copy(checks, model, tk, scene_dir, tok_dir, b_first):
    """--aux-copy (train.copy_loss) on the folder's left-of samples, drawn with the options as generated and swapped:
    make_batch's aux_copy has one row per option the reading turn lists, its query the token before the listed letter
    and its target that letter (the letter as the question's option line has it); a batch without left-of has none;
    the loss on the tiny random model is finite, and 30 Adam steps on it alone, on one scene's two draws, more than
    halve it (it can be learned)."""
    import random
    import scene_traj as S
    tok, enc = S.encoder(tok_dir, train.MAX_PIXELS)
    scenes = [sc for sc in S.load_scenes([scene_dir], train.MAX_PIXELS, 2) if not sc.get("video") and sc["sample"]["category"] == "left-of"]
    recs, pix, rows_ok, n = [], {}, 0, 0
    try:
        for sc in scenes:
            for swap in (0.0, 1.0):
                S.OPTION_SWAP = swap
                got = S.draw(sc, random.Random(f"{sc['qid']}:copy"), enc, tok, train.MAX_PIXELS)
                if got is None:
                    continue
                rec, px = got
                b = train.make_batch([rec], px, 0, "cpu", model=model, merge=2, image_token_id=model.image_token_id)
                text = tk.decode(rec["ids"][rec["spans"][-1][0]:], skip_special_tokens=False)
                listed = re.findall(r"\(([AB])\) (\w)", text[text.index("; "):])
                opts = dict(re.findall(r"\(([AB])\) (\w)\n", tk.decode(rec["ids"][:rec["spans"][0][0]], skip_special_tokens=False)))
                c = b["aux_copy"]
                n += 1
                if c is None:
                    continue
                r_, q, y = (t.tolist() for t in c)
                rows_ok += int(len(q) == len(listed) and all(v == 0 for v in r_)
                               and [tk.decode([t]).strip() for t in y] == [opts[o] for o, _ in listed] == [l for _, l in listed]
                               and all(rec["ids"][k + 1] == t for k, t in zip(q, y)))
                recs.append(rec)
                pix.update(px)
    finally:
        S.OPTION_SWAP = 0.0
    checks["copy_draws"] = n
    checks["copy_rows"] = n > 0 and rows_ok == n
    checks["copy_none_without_left_of"] = b_first.get("aux_copy") is None
    if not recs:
        checks["copy_learnable"] = False
        return
    store = {}
    model = copy.deepcopy(model)  # trained here: the later checks keep the weights they were given
    hook = model.model.language_model.layers[1].register_forward_hook(lambda m, i, o: store.__setitem__("h", o))
    # learnable on the first scene's two draws (as generated and swapped): all eight cost four times the CPU time
    b = train.make_batch(recs[:2], pix, 0, "cpu", model=model, merge=2, image_token_id=model.image_token_id)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = last = None
    for _ in range(30):
        model(**{k: v for k, v in b.items() if k not in train.AUX_KEYS})
        loss, _ = train.copy_loss(b["aux_copy"], store["h"], model)
        first = float(loss) if first is None else first
        last = float(loss)
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.remove()
    checks["copy_loss_first_last"] = [round(first, 4), round(last, 4)]
    checks["copy_learnable"] = math.isfinite(first) and last < first / 2


def check_video(checks, model, tk, scene_dir, tok_dir, layer, heads_n):
    """Check 8 (above), on fresh frames-zoom trajectories of the folder's video samples (3 draws of each)."""
    import random
    import scene_traj as S
    tok, enc = S.encoder(tok_dir, train.MAX_PIXELS)
    scenes = [sc for sc in S.load_scenes([scene_dir], train.MAX_PIXELS, 2) if sc.get("video")]
    recs, pix = [], {}
    for sc in scenes:
        for d in range(3):
            got = S.draw(sc, random.Random(f"{sc['qid']}:{d}"), enc, tok, train.MAX_PIXELS)
            if got is not None:
                recs.append(got[0])
                pix.update(got[1])
    samples = {sc["qid"]: sc["sample"] for sc in scenes}
    checks["video_records"] = len(recs)
    if not recs:
        checks["video_drawn"] = False
        return
    train.annotate(recs, tk)
    vs = tk.token_to_id("<|vision_start|>")
    bw = 3.0
    b = train.make_batch(recs, pix, 0, "cpu", model=model, box_weight=bw, merge=2, image_token_id=model.image_token_id, video=True)
    b0 = train.make_batch(recs, pix, 0, "cpu", model=model, box_weight=bw, merge=2, image_token_id=model.image_token_id)
    rows, P, Pok, Tm = b["aux_vattn"]
    named, keys_ok, cover_ok, ink_ok, shifted_ok, shifted_ink, box_ok, query_ok, weight_ok, tower_ok, pos_ok = (0,) * 11
    details = []
    vis_all = model.model.visual(b["pixel_values"], b["image_grid_thw"]).detach()
    idx, valid, tgt, cats = b["aux_vtgt"]
    off = 0
    for i, r in enumerate(recs):
        s = samples[r["qid"]]
        first = int(s["target"]["frames"][0])
        nf = len(s["frames"]) + len(s["frames"]) % 2
        j = nf + [im["key"] for im in r["images"][nf:-1]].index(f"scene:{r['qid']}:f{first - 1}")  # the pick showing the target
        named += int(r["vimg"] == j)
        frame = pix[r["images"][j]["key"]]
        vpos = (b["input_ids"][i] == vs).nonzero().flatten().tolist()
        start = vpos[j] + 1
        H, W = frame.shape[0] // 28, frame.shape[1] // 28
        pads = list(range(start, start + H * W))
        pads_are_images = all(int(b["input_ids"][i, p]) == model.image_token_id for p in pads) and int(b["input_ids"][i, start + H * W]) != model.image_token_id
        keys = Tm[i].nonzero().flatten().tolist()
        # the position probe also reads the named frame's tokens (the call writes coordinates in that frame), each with
        # its own centre in it; only with the flag
        sel = (b["aux_pos"][0] == i).nonzero().flatten()
        cols_i = b["aux_pos"][1][sel].tolist()
        k0 = cols_i.index(pads[0]) if pads[0] in cols_i else -1
        qq = torch.arange(H * W)
        want = torch.stack([(qq % W + 0.5) / W, (qq // W + 0.5) / H], -1)
        pos_ok += int(k0 >= 0 and cols_i[k0:k0 + H * W] == pads and torch.allclose(b["aux_pos"][2][sel][k0:k0 + H * W].cpu(), want)
                      and pads[0] not in b0["aux_pos"][1][(b0["aux_pos"][0] == i).nonzero().flatten()].tolist())
        k_ok, c_ok, i_ok, det = video_pointer_check(r, s, frame, pads, keys)
        keys_ok += int(k_ok and pads_are_images and int(rows[i]) == i)
        cover_ok += int(c_ok)
        ink_ok += int(i_ok)
        shifted = video_pointer_check(r, s, frame, pads, [k + 1 for k in keys])
        shifted_ok += int(all(shifted[:3]))                # the whole check passing on wrong keys (it must not)
        shifted_ink += int(shifted[2])                     # the ink test alone misses a shift where the target is small
        det["shifted_ink_under_keys"] = shifted[3]["ink_under_keys"]
        details.append(det)
        # the box: exactly the call's numbers, then the closing bracket's token
        s1, e1 = r["spans"][1]
        text = tk.decode(r["ids"][s1:e1], skip_special_tokens=False)
        call = json.loads(text[text.index("<tool_call>") + len("<tool_call>"):text.index("</tool_call>")])
        numbers = text[text.index('"bbox_2d": [') + len('"bbox_2d": ['):text.index("]", text.index('"bbox_2d"'))]
        bs, be = r["vbox_at"]
        box_ok += int(tk.decode(r["ids"][bs:be - 1]) == numbers and [float(v) for v in numbers.split(",")] == call["arguments"]["bbox_2d"]
                      and tk.decode([r["ids"][be - 1]]).startswith("]") and tk.decode([r["ids"][bs - 1]]).endswith("[")
                      and call["arguments"]["target_image"] == j - nf + 2)
        q = P[i][Pok[i]].tolist()
        query_ok += int(q == list(range(s1 - 1, be - 1)) and tk.decode(r["ids"][q[0] + 1:q[-1] + 2]).endswith(numbers + tk.decode([r["ids"][be - 1]]))
                        and tk.decode([r["ids"][q[0] + 1]]) == "The")
        w = b["weights"][i]
        weight_ok += int(float(w[bs:be].min()) == bw and float(w[bs:be].max()) == bw and int((w != 1).sum()) == be - bs
                         and float(b0["weights"][i].max()) == 1.0)
        # the vision head's row: the named frame's tokens in the tower's output, the target's token among them
        n_before = sum(im["grid"][1] * im["grid"][2] // 4 for im in r["images"][:j])
        x1, y1, x2, y2 = s["target"]["px"]
        t_want = int((y1 + y2) / 2 / s["height"] * H) * W + int((x1 + x2) / 2 / s["width"] * W)
        alone = model.model.visual(train.patches(frame, "cpu"), torch.tensor([[1, H * 2, W * 2]])).detach()
        tower_ok += int(int(idx[i, 0]) == off + n_before and int(valid[i].sum()) == H * W and int(tgt[i]) == t_want
                        and torch.allclose(vis_all[idx[i][valid[i]]], alone, atol=1e-5))
        off += sum(im["grid"][1] * im["grid"][2] // 4 for im in r["images"])
    n = len(recs)
    checks["video_named_frame"] = named == n
    checks["video_pointer_keys"] = keys_ok == n
    checks["video_pointer_covers_target"] = cover_ok == n and ink_ok == n
    checks["video_pointer_shifted_fails"] = shifted_ok == 0
    checks["video_box_at"] = box_ok == n
    checks["video_queries"] = query_ok == n
    checks["video_box_weight"] = weight_ok == n
    checks["video_pos_probe_named_frame"] = pos_ok == n
    checks["video_target_head_rows"] = tower_ok == n and tuple(rows.tolist()) == tuple(range(n)) and b["aux_vread"].shape == (n, 2)
    checks["video_counts"] = {"records": n, "named": named, "keys": keys_ok, "covered": cover_ok, "ink": ink_ok, "shifted_passing": shifted_ok, "shifted_ink_ok": shifted_ink,
                              "box_at": box_ok, "queries": query_ok, "weights": weight_ok, "target_head": tower_ok, "pos_probe": pos_ok, "detail": details}
    # --frame-pointer: the select_frames turn's queries up to the number of the crop's frame -> the target's 3x3 tokens in
    # that frame among the video's own frames (the first images), found here from the ids and the sample alone
    bf = train.make_batch(recs, pix, 0, "cpu", model=model, box_weight=bw, merge=2, image_token_id=model.image_token_id, video=True, frame=True)
    frows, fP, fPok, fTm = bf["aux_fattn"]
    f_named = f_keys = f_cover = f_queries = f_shifted = 0
    for i, r in enumerate(recs):
        s = samples[r["qid"]]
        first = int(s["target"]["frames"][0])
        f_named += int(r["fimg"] == first - 1)
        frame = pix[r["images"][first - 1]["key"]]
        vpos = (bf["input_ids"][i] == vs).nonzero().flatten().tolist()
        start = vpos[first - 1] + 1
        H, W = frame.shape[0] // 28, frame.shape[1] // 28
        pads = list(range(start, start + H * W))
        keys = fTm[i].nonzero().flatten().tolist()
        k_ok, c_ok, i_ok, _ = video_pointer_check(r, s, frame, pads, keys)
        f_keys += int(k_ok and int(frows[i]) == i)
        f_cover += int(c_ok and i_ok)
        f_shifted += int(all(video_pointer_check(r, s, frame, pads, [k + W for k in keys])[:3]))  # a row down: must fail
        s0, e0 = r["spans"][0]
        q = fP[i][fPok[i]].tolist()
        before = tk.decode(r["ids"][s0:q[-1] + 1], skip_special_tokens=False)
        at = tk.decode(r["ids"][q[-1] + 1:e0], skip_special_tokens=False)
        f_queries += int(q[0] == s0 - 1 and q[-1] + 1 == r["fpick_at"] and re.search(r'"target_frames": \[([0-9]+,\s*)*$', before) is not None
                         and re.match(rf"\s?{first}\b", at) is not None)  # the number's token may carry its leading space
    n = len(recs)
    checks["frame_pointer_frame"] = f_named == n
    checks["frame_pointer_keys"] = f_keys == n and f_cover == n
    checks["frame_pointer_shifted_fails"] = f_shifted == 0
    checks["frame_pointer_queries"] = f_queries == n
    checks["frame_pointer_off"] = b["aux_fattn"] is None and b0["aux_fattn"] is None
    checks["frame_pointer_counts"] = {"records": n, "frame": f_named, "keys": f_keys, "covered": f_cover, "queries": f_queries, "shifted_passing": f_shifted}
    # without the flag: none of it, and the image-side fields keep their meaning
    checks["video_off_unchanged"] = (all(b0[k] is None for k in ("aux_vattn", "aux_vread", "aux_vtgt", "aux_attn", "aux_tgt"))
                                     and all(r["tgt"] is None and r["box_at"] is None and r["ctgt"] is None for r in recs)
                                     and torch.equal(b0["weights"], torch.ones_like(b0["weights"])) and torch.equal(b0["input_ids"], b["input_ids"]))
    # prepare.ts's records carry no target box: the call box's centre, within a token of the true centre
    fb = [{k: v for k, v in r.items() if k not in ("frame_target", "_pos")} for r in recs]
    train.annotate(fb, tk)
    near = 0
    for r, f in zip(recs, fb):
        if r["vimg"] is None or f["vimg"] is None:
            continue
        H, W = r["images"][r["vimg"]]["grid"][1] // 2, r["images"][r["vimg"]]["grid"][2] // 2
        near += int(f["vimg"] == r["vimg"] and abs(int(f["vtgt"][0] * W) - int(r["vtgt"][0] * W)) <= 1 and abs(int(f["vtgt"][1] * H) - int(r["vtgt"][1] * H)) <= 1)
    checks["video_fallback_box_centre"] = near == n

    # the batched loss against the naive one, and learnable (2 records, 20 Adam steps on it alone: under half)
    store = {}
    hk = model.model.language_model.layers[layer].self_attn.register_forward_pre_hook(lambda m_, args: store.__setitem__("attn_in", args[:3]))
    fwd = lambda bb: model(**{k: v for k, v in bb.items() if k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw", "position_ids")})  # noqa: E731
    with torch.no_grad():
        fwd(b)
        got = train.attn_loss({"aux_attn": b["aux_vattn"]}, store, model.model.language_model.layers[layer].self_attn, heads_n)
        x_in, cos, sin = store["attn_in"]
        ref = torch.cat([naive_pointer(model, layer, heads_n, x_in, cos, sin, i, P[i][Pok[i]].tolist(), Tm[i].nonzero().flatten().tolist())
                         for i in range(n)]).mean()
    checks["video_pointer_equals_naive"] = abs(float(got) - float(ref)) < 1e-4 * max(1.0, abs(float(ref)))
    checks["video_pointer_values"] = {"batched": round(float(got), 6), "naive": round(float(ref), 6)}
    two = [recs[0], recs[-1]]
    b2 = train.make_batch(two, pix, 0, "cpu", model=model, merge=2, image_token_id=model.image_token_id, video=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    first, curve = None, []
    # the loss reads only the pointer layer's attention inputs: stop the forward there (the layers above it, the LM
    # head and their backward would cost half of this check and change nothing it measures)
    stop = model.model.language_model.layers[layer].self_attn.register_forward_pre_hook(_stop_forward)
    for _ in range(20):
        store.clear()
        try:
            fwd(b2)
        except _StopForward:
            pass
        loss = train.attn_loss({"aux_attn": b2["aux_vattn"]}, store, model.model.language_model.layers[layer].self_attn, heads_n)
        first = float(loss.detach()) if first is None else first
        curve.append(round(float(loss.detach()), 3))
        opt.zero_grad()
        loss.backward()
        opt.step()
    hk.remove()
    stop.remove()
    checks["video_pointer_learnable"] = float(loss) < 0.5 * first
    checks["video_pointer_curve"] = {"start": round(first, 4), "end": round(float(loss), 4), "steps": curve}


def check_mrope(checks, model, b):
    """train.with_mrope_section: text-only logits unchanged (a text token has t = h = w), a batch with an image changed,
    the split written in the config, a split that does not cover head_dim refused; onnx_weights.rope_mismatch refuses a
    graft of weights trained under another split and accepts one under the same."""
    import onnx_weights
    sec = model.config["text_config"]["rope_parameters"]["mrope_section"]
    new = [1, sec[1], sec[2] + sec[0] - 1]
    other = train.with_mrope_section(model, new)
    keys = ("input_ids", "attention_mask", "pixel_values", "image_grid_thw")
    first_img = int((b["input_ids"][0] == model.image_token_id).nonzero().flatten()[0])
    text_ids = b["input_ids"][:1, :first_img]  # the prompt before the image: text only
    with torch.no_grad():
        t0, t1 = model(input_ids=text_ids).logits, other(input_ids=text_ids).logits
        i0, i1 = model(**{k: b[k] for k in keys}).logits, other(**{k: b[k] for k in keys}).logits
    checks["mrope_text_unchanged"] = bool(torch.allclose(t0, t1, atol=1e-5))
    img_diff = float((i0 - i1).abs().max())
    checks["mrope_image_changed"] = img_diff > 1e-4
    checks["mrope_values"] = {"text_max_diff": float((t0 - t1).abs().max()), "image_max_diff": round(img_diff, 6), "split": new}
    checks["mrope_config"] = other.config["text_config"]["rope_parameters"]["mrope_section"] == new and model.config["text_config"]["rope_parameters"]["mrope_section"] == sec
    try:
        train.with_mrope_section(model, [sec[0], sec[1], sec[2] + 1])
        checks["mrope_bad_split_refused"] = False
    except ValueError:
        checks["mrope_bad_split_refused"] = True
    d = tempfile.mkdtemp()
    try:
        here = os.path.join(d, "model")
        os.makedirs(here)
        with open(os.path.join(here, "config.json"), "w") as f:
            json.dump(model.config, f)
        with open(os.path.join(d, "same.json"), "w") as f:
            json.dump(model.config, f)
        with open(os.path.join(d, "other.json"), "w") as f:
            json.dump(other.config, f)
        checks["graft_rope_guard"] = (onnx_weights.rope_mismatch(here, os.path.join(d, "same.json")) is None
                                      and "export" in (onnx_weights.rope_mismatch(here, os.path.join(d, "other.json")) or ""))
        # without --config, the config.json beside the grafted weights is the run's: refused before any graph is read
        run = os.path.join(d, "run")
        os.makedirs(run)
        shutil.copy(os.path.join(d, "other.json"), os.path.join(run, "config.json"))
        open(os.path.join(run, "w.safetensors"), "wb").close()
        r = subprocess.run([sys.executable, os.path.join(HERE, "onnx_weights.py"), "--model", here, "--graft",
                            os.path.join(run, "w.safetensors"), "--out", os.path.join(d, "out")], capture_output=True, text=True)
        checks["graft_rope_guard_beside"] = r.returncode != 0 and "export.py" in r.stderr and not os.path.exists(os.path.join(d, "out"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def check_export_q8(checks, model, tk, tok_dir):
    """train.write_model with `--export q8` alone: the check (check_and_parity) reads the fp32 graphs, so they must
    exist while it runs and be gone after. transformers, onnx and the exporter are not installable where this runs
    (Debian's apt has no transformers), so stand-ins take their place here: they only write empty files for the dtypes
    they are asked for, as make_tiny_qwen25vl.export_onnx leaves them, and record what the check saw."""
    import types
    seen = {}
    names = ("embed_tokens", "vision_encoder", "decoder_model_merged")

    def export_onnx(hf, out, dtypes, log):
        seen["dtypes"] = sorted(dtypes)
        os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
        for n in names:
            for d, suffix in (("fp32", ""), ("q8", "_quantized")):
                if d in dtypes:
                    open(os.path.join(out, "onnx", f"{n}{suffix}.onnx"), "wb").close()
        return {}

    def check_and_parity(hf, out, *a, **k):
        seen["fp32_at_check"] = all(os.path.exists(os.path.join(out, "onnx", f"{n}.onnx")) for n in names)
        return {"stand-in": True}

    class Cfg:
        def __init__(self, **c):
            self.text_config = types.SimpleNamespace(eos_token_id=1, pad_token_id=0)

    class HF:
        def __init__(self, cfg):
            pass

        def eval(self):
            return self

        def load_state_dict(self, sd, strict=False):
            return [], []

    stand_ins = {"transformers": types.SimpleNamespace(Qwen2_5_VLConfig=Cfg, Qwen2_5_VLForConditionalGeneration=HF),
                 "onnx": types.SimpleNamespace(),
                 "make_tiny_qwen25vl": types.SimpleNamespace(export_onnx=export_onnx, write_model_files=lambda *a, **k: None,
                                                             check_and_parity=check_and_parity, render_with_jinja=lambda t: None,
                                                             QWEN_VL_TEMPLATE="", synthetic_images=lambda: {})}
    before = {k: sys.modules.get(k) for k in stand_ins}
    d = tempfile.mkdtemp()
    try:
        sys.modules.update(stand_ins)
        check = train.write_model(model, d, tok_dir, "q8", tk)
        left = sorted(os.listdir(os.path.join(d, "onnx")))
        checks["export_q8_only"] = (seen.get("fp32_at_check") is True and check == {"stand-in": True}
                                    and left == sorted(f"{n}_quantized.onnx" for n in names) and "q8" in seen.get("dtypes", []))
        checks["export_q8_only_detail"] = {"exported": seen.get("dtypes"), "fp32_at_check": seen.get("fp32_at_check"), "left": left}
    finally:
        for k, v in before.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl"))
    ap.add_argument("--left-scenes", help="a loupe-synth folder with left-of image samples: also check --option-swap's draws on them")
    ap.add_argument("--video-scenes", help="a loupe-synth folder with video samples: also check --video-pointer's targets on them")
    a = ap.parse_args()
    torch.manual_seed(0)
    from tok import load_hf_style
    tk = load_hf_style(a.model)
    model = qt.QwenVL(json.load(open(os.path.join(a.model, "config.json"))))
    checks = {}

    grid = (1, 12, 8)  # merged 6 x 4 tokens
    box = [0.5, 0.7, 0.7, 0.9]  # centre (0.6, 0.8) -> merged row 4, col 2
    recs = [build_record(tk, grid, box), build_record(tk, grid, [0.0, 0.0, 0.2, 0.1])]
    recs[1]["qid"] = "check-1"
    pix = {"img": torch.randint(0, 255, (grid[1] * 14, grid[2] * 14, 3), dtype=torch.uint8)}
    n = train.annotate(recs, tk)
    r = recs[0]
    s, e = r["box_at"]
    box_text = tk.decode(r["ids"][s:e])
    checks["annotate"] = n == 2 and abs(r["tgt"][0] - 0.6) < 1e-9 and abs(r["tgt"][1] - 0.8) < 1e-9 and box_text.replace(" ", "").startswith("0.5,0.7,0.7,0.9]")
    if not checks["annotate"]:
        checks["annotate_detail"] = {"tgt": r["tgt"], "box_text": box_text}

    b = train.make_batch(recs, pix, 0, "cpu", model=model, box_weight=3.0, merge=2, image_token_id=model.image_token_id)
    b_first = b
    rows, P, Pok, T = b["aux_attn"]
    img_at = (b["input_ids"][0] == model.image_token_id).nonzero().flatten()
    H, W = 6, 4
    want0 = sorted(int(img_at[rr * W + cc]) for rr in (3, 4, 5) for cc in (1, 2, 3))
    img_at1 = (b["input_ids"][1] == model.image_token_id).nonzero().flatten()
    want1 = sorted(int(img_at1[rr * W + cc]) for rr in (0, 1) for cc in (0, 1))  # centre (0.1, 0.05) -> row 0, col 0: clipped
    checks["pointer_targets"] = T[0].nonzero().flatten().tolist() == want0 and T[1].nonzero().flatten().tolist() == want1
    first_q = r["spans"][0][0] - 1
    checks["pointer_queries"] = int(P[0, 0]) == first_q and int(Pok[0].sum()) == e - 1 - first_q
    rws, cols, xy = b["aux_pos"]
    q = torch.arange(H * W)
    checks["position_targets"] = (torch.equal(cols[:H * W], img_at) and
                                  torch.allclose(xy[:H * W], torch.stack([(q % W + 0.5) / W, (q // W + 0.5) / H], -1)))
    ref_pos, _ = model.rope_index(b["input_ids"], b["image_grid_thw"], None, b["attention_mask"])
    checks["position_ids"] = torch.equal(b["position_ids"], ref_pos)
    checks["read_targets"] = torch.allclose(b["aux_read"], torch.tensor([[0.6, 0.8], [0.1, 0.05]]))
    checks["box_weight"] = float(b["weights"][0, s:e].min()) == 3.0 and float(b["weights"][0, :s].max()) == 1.0

    layer, heads_n = 1, 2
    store = {}
    model.model.language_model.layers[layer].self_attn.register_forward_pre_hook(lambda m_, args: store.__setitem__("attn_in", args[:3]))
    model(**{k: v for k, v in b.items() if k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw", "position_ids")})
    store_r = {}
    hk = model.model.language_model.layers[-1].register_forward_hook(lambda m_, i_, o: store_r.__setitem__("read", o))
    with torch.no_grad():
        model(**{k: v for k, v in b.items() if k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw", "position_ids")})
    hk.remove()
    heads = train.AuxHeads(model.model.visual.merger.mlp[2].out_features, model.tc["hidden"])
    rd = train.aux_losses({**b, "aux_tgt": None, "aux_pos": None}, store_r, heads)
    checks["read_loss"] = set(rd) == {"read"} and bool(torch.isfinite(rd["read"])) and float(rd["read"]) > 0
    got = train.attn_loss(b, store, model.model.language_model.layers[layer].self_attn, heads_n)
    x_in, cos, sin = store["attn_in"]
    refs = [naive_pointer(model, layer, heads_n, x_in, cos, sin, i, P[i][Pok[i]].tolist(), T[i].nonzero().flatten().tolist()) for i in range(2)]
    ref = torch.cat(refs).mean()  # attn_loss averages over all valid (row, head, query) triples
    got, ref = got.detach(), ref.detach()
    checks["pointer_equals_naive"] = abs(float(got) - float(ref)) < 1e-4 * max(1.0, abs(float(ref)))
    checks["pointer_values"] = {"batched": round(float(got), 6), "naive": round(float(ref), 6)}

    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = None
    for _ in range(40):
        store.clear()
        model(**{k: v for k, v in b.items() if k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw", "position_ids")})
        loss = train.attn_loss(b, store, model.model.language_model.layers[layer].self_attn, heads_n)
        first = float(loss.detach()) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    checks["pointer_learnable"] = float(loss) < 0.5 * first
    checks["pointer_curve"] = {"start": round(first, 4), "end": round(float(loss), 4)}

    # ---- reading signals: crop_target, neighbourhood
    def rec(kind="zoom", n_img=2, category="ring-digits", answer="2653", n_spans=2):
        return {"kind": kind, "category": category, "answer": answer, "spans": [[5, 9], [20, 30]][:n_spans],
                "images": [{"grid": [1, 12, 8]}, {"grid": [1, 10, 14]}][:n_img]}
    close = lambda got, want: got is not None and all(abs(g - w_) < 1e-9 for g, w_ in zip(got, want))
    c, gl = train.crop_target(rec(), (0.40, 0.40, 0.50, 0.50))  # crop [0.3, 0.3, 0.6, 0.6], centre (0.45, 0.45) -> (0.5, 0.5)
    # box at the top-left border: padded (-0.08, -0.05, 0.18, 0.22) -> clamped crop [0, 0, 0.18, 0.22];
    # centre (0.05, 0.085) -> ((0.05 - 0) / 0.18, (0.085 - 0) / 0.22) = (5/18, 17/44)
    c2, _ = train.crop_target(rec(), (0.02, 0.05, 0.08, 0.12))
    # box at the bottom-right border: padded (0.8, 0.82, 1.08, 1.09) -> clamped crop [0.8, 0.82, 1, 1];
    # centre (0.94, 0.955) -> ((0.94 - 0.8) / 0.2, (0.955 - 0.82) / 0.18) = (0.7, 0.75)
    c3, _ = train.crop_target(rec(), (0.90, 0.92, 0.98, 0.99))
    checks["crop_target_centre"] = close(c, (0.5, 0.5)) and close(c2, (5 / 18, 17 / 44)) and close(c3, (0.7, 0.75))
    g7 = train.crop_target(rec(answer="7"), (0.4, 0.4, 0.5, 0.5))[1]
    gU = train.crop_target(rec(category="tag-letter", answer="U"), (0.4, 0.4, 0.5, 0.5))[1]
    g3 = train.crop_target(rec(category="box-dots", answer="3"), (0.4, 0.4, 0.5, 0.5))[1]  # a dot count is one glyph: the number
    checks["crop_target_glyphs"] = gl == [2, 6, 5, 3] and g7 == [7, 36, 36, 36] and gU == [30, 36, 36, 36] and g3 == [3, 36, 36, 36] and len(train.GLYPHS) == 36
    nones = [train.crop_target(x, (0.4, 0.4, 0.5, 0.5)) for x in
             (rec(kind="recover"), rec(n_img=1), rec(category="left-of", answer="A"), rec(answer="12345"), rec(n_spans=1))]
    checks["crop_target_none"] = all(x == (None, None) for x in nones)
    if not (checks["crop_target_centre"] and checks["crop_target_glyphs"] and checks["crop_target_none"]):
        checks["crop_target_detail"] = {"centres": [c, c2, c3], "glyphs": [gl, g7, gU], "none": [x[0] for x in nones]}
    checks["neighbourhood"] = (train.neighbourhood(0, 0, 5, 7) == [0, 0, 1, 0, 0, 1, 7, 7, 8] and       # corner: clamped, repeats
                               train.neighbourhood(2, 3, 5, 7) == [9, 10, 11, 16, 17, 18, 23, 24, 25] and  # middle: rows 1-3 x cols 2-4
                               train.neighbourhood(4, 6, 5, 7) == [26, 27, 27, 33, 34, 34, 33, 34, 34])    # far corner

    # ---- reading signals in make_batch: two whole zoom trajectories around a one-image record
    g0, g1 = (1, 12, 8), (1, 10, 14)  # global: merged 6 x 4 = 24 tokens; crop: merged 5 x 7 = 35 tokens
    n0, H1, W1 = 24, 5, 7
    zrecs = [build_zoom_record(tk, g0, g1, [0.40, 0.40, 0.50, 0.50], "2653", "ring-digits"),  # crop centre (0.5, 0.5) -> row 2, col 3
             build_record(tk, g0, [0.5, 0.7, 0.7, 0.9]),                                      # one image: no reading signals
             build_zoom_record(tk, g0, g1, [0.0, 0.0, 0.02, 0.02], "U", "tag-letter")]         # crop [0, 0, 0.12, 0.12]: centre (1/12, 1/12) -> row 0, col 0
    for j, z in enumerate(zrecs):
        z["qid"] = f"check-z{j}"
        z["images"] = [{**im, "key": f"z{j}-{im['key']}"} for im in z["images"]]
        for im in z["images"]:
            pix[im["key"]] = torch.randint(0, 255, (im["grid"][1] * 14, im["grid"][2] * 14, 3), dtype=torch.uint8)
    zrecs[1]["answer"] = "7"
    train.annotate(zrecs, tk)
    checks["annotate_crop_target"] = (close(zrecs[0]["ctgt"], (0.5, 0.5)) and zrecs[0]["glyph"] == [2, 6, 5, 3] and zrecs[1]["ctgt"] is None
                                      and close(zrecs[2]["ctgt"], (1 / 12, 1 / 12)) and zrecs[2]["glyph"] == [30, 36, 36, 36])
    bz = train.make_batch(zrecs, pix, 0, "cpu", model=model, merge=2, image_token_id=model.image_token_id)
    # merged-token offsets in the tower's output: z0 global 0..23, z0 crop 24..58, z1 global 59..82, z2 global 83..106, z2 crop 107..141
    want_g = [[24 + rr * W1 + cc for rr in (1, 2, 3) for cc in (2, 3, 4)],
              [107 + rr * W1 + cc for rr in (0, 0, 1) for cc in (0, 0, 1)]]  # corner: row/col -1 clamped to 0, tokens repeat
    gidx, glab = bz["aux_glyph"]
    checks["glyph_rows"] = gidx.tolist() == want_g and glab.tolist() == [[2, 6, 5, 3], [30, 36, 36, 36]]
    bw = train.make_batch(zrecs, pix, 0, "cpu", model=model, merge=2, image_token_id=model.image_token_id, answer_weight=4.0)["weights"]
    s_last, e_last = zrecs[0]["spans"][-1]
    checks["answer_weight"] = (float(bw[0, s_last:e_last].min()) == 4.0 and float(bw[0, :s_last].max()) == 1.0
                               and float(bz["weights"][0].max()) == 1.0)
    vis_store = {}
    hv = model.model.visual.register_forward_hook(lambda m_, i_, o: vis_store.__setitem__("vis", o))
    with torch.no_grad():
        vis_all = model.model.visual(bz["pixel_values"], bz["image_grid_thw"])
        crop_alone = model.model.visual(train.patches(pix[zrecs[0]["images"][1]["key"]], "cpu"), torch.tensor([g1]))
    hv.remove()
    crop_feats = crop_alone[[rr * W1 + cc for rr in (1, 2, 3) for cc in (2, 3, 4)]]
    checks["glyph_rows_are_crop_tokens"] = vis_all.shape[0] == 142 and torch.allclose(vis_all[gidx[0]], crop_feats, atol=1e-5)
    rows2, P2, Pok2, T2 = bz["aux_attn2"]
    want_k, want_q = [], []
    for j, (rr_, cc_) in ((0, ((1, 2, 3), (2, 3, 4))), (2, ((0, 1), (0, 1)))):
        img_at_z = (bz["input_ids"][j] == model.image_token_id).nonzero().flatten()
        crop_at = img_at_z[n0:]
        want_k.append([int(crop_at[rr * W1 + cc]) for rr in rr_ for cc in cc_])  # 9 tokens; 4 distinct at the corner
        s1, e1 = zrecs[j]["spans"][1]
        want_q.append(list(range(s1 - 1, e1 - 1)))
    reading_text = tk.decode(zrecs[0]["ids"][want_q[0][0] + 1:want_q[0][-1] + 1])
    checks["attn2_keys"] = (rows2.tolist() == [0, 2] and [T2[j].nonzero().flatten().tolist() for j in range(2)] == want_k
                            and len(img_at_z) == n0 + H1 * W1 and all(int(bz["input_ids"][2, k]) == model.image_token_id for k in want_k[1]))
    checks["attn2_queries"] = [P2[j][Pok2[j]].tolist() for j in range(2)] == want_q and reading_text.startswith("The ring shows")
    rows1, _, _, T1 = bz["aux_attn"]
    want_k1 = []
    for j, (rr_, cc_) in ((0, ((1, 2, 3), (0, 1, 2))), (1, ((3, 4, 5), (1, 2, 3))), (2, ((0, 1), (0, 1)))):  # centres (0.45,0.45), (0.6,0.8), (0.01,0.01) on 6 x 4
        img_at_z = (bz["input_ids"][j] == model.image_token_id).nonzero().flatten()
        want_k1.append(sorted(int(img_at_z[rr * 4 + cc]) for rr in rr_ for cc in cc_))
    checks["attn_keys_global_view"] = rows1.tolist() == [0, 1, 2] and [T1[j].nonzero().flatten().tolist() for j in range(3)] == want_k1

    store.clear()
    with torch.no_grad():
        model(**{k: v for k, v in bz.items() if k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw", "position_ids")})
        got2 = train.attn_loss({"aux_attn": bz["aux_attn2"]}, store, model.model.language_model.layers[layer].self_attn, heads_n)
        x_in, cos, sin = store["attn_in"]
        ref2 = torch.cat([naive_pointer(model, layer, heads_n, x_in, cos, sin, int(rows2[j]), P2[j][Pok2[j]].tolist(), T2[j].nonzero().flatten().tolist())
                          for j in range(2)]).mean()
    checks["attn2_equals_naive"] = abs(float(got2) - float(ref2)) < 1e-4 * max(1.0, abs(float(ref2)))
    checks["attn2_values"] = {"batched": round(float(got2), 6), "naive": round(float(ref2), 6)}

    heads = train.AuxHeads(model.model.visual.merger.mlp[2].out_features, model.tc["hidden"])
    hv = model.model.visual.register_forward_hook(lambda m_, i_, o: vis_store.__setitem__("vis", o))
    opt = torch.optim.Adam(list(model.model.visual.parameters()) + list(heads.glyph.parameters()), lr=3e-3)
    curve = []
    for _ in range(40):
        vis_store.clear()
        model.model.visual(bz["pixel_values"], bz["image_grid_thw"])
        out = train.aux_losses({**bz, "aux_tgt": None, "aux_pos": None, "aux_attn": None}, vis_store, heads)
        curve.append((float(out["glyph"].detach()), float(out["glyph_exact"])))
        opt.zero_grad()
        out["glyph"].backward()
        opt.step()
    hv.remove()
    # a per-slot bias alone gets to ln 2 (each slot is one of two classes here); exact on both needs the crop tokens
    checks["glyph_learnable"] = set(out) == {"glyph", "glyph_exact"} and curve[-1][0] < 0.5 * curve[0][0] and curve[-1][1] == 1.0
    checks["glyph_curve"] = {"start": round(curve[0][0], 4), "end": round(curve[-1][0], 4), "exact_start": curve[0][1], "exact_end": curve[-1][1]}

    model.eval()
    rd_ev = train.read_eval(model, [zrecs[0]], pix, tk, "cpu", [2, 0])
    checks["read_eval_runs_only"] = set(rd_ev) == {"n", "acc", "consistent"} and rd_ev["n"] == 1 and 0 <= rd_ev["acc"] <= 1 and 0 <= rd_ev["consistent"] <= 1
    checks["read_eval_values"] = rd_ev

    # ---- pretrain_reading.py --scenes: crops cut on the fly
    import random, tempfile
    import numpy as np
    from PIL import Image
    import pr_env as E
    import pretrain_reading as PRd
    with tempfile.TemporaryDirectory() as d:
        W0, H0, px = 420, 336, [300, 8, 324, 38]  # 141120 px: eval_initial scales it up by 1.2 x 1.25
        raw = np.full((H0, W0, 3), 200, np.uint8)
        raw[px[1]:px[3], px[0]:px[2]] = (230, 20, 20)
        os.makedirs(os.path.join(d, "images"))
        Image.fromarray(raw).save(os.path.join(d, "images", "s0.png"))
        sample = {"qid": "chk-0", "category": "ring-digits", "answer": "305", "image": "images/s0.png", "width": W0, "height": H0,
                  "target": {"px": px, "norm": [round(px[0] / W0, 4), round(px[1] / H0, 4), round(px[2] / W0, 4), round(px[3] / H0, 4)]}}
        with open(os.path.join(d, "samples.jsonl"), "w") as f:
            f.write(json.dumps(sample) + "\n" + json.dumps({**sample, "qid": "chk-1", "category": "left-of"}) + "\n")
        scs, skipped = PRd.read_scenes(d)
        sc = PRd.load_scene(scs[0])
        hits, bad = 0, []
        for k in range(16):
            img, grid, (cx, cy), glyph, cat, _ = PRd.draw(sc, random.Random(k), train.MAX_PIXELS)
            h, w = img.shape[:2]
            r, g, b = img[int(cy * h), int(cx * w)].tolist()
            ok_k = r > 180 and g < 80 and b < 80 and [1, h // 14, w // 14] == grid and h * w <= train.MAX_PIXELS
            hits += ok_k
            if not ok_k:
                bad.append({"k": k, "centre": [round(cx, 3), round(cy, 3)], "rgb": [r, g, b], "size": [w, h]})
        rng = random.Random(99)
        bbox = PRd.call_box(rng, sc["norm"])
        mine = PRd.cut(sc, bbox, train.MAX_PIXELS)[0].numpy()
        ep = E.Episode(os.path.join(d, "images", "s0.png"), "eval")
        call = '<tool_call>\n' + json.dumps({"name": "crop_image_normalized", "arguments": {"bbox_2d": bbox, "target_image": 1}}) + '\n</tool_call>'
        _, outs, _ = ep.step("", call)
        ref = np.array(E.engine_resize(outs[0], train.MAX_PIXELS)) if outs else None
    checks["scene_crop_centre_on_target"] = (hits == 16 and len(scs) == 1 and skipped == 1 and glyph == [3, 0, 5, 36] and cat == "ring-digits"
                                             and sc["size"] == [504, 420] and sc["region"].size != tuple(sc["size"]))
    checks["scene_crop_equals_episode"] = ref is not None and ref.shape == mine.shape and bool((ref == mine).all())
    if not (checks["scene_crop_centre_on_target"] and checks["scene_crop_equals_episode"]):
        checks["scene_crop_detail"] = {"bad": bad, "size": sc["size"], "region": list(sc["region"].size), "bbox": bbox}

    if a.left_scenes:
        check_option_swap(checks, tk, a.left_scenes, a.model)
        check_copy(checks, model, tk, a.left_scenes, a.model, b_first)
    if a.video_scenes:
        check_video(checks, model, tk, a.video_scenes, a.model, layer, heads_n)

    # ---- --mrope-section: the same weights under another split of the rotary frequencies
    check_mrope(checks, model, b_first)
    check_export_q8(checks, model, tk, a.model)

    ok = all(v for k, v in checks.items() if isinstance(v, bool))
    print(json.dumps({"ok": ok, "checks": checks}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
