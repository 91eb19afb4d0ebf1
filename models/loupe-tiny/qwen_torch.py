"""Qwen2.5-VL in plain torch (no Hugging Face transformers), for training and sampling loupe-tiny-sized models.

Works on torch 1.13 (Debian's python3-torch) and torch 2.x; numpy is the only other dependency. Uses
`F.scaled_dot_product_attention` where torch has it, else a softmax path (set `qwen_torch.USE_SDPA = False` to force it).

  from qwen_torch import QwenVL, patches_from_rgb, read_png
  model = QwenVL(json.load(open("config.json")))            # random init (HF's scheme: N(0, initializer_range), norms 1)
  model = QwenVL.from_pretrained("models/tiny-random-qwen25vl", dtype=torch.float32, device="cpu")
  out = model(input_ids, attention_mask=att, pixel_values=pv, image_grid_thw=thw, labels=labels)   # out.loss, out.logits
  new = model.generate(ids, pv, thw, max_new_tokens=64, eos_ids=[2, 0], temperature=0)   # [B, T] LongTensor
  model.save_pretrained("out_dir")                          # config.json + model.safetensors

Config: the `config.json` dict transformers 5 writes for Qwen2_5_VLForConditionalGeneration (`text_config` /
`vision_config`; transformers 4's flat layout with `rope_scaling`/`rope_theta` is read too). Every size is taken from it:
hidden sizes, layers, heads, GQA, mrope_section, rope_theta, vision depth/hidden/heads/window_size/fullatt_block_indexes/
patch/merge/temporal patch, rms_norm_eps, tie_word_embeddings. Not supported: rope types other than default (mrope),
sliding-window layers, dropout.

State dict: the same keys, shapes and parameter layout as transformers 5.17's Qwen2_5_VLForConditionalGeneration —
`model.visual.patch_embed.proj.weight` [D, C, T, P, P], `model.visual.blocks.{i}.{norm1,norm2}.weight`,
`model.visual.blocks.{i}.attn.{qkv,proj}.{weight,bias}`, `model.visual.blocks.{i}.mlp.{gate,up,down}_proj.{weight,bias}`,
`model.visual.merger.ln_q.weight`, `model.visual.merger.mlp.{0,2}.{weight,bias}`, `model.language_model.embed_tokens.weight`,
`model.language_model.layers.{i}.self_attn.{q,k,v}_proj.{weight,bias}`, `...self_attn.o_proj.weight`,
`...mlp.{gate,up,down}_proj.weight`, `...{input,post_attention}_layernorm.weight`, `model.language_model.norm.weight`,
`lm_head.weight` (shared with embed_tokens when tie_word_embeddings; then save_pretrained leaves it out, as HF does).
So `qwen.load_state_dict(hf.state_dict())` and back work as is; `from_pretrained` also renames transformers-4 checkpoint
keys (`visual.*`, `model.layers.*`, ...) and reads sharded `model.safetensors.index.json` folders.

Forward semantics (as HF's, checked by check_qwen_torch.py against transformers to < 1e-4 fp32):
- `<|image_pad|>` embeddings are replaced by the vision tower's merged features, images in order over the batch rows
  (`pixel_values` = all images' patches concatenated, `image_grid_thw` [n_images, 3]); videos the same way through
  `pixel_values_videos` / `video_grid_thw` (not checked against HF).
- Position ids: Qwen2.5-VL's 3-D mrope index (transformers' get_rope_index with mm_token_type_ids from the ids), over
  the tokens where attention_mask is 1 (right padding; padded positions get 0). A batch without grids uses 0..L-1.
- Attention mask: causal, and padded keys are masked (as HF's create_causal_mask).
- loss: mean cross-entropy over labels != -100, shifted (logits[t] predicts labels[t+1]), in fp32.
- Under torch.autocast the norms and rope run in fp32 like HF's.

generate(input_ids [B, L] (no padding), pixel_values, image_grid_thw, max_new_tokens, eos_ids, temperature=0, top_p=1,
generator=None, pad_id=None, return_logprobs=False): KV-cached decoding. temperature 0 = greedy; > 0 samples from
softmax(logits / temperature) restricted to the top-p nucleus. Returns a LongTensor [B, T] of the new tokens (T <= max_new_tokens);
a row stops at its first eos (kept) and is padded with pad_id (default: text_config.pad_token_id, else eos_ids[0]) after it.
With return_logprobs, also a float tensor [B, T] of each chosen token's log-probability under the model's (temperature-free)
distribution, 0 after the row's eos. If all rows are the same prompt (an RL group), the prompt is prefilled once and
`pixel_values`/`image_grid_thw` may describe either one row's images or every row's.

Preprocessing helpers: read_png(path) -> uint8 [H, W, 3] (zlib + numpy; 8-bit, non-interlaced) and patches_from_rgb(rgb)
-> (pixel_values [N, C*T*P*P], grid [[1, h, w]]) laid out as transformers' / transformers.js' Qwen2VLImageProcessor does
for an image whose sides are multiples of patch*merge (no resizing here).

Safetensors: the `safetensors` package when importable, else the built-in reader/writer below (8-byte little-endian header
length, JSON header {name: {dtype, shape, data_offsets}}, raw little-endian bytes), so torch alone suffices.
"""
import collections
import copy
import itertools
import json
import os
import struct
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

USE_SDPA = True  # set False to force the manual softmax attention (torch < 2 always uses it)
_SDPA = getattr(F, "scaled_dot_product_attention", None)

MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)

CausalLMOutput = collections.namedtuple("CausalLMOutput", ["loss", "logits"])


# ----------------------------------------------------------------------------------------------------------------------
# config
def _text_cfg(cfg):
    """Text settings: transformers 5 nests them in text_config; transformers 4 wrote them at the top level."""
    t = {k: v for k, v in cfg.items() if not isinstance(v, dict)}
    t.update(cfg.get("text_config") or {})
    rp = dict(t.get("rope_parameters") or t.get("rope_scaling") or cfg.get("rope_scaling") or {})
    rope_type = rp.get("rope_type", rp.get("type", "default"))
    if rope_type == "mrope":
        rope_type = "default"
    if rope_type != "default":
        raise NotImplementedError(f"qwen_torch: rope_type {rope_type!r} is not supported (only the default mrope)")
    if any(x == "sliding_attention" for x in (t.get("layer_types") or [])) or t.get("use_sliding_window"):
        raise NotImplementedError("qwen_torch: sliding-window attention layers are not supported")
    heads = t.get("num_attention_heads", 64)
    hid = t.get("hidden_size", 8192)
    if hid % heads:
        raise ValueError(f"hidden_size {hid} is not divisible by num_attention_heads {heads}")
    kv = t.get("num_key_value_heads", 8) or heads
    if heads % kv:
        raise ValueError(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}")
    hd = hid // heads  # transformers' Qwen2.5-VL attention uses hidden_size // heads (a head_dim key is not read there)
    sec = list(rp.get("mrope_section", [16, 24, 24]))
    if sum(sec) != hd // 2:
        raise ValueError(f"mrope_section {sec} must sum to head_dim/2 = {hd // 2}")
    tie = bool(cfg.get("tie_word_embeddings", False) or (cfg.get("text_config") or {}).get("tie_word_embeddings", False))
    return dict(vocab=t.get("vocab_size", 152064), hidden=hid, inter=t.get("intermediate_size", 29568),
                layers=t.get("num_hidden_layers", 80), heads=heads, kv=kv, head_dim=hd, eps=t.get("rms_norm_eps", 1e-5),
                act=t.get("hidden_act", "silu"), theta=float(rp.get("rope_theta", t.get("rope_theta", 1e6))), mrope=sec,
                pad=t.get("pad_token_id"), eos=t.get("eos_token_id"), std=t.get("initializer_range", 0.02) or 0.02, tie=tie)


def _vision_cfg(cfg):
    v = cfg.get("vision_config") or {}
    hid, heads = v.get("hidden_size", 3584), v.get("num_heads", v.get("num_attention_heads", 16))
    rp = v.get("rope_parameters") or {}
    return dict(depth=v.get("depth", 32), hidden=hid, inter=v.get("intermediate_size", 3420), heads=heads,
                out=v.get("out_hidden_size", 3584), patch=v.get("patch_size", 14), merge=v.get("spatial_merge_size", 2),
                temporal=v.get("temporal_patch_size", 2), window=v.get("window_size", 112),
                fullatt=list(v.get("fullatt_block_indexes", [7, 15, 23, 31])), chans=v.get("in_channels", v.get("in_chans", 3)),
                act=v.get("hidden_act", "silu"), theta=float(rp.get("rope_theta", 10000.0)),
                tps=v.get("tokens_per_second", 4), std=v.get("initializer_range", 0.02) or 0.02)


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


def _act(name):
    acts = {"silu": nn.SiLU, "swish": nn.SiLU, "gelu": nn.GELU, "relu": nn.ReLU, "quick_gelu": QuickGELU,
            "gelu_pytorch_tanh": lambda: nn.GELU(approximate="tanh"), "gelu_new": lambda: nn.GELU(approximate="tanh")}
    if name not in acts:
        raise NotImplementedError(f"qwen_torch: hidden_act {name!r} is not supported ({sorted(acts)})")
    return acts[name]()


# ----------------------------------------------------------------------------------------------------------------------
# building blocks (attribute names = transformers' module names, so state-dict keys match)
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, x):
        dt = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * x.to(dt)


class MLP(nn.Module):
    def __init__(self, dim, inter, act, bias):
        super().__init__()
        self.gate_proj = nn.Linear(dim, inter, bias=bias)
        self.up_proj = nn.Linear(dim, inter, bias=bias)
        self.down_proj = nn.Linear(inter, dim, bias=bias)
        self.act_fn = _act(act)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def _rot(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def attention(q, k, v, mask=None, causal=False):
    """q [B, H, Lq, D], k / v [B, H, Lk, D]; mask: additive float [B|1, 1, Lq, Lk] in q's dtype or None; causal: Lq == Lk."""
    if USE_SDPA and _SDPA is not None:
        return _SDPA(q, k, v, attn_mask=mask, is_causal=bool(causal and mask is None))
    s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if causal and mask is None:
        L = q.shape[-2]
        s = s.masked_fill(torch.ones(L, L, dtype=torch.bool, device=q.device).triu(1), torch.finfo(s.dtype).min)
    if mask is not None:
        s = s + mask
    return torch.matmul(torch.softmax(s, -1, dtype=torch.float32).to(q.dtype), v)


# ---- vision tower
class PatchEmbed(nn.Module):
    def __init__(self, patch, temporal, chans, dim):
        super().__init__()
        k = (temporal, patch, patch)
        self.proj = nn.Conv3d(chans, dim, kernel_size=k, stride=k, bias=False)  # kept as Conv3d for the key/shape; run as a matmul
        self.dim = dim

    def forward(self, x):
        w = self.proj.weight
        return F.linear(x.to(w.dtype), w.reshape(self.dim, -1))


class VisionAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.num_heads = heads
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, cos, sin, seglens):
        n = x.shape[0]
        q, k, v = self.qkv(x).reshape(n, 3, self.num_heads, -1).unbind(1)  # [n, H, D] each
        dt = q.dtype
        q, k = q.float(), k.float()
        q = (q * cos + _rot(q) * sin).to(dt)
        k = (k * cos + _rot(k) * sin).to(dt)
        return self.proj(_segment_attention(q, k, v, seglens).reshape(n, -1))


def _segment_attention(q, k, v, seglens):
    """Bidirectional attention inside contiguous segments of lengths `seglens` (python ints summing to n).
    Segments of equal length run as one batch, so no mask is needed."""
    n = q.shape[0]
    if len(set(seglens)) == 1:
        L = seglens[0]
        sh = lambda t: t.reshape(n // L, L, *t.shape[1:]).transpose(1, 2)
        return attention(sh(q), sh(k), sh(v)).transpose(1, 2).reshape(q.shape)
    starts = [0] + list(itertools.accumulate(seglens))[:-1]
    groups = collections.defaultdict(list)
    for s, L in zip(starts, seglens):
        groups[L].append(s)
    outs, order = [], []
    for L, ss in groups.items():
        idx = (torch.tensor(ss, device=q.device)[:, None] + torch.arange(L, device=q.device)[None]).reshape(-1)
        sh = lambda t: t[idx].reshape(len(ss), L, *t.shape[1:]).transpose(1, 2)
        outs.append(attention(sh(q), sh(k), sh(v)).transpose(1, 2).reshape(-1, *q.shape[1:]))
        order.append(idx)
    return torch.cat(outs)[torch.argsort(torch.cat(order))]


class VisionBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm1 = RMSNorm(c["hidden"], 1e-6)
        self.norm2 = RMSNorm(c["hidden"], 1e-6)
        self.attn = VisionAttention(c["hidden"], c["heads"])
        self.mlp = MLP(c["hidden"], c["inter"], c["act"], bias=True)

    def forward(self, x, cos, sin, seglens):
        x = x + self.attn(self.norm1(x), cos, sin, seglens)
        return x + self.mlp(self.norm2(x))


class PatchMerger(nn.Module):
    def __init__(self, dim, context_dim, merge):
        super().__init__()
        self.hidden_size = context_dim * merge * merge
        self.ln_q = RMSNorm(context_dim, 1e-6)
        self.mlp = nn.Sequential(nn.Linear(self.hidden_size, self.hidden_size), nn.GELU(), nn.Linear(self.hidden_size, dim))

    def forward(self, x):
        return self.mlp(self.ln_q(x).view(-1, self.hidden_size))


class VisionTower(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.patch_embed = PatchEmbed(c["patch"], c["temporal"], c["chans"], c["hidden"])
        hd = c["hidden"] // c["heads"]
        sd = hd // 2
        self.register_buffer("inv_freq", 1.0 / (c["theta"] ** (torch.arange(0, sd, 2, dtype=torch.float) / sd)), persistent=False)
        self.blocks = nn.ModuleList([VisionBlock(c) for _ in range(c["depth"])])
        self.merger = PatchMerger(c["out"], c["hidden"], c["merge"])

    def layout(self, grids, device):
        """Per-patch (h, w) rope positions, the window permutation (over merge units) and the segment lengths of the
        windowed and the full-attention layers, as transformers' vision_utils computes them."""
        m, mu = self.c["merge"], self.c["merge"] ** 2
        ws = self.c["window"] // m // self.c["patch"]
        pos, widx, wlens, flens, base = [], [], [], [], 0
        for t, h, w in grids:
            hp = torch.arange(h).view(h // m, m, 1, 1).expand(h // m, m, w // m, m).transpose(1, 2).reshape(-1)
            wp = torch.arange(w).view(1, 1, w // m, m).expand(h // m, m, w // m, m).transpose(1, 2).reshape(-1)
            pos.append(torch.stack([hp, wp], -1).repeat(t, 1))
            gh, gw = h // m, w // m
            idx = torch.arange(t * gh * gw).view(t, gh, gw)
            ph, pw = ws - gh % ws, ws - gw % ws
            idx = F.pad(idx, (0, pw, 0, ph), value=-100)
            nh, nw = (gh + ph) // ws, (gw + pw) // ws
            idx = idx.view(t, nh, ws, nw, ws).permute(0, 1, 3, 2, 4).reshape(t, nh * nw, ws * ws)
            lens = (idx != -100).sum(-1).reshape(-1)
            flat = idx.reshape(-1)
            widx.append(flat[flat != -100] + base)
            wlens += [int(x) * mu for x in lens.tolist() if x > 0]
            flens += [h * w] * t
            base += t * gh * gw
        return torch.cat(pos).to(device), torch.cat(widx).to(device), wlens, flens

    def forward(self, pixel_values, grid_thw):
        grids = [tuple(int(x) for x in g) for g in (grid_thw.tolist() if torch.is_tensor(grid_thw) else grid_thw)]
        mu = self.c["merge"] ** 2
        n = sum(t * h * w for t, h, w in grids)
        if pixel_values.shape[0] != n:
            raise ValueError(f"pixel_values has {pixel_values.shape[0]} patches; image_grid_thw {grids} needs {n}")
        pos, widx, wlens, flens = self.layout(grids, pixel_values.device)
        x = self.patch_embed(pixel_values)
        perm = lambda t: t.reshape(n // mu, mu, -1)[widx].reshape(n, -1)
        x = perm(x)
        pos = perm(pos)
        f = torch.cat([pos[:, :1].float() * self.inv_freq, pos[:, 1:].float() * self.inv_freq], -1)
        emb = torch.cat([f, f], -1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        full = set(self.c["fullatt"])
        for i, blk in enumerate(self.blocks):
            x = blk(x, cos, sin, flens if i in full else wlens)
        return self.merger(x)[torch.argsort(widx)]


# ---- language model
class TextAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, KV, hd = c["heads"], c["kv"], c["head_dim"]
        self.h, self.kv, self.hd = H, KV, hd
        self.q_proj = nn.Linear(c["hidden"], H * hd, bias=True)
        self.k_proj = nn.Linear(c["hidden"], KV * hd, bias=True)
        self.v_proj = nn.Linear(c["hidden"], KV * hd, bias=True)
        self.o_proj = nn.Linear(H * hd, c["hidden"], bias=False)

    def forward(self, x, cos, sin, mask, cache=None, start=0):
        B, L, _ = x.shape
        sh = lambda t: t.view(B, L, -1, self.hd).transpose(1, 2)
        q, k, v = sh(self.q_proj(x)), sh(self.k_proj(x)), sh(self.v_proj(x))
        q, k = q * cos + _rot(q) * sin, k * cos + _rot(k) * sin
        if cache is not None:
            ck, cv = cache
            ck[:, :, start:start + L] = k
            cv[:, :, start:start + L] = v
            k, v = ck[:, :, :start + L], cv[:, :, :start + L]
        r = self.h // self.kv
        if r > 1:
            rep = lambda t: t[:, :, None].expand(B, self.kv, r, t.shape[2], self.hd).reshape(B, self.h, t.shape[2], self.hd)
            k, v = rep(k), rep(v)
        o = attention(q, k, v, mask, causal=start == 0 and L > 1)
        return self.o_proj(o.transpose(1, 2).reshape(B, L, -1))


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = TextAttention(c)
        self.mlp = MLP(c["hidden"], c["inter"], c["act"], bias=False)
        self.input_layernorm = RMSNorm(c["hidden"], c["eps"])
        self.post_attention_layernorm = RMSNorm(c["hidden"], c["eps"])

    def forward(self, x, cos, sin, mask, cache=None, start=0):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache, start)
        return x + self.mlp(self.post_attention_layernorm(x))


class TextModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"], c["pad"])
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c["layers"])])
        self.norm = RMSNorm(c["hidden"], c["eps"])
        hd = c["head_dim"]
        self.register_buffer("inv_freq", 1.0 / (c["theta"] ** (torch.arange(0, hd, 2, dtype=torch.float) / hd)), persistent=False)

    def rope(self, position_ids, dtype):
        """position_ids [3, B, L] -> cos, sin [B, 1, L, head_dim] (mrope: t/h/w sections of the frequencies)."""
        f = position_ids[..., None].float() * self.inv_freq.float()  # [3, B, L, hd/2]
        f = torch.cat([c[i % 3] for i, c in enumerate(f.split(self.c["mrope"], -1))], -1)
        emb = torch.cat([f, f], -1)
        return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]

    def forward(self, x, position_ids, mask, caches=None, start=0):
        cos, sin = self.rope(position_ids, x.dtype)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, mask, None if caches is None else caches[i], start)
        return self.norm(x)


# ----------------------------------------------------------------------------------------------------------------------
class QwenVL(nn.Module):
    """Qwen2.5-VL (Qwen2_5_VLForConditionalGeneration's state dict) in plain torch; see the module docstring."""

    def __init__(self, cfg, init=True):
        super().__init__()
        self.config = copy.deepcopy(cfg)
        self.tc, self.vc = _text_cfg(cfg), _vision_cfg(cfg)
        self.image_token_id = cfg.get("image_token_id", 151655)
        self.video_token_id = cfg.get("video_token_id", 151656)
        self.model = nn.Module()
        self.model.visual = VisionTower(self.vc)
        self.model.language_model = TextModel(self.tc)
        self.lm_head = nn.Linear(self.tc["hidden"], self.tc["vocab"], bias=False)
        if self.tc["tie"]:
            self.lm_head.weight = self.model.language_model.embed_tokens.weight
        if init:
            self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        """transformers' _init_weights: Linear/Conv N(0, initializer_range) with zero bias, Embedding N(0, std) with the
        padding row zeroed, norms 1."""
        for part, std in ((self.model.visual, self.vc["std"]), (self.model.language_model, self.tc["std"]), (self.lm_head, self.tc["std"])):
            for m in part.modules():
                if isinstance(m, (nn.Linear, nn.Conv3d)):
                    if not (m is self.lm_head and self.tc["tie"]):
                        m.weight.normal_(0, std)
                    if m.bias is not None:
                        m.bias.zero_()
                elif isinstance(m, nn.Embedding):
                    m.weight.normal_(0, std)
                    if m.padding_idx is not None:
                        m.weight[m.padding_idx].zero_()
                elif isinstance(m, RMSNorm):
                    m.weight.fill_(1.0)

    @property
    def dtype(self):
        return self.lm_head.weight.dtype

    @property
    def device(self):
        return self.lm_head.weight.device

    # ---- inputs
    def rope_index(self, input_ids, image_grid_thw=None, video_grid_thw=None, attention_mask=None, second_per_grid_ts=None):
        """transformers' Qwen2_5_VLModel.get_rope_index (mm_token_type_ids derived from the ids) -> position_ids [3, B, L],
        deltas [B, 1] (next text position = current length + delta)."""
        B, L = input_ids.shape
        dev = input_ids.device
        if image_grid_thw is None and video_grid_thw is None:
            return torch.arange(L, device=dev).view(1, 1, L).expand(3, B, L), torch.zeros(B, 1, dtype=torch.long, device=dev)
        m = self.vc["merge"]
        grids = {1: iter(image_grid_thw.tolist()) if image_grid_thw is not None else None,
                 2: iter(video_grid_thw.tolist()) if video_grid_thw is not None else None}
        spg = iter(second_per_grid_ts.tolist() if torch.is_tensor(second_per_grid_ts) else second_per_grid_ts or [1] * L)
        pos = torch.zeros(3, B, L, dtype=torch.long)
        deltas = []
        ids_cpu = input_ids.cpu()
        att = attention_mask.cpu().bool() if attention_mask is not None else None
        for b in range(B):
            ids = ids_cpu[b] if att is None else ids_cpu[b][att[b]]
            types = ((ids == self.image_token_id).long() + 2 * (ids == self.video_token_id).long()).tolist()
            parts, cur, i = [], 0, 0
            for key, grp in itertools.groupby(types):
                n = len(list(grp))
                if key == 0:
                    parts.append(torch.arange(n).view(1, -1).expand(3, -1) + cur)
                    cur += n
                else:
                    it = grids[key]
                    if it is None:
                        raise ValueError(f"row {b}: {'image' if key == 1 else 'video'} tokens but no {'image' if key == 1 else 'video'}_grid_thw")
                    t, h, w = next(it)
                    step = self.vc["tps"] * int(next(spg)) if key == 2 else 1
                    gt, gh, gw = t, h // m, w // m
                    tt = torch.arange(gt).view(-1, 1, 1).expand(gt, gh, gw) * step + cur
                    hh = torch.arange(gh).view(1, -1, 1).expand(gt, gh, gw) + cur
                    ww = torch.arange(gw).view(1, 1, -1).expand(gt, gh, gw) + cur
                    parts.append(torch.stack([tt, hh, ww]).reshape(3, -1))
                    cur += max(h, w) // m
                i += n
            llm = torch.cat(parts, 1) if parts else torch.zeros(3, 0, dtype=torch.long)
            if att is None:
                pos[:, b] = llm
            else:
                pos[:, b, att[b]] = llm
            deltas.append((int(llm.max()) + 1 if llm.numel() else 0) - len(ids))
        return pos.to(dev), torch.tensor(deltas, device=dev).view(B, 1)

    def embed(self, input_ids, pixel_values=None, image_grid_thw=None, pixel_values_videos=None, video_grid_thw=None):
        x = self.model.language_model.embed_tokens(input_ids)
        for pv, grid, tok, what in ((pixel_values, image_grid_thw, self.image_token_id, "image"),
                                    (pixel_values_videos, video_grid_thw, self.video_token_id, "video")):
            if pv is None:
                continue
            if grid is None:
                raise ValueError(f"{what} pixel values without {what}_grid_thw")
            feats = self.model.visual(pv.to(self.model.visual.patch_embed.proj.weight.dtype), grid).to(x.dtype)
            mask = input_ids == tok
            if int(mask.sum()) != feats.shape[0]:
                raise ValueError(f"{int(mask.sum())} {what} pad tokens in input_ids but the {what}s give {feats.shape[0]} features")
            x = x.masked_scatter(mask[..., None], feats)
        return x

    @staticmethod
    def _mask(attention_mask, L, dtype):
        """Additive [B, 1, L, L] mask (causal + padded keys) or None when nothing is padded (then attention is causal)."""
        if attention_mask is None or bool(attention_mask.bool().all()):
            return None
        dev = attention_mask.device
        ok = torch.ones(L, L, dtype=torch.bool, device=dev).tril()[None] & attention_mask.bool()[:, None, :]
        return torch.zeros(ok.shape, dtype=dtype, device=dev).masked_fill(~ok, torch.finfo(dtype).min)[:, None]

    # ---- forward
    def forward(self, input_ids, attention_mask=None, pixel_values=None, image_grid_thw=None, labels=None, position_ids=None,
                pixel_values_videos=None, video_grid_thw=None, second_per_grid_ts=None, logits_to_keep=0):
        x = self.embed(input_ids, pixel_values, image_grid_thw, pixel_values_videos, video_grid_thw)
        if position_ids is None:
            position_ids, _ = self.rope_index(input_ids, image_grid_thw, video_grid_thw, attention_mask, second_per_grid_ts)
        mask = self._mask(attention_mask, input_ids.shape[1], x.dtype)
        h = self.model.language_model(x, position_ids, mask)
        logits = self.lm_head(h[:, -logits_to_keep:] if logits_to_keep else h)
        loss = None
        if labels is not None:
            lab = F.pad(labels, (0, 1), value=-100)[:, 1:]
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), lab.reshape(-1).to(logits.device), ignore_index=-100)
        return CausalLMOutput(loss, logits)

    # ---- generation
    def _row_images(self, input_ids, pixel_values, image_grid_thw):
        """For a group of identical rows: the images of row 0 only (pixel_values may hold one row's or all rows' images)."""
        if pixel_values is None:
            return None, None
        need = int((input_ids[0] == self.image_token_id).sum())
        mu = self.vc["merge"] ** 2
        tok = pat = k = 0
        for t, h, w in image_grid_thw.tolist():
            if tok >= need:
                break
            tok += t * h * w // mu
            pat += t * h * w
            k += 1
        if tok != need:
            raise ValueError(f"row 0 has {need} image pad tokens; image_grid_thw gives {tok} for its first {k} images")
        return pixel_values[:pat], image_grid_thw[:k]

    @torch.no_grad()
    def generate(self, input_ids, pixel_values=None, image_grid_thw=None, max_new_tokens=64, eos_ids=(), temperature=0.0, top_p=1.0,
                 generator=None, pad_id=None, return_logprobs=False):
        B, L = input_ids.shape
        eos_ids = [eos_ids] if isinstance(eos_ids, int) else list(eos_ids)
        if pad_id is None:
            pad_id = self.tc["pad"] if self.tc["pad"] is not None else (eos_ids[0] if eos_ids else 0)
        same = B > 1 and bool((input_ids == input_ids[:1]).all())
        ids0 = input_ids[:1] if same else input_ids
        pv, grid = self._row_images(input_ids, pixel_values, image_grid_thw) if same else (pixel_values, image_grid_thw)
        x = self.embed(ids0, pv, grid)
        pos, delta = self.rope_index(ids0, grid)
        lm = self.model.language_model
        b0, T = ids0.shape[0], L + max_new_tokens
        caches = [(x.new_zeros(b0, self.tc["kv"], T, self.tc["head_dim"]), x.new_zeros(b0, self.tc["kv"], T, self.tc["head_dim"]))
                  for _ in lm.layers]
        logits = self.lm_head(lm(x, pos, None, caches, 0)[:, -1]).float()
        if same:
            caches = [(k.repeat(B, 1, 1, 1), v.repeat(B, 1, 1, 1)) for k, v in caches]
            logits, delta = logits.expand(B, -1), delta.expand(B, -1)
        out = torch.full((B, max_new_tokens), pad_id, dtype=torch.long, device=input_ids.device)
        lps = torch.zeros(B, max_new_tokens, device=input_ids.device)
        done = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
        eos_t = torch.tensor(eos_ids or [-1], device=input_ids.device)
        n = 0
        for step in range(max_new_tokens):
            tok = _pick(logits, temperature, top_p, generator)
            if return_logprobs:
                lps[:, step] = torch.log_softmax(logits, -1).gather(1, tok[:, None])[:, 0].masked_fill(done, 0.0)
            tok = tok.masked_fill(done, pad_id)
            out[:, step] = tok
            n = step + 1
            done = done | torch.isin(tok, eos_t)
            if bool(done.all()) or n == max_new_tokens:
                break
            p = (delta[:, 0] + L + step).view(1, B, 1).expand(3, B, 1)
            logits = self.lm_head(lm(lm.embed_tokens(tok[:, None]), p, None, caches, L + step)[:, -1]).float()
        return (out[:, :n], lps[:, :n]) if return_logprobs else out[:, :n]

    # ---- files
    @classmethod
    def from_pretrained(cls, path, dtype=torch.float32, device="cpu"):
        cfg = json.load(open(os.path.join(path, "config.json")))
        model = cls(cfg, init=False)
        single, index = os.path.join(path, "model.safetensors"), os.path.join(path, "model.safetensors.index.json")
        if os.path.exists(single):
            sd = load_safetensors(single)
        elif os.path.exists(index):
            sd = {}
            for shard in sorted(set(json.load(open(index))["weight_map"].values())):
                sd.update(load_safetensors(os.path.join(path, shard)))
        else:
            raise FileNotFoundError(f"{path}: no model.safetensors (or model.safetensors.index.json)")
        sd = {_rename_v4(k): v for k, v in sd.items()}
        missing, unexpected = model.load_state_dict(sd, strict=False)
        if model.tc["tie"]:
            missing = [k for k in missing if k != "lm_head.weight"]
        if missing or unexpected:
            raise ValueError(f"{path}: weights do not fit config.json: missing {missing[:8]}{'...' if len(missing) > 8 else ''}, "
                             f"unexpected {unexpected[:8]}{'...' if len(unexpected) > 8 else ''}")
        return model.to(device=device, dtype=dtype)

    def save_pretrained(self, path):
        os.makedirs(path, exist_ok=True)
        sd = {k: v for k, v in self.state_dict().items() if not (self.tc["tie"] and k == "lm_head.weight")}
        save_safetensors(sd, os.path.join(path, "model.safetensors"))
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(self.config, f, indent=1)
            f.write("\n")


def _pick(logits, temperature, top_p, generator):
    if temperature is None or temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits / temperature, -1)
    if top_p is not None and top_p < 1:
        sp, si = probs.sort(-1, descending=True)
        sp = sp.masked_fill(sp.cumsum(-1) - sp > top_p, 0.0)  # keep the smallest prefix reaching top_p (always >= 1 token)
        probs = torch.zeros_like(probs).scatter(-1, si, sp)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


def _rename_v4(k):
    """transformers 4.x Qwen2.5-VL checkpoint keys -> transformers 5 keys."""
    if k.startswith("visual."):
        return "model." + k
    if k.startswith("model.") and not k.startswith(("model.visual.", "model.language_model.")):
        return "model.language_model." + k[len("model."):]
    return k


# ----------------------------------------------------------------------------------------------------------------------
# safetensors (the package when importable, else this reader/writer)
_ST = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
       "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}
_ST_NAME = {v: k for k, v in _ST.items()}


def read_safetensors(path):
    """The safetensors format with torch + numpy only."""
    if sys.byteorder != "little":
        raise RuntimeError("safetensors reader: big-endian hosts are not supported")
    out = {}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        base = 8 + n
        for name, info in hdr.items():
            if name == "__metadata__":
                continue
            if info["dtype"] not in _ST:
                raise ValueError(f"{path}: {name}: dtype {info['dtype']} not supported")
            a, b = info["data_offsets"]
            shape = info["shape"]
            dt = _ST[info["dtype"]]
            if b == a:
                out[name] = torch.empty(shape, dtype=dt)
                continue
            f.seek(base + a)
            buf = bytearray(b - a)
            f.readinto(buf)
            out[name] = torch.frombuffer(buf, dtype=dt).reshape(shape).clone()
    return out


def write_safetensors(tensors, path, metadata=None):
    if sys.byteorder != "little":
        raise RuntimeError("safetensors writer: big-endian hosts are not supported")
    hdr, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if t.dtype not in _ST_NAME:
            raise ValueError(f"{name}: dtype {t.dtype} not supported")
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        hdr[name] = {"dtype": _ST_NAME[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hdr["__metadata__"] = dict(metadata or {"format": "pt"})
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in blobs:
            f.write(raw)


def load_safetensors(path):
    try:
        from safetensors.torch import load_file
    except ImportError:
        return read_safetensors(path)
    return load_file(path)


def save_safetensors(tensors, path):
    try:
        from safetensors.torch import save_file
    except ImportError:
        return write_safetensors(tensors, path)
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, path, metadata={"format": "pt"})


# ----------------------------------------------------------------------------------------------------------------------
# images
def read_png(path):
    """8-bit non-interlaced PNG (gray, gray+alpha, RGB, RGBA, palette) -> uint8 [H, W, 3] (alpha dropped), no Pillow."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    i, idat, plte = 8, [], None
    while i < len(data):
        n, typ = struct.unpack(">I4s", data[i:i + 8])
        body = data[i + 8:i + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif typ == b"PLTE":
            plte = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif typ == b"IDAT":
            idat.append(body)
        elif typ == b"IEND":
            break
        i += 12 + n
    if depth != 8 or interlace:
        raise ValueError(f"{path}: only 8-bit non-interlaced PNGs are supported (bit depth {depth}, interlace {interlace})")
    ch = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(h, 1 + w * ch)
    out = np.zeros((h, w * ch), np.int32)
    prev = np.zeros(w * ch, np.int32)
    for y in range(h):
        ft, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if ft == 0:
            cur = line
        elif ft == 2:
            cur = (line + prev) & 255
        elif ft in (1, 3, 4):  # these depend on the left neighbour: one pass per pixel column
            cur = line.copy()
            for x in range(w * ch):
                a = cur[x - ch] if x >= ch else 0
                b, c = prev[x], prev[x - ch] if x >= ch else 0
                if ft == 1:
                    p = a
                elif ft == 3:
                    p = (a + b) // 2
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else b if pb <= pc else c
                cur[x] = (cur[x] + p) & 255
        else:
            raise ValueError(f"{path}: bad PNG filter {ft}")
        out[y] = prev = cur
    img = out.astype(np.uint8).reshape(h, w, ch)
    if ctype == 3:
        return plte[img[..., 0]]
    if ch in (1, 2):
        return np.repeat(img[..., :1], 3, -1)
    return np.ascontiguousarray(img[..., :3])


def patches_from_rgb(rgb, patch=14, temporal=2, merge=2, mean=MEAN, std=STD):
    """uint8 [H, W, 3] whose sides are multiples of patch*merge -> (pixel_values [N, 3*temporal*patch*patch] float32,
    grid LongTensor [[1, H/patch, W/patch]]), the Qwen2-VL image processor's layout (normalize, repeat the frame
    `temporal` times, order patches by merge block)."""
    h, w, c = rgb.shape
    if h % (patch * merge) or w % (patch * merge):
        raise ValueError(f"image {w}x{h}: sides must be multiples of {patch * merge} (resize first)")
    x = ((rgb.astype(np.float32) / 255 - np.array(mean, np.float32)) / np.array(std, np.float32)).astype(np.float32)
    x = x.transpose(2, 0, 1)[None].repeat(temporal, 0)
    gh, gw = h // patch, w // patch
    x = x.reshape(1, temporal, c, gh // merge, merge, patch, gw // merge, merge, patch).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return torch.from_numpy(np.ascontiguousarray(x.reshape(gh * gw, c * temporal * patch * patch))), torch.tensor([[1, gh, gw]])
