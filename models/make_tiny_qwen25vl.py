#!/usr/bin/env python3
"""Qwen2.5-VL -> ONNX in the transformers.js layout, for Loupe's local engine.

  make_tiny_qwen25vl.py OUT_DIR                 tiny random-weight model + parity.json (greedy tokens of PyTorch)
  make_tiny_qwen25vl.py --from HF_DIR OUT_DIR   convert a real Qwen2.5-VL / PixelReasoner checkpoint folder
  make_tiny_qwen25vl.py --random-config 3b OUT_DIR --check
                                                random weights at Qwen2.5-VL-3B size: checks the converter (ONNX vs PyTorch)
  make_tiny_qwen25vl.py --random-config 0.5b OUT_DIR
                                                random weights, ~0.5 B params (Qwen2.5-0.5B text dims, real 151,936 vocab,
                                                a 4-block vision tower) with the tiny model's tokenizer: a real-size bench model

Options: --dtypes fp32,q8,fp16 (which ONNX files to write; q8 = dynamic int8 as transformers.js' `_quantized`;
         fp16 = `*_fp16.onnx`, weights/activations/KV cache fp16, pixel_values in and logits out stay fp32),
         --check (compare ONNX logits with PyTorch on a one-image and a three-image prompt; prints max |diff|),
         --bench-gpu (PyTorch `generate` prefill/decode tok/s on CUDA, bf16), --seed N, --json REPORT.json.

Why not optimum: it has no merged Qwen-VL exporter, and transformers 5's vision tower uses `.tolist()` loops, so a plain
trace freezes the image size. The wrappers below re-state the HF forward over the same weights with tensor ops only
(window attention as a block mask, explicit mrope, concatenated KV), exported with the TorchScript exporter.
Layout transformers.js 4.x reads: onnx/{embed_tokens,vision_encoder,decoder_model_merged}{,_quantized}.onnx,
vision_encoder input `image_grid_thw` ([1,3]: the ONNX encoder takes ONE image per call; Loupe's engine calls it per image),
decoder inputs inputs_embeds / attention_mask / position_ids [3,B,S] / past_key_values.{i}.{key,value}.
Needs: torch, transformers>=5, onnx, onnxruntime, tokenizers, numpy, jinja2 (a transformers dependency).
"""
import argparse, copy, json, logging, math, os, shutil, struct, sys, tempfile, time, zlib

import numpy as np
import torch
from torch import nn

MEAN = [0.48145466, 0.4578275, 0.40821073]
STD = [0.26862954, 0.26130258, 0.27577711]
NEG = torch.finfo(torch.float32).min

# Qwen2.5-VL's added tokens, in Qwen's order. <tool_call>/</tool_call> are ordinary (non-special) added tokens in Qwen,
# so decoding with skip_special_tokens keeps them: the agent must see them.
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
           "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
           "<|image_pad|>", "<|video_pad|>"]
NON_SPECIAL = ["<tool_call>", "</tool_call>"]

# The official Qwen2-VL / Qwen2.5-VL chat template (add_vision_id off by default).
QWEN_VL_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# Pixel Reasoner's system prompt (tools) and user guideline, so the tiny tokenizer has their vocabulary.
PR_TOOLS = [
    {"type": "function", "function": {"name": "crop_image_normalized", "description": "Zoom in on the image based on the bounding box coordinates. It is useful when the object or text in the image is too small to be seen.", "parameters": {"type": "object", "properties": {"bbox_2d": {"type": "array", "description": "coordinates for bounding box of the area you want to zoom in. Values should be within [0.0,1.0].", "items": {"type": "number"}}, "target_image": {"type": "number", "description": "The index of the image to crop. Index from 1 to the number of images. Choose 1 to operate on original image."}}, "required": ["bbox_2d", "target_image"]}}},
    {"type": "function", "function": {"name": "select_frames", "description": "Select frames from a video.", "parameters": {"type": "object", "properties": {"target_frames": {"type": "array", "description": "List of frame indices to select from the video (no more than 8 frames in total).", "items": {"type": "integer", "description": "Frame index from 1 to 16."}}}, "required": ["target_frames"]}}},
]
PR_SYSTEM = ("You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
             "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
             + "\n".join(json.dumps(t, ensure_ascii=False) for t in PR_TOOLS) +
             "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
             "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
PR_GUIDE = ("\n\nGuidelines: Understand the given visual information and the user query. Determine if it is beneficial to employ the "
            "given visual operations (tools). For a video, we can look closer by `select_frames`. For an image, we can look closer by "
            "`crop_image`. Reason with the visual information step by step, and put your final answer within \\boxed{}.")
CORPUS = [PR_SYSTEM, PR_GUIDE, "You are a helpful assistant.", "Describe this image. What color is this image? What is the colour of the small square?",
          "\nHere is the cropped image (Image Size: 168x112):", "\nHere are the selected frames (Frame Size: 224x168, Numbered 1 to 4):",
          "Let me zoom in on the region to see it more clearly. The answer is \\boxed{A}. The object is red, green, blue, yellow, black or white.",
          "The quick brown fox jumps over the lazy dog. Hello, how are you? Options: A. B. C. D. yes no left right top bottom",
          '{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.25, 0.1, 0.5, 0.45], "target_image": 1}}',
          '{"name": "select_frames", "arguments": {"target_frames": [1, 3, 5, 7]}}',
          "0123456789 .,;:!?'\"()[]{}<>-_/@#$%&*+=\\|~`^", "system user assistant think answer question image video frame crop zoom"]


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")


def write_png(path, rgb):
    """Minimal 8-bit RGB PNG writer (no Pillow needed)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].astype(np.uint8).tobytes() for y in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def patches_from_rgb(rgb, patch=14, temporal=2, merge=2):
    """An image whose sides are multiples of patch*merge -> pixel_values [N, 3*temporal*patch*patch] and grid [[1, h, w]],
    flattened exactly as transformers.js' Qwen2VLImageProcessor does (no resize needed at such sizes)."""
    h, w, _ = rgb.shape
    x = ((rgb.astype(np.float32) / 255 - np.array(MEAN, np.float32)) / np.array(STD, np.float32)).astype(np.float32)
    x = x.transpose(2, 0, 1)[None].repeat(temporal, 0)
    gh, gw = h // patch, w // patch
    x = x.reshape(1, temporal, 3, gh // merge, merge, patch, gw // merge, merge, patch).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return torch.tensor(np.ascontiguousarray(x.reshape(gh * gw, 3 * temporal * patch * patch))), torch.tensor([[1, gh, gw]])


def synthetic_images():
    """Original 224x168 scene + two 2x zoomed crops (as the crop tool would produce), all multiples of 28."""
    H, W = 168, 224
    yy, xx = np.mgrid[0:H, 0:W]
    img = np.stack([(xx * 255 // (W - 1)), (yy * 255 // (H - 1)), ((xx + yy) * 3 % 256)], -1).astype(np.uint8)
    img[28:56, 84:112] = (230, 20, 20)    # a small red square
    img[112:154, 28:98] = (20, 40, 200)   # a blue bar
    img[60:100, 150:200] = (250, 240, 30)  # a yellow block
    crop1 = img[14:70, 70:154].repeat(2, 0).repeat(2, 1)   # 56x84 -> 112x168
    crop2 = img[98:154, 14:112].repeat(2, 0).repeat(2, 1)  # 56x98 -> 112x196
    return {"original.png": img, "crop1.png": crop1, "crop2.png": crop2}


# ---------------------------------------------------------------------------------------------------------------------
# export-friendly re-statements of the HF forward (same weights; every shape is derived from tensors so ONNX stays dynamic)
rot = lambda x: torch.cat([-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]], -1)
as_dt = lambda t, dt: t if t.dtype == dt else t.to(dt)  # a cast only where an fp16 export needs one: fp32 graphs stay as they were


class Wrap(nn.Module):  # owns the HF model as a submodule so its weights become ONNX initializers
    def __init__(self, model):
        super().__init__()
        self.m = model

    @property
    def vis(self):
        return self.m.model.visual

    @property
    def lm(self):
        return self.m.model.language_model


class Embed(Wrap):
    def forward(self, input_ids):
        return self.lm.embed_tokens(input_ids)


class Vision(Wrap):
    """pixel_values [N, 1176] of ONE image (or one video of t frames), image_grid_thw [1, 3] -> image_features [N/4, H]."""

    def forward(self, pixel_values, image_grid_thw):
        vis = self.vis
        m = vis.spatial_merge_size
        ws = vis.window_size // m // vis.patch_size
        h, w = image_grid_thw[0, 1], image_grid_thw[0, 2]
        i = torch.arange(pixel_values.shape[0])
        fr, j = i // (h * w), i % (h * w)  # token order: frame, h-block, w-block, mh, mw
        hb, wb = (j // (m * m)) // (w // m), (j // (m * m)) % (w // m)
        inv = vis.rotary_pos_emb.inv_freq
        f = torch.cat([(hb * m + j // m % m)[:, None].float() * inv, (wb * m + j % m)[:, None].float() * inv], -1)
        emb = torch.cat([f, f], -1)
        dt = vis.patch_embed.proj.weight.dtype  # fp16 export: rotary and masks in fp32, then cast (no-ops in fp32)
        cos, sin = as_dt(emb.cos()[:, None], dt), as_dt(emb.sin()[:, None], dt)
        win = (fr * 100000 + hb // ws) * 100000 + wb // ws  # Qwen2.5-VL window attention == a block mask by window id
        neg = NEG if dt == torch.float32 else float(torch.finfo(dt).min)
        masks = [as_dt(torch.where(win[:, None] == win[None], 0.0, neg), dt), as_dt(torch.where(fr[:, None] == fr[None], 0.0, neg), dt)]
        x = vis.patch_embed(pixel_values)
        n = x.shape[0]
        for b, blk in enumerate(vis.blocks):
            a = blk.attn
            q, k, v = a.qkv(blk.norm1(x)).reshape(n, 3, a.num_heads, -1).unbind(1)
            q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
            att = q.transpose(0, 1) @ k.permute(1, 2, 0) * a.scaling + masks[1 if b in vis.fullatt_block_indexes else 0]
            x = x + a.proj((att.softmax(-1) @ v.transpose(0, 1)).transpose(0, 1).reshape(n, -1))
            x = x + blk.mlp(blk.norm2(x))
        return vis.merger(x)


class Decoder(Wrap):
    """inputs_embeds [B,S,H], attention_mask [B,T], position_ids [3,B,S], num_logits_to_keep (i64 scalar; 0 = all),
    past kv -> logits [B,K,V] for the last K positions, present kv. Keeping 1 spares the LM head over a long prefill
    (a 2k-token Qwen2.5-VL prompt would otherwise make 1.2 GB of logits); transformers.js feeds it when declared."""

    def __init__(self, model, head_dim):
        super().__init__(model)
        self.hd = head_dim

    def forward(self, inputs_embeds, attention_mask, position_ids, num_logits_to_keep, *past):
        lm, hd = self.lm, self.hd
        B, S, _ = inputs_embeds.shape
        P = past[0].shape[2]
        re = lm.rotary_emb
        fr = position_ids[..., None].float() * re.inv_freq  # [3,B,S,hd/2] -> mrope sections t,h,w
        fr = torch.cat([c[i % 3] for i, c in enumerate(fr.split(list(re.mrope_section), -1))], -1)
        scale = float(getattr(re, "attention_scaling", 1.0))
        emb = torch.cat([fr, fr], -1)
        dt = inputs_embeds.dtype  # fp16 export: positions and rotary in fp32, then cast (no-ops in fp32)
        cos, sin = as_dt((emb.cos() * scale)[:, None], dt), as_dt((emb.sin() * scale)[:, None], dt)
        ok = (torch.arange(P + S)[None] <= torch.arange(S)[:, None] + P)[None, None] & (attention_mask[:, None, None] > 0)
        bias = as_dt(torch.where(ok, 0.0, NEG if dt == torch.float32 else float(torch.finfo(dt).min)), dt)
        x = inputs_embeds
        present = []
        for i, L in enumerate(lm.layers):
            a = L.self_attn
            y = L.input_layernorm(x)
            sh = lambda t: t.view(B, S, -1, hd).transpose(1, 2)
            q, k, v = sh(a.q_proj(y)), sh(a.k_proj(y)), sh(a.v_proj(y))
            q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
            k, v = torch.cat([past[2 * i], k], 2), torch.cat([past[2 * i + 1], v], 2)
            present += [k, v]
            # grouped-query attention without repeating the KV heads: the r query heads of one KV head are stacked along
            # the query axis ([B, KV, r*S, hd]), so each decode step reads the cache once instead of copying it r times
            # (ORT ran the repeat as Tile over the whole past, about an eighth of a step at 600 cached tokens).
            r = a.num_key_value_groups
            kvh = k.shape[1]
            att = (q.reshape(B, kvh, r * S, hd) @ k.transpose(2, 3)) * a.scaling
            att = (att.reshape(B, kvh, r, S, -1) + bias[:, :, None]).softmax(-1).reshape(B, kvh, r * S, -1)
            o = (att @ v).reshape(B, kvh * r, S, hd)
            x = x + a.o_proj(o.transpose(1, 2).reshape(B, S, -1))
            x = x + L.mlp(L.post_attention_layernorm(x))
        idx = torch.arange(x.shape[1])  # traced as a dynamic range; python ints here would freeze the length
        keep = (idx >= idx[-1] + 1 - num_logits_to_keep) | (num_logits_to_keep <= 0)
        return (as_dt(self.m.lm_head(lm.norm(x[:, keep])), torch.float32), *present)  # logits stay fp32 in an fp16 export


def text_dims(cfg):
    tc = cfg.text_config
    hd = getattr(tc, "head_dim", None) or tc.hidden_size // tc.num_attention_heads
    return tc.num_hidden_layers, tc.num_key_value_heads, hd, tc.hidden_size


def mm_types(ids, cfg):
    """transformers 5.x builds 3-D mrope positions only when mm_token_type_ids is passed (1 = image, 2 = video)."""
    return (ids == cfg.image_token_id).long() + 2 * (ids == cfg.video_token_id).long()


def hf_positions(model, ids, thw):
    pos, delta = model.model.get_rope_index(ids, mm_types(ids, model.config), image_grid_thw=thw, attention_mask=torch.ones_like(ids))
    return pos, delta


# ---------------------------------------------------------------------------------------------------------------------
def export_onnx(model, out, dtypes, log):
    """Writes out/onnx/*.onnx (+ .onnx_data when > 2 GB) and returns {file: external_data_chunks}."""
    import onnx
    cfg = model.config
    NL, KVH, HD, HID = text_dims(cfg)
    os.makedirs(f"{out}/onnx", exist_ok=True)
    kin = [f"past_key_values.{i}.{t}" for i in range(NL) for t in ("key", "value")]
    kout = [n.replace("past_key_values", "present") for n in kin]
    ax_dec = {"inputs_embeds": {0: "batch_size", 1: "sequence_length"}, "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
              "position_ids": {1: "batch_size", 2: "sequence_length"}, "logits": {0: "batch_size", 1: "num_logits"},
              **{n: {0: "batch_size", 2: "past_sequence_length"} for n in kin}, **{n: {0: "batch_size", 2: "total_sequence_length"} for n in kout}}
    rng = np.random.default_rng(1)
    sample_rgb = rng.integers(0, 255, (112, 84, 3)).astype(np.uint8)

    def jobs(m, dt):
        E, V, D = Embed(m).eval(), Vision(m).eval(), Decoder(m, HD).eval()
        return [
            ("embed_tokens", E, (torch.tensor([[1, 2, 3]]),), ["input_ids"], ["inputs_embeds"],
             {"input_ids": {0: "batch_size", 1: "sequence_length"}, "inputs_embeds": {0: "batch_size", 1: "sequence_length"}}),
            ("vision_encoder", V, patches_from_rgb(sample_rgb), ["pixel_values", "image_grid_thw"], ["image_features"],
             {"pixel_values": {0: "num_patches"}, "image_grid_thw": {0: "num_images"}, "image_features": {0: "num_image_tokens"}}),
            ("decoder_model_merged", D, (torch.randn(2, 3, HID).to(dt), torch.ones(2, 5, dtype=torch.long), torch.arange(3).expand(3, 2, 3) + 2,
                                         torch.tensor(2), *[torch.randn(2, KVH, 2, HD).to(dt) for _ in kin]),
             ["inputs_embeds", "attention_mask", "position_ids", "num_logits_to_keep", *kin], ["logits", *kout], ax_dec),
        ]

    chunks = {}

    def export_all(m, suffix, dt):
        for name, mod, args, ins, outs, axes in jobs(m, dt):
            t0 = time.time()
            tmp = tempfile.mkdtemp(prefix=f"onnx-{name}{suffix}-", dir=out)
            with torch.no_grad():
                torch.onnx.export(mod, args, f"{tmp}/{name}.onnx", input_names=ins, output_names=outs, dynamic_axes=axes,
                                  opset_version=18, dynamo=False)
            om = onnx.load(f"{tmp}/{name}.onnx")  # loads any scattered external tensors
            size = sum(t.ByteSize() for t in om.graph.initializer)
            base = f"{name}{suffix}.onnx"
            dst = f"{out}/onnx/{base}"
            for p in (dst, dst + "_data"):
                if os.path.exists(p):
                    os.remove(p)
            if size > 1_800_000_000:  # protobuf's 2 GB limit: one external data file, named as transformers.js expects
                onnx.save_model(om, dst, save_as_external_data=True, all_tensors_to_one_file=True, location=f"{base}_data", size_threshold=1024)
                chunks[base] = 1
            else:
                onnx.save_model(om, dst)
            del om
            shutil.rmtree(tmp, ignore_errors=True)
            log(f"exported {name}{suffix} ({size / 1e6:.1f} MB of weights) in {time.time() - t0:.1f}s")

    if dtypes & {"fp32", "q8"}:
        export_all(model, "", torch.float32)
    if "q8" in dtypes:
        from onnxruntime.quantization import quantize_dynamic, QuantType
        logging.getLogger().setLevel(logging.WARNING)
        for name in ("embed_tokens", "vision_encoder", "decoder_model_merged"):
            t0 = time.time()
            src, dst = f"{out}/onnx/{name}.onnx", f"{out}/onnx/{name}_quantized.onnx"
            big = f"{name}.onnx" in chunks
            # transformers.js' quantize.py convention: uint8 weights for the vision encoder (conv), int8 elsewhere
            quantize_dynamic(src, dst, weight_type=QuantType.QUInt8 if name == "vision_encoder" else QuantType.QInt8,
                             extra_options={"MatMulConstBOnly": True}, use_external_data_format=big)
            if big:  # quantize_dynamic names its data file `*.onnx.data`; transformers.js wants `*.onnx_data` (or none)
                resave_onnx(dst, chunks)
            log(f"quantized {name} -> q8 in {time.time() - t0:.1f}s")
    if "fp32" not in dtypes:
        for name in ("embed_tokens", "vision_encoder", "decoder_model_merged"):
            chunks.pop(f"{name}.onnx", None)
            for p in (f"{out}/onnx/{name}.onnx", f"{out}/onnx/{name}.onnx_data"):
                if os.path.exists(p):
                    os.remove(p)
    if "fp16" in dtypes:
        if int(torch.__version__.split(".")[0]) < 2:
            sys.exit(f"--dtypes fp16 needs torch >= 2 (half-precision matmul on CPU for the trace); this is torch {torch.__version__}")
        half = half_copy(model)
        export_all(half, "_fp16", torch.float16)
        del half
    return chunks


def resave_onnx(path, chunks):
    """Re-writes an ONNX file (and its external data) as export_onnx writes them: one file under 1.8 GB, else one
    `<file>_data` external data file, recorded in `chunks` for config.json's use_external_data_format."""
    import onnx
    d, base = os.path.dirname(path), os.path.basename(path)
    locs = {e.value for t in onnx.load(path, load_external_data=False).graph.initializer for e in t.external_data if e.key == "location"}
    m = onnx.load(path)  # with its external data, now inline
    size = sum(t.ByteSize() for t in m.graph.initializer)
    for f in locs | {f"{base}_data"}:
        if os.path.exists(f"{d}/{f}"):
            os.remove(f"{d}/{f}")
    chunks.pop(base, None)
    if size > 1_800_000_000:
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location=f"{base}_data", size_threshold=1024)
        chunks[base] = 1
    else:
        onnx.save_model(m, path)


def half_copy(model):
    """An fp16 copy of `model` on CPU whose rotary inverse frequencies stay fp32 (fp16 ones would put rope angles a
    radian off by position ~1000); the wrappers compute cos/sin in fp32 and cast."""
    inv = {n: b.detach().clone().float() for n, b in model.named_buffers() if n.endswith("inv_freq")}
    half = copy.deepcopy(model).cpu().half().eval()
    for n, b in inv.items():
        mod = half.get_submodule(n.rsplit(".", 1)[0])
        setattr(mod, n.rsplit(".", 1)[1], b)
    return half


def write_model_files(model, out, chunks, tokenizer_src=None):
    cfg = model.config
    cfg.architectures = ["Qwen2_5_VLForConditionalGeneration"]
    cfg.save_pretrained(out)
    conf = json.load(open(f"{out}/config.json"))
    if chunks:
        conf["transformers.js_config"] = {"use_external_data_format": chunks}
    write_json(f"{out}/config.json", conf)
    if tokenizer_src is None:
        return
    # a real checkpoint: copy the tokenizer, make sure tokenizer_config.json carries the chat template and the processor
    # config names the processor class (transformers.js ignores chat_template.jinja for Qwen processors).
    shutil.copy(f"{tokenizer_src}/tokenizer.json", f"{out}/tokenizer.json")
    tc = json.load(open(f"{tokenizer_src}/tokenizer_config.json"))
    if not tc.get("chat_template"):
        for cand in ("chat_template.jinja", "chat_template.json"):
            p = f"{tokenizer_src}/{cand}"
            if os.path.exists(p):
                tc["chat_template"] = open(p).read() if cand.endswith("jinja") else json.load(open(p))["chat_template"]
                break
        else:
            tc["chat_template"] = QWEN_VL_TEMPLATE
    write_json(f"{out}/tokenizer_config.json", tc)
    pp = json.load(open(f"{tokenizer_src}/preprocessor_config.json")) if os.path.exists(f"{tokenizer_src}/preprocessor_config.json") else {}
    pp.setdefault("image_processor_type", "Qwen2VLImageProcessor")
    pp["processor_class"] = "Qwen2_5_VLProcessor"
    for k, v in {"do_resize": True, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": MEAN, "image_std": STD,
                 "do_convert_rgb": True, "resample": 3, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
                 "min_pixels": 3136, "max_pixels": 12845056}.items():
        pp.setdefault(k, v)
    write_json(f"{out}/preprocessor_config.json", pp)
    gsrc = f"{tokenizer_src}/generation_config.json"
    if os.path.exists(gsrc):
        shutil.copy(gsrc, f"{out}/generation_config.json")


# ---------------------------------------------------------------------------------------------------------------------
class OrtModel:
    """The same pipeline transformers.js runs (embed -> per-image vision -> decoder with KV cache), in onnxruntime-python."""

    def __init__(self, d, cfg, suffix=""):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.log_severity_level = 3
        mk = lambda n: ort.InferenceSession(f"{d}/onnx/{n}{suffix}.onnx", so, providers=["CPUExecutionProvider"])
        self.e, self.v, self.d = mk("embed_tokens"), mk("vision_encoder"), mk("decoder_model_merged")
        self.cfg = cfg
        self.NL, self.KVH, self.HD, _ = text_dims(cfg)

    def prefill_embeds(self, ids, pvs, thws):
        e = self.e.run(None, {"input_ids": ids.numpy()})[0]
        feats = [self.v.run(None, {"pixel_values": pv.numpy(), "image_grid_thw": thw.numpy()})[0] for pv, thw in zip(pvs, thws)]
        if feats:
            mask = ids.numpy() == self.cfg.image_token_id
            e[mask] = np.concatenate(feats, 0)
        return e

    def run(self, embeds, mask, pos, past, keep=1):
        feeds = {"inputs_embeds": embeds, "attention_mask": mask, "position_ids": pos, "num_logits_to_keep": np.array(keep, np.int64)}
        for i in range(self.NL):
            feeds[f"past_key_values.{i}.key"], feeds[f"past_key_values.{i}.value"] = past[2 * i], past[2 * i + 1]
        outs = self.d.run(None, feeds)
        return outs[0], outs[1:]

    def logits(self, ids, pvs, thws, pos, keep=0):
        empty = [np.zeros((1, self.KVH, 0, self.HD), np.float32)] * (2 * self.NL)
        return self.run(self.prefill_embeds(ids, pvs, thws), np.ones_like(ids.numpy()), pos.numpy(), empty, keep)

    def greedy(self, ids, pvs, thws, pos, delta, n, eos):
        lg, past = self.logits(ids, pvs, thws, pos, keep=1)
        assert lg.shape[1] == 1, lg.shape
        out, L = [], ids.shape[1]
        for step in range(n):
            tok = int(lg[0, -1].argmax())
            out.append(tok)
            if tok in eos:
                break
            e = self.e.run(None, {"input_ids": np.array([[tok]], np.int64)})[0]
            p = np.full((3, 1, 1), L + step + int(delta.reshape(-1)[0]), np.int64)
            lg, past = self.run(e, np.ones((1, L + step + 1), np.int64), p, past)
        return out


def case_inputs(model, tok_ids, images):
    pvs, thws = zip(*[patches_from_rgb(im) for im in images]) if images else ((), ())
    ids = torch.tensor([tok_ids])
    return ids, list(pvs), list(thws)


def check_and_parity(model, out, encode, render, images, log, gen_tokens=(16, 24), write_parity=True, eos=None, ref_model=None):
    """ONNX-vs-PyTorch logits on a one-image and a three-image conversation; greedy parity record.
    `ref_model` (default `model`) computes the PyTorch reference, e.g. a CUDA fp32 copy of a big model (TF32 off)."""
    cfg = model.config
    ref_model = ref_model if ref_model is not None else model
    dev = next(ref_model.parameters()).device
    convs = {
        "single_image": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe this image."}]}],
        "multi_image": [
            {"role": "system", "content": PR_SYSTEM},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is the colour of the small square?" + PR_GUIDE}]},
            {"role": "assistant", "content": "Let me zoom in on the region to see it more clearly.\n<tool_call>\n"
                                             '{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.31, 0.08, 0.69, 0.42], "target_image": 1}}\n</tool_call>'},
            {"role": "user", "content": [{"type": "text", "text": "\nHere is the cropped image (Image Size: 168x112):"}, {"type": "image"}]},
            {"role": "assistant", "content": "<tool_call>\n"
                                             '{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.06, 0.58, 0.5, 0.92], "target_image": 1}}\n</tool_call>'},
            {"role": "user", "content": [{"type": "text", "text": "\nHere is the cropped image (Image Size: 196x112):"}, {"type": "image"}]},
        ],
    }
    files = {"single_image": ["original.png"], "multi_image": ["original.png", "crop1.png", "crop2.png"]}
    eos = eos if eos is not None else [cfg.text_config.eos_token_id] if isinstance(cfg.text_config.eos_token_id, int) else list(cfg.text_config.eos_token_id)
    ortm = OrtModel(out, cfg)
    report, parity = {}, {"cases": {}}
    for (name, msgs), n_new in zip(convs.items(), gen_tokens):
        prompt = render(msgs)
        imgs = [images[f] for f in files[name]]
        # expand each <|image_pad|> by its own image's merged patch count
        parts = prompt.split("<|image_pad|>")
        assert len(parts) == len(imgs) + 1, (name, len(parts), len(imgs))
        grids = [(im.shape[0] // 14, im.shape[1] // 14) for im in imgs]
        text = parts[0] + "".join("<|image_pad|>" * (gh * gw // 4) + p for (gh, gw), p in zip(grids, parts[1:]))
        ids, pvs, thws = case_inputs(model, encode(text), imgs)
        thw = torch.cat(thws, 0)
        pv = torch.cat(pvs, 0)
        mm = mm_types(ids, cfg)
        with torch.no_grad():
            ref = ref_model(input_ids=ids.to(dev), pixel_values=pv.to(dev), image_grid_thw=thw.to(dev), mm_token_type_ids=mm.to(dev)).logits.float().cpu()
            pos, delta = (t.cpu() for t in hf_positions(ref_model, ids.to(dev), thw.to(dev)))
            lg, _ = ortm.logits(ids, pvs, thws, pos)
            diff = float(np.abs(lg - ref.numpy()).max())
            vis_diff = max(float((Vision(model)(p, t) - model.model.visual(p, t).pooler_output).abs().max()) for p, t in zip(pvs, thws))
            t0 = time.time()
            g = ref_model.generate(input_ids=ids.to(dev), pixel_values=pv.to(dev), image_grid_thw=thw.to(dev), mm_token_type_ids=mm.to(dev), max_new_tokens=n_new,
                               do_sample=False, eos_token_id=eos, output_scores=True, return_dict_in_generate=True)
            gen_s = time.time() - t0
        gen = g.sequences[0, ids.shape[1]:].tolist()
        margins = [float((lambda s: s[0] - s[1])(sc[0].float().topk(2).values)) for sc in g.scores]
        ort_gen = ortm.greedy(ids, pvs, thws, pos, delta.numpy(), len(gen), eos)
        log(f"{name}: prompt {ids.shape[1]} tokens, {len(imgs)} image(s); ONNX vs PyTorch logits max|diff| {diff:.3g}; "
            f"vision wrapper vs HF {vis_diff:.3g}; HF greedy {gen}; ORT greedy {'==' if ort_gen == gen else '!='} HF; "
            f"min top1-top2 margin {min(margins) if margins else float('nan'):.3g}")
        report[name] = {"prompt_tokens": int(ids.shape[1]), "images": len(imgs), "logits_max_abs_diff": diff, "vision_max_abs_diff": vis_diff,
                        "ort_greedy_equals_pytorch": ort_gen == gen, "min_margin": min(margins) if margins else None, "generate_s": gen_s}
        parity["cases"][name] = {
            "messages": _messages_with_files(msgs, files[name]),
            "images": files[name], "prompt": prompt, "input_ids": ids[0].tolist(), "image_grid_thw": thw.tolist(),
            "pixel_values_sum": [float(p.double().sum()) for p in pvs], "max_new_tokens": n_new, "generated": gen,
            "min_margin": min(margins) if margins else None}
    if write_parity:
        parity.update({"eos_token_id": eos, "note": "PyTorch greedy (transformers generate, do_sample=False), random weights, fp32 CPU"})
        write_json(f"{out}/parity.json", parity)
    return report


def _messages_with_files(msgs, files):
    """The conversation as stored in parity.json: each image item names its file, in order."""
    it = iter(files)
    return [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str) else
             [{"type": "image", "file": next(it)} if c["type"] == "image" else c for c in m["content"]]} for m in msgs]


def render_with_jinja(template):
    import jinja2
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    t = env.from_string(template)
    return lambda msgs: t.render(messages=msgs, add_generation_prompt=True)


# ---------------------------------------------------------------------------------------------------------------------
def make_tiny(out, seed, dtypes, log):
    from tokenizers import Tokenizer, models, trainers, pre_tokenizers as pt, decoders, processors, AddedToken
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    torch.manual_seed(seed)
    os.makedirs(f"{out}/onnx", exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pt.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train_from_iterator(CORPUS * 20, trainers.BpeTrainer(vocab_size=1500, special_tokens=SPECIAL, show_progress=False,
                                                             initial_alphabet=pt.ByteLevel.alphabet()))
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in NON_SPECIAL])
    tok.save(f"{out}/tokenizer.json")
    ID = {t: tok.token_to_id(t) for t in SPECIAL + NON_SPECIAL}
    write_json(f"{out}/tokenizer_config.json", {
        "tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None, "unk_token": None,
        "model_max_length": 32768, "clean_up_tokenization_spaces": False, "split_special_tokens": False, "errors": "replace",
        "chat_template": QWEN_VL_TEMPLATE})
    write_json(f"{out}/preprocessor_config.json", {
        "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor", "do_resize": True, "do_rescale": True,
        "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": MEAN, "image_std": STD, "do_convert_rgb": True, "resample": 3,
        "min_pixels": 3136, "max_pixels": 50176, "size": {"shortest_edge": 3136, "longest_edge": 50176}, "patch_size": 14,
        "temporal_patch_size": 2, "merge_size": 2})
    cfg = Qwen2_5_VLConfig(
        text_config=dict(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=32768, rms_norm_eps=1e-6, bos_token_id=ID["<|endoftext|>"],
                         eos_token_id=ID["<|im_end|>"], pad_token_id=ID["<|endoftext|>"],
                         rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]}),
        vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=14, spatial_merge_size=2,
                           temporal_patch_size=2, window_size=112, fullatt_block_indexes=[1], tokens_per_second=2),
        image_token_id=ID["<|image_pad|>"], video_token_id=ID["<|video_pad|>"], vision_start_token_id=ID["<|vision_start|>"],
        vision_end_token_id=ID["<|vision_end|>"], tie_word_embeddings=False)
    cfg._attn_implementation = "eager"
    model = Qwen2_5_VLForConditionalGeneration(cfg).eval()
    # random init at std 0.02 leaves near-flat logits; a wider init keeps greedy choices far from ties, so the parity
    # test checks the pipeline rather than float rounding
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.3 if "embed" in n or "lm_head" in n else 0.08)
    chunks = export_onnx(model, out, dtypes, log)
    write_model_files(model, out, chunks)
    eos = [ID["<|im_end|>"], ID["<|endoftext|>"]]
    write_json(f"{out}/generation_config.json", {"bos_token_id": ID["<|endoftext|>"], "eos_token_id": eos, "pad_token_id": ID["<|endoftext|>"],
                                                 "do_sample": False})
    images = synthetic_images()
    for f, im in images.items():
        write_png(f"{out}/{f}", im)
    rep = check_and_parity(model, out, lambda s: tok.encode(s).ids, render_with_jinja(QWEN_VL_TEMPLATE), images, log, eos=eos)
    return model, rep


def bench_gpu(model, images, encode, render, log, new_tokens=128):
    if not torch.cuda.is_available():
        return {"error": "no CUDA"}
    cfg = model.config
    m = model.to("cuda", torch.bfloat16).eval()
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe this image."}]}]
    prompt = render(msgs)
    im = images["original.png"]
    parts = prompt.split("<|image_pad|>")
    text = parts[0] + "<|image_pad|>" * ((im.shape[0] // 14) * (im.shape[1] // 14) // 4) + parts[1]
    ids, pvs, thws = case_inputs(model, encode(text), [im])
    kw = dict(input_ids=ids.cuda(), pixel_values=pvs[0].cuda().to(torch.bfloat16), image_grid_thw=thws[0].cuda(), mm_token_type_ids=mm_types(ids, cfg).cuda(), do_sample=False)
    with torch.no_grad():
        m.generate(**kw, max_new_tokens=4, min_new_tokens=4)  # warm-up
        torch.cuda.synchronize(); t0 = time.time()
        m.generate(**kw, max_new_tokens=1, min_new_tokens=1)
        torch.cuda.synchronize(); t1 = time.time()
        m.generate(**kw, max_new_tokens=new_tokens, min_new_tokens=new_tokens)
        torch.cuda.synchronize(); t2 = time.time()
    prefill = t1 - t0
    decode = (t2 - t1) - prefill
    r = {"gpu": torch.cuda.get_device_name(0), "dtype": "bf16", "prompt_tokens": int(ids.shape[1]), "prefill_s": prefill,
         "prefill_tok_s": ids.shape[1] / prefill, "decode_tokens": new_tokens - 1, "decode_tok_s": (new_tokens - 1) / decode}
    log(f"GPU bench: {r}")
    return r


TINY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny-random-qwen25vl")
# the committed tiny tokenizer's special ids (models/tiny-random-qwen25vl/tokenizer.json)
TINY_IDS = {"bos": 0, "eos": 2, "pad": 0, "image": 12, "video": 13, "vision_start": 9, "vision_end": 10}
QWEN_IDS = {"bos": 151643, "eos": 151645, "pad": None, "image": 151655, "video": 151656, "vision_start": 151652, "vision_end": 151653}
_VISION_QWEN25VL = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, patch_size=14, spatial_merge_size=2,
                        temporal_patch_size=2, window_size=112, fullatt_block_indexes=[7, 15, 23, 31], tokens_per_second=2, in_chans=3)
# Hugging Face configs of Qwen2.5-VL-3B/7B-Instruct; "0.5b" = Qwen2.5-0.5B's text dims + a 4-block vision tower (~0.52 B)
RANDOM_CONFIGS = {
    "0.5b": dict(text=dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                           num_key_value_heads=2, max_position_embeddings=32768, mrope_section=[8, 12, 12]),
                 vision=dict(_VISION_QWEN25VL, depth=4, hidden_size=640, intermediate_size=1708, num_heads=10, fullatt_block_indexes=[3]),
                 tie=True),
    "3b": dict(text=dict(vocab_size=151936, hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
                         num_key_value_heads=2, max_position_embeddings=128000, mrope_section=[16, 24, 24]),
               vision=_VISION_QWEN25VL, tie=True),
    "7b": dict(text=dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                         num_key_value_heads=4, max_position_embeddings=128000, mrope_section=[16, 24, 24]),
               vision=_VISION_QWEN25VL, tie=False),
}


def random_config(name, ids=None):
    """A Qwen2_5_VLConfig of preset `name` (RANDOM_CONFIGS); `ids` = special token ids (default Qwen's own)."""
    from transformers import Qwen2_5_VLConfig
    p, ids = RANDOM_CONFIGS[name], ids or QWEN_IDS
    t = dict(p["text"])
    mrope = t.pop("mrope_section")
    extra = {} if ids["pad"] is None else {"pad_token_id": ids["pad"]}
    return Qwen2_5_VLConfig(
        text_config=dict(t, rms_norm_eps=1e-6, bos_token_id=ids["bos"], eos_token_id=ids["eos"], tie_word_embeddings=p["tie"], **extra,
                         rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": mrope}),
        vision_config=dict(p["vision"], out_hidden_size=t["hidden_size"]),
        image_token_id=ids["image"], video_token_id=ids["video"], vision_start_token_id=ids["vision_start"],
        vision_end_token_id=ids["vision_end"], tie_word_embeddings=p["tie"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--from", dest="src")
    ap.add_argument("--random-config", choices=["0.5b", "3b", "7b"])
    ap.add_argument("--dtypes", default="fp32,q8")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--bench-gpu", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    dtypes = set(a.dtypes.split(","))
    bad = dtypes - {"fp32", "q8", "fp16"}
    if bad:
        sys.exit(f"--dtypes: unsupported {sorted(bad)} (use fp32, q8 and/or fp16)")
    log = lambda s: print(s, flush=True)
    report = {"torch": torch.__version__}
    import transformers
    report["transformers"] = transformers.__version__
    t0 = time.time()
    if a.src or a.random_config:
        from transformers import Qwen2_5_VLForConditionalGeneration, AutoTokenizer
        os.makedirs(a.out, exist_ok=True)
        tiny = False
        if a.src:
            for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
                if not os.path.exists(f"{a.src}/{f}"):
                    sys.exit(f"{a.src}: missing {f} (expected a Hugging Face Qwen2.5-VL checkpoint folder)")
            conf = json.load(open(f"{a.src}/config.json"))
            if conf.get("model_type") not in ("qwen2_5_vl",):
                sys.exit(f"{a.src}/config.json: model_type is {conf.get('model_type')!r}; this converter handles qwen2_5_vl")
            model = Qwen2_5_VLForConditionalGeneration.from_pretrained(a.src, dtype=torch.float32, attn_implementation="eager").eval()
            tok = AutoTokenizer.from_pretrained(a.src)
            encode = lambda s: tok(s, add_special_tokens=False).input_ids
            template = tok.chat_template or QWEN_VL_TEMPLATE
            ref_model = model
        else:
            torch.manual_seed(a.seed)
            tiny = a.random_config == "0.5b"  # the bench model speaks the committed tiny tokenizer (its ids are valid)
            cfg = random_config(a.random_config, TINY_IDS if tiny else None)
            cfg._attn_implementation = "eager"
            t = time.time()
            with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
                ref_model = Qwen2_5_VLForConditionalGeneration(cfg).float().eval()
            model = copy.deepcopy(ref_model).cpu().eval()
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            log(f"random {a.random_config} model: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B params, built in {time.time() - t:.1f}s")
            if tiny:
                from tokenizers import Tokenizer
                tk = Tokenizer.from_file(f"{TINY_DIR}/tokenizer.json")
                encode = lambda s: tk.encode(s).ids
            else:
                # a stand-in tokenizer: ids for text are arbitrary here; only the vision/image-pad ids must be right
                encode = lambda s: _fake_encode(s, cfg)
            template = QWEN_VL_TEMPLATE
        t = time.time()
        chunks = export_onnx(model, a.out, dtypes, log)
        write_model_files(model, a.out, chunks, tokenizer_src=a.src or (TINY_DIR if tiny else None))
        if tiny:
            for f in synthetic_images():
                shutil.copy(f"{TINY_DIR}/{f}", f"{a.out}/{f}")
        report["export_s"] = time.time() - t
        images = synthetic_images()
        if a.check:
            report["check"] = check_and_parity(model, a.out, encode, render_with_jinja(template), images, log, gen_tokens=(4, 4),
                                               write_parity=False, ref_model=ref_model)
        if a.bench_gpu:
            del model
            report["gpu_bench"] = bench_gpu(ref_model, images, encode, render_with_jinja(template), log)
    else:
        model, rep = make_tiny(a.out, a.seed, dtypes, log)
        report["check"] = rep
        if a.bench_gpu:
            from tokenizers import Tokenizer
            tk = Tokenizer.from_file(f"{a.out}/tokenizer.json")
            report["gpu_bench"] = bench_gpu(model, synthetic_images(), lambda s: tk.encode(s).ids, render_with_jinja(QWEN_VL_TEMPLATE), log)
    report["total_s"] = time.time() - t0
    report["files"] = {f: os.path.getsize(f"{a.out}/onnx/{f}") for f in sorted(os.listdir(f"{a.out}/onnx"))} if os.path.isdir(f"{a.out}/onnx") else {}
    log(json.dumps(report, indent=1))
    if a.json:
        write_json(a.json, report)


def _fake_encode(s, cfg):
    """Text -> ids for a random-weight check without a tokenizer: specials map to Qwen's ids, other bytes to ids 100..355."""
    specials = {"<|im_start|>": 151644, "<|im_end|>": 151645, "<|vision_start|>": cfg.vision_start_token_id,
                "<|vision_end|>": cfg.vision_end_token_id, "<|image_pad|>": cfg.image_token_id, "<|video_pad|>": cfg.video_token_id}
    out, i = [], 0
    while i < len(s):
        for k, v in specials.items():
            if s.startswith(k, i):
                out.append(v)
                i += len(k)
                break
        else:
            out.extend(100 + b for b in s[i].encode())
            i += 1
    return out


if __name__ == "__main__":
    main()
