#!/usr/bin/env python3
"""Check pr_env.py against Loupe's golden vectors: every case of the suites pr_env implements (smart_resize, crop,
select_frames, toolcall, pr_boxed), compared exactly (IEEE doubles by ==, non-finite doubles as the strings
"NaN"/"Infinity"/"-Infinity", booleans as booleans), plus spec checks of the curiosity reward (reference §4 numbers).

  python3 models/loupe-tiny/check_pr_env.py [tests/fixtures/vectors/public.json] [-v]

Prints `N passed, M failed` per suite and in total; exits 1 on any failure (2 on a missing file).
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pr_env as E  # noqa: E402

SUITES = ("smart_resize", "crop", "select_frames", "toolcall", "pr_boxed")


def enc(v):
    """Our values -> the vectors' JSON conventions (non-finite doubles as strings)."""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, (list, tuple)):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        return {k: enc(x) for k, x in v.items()}
    return v


def diff(exp, act, path="$", out=None):
    out = [] if out is None else out
    if isinstance(exp, bool) or isinstance(act, bool):
        if not (isinstance(exp, bool) and isinstance(act, bool) and exp == act):
            out.append((path, exp, act))
    elif isinstance(exp, (int, float)) and isinstance(act, (int, float)):
        if exp != act:
            out.append((path, exp, act))
    elif isinstance(exp, list) and isinstance(act, list):
        if len(exp) != len(act):
            out.append((path + ".length", len(exp), len(act)))
        for i, (e, a) in enumerate(zip(exp, act)):
            diff(e, a, f"{path}[{i}]", out)
    elif isinstance(exp, dict) and isinstance(act, dict):
        for k in sorted(set(exp) | set(act)):
            if k not in act:
                out.append((f"{path}.{k}", exp[k], "<missing>"))
            elif k not in exp:
                out.append((f"{path}.{k}", "<absent>", act[k]))
            else:
                diff(exp[k], act[k], f"{path}.{k}", out)
    elif type(exp) is not type(act) or exp != act:
        out.append((path, exp, act))
    return out


def suite_smart_resize(i):
    try:
        h, w = E.smart_resize(i["height"], i["width"], i["factor"], i["minPixels"], i["maxPixels"])
        return {"height": h, "width": w}
    except Exception as e:  # noqa: BLE001
        return {"error": E.as_error(e)}


def suite_tool_turn(i):
    mode = i["mode"]
    out = {}
    imgs = E.Sizes(bool(i.get("isVideo")), [], None, [list(s) for s in i.get("priorImageSizes") or []])
    try:
        if imgs.is_video:
            fs = E.resize_with_preset(i["video"]["frameSize"], "video_frame")
            nf = E.padded_frame_count(i["video"]["numFrames"])
            out["videoFrameSize"], out["videoNumFrames"] = fs, nf
            imgs.video = {"frameSize": fs, "numFrames": nf}
        else:
            imgs.originals = [E.resize_with_preset(s, E.preset_for("initial", mode)) for s in i["originalImageSizes"]]
            out["initialImageSizes"] = imgs.originals
    except Exception as e:  # noqa: BLE001
        out["error"] = E.as_error(e)
        return out
    r = E.read_call(i["toolCallJson"])
    if r["error"]:
        out.update(imagesBefore=imgs.count(), error=r["error"], observation=E.error_observation(r["error"]["message"]))
        return out
    trace, _ = E.plan_turn(r["name"], r["arguments"], imgs, mode)
    out.update(trace)
    return out


def suite_toolcall(i):
    p = E.parse_call(i["prefix"], i["response"])
    return {k: p[k] for k in ("isToolTurn", "parsed", "error", "observation")}


def suite_pr_boxed(i):
    return E.pr_boxed_trace(i["qaText"], i["gt"])


RUN = {"smart_resize": suite_smart_resize, "crop": suite_tool_turn, "select_frames": suite_tool_turn, "toolcall": suite_toolcall,
       "pr_boxed": suite_pr_boxed}


def reward_checks():
    """The curiosity numbers of reference §4 (not golden vectors: the vectors have no reward suite)."""
    res = []

    def group(k, n=8):  # k of n samples called a tool once, all wrong
        return [0] * n, [1] * k + [0] * (n - k)
    for k, img, vid in ((1, 0.175, 0.233), (2, 0.025, 0.033), (3, 0.0, 0.0), (8, 0.0, 0.0)):
        acc, nc = group(k)
        _, rapr, ci, _ = E.curiosity_rewards(acc, nc, variant="pr-code")
        _, _, cv, _ = E.curiosity_rewards(acc, nc, variant="pr-code", video=True)
        res.append((f"pr-code image RaPR={k}/8", round(ci[0], 3), img))
        res.append((f"pr-code video RaPR={k}/8", round(cv[0], 3), vid))
        _, _, cp, _ = E.curiosity_rewards(acc, nc, variant="paper")
        res.append((f"paper RaPR={k}/8", cp[0], 0.5 * max(0.0, 0.3 - k / 8)))
    r, _, _, pen = E.curiosity_rewards([1, 0], [3, 0], variant="pr-code")
    res.append(("pr-code penalty 3 calls", pen[0], -0.1))
    r, _, _, pen = E.curiosity_rewards([1, 0], [3, 0], variant="paper")
    res.append(("paper penalty 3 calls", pen[0], -0.1))
    r, _, _, _ = E.curiosity_rewards([1, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0], final_error=[True] + [False] * 7, variant="pr-code")
    res.append(("pr-code correct after a failed last call -> 0 + curiosity", round(r[0], 3), 0.175))
    return [(n, got == want or (isinstance(want, float) and abs(got - want) < 1e-12), got, want) for n, got, want in res]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "-v" in sys.argv
    path = args[0] if args else os.path.join(HERE, "..", "..", "tests", "fixtures", "vectors", "public.json")
    try:
        cases = json.load(open(path))
    except OSError as e:
        print(f"check_pr_env: cannot read {path}: {e}", file=sys.stderr)
        return 2
    counts = {s: [0, 0] for s in SUITES}
    failed = []
    for c in cases:
        if c["suite"] not in RUN:
            continue
        try:
            act = enc(RUN[c["suite"]](c["input"]))
            d = diff(c["expected"], act)
        except Exception as e:  # noqa: BLE001 - a crash is a failure of that case
            d = [("$", "<no exception>", f"{type(e).__name__}: {e}")]
        counts[c["suite"]][0 if not d else 1] += 1
        if d:
            failed.append((c["suite"], c["name"], d))
    for s, (p, f) in counts.items():
        print(f"{s}: {p} passed, {f} failed")
    for s, n, d in failed:
        print(f"FAIL {s}/{n}")
        for path_, e, a in d[: 6 if verbose else 3]:
            print(f"   {path_}: expected {e!r}, got {a!r}")
    rc = reward_checks()
    rf = [r for r in rc if not r[1]]
    print(f"curiosity reward spec checks: {len(rc) - len(rf)} passed, {len(rf)} failed")
    for n, _, got, want in rf:
        print(f"FAIL reward/{n}: expected {want!r}, got {got!r}")
    tp = sum(p for p, _ in counts.values())
    tf = sum(f for _, f in counts.values())
    print(f"golden vectors: {tp} passed, {tf} failed ({len(cases) - tp - tf} cases of other suites not run)")
    return 1 if tf or rf or tp == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
