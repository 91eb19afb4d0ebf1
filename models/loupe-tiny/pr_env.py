#!/usr/bin/env python3
"""The Pixel Reasoner environment in Python (numpy + Pillow only), for loupe-tiny's RL phase.

It follows the same protocol as Loupe's TypeScript implementation (app/protocol/pixelReasoner.ts, app/tools/crop.ts,
app/tools/smartResize.ts, app/tools/selection.ts, app/bench/scorers/prBoxed.ts) and is checked against the same golden
vectors (check_pr_env.py). Being Python, it runs the reference's own operations (json.loads, list indexing, comparisons,
round-half-even, Pillow) directly, so error texts are CPython's; the one Python-version difference the vectors pin is
normalised to the 3.10 text (`_py310`).

Parts:
- prompts: the PR system prompt (Nous tools), the vcot/notool guideline, the Qwen2.5-VL chat rendering;
- parsing: `is_tool_turn`, `parse_call` (last <tool_call>, strict JSON, name/arguments, bound-tool lookup);
- execution: `plan_turn` over sizes (the vectors' trace fields), `Episode` with pixels (initial resize, crop, zoom resize
  with Pillow BICUBIC, observation text), the tool-call limits;
- scoring: `pr_boxed_trace` (string steps exact) and `pr_reward` (math_verify approximated as the TS scorer does);
- rewards: `curiosity_rewards` (the curiosity-driven shaping, both published variants);
- engine preprocessing: `engine_resize` (transformers.js Qwen2VLImageProcessor: its smart_resize, sharp's affine bicubic
  emulated with Pillow), `patches_from_rgb` (pixel_values layout).
"""
import json
import math
import re
import sys

import numpy as np
from PIL import Image

# ---------------------------------------------------------------------------------------------------------------------
# prompts (app/protocol/prompts.ts)

DEFAULT_SYSTEM = "You are a helpful assistant."
PR_CROP_TOOL = {"name": "crop_image_normalized", "description": "Zoom in on the image based on the bounding box coordinates. It is useful when the object or text in the image is too small to be seen.", "parameters": {"type": "object", "properties": {"bbox_2d": {"type": "array", "description": "coordinates for bounding box of the area you want to zoom in. Values should be within [0.0,1.0].", "items": {"type": "number"}}, "target_image": {"type": "number", "description": "The index of the image to crop. Index from 1 to the number of images. Choose 1 to operate on original image."}}, "required": ["bbox_2d", "target_image"]}}
PR_SELECT_FRAMES_TOOL = {"name": "select_frames", "description": "Select frames from a video.", "parameters": {"type": "object", "properties": {"target_frames": {"type": "array", "description": "List of frame indices to select from the video (no more than 8 frames in total).", "items": {"type": "integer", "description": "Frame index from 1 to 16."}}}, "required": ["target_frames"]}}
PR_OPERATIONS = ("crop_image_normalized", "select_frames")
PR_GUIDELINES = {
    "vcot": "\n\nGuidelines: Understand the given visual information and the user query. Determine if it is beneficial to employ the given visual operations (tools). For a video, we can look closer by `select_frames`. For an image, we can look closer by `crop_image`. Reason with the visual information step by step, and put your final answer within \\boxed{}.",
    "notool": "Please think step by step, and put your final answer within \\boxed{}.",
}
PR_MAX_IMAGES = 16
PR_MAX_CALLS = 4  # num_toolcalls > 3 forces the finish
PR_TOKEN_BUDGET = 12 * 1024 - 200
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
TOOL_START, TOOL_END = "<tool_call>", "</tool_call>"
VISION_IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"


def pr_system_prompt(prompt="vcot"):
    if prompt == "notool":
        return DEFAULT_SYSTEM
    lines = [json.dumps({"type": "function", "function": t}, ensure_ascii=False) for t in (PR_CROP_TOOL, PR_SELECT_FRAMES_TOOL)]
    return (DEFAULT_SYSTEM + "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + "\n".join(lines) + "\n</tools>\n\n"
            "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
            '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')


def pr_user_text(question, prompt="vcot"):
    return f"{question}\n\n{PR_GUIDELINES[prompt]}"


def synth_question(sample):
    """app/synth/trajectories.ts userText's question part (options appended as the generator does)."""
    q = sample["question"]
    if sample.get("options"):
        q += "\n" + "\n".join(f"({chr(65 + i)}) {o}" for i, o in enumerate(sample["options"])) + "\nAnswer with the option letter."
    return q


def options_swapped(sample):
    """A two-option sample (left-of) with its options in the other order and the answer letter moved with them: the same
    question about the same image, only the letter that names the answer differs."""
    opts = sample["options"]
    if len(opts) != 2 or sample["answer"] not in ("A", "B"):
        raise ValueError(f"{sample.get('qid')}: options_swapped needs two options and an answer A or B")
    return dict(sample, options=opts[::-1], answer="B" if sample["answer"] == "A" else "A")


def render_first_turn(question, n_images=1, prompt="vcot"):
    """The first prompt exactly as renderQwenChat renders it: system, user (images first, then text), generation prompt."""
    return (f"{IM_START}system\n{pr_system_prompt(prompt)}{IM_END}\n{IM_START}user\n" + VISION_IMAGE * n_images
            + pr_user_text(question, prompt) + f"{IM_END}\n{IM_START}assistant\n")


def render_observation_turn(observation, n_images):
    """What follows a generated assistant turn: its <|im_end|>, the observation user turn, the next generation prompt."""
    return f"{IM_END}\n{IM_START}user\n{observation}" + VISION_IMAGE * n_images + f"{IM_END}\n{IM_START}assistant\n"


# ---------------------------------------------------------------------------------------------------------------------
# errors and observations

class PyError(Exception):
    """A reference exception as (type, message)."""

    def __init__(self, type_, message):
        super().__init__(message)
        self.type, self.message = type_, message


def _py310(msg):
    # Python 3.11 appends ", not 'str'" to "string indices must be integers"; the vectors (and PR) use 3.10.
    return msg[: -len(", not 'str'")] if msg.startswith("string indices must be integers, not ") else msg


def as_error(e):
    if isinstance(e, PyError):
        return {"type": e.type, "message": e.message}
    return {"type": type(e).__name__, "message": _py310(str(e))}


def error_observation(message):
    return f"\nExecution error:\n{message}\n"


def crop_observation(w, h):
    return f"\nHere is the cropped image (Image Size: {w}x{h}):"


def frames_observation(w, h, images_before, k):
    return f"\nHere are the selected frames (Frame Size: {w}x{h}, Numbered {images_before} to {k + images_before - 1}):"


# ---------------------------------------------------------------------------------------------------------------------
# smart_resize (qwen-vl-utils, QwenLM/Qwen2.5-VL@f0af2996) and PR's presets

PX = 28 * 28
RESIZE_PRESETS = {
    "eval_initial": (256 * PX, 8000 * PX), "train_initial": (4 * PX, 2000 * PX),
    "eval_zoom": (256 * PX, 5120 * PX), "train_zoom": (4 * PX, 1000 * PX),
    "train_select": (4 * PX, 400 * PX), "video_frame": (4 * PX, 512 * PX), "qwen_default": (4 * PX, 16384 * PX),
}


def smart_resize(height, width, factor=28, min_pixels=4 * PX, max_pixels=16384 * PX):
    if max(height, width) / min(height, width) > 200:
        raise PyError("ValueError", f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def resize_with_preset(size, preset):
    """[w, h] -> [w, h] with a named preset."""
    lo, hi = RESIZE_PRESETS[preset]
    h, w = smart_resize(size[1], size[0], 28, lo, hi)
    return [w, h]


def preset_for(step, mode):
    return {("initial", "eval"): "eval_initial", ("initial", "train"): "train_initial", ("zoom", "eval"): "eval_zoom",
            ("zoom", "train"): "train_zoom", ("select", "eval"): None, ("select", "train"): "train_select"}.get((step, mode), "video_frame")


def padded_frame_count(n):
    return math.ceil(n / 2) * 2


# ---------------------------------------------------------------------------------------------------------------------
# parsing (PR EM:2237-2276)

def is_tool_turn(response):
    return response.replace(IM_END, "").endswith(TOOL_END)


def last_call_text(text):
    return text.split(TOOL_START)[-1].split(TOOL_END)[0]


def read_call(raw):
    """json.loads, ['name'], ['arguments'], operations[name] -> dict(value, name, arguments, parsed, error)."""
    out = {"parsed": None, "error": None}
    try:
        v = json.loads(raw)
        out["name"] = v["name"]
        out["arguments"] = v["arguments"]
        out["parsed"] = {"name": out["name"], "arguments": out["arguments"]}
        {o: None for o in PR_OPERATIONS}[out["name"]]
    except Exception as e:  # noqa: BLE001 - every reference exception becomes an observation
        out["error"] = as_error(e)
    return out


def parse_call(prefix, response):
    """The toolcall suite: {isToolTurn, parsed, error, observation} (plus name/arguments when ok)."""
    if not is_tool_turn(response):
        return {"isToolTurn": False, "parsed": None, "error": None, "observation": None}
    r = read_call(last_call_text(prefix + response))
    res = {"isToolTurn": True, "parsed": r["parsed"], "error": r["error"], "observation": error_observation(r["error"]["message"]) if r["error"] else None}
    if not r["error"]:
        res["name"], res["arguments"] = r["name"], r["arguments"]
    return res


# ---------------------------------------------------------------------------------------------------------------------
# execution over sizes (PR execute_tool + CropImageNormalized.call + resize_cropped), trace in the vectors' field names

CROP_ERR = "Execution Error: Incorrect `target_image` argument in `crop_image_normalized` operation."


def _clamp01(v):
    return min(max(0, v), 1)


def crop_geometry(size, bbox, zoom_preset, trace, padding=0.1):
    w, h = size
    normalized = bbox[0] < 1 and bbox[1] < 1 and bbox[2] < 1 and bbox[3] < 1
    trace["bboxMode"] = "normalized" if normalized else "absolute"
    f = lambda i: float(bbox[i])  # noqa: E731
    if normalized:
        raw = [f(0) - padding, f(1) - padding, f(2) + padding, f(3) + padding]
    else:
        raw = [f(0) / w - padding, f(1) / h - padding, f(2) / w + padding, f(3) / h + padding]
    x1, y1, x2, y2 = box = [_clamp01(v) for v in raw]
    trace["normalizedBox"] = box
    fb = [x1 * w, y1 * h, x2 * w, y2 * h]
    trace["cropBoxFloat"] = fb
    # Pillow >= 9.1 Image.crop: reversed coordinates raise; then _crop does map(int, map(round, box))
    if fb[2] < fb[0]:
        raise PyError("ValueError", "Coordinate 'right' is less than 'left'")
    if fb[3] < fb[1]:
        raise PyError("ValueError", "Coordinate 'lower' is less than 'upper'")
    ib = [int(round(v)) for v in fb]
    trace["cropBox"] = ib
    cw, ch = ib[2] - ib[0], ib[3] - ib[1]
    trace["cropSize"] = [cw, ch]
    if not (cw > 28 and ch > 28):
        raise PyError("AssertionError", f"Cropped image is too small: {cw}x{ch}")
    if zoom_preset:
        trace["resizedSize"] = resize_with_preset([cw, ch], zoom_preset)
    return trace


class Sizes:
    """The episode's images as the tool sees them: originals (after the initial resize) or a video, plus prior outputs."""

    def __init__(self, is_video=False, originals=(), video=None, prior=()):
        self.is_video, self.originals, self.video, self.prior = is_video, list(originals), video, list(prior)

    def count(self):
        return (1 if self.is_video else len(self.originals)) + len(self.prior)


def resolve_crop_target(imgs, tgt, trace):
    """-> (list name, position, size); PR EM:1206-1236."""
    n = imgs.count()
    if imgs.is_video:
        nf, fsize = imgs.video["numFrames"], imgs.video["frameSize"]
        if not imgs.prior:
            index = tgt - 1
            if not index < nf:
                raise PyError("AssertionError", f"{CROP_ERR} You can only pick an image **from** the video within [1,{nf}], but the current argument `target_image={tgt}`.")
            trace["selectedImage"] = {"source": "videoFrame", "index": index}
            frames = [fsize] * nf
            frames[index]  # IndexError / TypeError as Python
            trace["selectedImage"]["size"] = fsize
            return "videoFrames", index % nf, fsize
        index = tgt - 1
        if not index >= 1:
            raise PyError("AssertionError", f"{CROP_ERR} You can only pick an image within range [2,{n}], but the current argument `target_image={tgt}`.")
        trace["selectedImage"] = {"source": "images", "index": index}
        lst = [None] + imgs.prior
        size = lst[index]
        trace["selectedImage"]["size"] = size
        return "prior", (index % n) - 1, size
    index = tgt - 1
    if not index < n:
        raise PyError("AssertionError", f"{CROP_ERR} You can only pick an image within [1,{n}]")
    nraw = len(imgs.originals)
    if index < nraw:
        trace["selectedImage"] = {"source": "raw", "index": index}
        size = imgs.originals[index]
        trace["selectedImage"]["size"] = size
        return "originals", index % nraw, size
    trace["selectedImage"] = {"source": "images", "index": index}
    allimgs = imgs.originals + imgs.prior
    size = allimgs[index]
    trace["selectedImage"]["size"] = size
    pos = index % n
    return ("originals", pos, size) if pos < nraw else ("prior", pos - nraw, size)


def select_frames(imgs, args, mode, trace):
    if not imgs.is_video:
        raise PyError("AssertionError", "Execution Error: You attempted to `select_frames` from **image** not **video**. You should use `crop_image_normalized` instead for inspecting **image**.")
    nf, fsize = imgs.video["numFrames"], imgs.video["frameSize"]
    tgt = args["target_frames"]
    if len(tgt) > 8:
        raise PyError("AssertionError", f"Execution Error: You have selected {len(tgt)} frames in total. Think again which frames you need to check in details (no more than 8 frames)")
    if max(tgt) > nf:
        raise PyError("AssertionError", f"Execution Error: There are {nf} frames numbered in range [1,{nf}]. Your selection `target_frames={tgt}` is out of range.")
    indices = [x - 1 for x in tgt]
    frames = list(range(nf))
    positions = [frames[i] for i in indices]
    trace["selectedFrameIndices"] = indices
    frame_size = fsize if mode == "eval" else resize_with_preset(fsize, "train_select")
    trace["frameSize"] = frame_size
    return positions, frame_size


def plan_turn(name, args, imgs, mode):
    """Execute one parsed call over sizes. Returns the trace (vector field names) plus 'plan' details; never raises for
    bad arguments (the exception becomes the error observation)."""
    before = imgs.count()
    trace = {"imagesBefore": before}
    try:
        if name == "select_frames":
            positions, fs = select_frames(imgs, args, mode, trace)
            k = len(positions)
            trace["observation"] = frames_observation(fs[0], fs[1], before, k)
            trace["imagesAfter"] = before + k
            trace["exceedsMaxImages"] = trace["imagesAfter"] > PR_MAX_IMAGES
            return trace, {"kind": "frames", "positions": positions, "frameSize": fs}
        if name != "crop_image_normalized":
            {o: None for o in PR_OPERATIONS}[name]
        tgt = args["target_image"]
        lst, pos, size = resolve_crop_target(imgs, tgt, trace)
        bbox = args["bbox_2d"]
        crop_geometry(size, bbox, preset_for("zoom", mode), trace)
        rw, rh = trace["resizedSize"]
        trace["observation"] = crop_observation(rw, rh)
        trace["imagesAfter"] = before + 1
        trace["exceedsMaxImages"] = trace["imagesAfter"] > PR_MAX_IMAGES
        return trace, {"kind": "crop", "list": lst, "position": pos, "cropBox": trace["cropBox"], "resizedSize": trace["resizedSize"]}
    except Exception as e:  # noqa: BLE001
        trace["error"] = as_error(e)
        trace["observation"] = error_observation(trace["error"]["message"])
        return trace, {"kind": "error"}


# ---------------------------------------------------------------------------------------------------------------------
# pixels: the episode as Loupe's loop runs it (SharpImageOps 'pillow' resampler = Pillow Image.resize BICUBIC)

def load_rgb(path):
    im = Image.open(path)
    im.load()
    if im.mode in ("RGBA", "LA", "P"):
        im = im.convert("RGBA")
        bg = Image.new("RGBA", im.size, (255, 255, 255, 255))
        im = Image.alpha_composite(bg, im)
    return im.convert("RGB")


def pil_resize(im, w, h):
    return im if im.size == (w, h) else im.resize((w, h), Image.BICUBIC)


def initial_image(image_path, mode="eval"):
    """The question image as the tool sees it: RGB, resized to the mode's initial preset (PR's first resize)."""
    orig = load_rgb(image_path)
    w, h = resize_with_preset(list(orig.size), preset_for("initial", mode))
    return pil_resize(orig, w, h)


class Episode:
    """One image question through the PR dialect, eval-mode geometry (as prepare.ts and Loupe's evaluation run it)."""

    def __init__(self, image_path=None, mode="eval", initial=None):
        """`image_path`: the question image file; or `initial`: that image already through `initial_image` (shared by
        the rollouts of one question)."""
        self.mode = mode
        self.originals = [initial if initial is not None else initial_image(image_path, mode)]
        self.prior = []
        self.calls = 0
        self.errors = 0
        self.last_error = False

    def sizes(self):
        return Sizes(False, [list(i.size) for i in self.originals], None, [list(i.size) for i in self.prior])

    def images(self):
        return self.originals + self.prior

    def step(self, prefix, response):
        """A tool turn (is_tool_turn(response) must hold): parse, execute, return (observation text, new PIL images,
        info). Any failure is an 'Execution error' observation, never an exception."""
        self.calls += 1
        p = parse_call(prefix, response)
        if p["error"]:
            self.errors += 1
            self.last_error = True
            return p["observation"], [], {"error": p["error"]}
        trace, plan = plan_turn(p["name"], p["arguments"], self.sizes(), self.mode)
        if plan["kind"] != "crop":
            self.errors += 1
            self.last_error = True
            return trace["observation"], [], {"error": trace.get("error") or {"type": "Unsupported", "message": "frames on an image episode"}}
        src = (self.originals if plan["list"] == "originals" else self.prior)[plan["position"]]
        crop = src.crop(tuple(plan["cropBox"]))
        out = pil_resize(crop, *plan["resizedSize"])
        self.last_error = False
        if trace["exceedsMaxImages"]:
            return None, [], {"trace": trace, "exceeds": True}
        self.prior.append(out)
        return trace["observation"], [out], {"trace": trace}


# ---------------------------------------------------------------------------------------------------------------------
# engine preprocessing (transformers.js Qwen2VLImageProcessor in Node: smart_resize then RawImage.resize with
# resample 3 = sharp `affine([sx,0,0,sy], {interpolator: 'bicubic'})`, no antialiasing; then patches)

MEAN = np.array([0.48145466, 0.4578275, 0.40821073], np.float32)
STD = np.array([0.26862954, 0.26130258, 0.27577711], np.float32)


def _js_round(x):
    return math.floor(x + 0.5)


def engine_smart_resize(height, width, factor=28, min_pixels=56 * 56, max_pixels=14 * 14 * 4 * 1280):
    """transformers.js smart_resize (Math.round = half up; floor results kept >= factor). Returns (h, w)."""
    if height < factor or width < factor:
        s = max(factor / height, factor / width)
        height, width = _js_round(height * s), _js_round(width * s)
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}")
    h_bar, w_bar = _js_round(height / factor) * factor, _js_round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def sharp_affine_bicubic(im, w, h):
    """libvips affine with the bicubic interpolator maps output pixel index X to input index X*W/w (top-left aligned, no
    prefilter); Pillow's AFFINE transform samples at pixel centres, hence the half-pixel offset."""
    if im.size == (w, h):
        return im
    sx, sy = im.size[0] / w, im.size[1] / h
    return im.transform((w, h), Image.AFFINE, (sx, 0, 0.5 - 0.5 * sx, 0, sy, 0.5 - 0.5 * sy), resample=Image.BICUBIC)


def engine_resize(im, max_pixels, min_pixels=3136):
    h, w = engine_smart_resize(im.size[1], im.size[0], 28, min_pixels, max_pixels)
    return sharp_affine_bicubic(im.convert("RGB"), w, h)


def patches_from_rgb(rgb, patch=14, temporal=2, merge=2):
    """uint8 [H, W, 3] (sides multiples of 28) -> (pixel_values float32 [N, 3*2*14*14], grid [1, gh, gw]), the
    transformers.js / models/make_tiny_qwen25vl.py layout."""
    h, w, _ = rgb.shape
    x = ((rgb.astype(np.float32) / 255 - MEAN) / STD).astype(np.float32)
    x = x.transpose(2, 0, 1)[None].repeat(temporal, 0)
    gh, gw = h // patch, w // patch
    x = x.reshape(1, temporal, 3, gh // merge, merge, patch, gw // merge, merge, patch).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return np.ascontiguousarray(x.reshape(gh * gw, 3 * temporal * patch * patch)), [1, gh, gw]


def engine_pixels(im, max_pixels, min_pixels=3136):
    """PIL image (as the loop stores it) -> (pixel_values, grid, n_image_pad_tokens)."""
    r = np.asarray(engine_resize(im, max_pixels, min_pixels))
    pv, grid = patches_from_rgb(r)
    return pv, grid, grid[0] * grid[1] * grid[2] // 4


# ---------------------------------------------------------------------------------------------------------------------
# scoring: PR rule_reward string steps (exact) + math_verify approximated as app/bench/scorers/prBoxed.ts does

ASSISTANT = "<|im_start|>assistant\n"


def pr_solution(qa_text):
    parts = qa_text.split(ASSISTANT)
    return "" if len(parts) == 1 else "".join(parts[1:])


def pr_normalize_answer(a):
    if "dfrac" in a:
        a = a.replace("dfrac", "frac")
    if "text" in a:
        a = a.replace("\\text", "")
    if "\\varnothing" in a:
        a = a.replace("\\varnothing", "\\emptyset")
    if "minutes" in a:
        a = a.replace("minutes", "")
    if "cm" in a:
        a = a.replace("cm", "")
    return a


def pr_gt_variants(gt):
    if isinstance(gt, list):
        lst = [x.lower() for x in gt]
        with_pct = next((x for x in lst if "%" in x), None)
        if with_pct is not None:
            s = with_pct.replace("%", "")
            if s not in lst:
                lst.insert(0, s)
        return lst
    return [str(gt).lower()]


def pr_validity(sol, eos=IM_END):
    if eos not in sol and "<|endoftext|>" not in sol:
        return False, "No eos."
    if sol.lower().count("wait") > 5:
        return False, "too many waits"
    return True, None


def pr_candidates(lower_sol):
    out = []
    if "\\boxed" in lower_sol:
        out.append({"indicator": "\\boxed", "nsol": pr_normalize_answer(lower_sol[lower_sol.rindex("\\boxed"):].strip())})
    if "<answer>" in lower_sol:
        m = re.search(r"<answer>(.*?)</answer>", lower_sol)
        if m:
            out.append({"indicator": "<answer>", "nsol": pr_normalize_answer("\\boxed{" + m.group(1) + "}")})
    out.append({"indicator": "fallback", "nsol": pr_normalize_answer(lower_sol)})
    return out


def pr_gt_parse_input(ans):
    g = pr_normalize_answer(ans)
    return g if "\\boxed" in g else "\\boxed{" + g + "}"


def pr_multispan(ans, lower_sol):
    if "," not in ans:
        return None
    splits = [x.lower().strip() for x in ans[7:-1].split(",")]
    i = lower_sol.rfind("boxed")
    if i == -1:
        return {"splits": splits, "boxedTail": None, "allFound": False}
    tail = "\\" + lower_sol[i:]
    return {"splits": splits, "boxedTail": tail, "allFound": all(sp in tail for sp in splits)}


def pr_boxed_trace_of_solution(solution, gt):
    valid, err = pr_validity(solution)
    variants = pr_gt_variants(gt)
    lower = solution.lower()
    cands = pr_candidates(lower)
    per = []
    for ans in variants:
        ms = pr_multispan(ans, lower)
        per.append({"gt": ans, "gtParseInput": pr_gt_parse_input(ans), "multispan": ms})
        if ms and ms["allFound"]:
            break
    return {"solution": solution, "valid": valid, "errorInfo": err, "gtVariants": variants, "candidates": cands, "perGt": per}


def pr_boxed_trace(qa_text, gt):
    return pr_boxed_trace_of_solution(pr_solution(qa_text), gt)


def last_boxed_content(s):
    idx = s.rfind("\\boxed")
    if idx == -1:
        return None
    i = idx + len("\\boxed")
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s) or s[i] != "{":
        return None
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return s[i + 1:j]
    return None


def _last_closing_matches(t):
    depth = 0
    for i, c in enumerate(t):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if depth == 0 and i < len(t) - 1:
            return False
    return True


def _canonical(s):
    t = re.sub(r"<\|[a-z_]+\|>", "", s)
    t = re.sub(r"\\left|\\right|\\!|\\,|\\;|\\ ", "", t).replace("$", "")
    t = re.sub(r"\^\{?\\circ\}?", "", t)
    t = re.sub(r"\\%|%", "", t)
    t = re.sub(r"\s+", "", t)
    t = re.sub(r"\.+$", "", t)
    while re.fullmatch(r"\{.*\}", t, re.S) and _last_closing_matches(t):
        t = t[1:-1]
    m = re.fullmatch(r"\(?([a-z])\)?[.:]?", t)
    return m.group(1) if m else t


def _numeric(s):
    t = _canonical(s).replace(",", "")
    m = re.fullmatch(r"(-?)\\frac\{(-?[0-9.]+)\}\{(-?[0-9.]+)\}", t) or re.fullmatch(r"(-?)\\frac([0-9])([0-9])", t)
    try:
        if m:
            v = float(m.group(2)) / float(m.group(3))
            return -v if m.group(1) == "-" else v
        m = re.fullmatch(r"(-?[0-9.]+)/(-?[0-9.]+)", t)
        if m:
            return float(m.group(1)) / float(m.group(2))
        if re.fullmatch(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?", t):
            return float(t)
    except (ValueError, ZeroDivisionError):
        return None
    return None


def math_equivalent(nsol, gt_parse_input):
    """prBoxed.ts mathEquivalent: 1 / 0 / -1 (nothing readable)."""
    gt_text = last_boxed_content(gt_parse_input)
    gt_text = gt_parse_input if gt_text is None else gt_text
    pred = last_boxed_content(nsol)
    if pred is None:
        nums = re.findall(r"-?[0-9][0-9,]*(?:\.[0-9]+)?", re.sub(r"<\|[a-z_]+\|>", "", nsol))
        if not nums:
            return -1
        pred = nums[-1]
    a, b = _canonical(pred), _canonical(gt_text)
    if a == "" and b != "":
        return 0
    if a == b:
        return 1
    na, nb = _numeric(pred), _numeric(gt_text)
    if na is not None and nb is not None:
        return 1 if abs(na - nb) <= 1e-6 * max(1, abs(nb)) else 0
    return 0


def pr_reward(solution, gt):
    """PR accuracy for the assistant text (all turns + observations): (res in {1, 0, -1}, matched_by, extracted)."""
    tr = pr_boxed_trace_of_solution(solution, gt)
    res, extracted = 0, None
    for g in tr["perGt"]:
        res, matched = 0, None
        for c in tr["candidates"]:
            res = math_equivalent(c["nsol"], g["gtParseInput"])
            if extracted is None:
                lb = last_boxed_content(c["nsol"])
                extracted = lb if lb is not None or c["indicator"] == "fallback" else c["nsol"]
            if res > 0.99:
                matched = c["indicator"]
                break
        if res > 0.5:
            return res, matched, extracted
        if g["multispan"] and g["multispan"]["allFound"]:
            return 1.0, "multispan", extracted
    return res, None, extracted


# ---------------------------------------------------------------------------------------------------------------------
# the curiosity-driven reward (reference §4)

CURIOSITY_VARIANTS = ("pr-code", "paper")


def curiosity_rewards(acc, ncalls, final_error=None, variant="pr-code", video=False, H=0.3, penalty=0.05):
    """One group's rewards.

    'pr-code' (TIGER-AI-Lab/Pixel-Reasoner EM:2412-2470, what the released model trained with): r = acc (in {-1,0,1});
      a correct answer whose last call failed scores 0 (applied per sample: the reference indexes the flags group-locally,
      a bug); if ncall > 0: r += max(H - RaPR, 0) / D / RaPR * 0.25 - 0.05 * (ncall - 1), D = 2.0 image / 1.5 video,
      RaPR = mean(ncall > 0) counting failed calls.
    'paper' (the paper's alpha = 0.5, beta = 0.05, n_vo = 1, as verl-tool implements it): r = acc
      + 0.5 * max(0, H - RaPR) * [ncall > 0] + 0.05 * min(1 - ncall, 0).
    Returns (rewards, rapr, curiosity terms, penalty terms)."""
    n = len(acc)
    rapr = sum(1 for c in ncalls if c > 0) / n
    out, cur, pen = [], [], []
    for i in range(n):
        r = float(acc[i])
        c = p = 0.0
        if variant == "pr-code":
            if final_error is not None and acc[i] > 0.5 and final_error[i]:
                r = 0.0
            if ncalls[i] > 0:
                c = max(H - rapr, 0) / (1.5 if video else 2.0) / rapr * 0.25
                p = -penalty * (ncalls[i] - 1)
        elif variant == "paper":
            if ncalls[i] > 0:
                c = 0.5 * max(0.0, H - rapr)
            p = penalty * min(1 - ncalls[i], 0)
        else:
            raise ValueError(f"unknown curiosity variant {variant!r} (one of {CURIOSITY_VARIANTS})")
        out.append(r + c + p)
        cur.append(c)
        pen.append(p)
    return out, rapr, cur, pen


if __name__ == "__main__":
    sys.exit("pr_env.py is a library; run check_pr_env.py to check it against the golden vectors")
