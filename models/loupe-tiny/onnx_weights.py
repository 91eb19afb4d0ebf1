#!/usr/bin/env python3
"""The trainable weights back from a model folder's q8 ONNX files, with no onnx package (a minimal protobuf reader).

  onnx_weights.py --model MODEL_DIR --out OUT.safetensors [--dtype fp16|fp32] [--check]
  onnx_weights.py --model MODEL_DIR --graft W.safetensors --out OUT_DIR [--config RUN/config.json]

--graft writes MODEL_DIR's three q8 graphs with W's weights into OUT_DIR/onnx (the rest of the folder copied, W as
OUT_DIR/model.safetensors in fp16): the same graph, each matrix quantized as the exporter's dynamic quantization does
(int8 symmetric for the decoder: scale = max|w| / 127, zero point 0; uint8 asymmetric for the vision tower and the
embedding: the range [min(w, 0), max(w, 0)] onto 0..255), norms and biases in fp32. For a machine without transformers and
onnx (the exporter's needs), and exact: grafting the weights recovered from a folder gives that folder's files back.

Why: a model whose fp32 weights were lost can still be trained further. The q8 files keep every weight: the matrices as
int8/uint8 with one scale and zero point per tensor (onnxruntime's dynamic quantization, as make_tiny_qwen25vl.py
writes it), norms and biases in fp32. Dequantized, w = (q - zero_point) * scale, so each matrix is within half a step
(scale / 2) of the trained one; a short SFT from them recovers what the rounding moved.

Names: the vision tower's and embedding's initializers carry the state-dict key (`m.` + key, `_quantized`); the
decoder's matrices are anonymous (`onnx::MatMul_N`, the exporter's transposed copies) and are found through the node
that reads them (`/q_proj_2/MatMul_quant` = layer 2's q_proj; no suffix = layer 0). A MatMul weight is [in, out], a
torch Linear's [out, in]. --check: every key of qwen_torch's model for the folder's config is found, with its shape.
"""
import argparse, json, os, re, struct, sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

DT = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 10: np.float16}


def _varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def _fields(b, i=0, end=None):
    """(field number, wire type, value or start, end) of one protobuf message."""
    end = len(b) if end is None else end
    while i < end:
        k, i = _varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            v, i = _varint(b, i)
            yield f, t, v, None
        elif t == 2:
            n, i = _varint(b, i)
            yield f, t, i, i + n
            i += n
        elif t == 1:
            yield f, t, b[i:i + 8], None
            i += 8
        elif t == 5:
            yield f, t, b[i:i + 4], None
            i += 4
        else:
            raise ValueError(f"onnx_weights: protobuf wire type {t}")


def _graph(b):
    for f, _, s, e in _fields(b):
        if f == 7:  # ModelProto.graph
            return s, e
    raise ValueError("onnx_weights: no graph")


def _tensor(b, s, e):
    """TensorProto -> (name, array): dims 1, data_type 2, float_data 4, int32_data 5, int64_data 7, name 8, raw_data 9."""
    name, dims, dt, raw, f32, i32 = None, [], None, None, [], []
    for f, t, v, ve in _fields(b, s, e):
        if f == 1:
            if t == 0:
                dims.append(v)
            else:  # packed
                j = v
                while j < ve:
                    d, j = _varint(b, j)
                    dims.append(d)
        elif f == 2:
            dt = v
        elif f == 4:
            f32 += list(struct.unpack(f"<{(ve - v) // 4}f", b[v:ve])) if t == 2 else list(struct.unpack("<f", v))
        elif f == 5:
            if t == 2:
                j = v
                while j < ve:
                    d, j = _varint(b, j)
                    i32.append(d)
            else:
                i32.append(v)
        elif f == 8:
            name = bytes(b[v:ve]).decode()
        elif f == 9:
            raw = bytes(b[v:ve])
    np_dt = DT[dt]
    if raw is not None:
        a = np.frombuffer(raw, dtype=np_dt).copy()
    elif f32:
        a = np.array(f32, dtype=np.float32)
    else:
        a = np.array([x - 256 if np_dt == np.int8 and x > 127 else x for x in i32]).astype(np_dt)
    return name, a.reshape(dims)


def read_onnx(path):
    """{initializer name: array}, [(node name, op, inputs)]."""
    b = memoryview(open(path, "rb").read())
    gs, ge = _graph(b)
    inits, nodes = {}, []
    for f, _, s, e in _fields(b, gs, ge):
        if f == 5:
            n, a = _tensor(b, s, e)
            inits[n] = a
        elif f == 1:
            name, op, ins = None, None, []
            for g, _, v, ve in _fields(b, s, e):
                if g == 1:
                    ins.append(bytes(b[v:ve]).decode())
                elif g == 3:
                    name = bytes(b[v:ve]).decode()
                elif g == 4:
                    op = bytes(b[v:ve]).decode()
            nodes.append((name, op, ins))
    return inits, nodes


def _deq(inits, base):
    q = inits[base + "_quantized"].astype(np.float32)
    return (q - inits[base + "_zero_point"].astype(np.float32)) * inits[base + "_scale"].astype(np.float32)


DEC_NODE = re.compile(r"^/(?:mlp/)?(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj|lm_head)(?:_(\d+))?/MatMul_quant$")


def recover(model_dir):
    """The state dict (numpy fp32, qwen_torch / HF keys) from MODEL_DIR/onnx/*_quantized.onnx."""
    sd = {}
    for part in ("embed_tokens", "vision_encoder", "decoder_model_merged"):
        inits, nodes = read_onnx(os.path.join(model_dir, "onnx", f"{part}_quantized.onnx"))
        for n, a in inits.items():  # fp32 norms and biases; named matrices
            if n.startswith("m.") and a.dtype == np.float32 and a.ndim >= 1:
                sd[n[2:]] = a
            elif n.startswith("m.") and n.endswith("_quantized"):
                base = n[: -len("_quantized")]
                w = _deq(inits, base)
                key = base[2:]
                used = [op for _, op, ins in nodes if n in ins]
                if "MatMulInteger" in used and w.ndim == 2:  # a Linear exported as MatMul: [in, out]
                    w = w.T
                sd[key] = w
        if part == "decoder_model_merged":
            for name, op, ins in nodes:
                m = DEC_NODE.match(name or "")
                if op != "MatMulInteger" or not m:
                    continue
                base = ins[1][: -len("_quantized")]
                w = _deq(inits, base).T
                proj, layer = m.group(1), int(m.group(2) or 0)
                if proj == "lm_head":
                    sd["lm_head.weight"] = w
                else:
                    sub = "mlp" if proj in ("gate_proj", "up_proj", "down_proj") else "self_attn"
                    sd[f"model.language_model.layers.{layer}.{sub}.{proj}.weight"] = w
    return sd


def _key(field, wire):
    return _enc_varint((field << 3) | wire)


def _enc_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def _ld(field, payload):
    """A length-delimited field."""
    return _key(field, 2) + _enc_varint(len(payload)) + payload


def _segments(b, s, e):
    """(field, start, end of the whole field incl. its key, payload start, payload end) of one message's fields."""
    i = s
    out = []
    while i < e:
        st = i
        k, i = _varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            _, i = _varint(b, i)
            out.append((f, st, i, None, None))
        elif t == 2:
            n, i = _varint(b, i)
            out.append((f, st, i + n, i, i + n))
            i += n
        elif t == 1:
            i += 8
            out.append((f, st, i, None, None))
        elif t == 5:
            i += 4
            out.append((f, st, i, None, None))
        else:
            raise ValueError(t)
    return out


def quantize(w, dtype):
    """The exporter's dynamic quantization of one weight (numpy fp32) -> (q, scale, zero point) as stored."""
    if dtype == np.int8:
        scale = np.float32(max(float(np.abs(w).max()), 1e-12) / 127.0)
        return np.clip(np.rint(w / scale), -127, 127).astype(np.int8), scale, np.int8(0)
    lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
    scale = np.float32(max(hi - lo, 1e-12) / 255.0)
    zp = np.uint8(np.clip(np.rint(-lo / scale), 0, 255))
    return np.clip(np.rint(w / scale) + float(zp), 0, 255).astype(np.uint8), scale, zp


def _tensor_bytes(b, s, e, arr):
    """TensorProto at b[s:e] with its data replaced by `arr` (raw_data; dims and type kept)."""
    keep = b"".join(bytes(b[st:en]) for f, st, en, _, _ in _segments(b, s, e) if f not in (4, 5, 9))
    return keep + _ld(9, np.ascontiguousarray(arr).tobytes())


def graft_part(src, sd, dst):
    """One q8 ONNX file with the weights of state dict `sd` (numpy fp32) -> dst; returns the number of tensors replaced."""
    b = memoryview(open(src, "rb").read())
    inits, nodes = read_onnx(src)
    new = {}  # initializer name -> array
    consumers = {}
    for name, op, ins in nodes:
        for i in ins:
            consumers.setdefault(i, []).append(op)
    for n, a in inits.items():
        if n.startswith("m.") and a.dtype == np.float32 and a.ndim >= 1 and n[2:] in sd:
            new[n] = sd[n[2:]].astype(np.float32).reshape(a.shape)
        elif n.startswith("m.") and n.endswith("_quantized") and n[2:-len("_quantized")] in sd:
            w = sd[n[2:-len("_quantized")]].astype(np.float32)
            if "MatMulInteger" in consumers.get(n, []) and w.ndim == 2:
                w = w.T
            q, sc, zp = quantize(w.reshape(a.shape), a.dtype.type)
            base = n[:-len("_quantized")]
            new[n], new[base + "_scale"], new[base + "_zero_point"] = q, np.array(sc), np.array(zp)
    for name, op, ins in nodes:
        m = DEC_NODE.match(name or "")
        if op != "MatMulInteger" or not m:
            continue
        proj, layer = m.group(1), int(m.group(2) or 0)
        key = "lm_head.weight" if proj == "lm_head" else \
            f"model.language_model.layers.{layer}.{'mlp' if proj in ('gate_proj', 'up_proj', 'down_proj') else 'self_attn'}.{proj}.weight"
        base = ins[1][: -len("_quantized")]
        q, sc, zp = quantize(sd[key].astype(np.float32).T, inits[ins[1]].dtype.type)
        new[ins[1]], new[base + "_scale"], new[base + "_zero_point"] = q, np.array(sc), np.array(zp)
    gs, ge = _graph(b)
    graph = bytearray()
    for f, st, en, ps, pe in _segments(b, gs, ge):
        if f == 5:
            name = _tensor(b, ps, pe)[0]
            if name in new:
                graph += _ld(5, _tensor_bytes(b, ps, pe, new[name]))
                continue
        graph += bytes(b[st:en])
    model = bytearray()
    for f, st, en, ps, pe in _segments(b, 0, len(b)):
        model += _ld(7, bytes(graph)) if f == 7 else bytes(b[st:en])
    with open(dst, "wb") as fh:
        fh.write(model)
    return len(new)


def rope_mismatch(model_dir, run_config):
    """Why a graft of weights trained with `run_config` (the run's config.json) into MODEL_DIR's graphs would be wrong, or
    None: the graphs compute the rotary embedding with MODEL_DIR's text rope parameters baked in (the M-RoPE split
    among them), so weights trained under others need a fresh export (export.py), not a graft."""
    def rope(path):
        try:
            c = json.load(open(path))
        except (OSError, ValueError) as e:
            raise SystemExit(f"onnx_weights: cannot read {path}: {e}")
        if not isinstance(c, dict):
            raise SystemExit(f"onnx_weights: {path} is not a model config (a JSON object)")
        tc = c.get("text_config") if isinstance(c.get("text_config"), dict) else c  # transformers 5 layout, else flat
        return tc.get("rope_parameters")

    want, got = rope(os.path.join(model_dir, "config.json")), rope(run_config)
    if want != got:
        return (f"onnx_weights: the run's text rope parameters {got} differ from the graphs' {want} ({model_dir}/config.json); "
                "the graphs keep theirs, so export the run's folder with export.py instead of grafting")
    return None


def graft(model_dir, weights, out_dir):
    import shutil
    import torch
    sys.path.insert(0, HERE)
    import qwen_torch as qt
    try:
        sd = {k: v.float().numpy() for k, v in qt.load_safetensors(weights).items()}
    except Exception as e:  # a truncated, empty or foreign file: nothing is written
        raise SystemExit(f"onnx_weights: cannot read {weights} as safetensors ({type(e).__name__}: {e})")
    os.makedirs(os.path.join(out_dir, "onnx"), exist_ok=True)
    for f in os.listdir(model_dir):
        if os.path.isfile(os.path.join(model_dir, f)) and f != "model.safetensors":
            shutil.copy(os.path.join(model_dir, f), os.path.join(out_dir, f))
    n = {p: graft_part(os.path.join(model_dir, "onnx", f"{p}_quantized.onnx"), sd, os.path.join(out_dir, "onnx", f"{p}_quantized.onnx"))
         for p in ("embed_tokens", "vision_encoder", "decoder_model_merged")}
    qt.save_safetensors({k: torch.from_numpy(v).half() for k, v in sd.items()}, os.path.join(out_dir, "model.safetensors"))
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--graft", help="weights (safetensors) to write into MODEL_DIR's q8 graphs; --out is then a folder")
    ap.add_argument("--config", help="with --graft: the training run's config.json (default: the config.json beside the "
                    "weights, where there is one); refused if its rope parameters (the M-RoPE split) differ from MODEL_DIR's, "
                    "which the graphs have baked in")
    a = ap.parse_args()
    # a run folder's weights sit beside the config they were trained under: check it unless another is named
    beside = os.path.join(os.path.dirname(os.path.abspath(a.graft)), "config.json") if a.graft else None
    run_config = a.config or (beside if beside and os.path.exists(beside) else None)
    if a.graft and run_config:
        why = rope_mismatch(a.model, run_config)
        if why:
            raise SystemExit(why)
    if a.graft:
        print(json.dumps({"out": a.out, "replaced": graft(a.model, a.graft, a.out)}))
        return
    import torch
    sys.path.insert(0, HERE)
    import qwen_torch as qt
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in recover(a.model).items()}
    model = qt.QwenVL(json.load(open(os.path.join(a.model, "config.json"))), init=False)
    want = {k: tuple(v.shape) for k, v in model.state_dict().items() if not k.endswith("inv_freq")}
    missing = sorted(set(want) - set(sd))
    extra = sorted(set(sd) - set(want))
    bad = sorted(k for k in want if k in sd and tuple(sd[k].shape) != want[k])
    if missing or extra or bad:
        raise SystemExit(f"onnx_weights: missing {missing[:6]}, unexpected {extra[:6]}, wrong shape {[(k, tuple(sd[k].shape), want[k]) for k in bad[:4]]}")
    dt = torch.float16 if a.dtype == "fp16" else torch.float32
    qt.save_safetensors({k: v.to(dt).contiguous() for k, v in sd.items() if k in want}, a.out)
    print(json.dumps({"out": a.out, "tensors": len(want), "params": int(sum(np.prod(s) for s in want.values()))}))


if __name__ == "__main__":
    main()
