#!/usr/bin/env python3
"""loupe-tiny RL phase: GRPO with Pixel Reasoner's curiosity-driven reward, on loupe-synth scenes, through pr_env.py
(the pixel-reasoner protocol in Python, checked against Loupe's golden vectors by check_pr_env.py) and qwen_torch.py
(Qwen2.5-VL in plain torch; no Hugging Face transformers, so it runs on Debian's python3-torch 1.13 too).

  rl.py --model DIR --scenes DIR[,DIR] --out OUT [--steps 50] [--group 8] [--scenes-per-step 4] [--lr 1e-5]
        [--minutes 5] [--device cuda|cpu] [--seed 0] [--variant pr-code|paper] [--eval-scenes DIR] [--eval-n 40]
  rl.py --model DIR --scenes DIR --check-manifest PREP_DIR [--max-pixels 100352]
        replays a prepare.ts manifest's assistant texts through this file's rendering, tokenizer, pr_env and engine
        preprocessing, and compares token ids, image grids, observations and pixels with what prepare.ts recorded

One step: K scenes; for each, G rollouts of up to --max-turns assistant turns (turn 1 sampled for all G rows at once from
one prefill at T=1.0, top-p 0.95; later turns per row at T=0.9: PR's training sampling, less its top-k 40). A turn whose
text (stop string excluded) ends with </tool_call> is executed by pr_env (eval-mode geometry: what prepare.ts and Loupe's
evaluation use); a malformed call becomes PR's "Execution error" observation. The next turn's prompt is the previous ids +
the generated ids + the tokens of `<|im_end|>\\n<|im_start|>user\\n{observation}<|vision_start|><|image_pad|>...<|vision_end|>
<|im_end|>\\n<|im_start|>assistant\\n` (the chat template's rendering; --check-manifest shows it reproduces prepare.ts's ids).
Accuracy = PR rule_reward (pr_env.pr_reward: string steps exact, math_verify approximated as Loupe's pr.boxed scorer),
in {1, 0, -1}. Reward = curiosity shaping of the group (--variant, pr_env.curiosity_rewards). Advantage = reward - group
mean (no std normalisation: PR's `--advantage_estimator group`). Loss = -sum_i A_i * sum_t log p(token_it) / (number of
generated tokens in the batch), on the policy's own tokens (on-policy, one AdamW update per step, so PPO's ratio is 1 and
clipping never acts). No KL term by default (PR trains with --init_kl_coef 0); --kl B adds B * KL(policy || start) per
generated token (k3 estimator, a frozen copy of the starting model: twice the memory), an anchor for small models on few
scenes.

Writes OUT/metrics.jsonl (one line per step; eval lines have "eval": true), OUT/curves.png (matplotlib if present),
OUT/samples.jsonl (a few rollouts per step), OUT/model/ (config.json + model.safetensors, qwen_torch.save_pretrained).
Console lines are verl-style: step:N - reward/mean:... - acc:... - rapr:... - calls/mean:... - response_length/mean:...
"""
import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pr_env as E  # noqa: E402
from qwen_torch import QwenVL  # noqa: E402


from tok import HFTok, PyBPE, load_tokenizer  # noqa: E402,F401  (re-exported: callers import them from rl)


# ---------------------------------------------------------------------------------------------------------------------
# encoding prompts with the engine's image-pad expansion

class Encoder:
    def __init__(self, tok, max_pixels, min_pixels=3136):
        self.tok, self.max_pixels, self.min_pixels = tok, max_pixels, min_pixels
        self.pad = tok.token_to_id("<|image_pad|>")
        self.im_end = tok.token_to_id("<|im_end|>")
        self.endoftext = tok.token_to_id("<|endoftext|>")
        # vision tokens the policy must not write: they would desynchronise the images from the pads
        self.vision = {tok.token_to_id(t) for t in ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")} - {None}

    def encode(self, text, n_pads):
        """`text` with one <|image_pad|> per image -> ids with each pad expanded to that image's token count."""
        ids = self.tok.encode(text)
        out, k = [], 0
        for i in ids:
            if i == self.pad:
                out.extend([self.pad] * n_pads[k])
                k += 1
            else:
                out.append(i)
        if k != len(n_pads):
            raise ValueError(f"text has {k} image pads, {len(n_pads)} images given")
        return out

    def image(self, im):
        pv, grid, n = E.engine_pixels(im, self.max_pixels, self.min_pixels)
        return torch.from_numpy(pv), grid, n


# ---------------------------------------------------------------------------------------------------------------------
# rollouts

def load_scenes(dirs):
    out = []
    for d in dirs:
        for line in open(os.path.join(d, "samples.jsonl")):
            if line.strip():
                s = json.loads(line)
                if not s.get("isVideo") and s.get("image"):
                    s["_image"] = os.path.join(d, s["image"])
                    out.append(s)
    if not out:
        raise SystemExit(f"rl: no image samples in {dirs}")
    return out


class Rollout:
    def __init__(self):
        self.ids = []          # full sequence (prompt + turns + observations)
        self.gen_mask = []     # 1 where the token was generated by the policy
        self.pv, self.grids = [], []
        self.texts = []        # each assistant turn's text
        self.obs = []          # each observation text
        self.calls = 0
        self.errors = 0
        self.final_error = False
        self.gen_tokens = 0
        self.stop = None
        self.text = ""         # the conversation text after the first prompt (image pads stripped), for scoring


_INITIAL = {}


def initial(enc, scene):
    """The scene's initial image and its engine pixels (cached: scenes come back every epoch)."""
    key = scene["_image"]
    if key not in _INITIAL:
        if len(_INITIAL) >= 48:
            _INITIAL.pop(next(iter(_INITIAL)))
        im = E.initial_image(key, "eval")
        _INITIAL[key] = (im, enc.image(im))
    return _INITIAL[key]


def run_group(model, enc, scene, G, args, dev, gen, temperature1, temperature_n, top_p):
    """G rollouts of one scene. Returns [Rollout]. With args.script (a list of assistant texts), row 0 of every group
    writes those texts instead of sampling (a test aid: it drives the tool path through an untrained model)."""
    init, (pv0, grid0, n0) = initial(enc, scene)
    prompt = E.render_first_turn(E.synth_question(scene), 1, "vcot")
    p_ids = enc.encode(prompt, [n0])
    eos = [enc.im_end, enc.endoftext]
    rolls, eps = [], []
    for _ in range(G):
        r = Rollout()
        r.ids, r.gen_mask, r.pv, r.grids = list(p_ids), [0] * len(p_ids), [pv0], [grid0]
        rolls.append(r)
        eps.append(E.Episode(initial=init, mode="eval"))
    active = list(range(G))
    for turn in range(args.max_turns):
        if not active:
            break
        if turn == 0:
            x = torch.tensor([p_ids] * len(active), device=dev)
            with autocast(dev):
                outs = model.generate(x, pv0.to(dev), torch.tensor([grid0], device=dev), max_new_tokens=args.max_new_tokens,
                                      eos_ids=eos, temperature=temperature1, top_p=top_p, generator=gen)
            outs = [outs[j].tolist() for j in range(len(active))]
        else:
            outs = []
            for i in active:
                r = rolls[i]
                budget = min(args.max_new_tokens, args.max_len - len(r.ids))
                if budget <= 0:
                    outs.append(None)
                    continue
                with autocast(dev):
                    o = model.generate(torch.tensor([r.ids], device=dev), torch.cat(r.pv).to(dev), torch.tensor(r.grids, device=dev),
                                       max_new_tokens=budget, eos_ids=eos, temperature=temperature_n, top_p=top_p, generator=gen)
                outs.append(o[0].tolist())
        script = getattr(args, "script", None)
        if script and active and active[0] == 0 and turn < len(script):
            outs[0] = enc.tok.encode(script[turn]) + [enc.im_end]
        still = []
        for i, o in zip(active, outs):
            r, ep = rolls[i], eps[i]
            if o is None:
                r.stop = "length"
                r.text += E.IM_END
                continue
            cut = next((k for k, t in enumerate(o) if t in eos), None)
            gen_ids = o if cut is None else o[:cut + 1]
            vis = next((k for k, t in enumerate(gen_ids) if t in enc.vision), None)
            if vis is not None:
                # a vision token in the text: keep what was sampled before it (still on-policy) and end the episode
                gen_ids = gen_ids[:vis]
                text = enc.tok.decode(gen_ids)
                r.ids += gen_ids
                r.gen_mask += [1] * len(gen_ids)
                r.gen_tokens += len(gen_ids)
                r.texts.append(text)
                r.stop = "vision_token"
                r.text += text + E.IM_END
                continue
            text = enc.tok.decode(gen_ids if cut is None else gen_ids[:-1])
            r.ids += gen_ids
            r.gen_mask += [1] * len(gen_ids)
            r.gen_tokens += len(gen_ids)
            r.texts.append(text)
            if not E.is_tool_turn(text):
                r.stop = "answer" if cut is not None else "length"
                r.text += text + E.IM_END
                continue
            # a tool call: counted even when it fails or the episode is forced to finish (PR's ncall)
            prefix = E.render_first_turn(E.synth_question(scene), 1, "vcot").replace("<|image_pad|>", "") + r.text
            if turn == args.max_turns - 1 or ep.calls >= E.PR_MAX_CALLS:
                ep.calls += 1
                r.calls, r.stop = ep.calls, "max_turns"
                r.text += text + E.IM_END
                continue
            obs, new_imgs, info = ep.step(prefix, text)
            r.calls, r.errors, r.final_error = ep.calls, ep.errors, ep.last_error
            if obs is None:  # over 16 images: the episode ends, the observation is dropped
                r.stop = "max_images"
                r.text += text + E.IM_END
                continue
            ims = [enc.image(im) for im in new_imgs]
            seg = enc.encode(E.render_observation_turn(obs, len(ims)), [n for _, _, n in ims])
            if gen_ids and gen_ids[-1] == enc.im_end:
                seg = seg[1:]  # the policy already wrote the <|im_end|> that closes its turn
            r.ids += seg
            r.gen_mask += [0] * len(seg)
            r.pv += [pv for pv, _, _ in ims]
            r.grids += [g for _, g, _ in ims]
            r.obs.append(obs)
            r.text += text + E.render_observation_turn(obs, len(ims)).replace("<|image_pad|>", "")
            if len(r.ids) >= args.max_len:
                r.stop = "length"
                continue
            still.append(i)
        active = still
    for r in rolls:
        if r.stop is None:
            r.stop = "max_turns"
    return rolls


def autocast(dev):
    if dev.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return _Null()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def score_group(scene, rolls, variant):
    accs = []
    for r in rolls:
        sol = E.pr_solution(E.render_first_turn(E.synth_question(scene), 1, "vcot").replace("<|image_pad|>", "") + r.text)
        res, _, extracted = E.pr_reward(sol, scene["answer"])
        r.acc, r.extracted = res, extracted
        accs.append(res)
    rewards, rapr, cur, pen = E.curiosity_rewards(accs, [r.calls for r in rolls], [r.final_error for r in rolls], variant=variant)
    mean = sum(rewards) / len(rewards)
    for r, rw, c, p in zip(rolls, rewards, cur, pen):
        r.reward, r.adv, r.curiosity, r.penalty = rw, rw - mean, c, p
    return rapr


def pg_loss(model, rolls, dev, micro, ref=None, kl=0.0):
    """Accumulates the gradient of -sum_i A_i sum_t logp_it / N_tokens over the rollouts with A != 0. With a reference
    model `ref` and kl > 0, also kl * sum_it k3_it / N_tokens over every rollout, where k3 = exp(r) - r - 1 with
    r = logp_ref - logp (the unbiased, non-negative KL(policy || ref) estimator of verl's `low_var_kl`) on the policy's
    own tokens: an anchor that keeps the policy near the SFT model. Returns (policy-gradient loss, mean k3 per token)."""
    use = [r for r in rolls if (r.adv != 0 or (ref is not None and kl > 0)) and r.gen_tokens > 0]
    kl_sum = 0.0
    ntok = sum(sum(r.gen_mask) for r in rolls) or 1
    total = 0.0
    for b in range(0, len(use), micro):
        rs = use[b:b + micro]
        L = max(len(r.ids) for r in rs)
        ids = torch.zeros(len(rs), L, dtype=torch.long)
        att = torch.zeros(len(rs), L, dtype=torch.long)
        m = torch.zeros(len(rs), L)
        adv = torch.tensor([r.adv for r in rs], dtype=torch.float32)
        for i, r in enumerate(rs):
            ids[i, :len(r.ids)] = torch.tensor(r.ids)
            att[i, :len(r.ids)] = 1
            m[i, :len(r.ids)] = torch.tensor(r.gen_mask, dtype=torch.float32)
        pv = torch.cat([p for r in rs for p in r.pv]).to(dev)
        grids = torch.tensor([g for r in rs for g in r.grids], device=dev)
        ids, att, m, adv = ids.to(dev), att.to(dev), m.to(dev), adv.to(dev)
        with autocast(dev):
            logits = model(ids, attention_mask=att, pixel_values=pv, image_grid_thw=grids).logits
        lp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None])[..., 0]
        pg = -(adv[:, None] * lp * m[:, 1:]).sum() / ntok
        loss = pg
        if ref is not None and kl > 0:
            with torch.no_grad(), autocast(dev):
                rl_ = ref(ids, attention_mask=att, pixel_values=pv, image_grid_thw=grids).logits
            lr_ = torch.log_softmax(rl_[:, :-1].float(), -1).gather(-1, ids[:, 1:, None])[..., 0]
            d = (lr_ - lp).clamp(-20, 20)
            k3 = ((torch.exp(d) - d - 1) * m[:, 1:]).sum() / ntok
            loss = pg + kl * k3
            kl_sum += float(k3.detach())
        loss.backward()
        total += float(pg.detach())
    return total, kl_sum


# ---------------------------------------------------------------------------------------------------------------------

def summarize(rolls_by_group, raprs):
    rolls = [r for g in rolls_by_group for r in g]
    n = len(rolls)
    return {
        "reward/mean": sum(r.reward for r in rolls) / n,
        "acc": sum(1 for r in rolls if r.acc > 0.5) / n,
        "acc/unparsed": sum(1 for r in rolls if r.acc < 0) / n,
        "rapr": sum(raprs) / len(raprs),
        "calls/mean": sum(r.calls for r in rolls) / n,
        "tool_errors/mean": sum(r.errors for r in rolls) / n,
        "curiosity/mean": sum(r.curiosity for r in rolls) / n,
        "penalty/mean": sum(r.penalty for r in rolls) / n,
        "response_length/mean": sum(r.gen_tokens for r in rolls) / n,
        "adv_nonzero": sum(1 for r in rolls if r.adv != 0) / n,
        "stop/answer": sum(1 for r in rolls if r.stop == "answer") / n,
    }


def evaluate(model, enc, scenes, args, dev):
    """Greedy, one rollout per held-out scene: accuracy and tool-use rate."""
    model.eval()
    groups = []
    ea = argparse.Namespace(**{**vars(args), "script": None})
    for s in scenes:
        rolls = run_group(model, enc, s, 1, ea, dev, None, 0.0, 0.0, 1.0)
        score_group(s, rolls, args.variant)
        groups.append(rolls)
    rolls = [g[0] for g in groups]
    n = len(rolls)
    return {"acc": sum(1 for r in rolls if r.acc > 0.5) / n, "rapr": sum(1 for r in rolls if r.calls > 0) / n,
            "calls/mean": sum(r.calls for r in rolls) / n, "tool_errors/mean": sum(r.errors for r in rolls) / n,
            "response_length/mean": sum(r.gen_tokens for r in rolls) / n, "n": n}


def fmt_line(step, m):
    keys = ["reward/mean", "acc", "rapr", "calls/mean", "response_length/mean", "adv_nonzero", "loss", "kl", "grad_norm", "time"]
    return f"step:{step} - " + " - ".join(f"{k}:{m[k]:.4g}" for k in keys if k in m)


def plot(out, train, evals, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
    st = [m["step"] for m in train]
    ax[0].plot(st, [m["reward/mean"] for m in train], label="reward")
    ax[0].plot(st, [m["acc"] for m in train], label="acc (sampled)")
    ax[0].set_xlabel("step"); ax[0].legend(); ax[0].set_title("train")
    ax[1].plot(st, [m["rapr"] for m in train], label="RaPR (sampled)")
    ax[1].plot(st, [m["calls/mean"] for m in train], label="calls/rollout")
    ax[1].plot(st, [m["tool_errors/mean"] for m in train], label="tool errors/rollout")
    ax[1].set_xlabel("step"); ax[1].legend(); ax[1].set_title("tool use")
    if evals:
        es = [m["step"] for m in evals]
        ax[2].plot(es, [m["acc"] for m in evals], "o-", label="acc (greedy, held-out)")
        ax[2].plot(es, [m["rapr"] for m in evals], "s-", label="RaPR (greedy, held-out)")
        ax[2].set_ylim(-0.02, 1.02); ax[2].legend()
    ax[2].set_xlabel("step"); ax[2].set_title("eval")
    fig.suptitle(title); fig.tight_layout(); fig.savefig(os.path.join(out, "curves.png"), dpi=100)
    plt.close(fig)
    return True


def check_manifest(args, tok, enc):
    """Replay prepare.ts's manifest: ids, grids, observations, pixels."""
    from PIL import Image
    scenes = {s["qid"]: s for s in load_scenes(args.scenes.split(","))}
    n = same = 0
    grid_ok = grid_n = 0
    px = []
    first_bad = None
    for line in open(os.path.join(args.check_manifest, "manifest.jsonl")):
        if not line.strip():
            continue
        rec = json.loads(line)
        s = scenes.get(rec["qid"])
        if s is None:
            continue
        n += 1
        texts = [tok.decode(rec["ids"][a:b - 1]) for a, b in rec["spans"]]
        init = E.initial_image(s["_image"], "eval")
        ep = E.Episode(initial=init, mode="eval")
        imgs = [init]
        q = E.synth_question(s) if rec["kind"] != "notool" else s["question"]
        prompt = E.render_first_turn(q, 1, "notool" if rec["kind"] == "notool" else "vcot")
        _, g0, n0 = enc.image(init)
        ids = enc.encode(prompt, [n0])
        grids = [g0]
        text_so_far = prompt.replace("<|image_pad|>", "")
        for k, t in enumerate(texts):
            ids += tok.encode(t)
            if k == len(texts) - 1:
                ids.append(enc.im_end)
                break
            obs, new, _ = ep.step(text_so_far, t)
            ns = []
            for im in new:
                _, g, nn = enc.image(im)
                grids.append(g)
                ns.append(nn)
                imgs.append(im)
            ids += enc.encode(E.render_observation_turn(obs, len(new)), ns)
            text_so_far += t + E.render_observation_turn(obs, len(new)).replace("<|image_pad|>", "")
        ok = ids == rec["ids"]
        same += ok
        if not ok and first_bad is None:
            d = next((i for i, (a, b) in enumerate(zip(ids, rec["ids"])) if a != b), min(len(ids), len(rec["ids"])))
            first_bad = f"{rec['qid']}/{rec['kind']}: first difference at token {d} of {len(rec['ids'])} (ours {len(ids)})"
        for im, g, ref in zip(imgs, grids, rec["images"]):
            grid_n += 1
            grid_ok += g == ref["grid"]
            if g == ref["grid"]:
                a = np.asarray(E.engine_resize(im, enc.max_pixels, enc.min_pixels)).astype(int)
                b = np.asarray(Image.open(os.path.normpath(os.path.join(args.check_manifest, "images", ref["file"]))).convert("RGB")).astype(int)
                px.append(float(np.abs(a - b).mean()))
    rep = {"trajectories": n, "ids_identical": same, "grids_identical": f"{grid_ok}/{grid_n}",
           "mean_abs_pixel_diff_vs_manifest_jpeg": round(float(np.mean(px)), 3) if px else None, "first_difference": first_bad,
           "tokenizer": type(tok).__name__}
    print(json.dumps(rep))
    return 0 if n and same == n and grid_ok == grid_n else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="qwen_torch model folder (config.json, model.safetensors, tokenizer.json)")
    ap.add_argument("--scenes", required=True, help="loupe synth folder(s), comma-separated (samples.jsonl + images/)")
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--scenes-per-step", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this wall time (0 = no limit)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variant", default="pr-code", choices=E.CURIOSITY_VARIANTS)
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=160, help="per assistant turn")
    ap.add_argument("--max-len", type=int, default=4096, help="whole-sequence token budget")
    ap.add_argument("--max-pixels", type=int, help="engine MAX_PIXELS (default: the model's preprocessor_config.json)")
    ap.add_argument("--micro", type=int, default=16, help="rollouts per forward/backward in the update")
    ap.add_argument("--kl", type=float, default=0.0, help="KL anchor to the starting model (k3 estimator, per generated token; 0: none, as Pixel Reasoner)")
    ap.add_argument("--eval-scenes", help="held-out synth folder(s) for greedy accuracy / RaPR before, during and after RL")
    ap.add_argument("--eval-n", type=int, default=40)
    ap.add_argument("--eval-every", type=int, default=0, help="also evaluate every N steps (0 = only before and after)")
    ap.add_argument("--tok", help="folder with tokenizer.json / preprocessor_config.json (default: --model)")
    ap.add_argument("--tokenizer", default="auto", choices=["auto", "python"], help="python = the pure-Python BPE")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--script", help="JSON list of assistant turn texts that row 0 of every training group writes instead of "
                    "sampling (a test aid for untrained models: exercises tool calls, observations and the curiosity terms)")
    ap.add_argument("--check-manifest", help="prepare.ts output folder: compare ids/grids/pixels instead of training")
    a = ap.parse_args()

    a.script = json.loads(a.script) if a.script else None
    tok_dir = a.tok or a.model
    if not os.path.exists(os.path.join(tok_dir, "tokenizer.json")):
        ap.error(f"{tok_dir} has no tokenizer.json: pass --tok DIR (e.g. models/tiny-random-qwen25vl, the same tokenizer)")
    tok = load_tokenizer(tok_dir, a.tokenizer)
    pp_path = os.path.join(tok_dir, "preprocessor_config.json")
    pp = json.load(open(pp_path)) if os.path.exists(pp_path) else {}
    enc = Encoder(tok, a.max_pixels or pp.get("max_pixels", 128 * 28 * 28), pp.get("min_pixels", 3136))
    if a.check_manifest:
        return check_manifest(a, tok, enc)
    if not a.out:
        ap.error("--out is required")
    os.makedirs(a.out, exist_ok=True)
    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    dev = a.device
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)
    model = QwenVL.from_pretrained(a.model, dtype=torch.float32, device=dev)
    ref = None
    if a.kl > 0:  # the frozen starting model
        ref = QwenVL.from_pretrained(a.model, dtype=torch.float32, device=dev).eval()
        for p_ in ref.parameters():
            p_.requires_grad_(False)
    scenes = load_scenes(a.scenes.split(","))
    eval_scenes = load_scenes(a.eval_scenes.split(","))[:a.eval_n] if a.eval_scenes else []
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.99), weight_decay=0.0)
    log = lambda s: print(s, flush=True)  # noqa: E731
    log(f"rl: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M params on {dev}; {len(scenes)} scenes, group {a.group}, "
        f"{a.scenes_per_step} scenes/step, lr {a.lr}, variant {a.variant}, max_pixels {enc.max_pixels}, tokenizer {type(tok).__name__}, "
        f"eval {len(eval_scenes)} scenes")
    mf = open(os.path.join(a.out, "metrics.jsonl"), "w")
    sf = open(os.path.join(a.out, "samples.jsonl"), "w")
    train, evals = [], []
    t0 = time.time()

    def do_eval(step):
        if not eval_scenes:
            return
        m = {"step": step, "eval": True, **evaluate(model, enc, eval_scenes, a, dev), "time": time.time() - t0}
        evals.append(m)
        mf.write(json.dumps(m) + "\n")
        mf.flush()
        log(f"eval step:{step} - acc:{m['acc']:.4g} - rapr:{m['rapr']:.4g} - calls/mean:{m['calls/mean']:.4g} - "
            f"tool_errors/mean:{m['tool_errors/mean']:.4g} - response_length/mean:{m['response_length/mean']:.4g}")

    do_eval(0)
    order = []
    step = 0
    while step < a.steps and not (a.minutes and time.time() - t0 > a.minutes * 60):
        step += 1
        if len(order) < a.scenes_per_step:
            more = list(range(len(scenes)))
            random.shuffle(more)
            order += more
        batch, order = order[:a.scenes_per_step], order[a.scenes_per_step:]
        model.eval()
        groups, raprs = [], []
        ts = time.time()
        for si in batch:
            rolls = run_group(model, enc, scenes[si], a.group, a, dev, gen, 1.0, 0.9, 0.95)
            raprs.append(score_group(scenes[si], rolls, a.variant))
            groups.append(rolls)
        t_roll = time.time() - ts
        model.train()
        opt.zero_grad(set_to_none=True)
        allr = [r for g in groups for r in g]
        loss, kl_tok = pg_loss(model, allr, dev, a.micro, ref, a.kl)
        gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        m = {"step": step, **summarize(groups, raprs), "loss": loss, **({"kl": kl_tok} if ref is not None else {}), "grad_norm": gn, "time": time.time() - t0, "rollout_s": t_roll}
        bad = [k for k, v in m.items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            raise SystemExit(f"rl: non-finite metrics at step {step}: {bad}")
        train.append(m)
        mf.write(json.dumps(m) + "\n")
        mf.flush()
        for si, g in zip(batch[:2], groups[:2]):
            r = g[0]
            sf.write(json.dumps({"step": step, "qid": scenes[si]["qid"], "answer": scenes[si]["answer"], "texts": r.texts, "obs": r.obs,
                                 "acc": r.acc, "calls": r.calls, "reward": r.reward, "adv": r.adv, "stop": r.stop}) + "\n")
        sf.flush()
        log(fmt_line(step, m))
        if a.eval_every and step % a.eval_every == 0 and step < a.steps:
            do_eval(step)
    do_eval(step)
    mf.close()
    sf.close()
    if not a.no_save:
        model.float().cpu().save_pretrained(os.path.join(a.out, "model"))
    drawn = plot(a.out, train, evals, f"loupe-tiny GRPO ({a.variant} curiosity reward, group {a.group})")
    log(f"rl: done, {step} steps in {time.time() - t0:.0f}s; {os.path.join(a.out, 'metrics.jsonl')}"
        f"{', curves.png' if drawn else ' (no matplotlib: no curves.png)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
