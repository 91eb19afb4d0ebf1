#!/usr/bin/env python3
"""Where left-of's reading turn goes wrong: the copy, the compare or the answer (scene_traj.option_pointer's three
look-backs), teacher-forced on fresh draws of a loupe-synth folder's left-of scenes.

For every look-back of every draw (the gold trajectory fed whole, as in training), two numbers:
- pointer: the attention mass the first --heads query heads of text layer --layer put on the look-back's key (the
  option's letter in the question, the letter read, the last option's letter), the very quantity train.py's text
  pointer (--aux-digit, --aux-digit-layer) pushes up; and whether that key gets the most attention of all keys;
- next token: whether the model's most likely next token at the query is the gold one (the copied letter, ":" or ",",
  the boxed letter).
So a copy that fails with its pointer on the right key is the value path's failure (the letter found but not carried
to the output), and one whose pointer is elsewhere is the lookup's.

  python3 models/loupe-tiny/probe_option_copy.py --model MODEL_DIR --scenes SYNTH_DIR [--n 80] [--layer 3] [--heads 2]
      [--swap 0.5] [--seed 1] [--json OUT.json]

MODEL_DIR holds model.safetensors and config.json (a training run's out folder, or models/loupe-tiny/model); SYNTH_DIR
is `loupe synth` output (validation seeds only). Runs on the CPU in a minute or two.
"""
import argparse, json, os, random, sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen_torch as qt  # noqa: E402
import scene_traj  # noqa: E402
import train as T  # noqa: E402

KINDS = ("copy", "compare", "answer")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--scenes", required=True)
    ap.add_argument("--n", type=int, default=80, help="draws (left-of scenes taken in turn)")
    ap.add_argument("--layer", type=int, default=3, help="the text layer whose attention is read (train.py --aux-digit-layer)")
    ap.add_argument("--heads", type=int, default=2, help="how many of its first query heads (train.py --aux-attn-heads)")
    ap.add_argument("--swap", type=float, default=0.5, help="share of draws with the options in the other order")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    for f in ("model.safetensors", "config.json"):
        if not os.path.exists(os.path.join(a.model, f)):
            raise SystemExit(f"probe_option_copy.py: {a.model} has no {f}")
    if not os.path.exists(os.path.join(a.scenes, "samples.jsonl")):
        raise SystemExit(f"probe_option_copy.py: {a.scenes} has no samples.jsonl (want `loupe synth` output)")
    torch.set_num_threads(a.threads)
    tok_dir = a.model if os.path.exists(os.path.join(a.model, "tokenizer.json")) else os.path.join(HERE, "model")
    model = qt.QwenVL.from_pretrained(a.model, dtype=torch.float32, device="cpu").eval()
    layers = model.model.language_model.layers
    if not -len(layers) <= a.layer < len(layers):
        raise SystemExit(f"probe_option_copy.py: --layer {a.layer}: the model has {len(layers)} text layers")
    store = {}
    layers[a.layer].self_attn.register_forward_pre_hook(lambda m, args: store.__setitem__("attn_in", (args[0], args[1], args[2])))
    scene_traj.OPTION_SWAP = a.swap
    scenes = [sc for sc in scene_traj.load_scenes([a.scenes], T.MAX_PIXELS, 2, video=False) if sc["sample"]["category"] == "left-of"]
    if not scenes:
        raise SystemExit(f"probe_option_copy.py: no left-of samples in {a.scenes}")
    tok, enc = scene_traj.encoder(tok_dir, T.MAX_PIXELS)
    pad = json.load(open(os.path.join(a.model, "config.json")))["text_config"].get("pad_token_id", 0) or 0
    rng = random.Random(a.seed)
    stats = {k: {"n": 0, "mass": 0.0, "top": 0, "next": 0} for k in KINDS}
    both = {"pointer right, token wrong": 0, "pointer wrong, token right": 0, "both right": 0, "both wrong": 0}
    draws, worst = 0, 0.0
    for i in range(a.n):
        got = scene_traj.draw(scenes[i % len(scenes)], rng, enc, tok, T.MAX_PIXELS)
        if got is None or not got[0].get("text_ptr"):
            continue
        rec, pix = got
        ptr = rec["text_ptr"]
        b = T.make_batch([rec], pix, pad, "cpu", model=model, merge=model.vc["merge"], image_token_id=model.image_token_id)
        store.clear()
        with torch.no_grad():
            out = model(**{k: v for k, v in b.items() if k not in T.AUX_KEYS})
            x, cos, sin = store["attn_in"]
            m = layers[a.layer].self_attn
            hd, H, KV = m.hd, m.h, m.kv
            L = x.shape[1]
            k_ = torch.nn.functional.linear(x[0].float(), m.k_proj.weight.float(), m.k_proj.bias.float()).view(L, KV, hd)
            c, s_ = cos[0, 0, :L].float(), sin[0, 0, :L].float()
            k_ = k_ * c[:, None] + qt._rot(k_) * s_[:, None]
            q_ = torch.nn.functional.linear(x[0].float(), m.q_proj.weight.float(), m.q_proj.bias.float()).view(L, H, hd)
            q_ = q_ * c[:, None] + qt._rot(q_) * s_[:, None]
            # the same pointers through train.py's own loss: -mean log mass over heads and look-backs must be it
            trained = float(T.attn_loss({"aux_attn": T.pointer_rows([(0, [q], keys) for q, keys in ptr], "cpu")}, store, m, min(a.heads, H)))
        ids = rec["ids"]
        draws += 1
        logs = []
        for kind, (q, keys) in zip((T.option_pointer_kind(k, len(ptr)) for k in range(len(ptr))), ptr):
            heads = range(min(a.heads, H))
            att = torch.stack([torch.softmax((k_[: q + 1, h // (H // KV)] @ q_[q, h]) * hd ** -0.5, -1) for h in heads])  # [nh, q+1]
            logs += [float(torch.log(att[j, keys].sum())) for j in range(att.shape[0])]
            mass = float(att[:, keys].sum(-1).mean())
            top = int(all(int(att[j].argmax()) in keys for j in range(att.shape[0])))
            nxt = int(int(out.logits[0, q].argmax()) == ids[q + 1])
            st = stats[kind]
            st["n"] += 1
            st["mass"] += mass
            st["top"] += top
            st["next"] += nxt
            if kind == "copy":
                both[("both right" if nxt else "pointer right, token wrong") if top else ("pointer wrong, token right" if nxt else "both wrong")] += 1
        worst = max(worst, abs(-sum(logs) / len(logs) - trained))
    res = {"model": a.model, "scenes": a.scenes, "draws": draws, "layer": a.layer, "heads": a.heads,
           "by_kind": {k: {"n": v["n"], "mean_mass_on_key": round(v["mass"] / max(1, v["n"]), 3), "key_is_argmax": v["top"],
                           "next_token_right": v["next"]} for k, v in stats.items()},
           "copies": both, "max_diff_vs_train_pointer_loss": worst}
    text = json.dumps(res, indent=1)
    if a.json:
        open(a.json, "w").write(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
