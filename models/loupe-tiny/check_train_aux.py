#!/usr/bin/env python3
"""Checks train.py's auxiliary losses on a hand-built trajectory with the tiny random model (CPU, a few seconds):

1. annotate(): the target centre is the first crop box's centre, box_at covers exactly the four box numbers.
2. make_batch(): the pointer targets are the target's merged token and its neighbours (clipped at the border); the
   position targets are each global-view token's own centre; cached position ids equal rope_index's.
3. attn_loss() (batched) equals a naive per-query recomputation of the layer's attention probabilities, row by row.
4. The pointer loss can be learned: 40 Adam steps on it alone cut it by more than half.

Prints one JSON line {"ok": bool, "checks": {...}} and exits 1 on any failure.
  python3 models/loupe-tiny/check_train_aux.py [--model models/tiny-random-qwen25vl]
"""
import argparse, json, os, sys

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
    text = (f"I can see the red ring {train.where(cx, cy)}, but the digits inside it are too small to read at this size. Let me zoom in.\n"
            f'<tool_call>\n{{"name": "crop_image_normalized", "arguments": {{"bbox_2d": [{", ".join(train.fmt(v) for v in box)}], "target_image": 1}}}}\n</tool_call>')
    ids += tk.encode(text).ids + [im_end]
    return {"qid": "check-0", "kind": kind, "category": category, "ids": ids, "spans": [[s0, len(ids)]],
            "images": [{"key": "img", "grid": list(grid), "file": "img.png"}]}


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(os.path.dirname(HERE), "tiny-random-qwen25vl"))
    a = ap.parse_args()
    torch.manual_seed(0)
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
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

    ok = all(v for k, v in checks.items() if isinstance(v, bool))
    print(json.dumps({"ok": ok, "checks": checks}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
