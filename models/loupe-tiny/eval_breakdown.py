"""Where a loupe-tiny evaluation loses its answers: the first crop's aim, and left-of's reading against its option letter.

Reads a run's evaluation file (`runs/*/vN-*-vcot.json`: qid, category, correct, extracted and the turns' texts) and the
loupe-synth samples it was run on (`npx loupe synth --seed S --n 80` writes samples.jsonl, with each target's box), and
prints per kind:
- centre: the first `crop_image_normalized` box holds the target's centre (the first crop, on the global view);
- right|centre: of those, answered right;
- left-of: the tag the final turn says it read ("The left tag shows K") is the left one, and the boxed option letter is
  the letter of the option it read (consistent) or not; and whether the options the turn lists after it ("; (A) R,
  (B) K", the reading turn since the v19 recipe) are the question's, copied right.

    python3 models/loupe-tiny/eval_breakdown.py --samples DIR/samples.jsonl [...] --eval RUN.json [...]

Does left-of's boxed letter follow the options at all? `--swap-options DATA OUT` writes a benchmark folder of DATA's
left-of samples, each followed by a copy with its two options in the other order (qid + "-swap", the answer letter moved
with them; images linked); evaluate it as any other (`npx loupe eval --data OUT`), then `--samples OUT/samples.jsonl
--eval RUN.json` also prints, per pair, whether the reading and the boxed letter stay the same. A model that looks the
letter up boxes the other letter when the options swap and it reads the same tag.
"""
import argparse
import collections
import json
import os
import re
import shutil
import sys

BOX = re.compile(r'"bbox_2d":\s*\[([^\]]*)\]')
READ = re.compile(r"The left tag shows (\w)")
LISTED = re.compile(r"\(([AB])\) (\w)")  # the reading turn's options since the v19 recipe: "; (A) R, (B) K: \\boxed{B}"


def load_eval(path):
    """An evaluation file's samples, or a one-line error naming the file (not a traceback)."""
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: not a readable evaluation file ({e})")
    if not isinstance(d, dict) or not isinstance(d.get("samples"), list) or not all(isinstance(x, dict) and "qid" in x for x in d["samples"]):
        raise SystemExit(f"{path}: not an evaluation file (expected {{\"samples\": [{{\"qid\": …}}, …]}})")
    for x in d["samples"]:
        # the turns' texts are what the breakdown reads: a list of strings where present
        t = x.get("turns")
        if t is not None and not (isinstance(t, list) and all(isinstance(v, str) for v in t)):
            raise SystemExit(f"{path}: not an evaluation file (sample {x['qid']}: \"turns\" is not a list of texts)")
        if not isinstance(x.get("extracted") or "", str):
            raise SystemExit(f"{path}: not an evaluation file (sample {x['qid']}: \"extracted\" is not a text)")
    return d["samples"]


def breakdown(gold, samples):
    n, centre, right_centre, right = (collections.Counter() for _ in range(4))
    left, lists = collections.Counter(), collections.Counter()
    for x in samples:
        g = gold.get(x["qid"])
        if g is None:
            raise SystemExit(f"{x['qid']}: not in the samples given (--samples)")
        k = g["category"]
        n[k] += 1
        right[k] += bool(x["correct"])
        m = BOX.search(x["turns"][0]) if x.get("turns") else None
        if m and not g.get("isVideo"):
            b = [float(v) for v in m.group(1).split(",")]
            t = g["target"]["norm"]
            cx, cy = (t[0] + t[2]) / 2, (t[1] + t[3]) / 2
            if len(b) == 4 and b[0] <= cx <= b[2] and b[1] <= cy <= b[3]:
                centre[k] += 1
                right_centre[k] += bool(x["correct"])
        if k == "left-of" and x.get("turns"):
            r = READ.search(x["turns"][-1])
            read = r.group(1) if r else None
            opts = g.get("options") or []
            said = "AB"[opts.index(read)] if read in opts[:2] else None
            boxed = (x.get("extracted") or "").strip().upper()
            left[("read right" if read == g["facts"]["left"] else "read wrong" if read else "no reading",
                  "letter of the option read" if said and boxed == said else "other letter")] += 1
            # the options the turn lists after its reading: each copied from the question or not
            tail = x["turns"][-1][r.end():] if r else ""
            listed = LISTED.findall(tail.split("\\boxed")[0])
            copied = listed and all(o in "AB"[:len(opts)] and opts["AB".index(o)] == v for o, v in listed)
            lists["no options listed" if not listed else "options copied right" if copied else "options copied wrong"] += 1
    return n, centre, right_centre, right, left, lists


def swap_options(data, out):
    """DATA's left-of samples and, after each, the same sample with its options in the other order."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pr_env import options_swapped  # the training draws' swap (numpy and Pillow come with it; the breakdown needs neither)
    os.makedirs(out, exist_ok=True)
    for name in ("benchmark.json",):
        shutil.copyfile(os.path.join(data, name), os.path.join(out, name))
    if not os.path.exists(os.path.join(out, "images")):
        os.symlink(os.path.abspath(os.path.join(data, "images")), os.path.join(out, "images"))
    rows = []
    with open(os.path.join(data, "samples.jsonl")) as f:
        for line in f:
            g = json.loads(line) if line.strip() else None
            if not g or g.get("category") != "left-of" or len(g.get("options") or []) != 2:
                continue
            rows += [g, dict(options_swapped(g), qid=g["qid"] + "-swap")]
    with open(os.path.join(out, "samples.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return len(rows) // 2


def swap_pairs(samples):
    """Per left-of pair (qid, qid-swap): the same reading or not, the same boxed letter or not."""
    by = {x["qid"]: x for x in samples}
    c = collections.Counter()
    for q, x in by.items():
        y = by.get(q + "-swap")
        if y is None:
            continue
        said = [(READ.search(z["turns"][-1]) or [None, None])[1] if z.get("turns") else None for z in (x, y)]
        boxed = [(z.get("extracted") or "").strip().upper() for z in (x, y)]
        c[("same reading" if said[0] == said[1] else "other reading", "same letter" if boxed[0] == boxed[1] else "other letter")] += 1
    return c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--swap-options", nargs=2, metavar=("DATA", "OUT"), help="write DATA's left-of samples with swapped copies to OUT")
    ap.add_argument("--samples", nargs="+", help="loupe-synth samples.jsonl files the runs were made on")
    ap.add_argument("--eval", nargs="+", help="evaluation files (runs/*/vN-*-vcot.json)")
    a = ap.parse_args(argv)
    if a.swap_options:
        print(f"{swap_options(*a.swap_options)} left-of pairs written to {a.swap_options[1]}")
        return 0
    if not (a.samples and a.eval):
        ap.error("--samples and --eval are needed (or --swap-options)")
    gold = {}
    for p in a.samples:
        with open(p) as f:
            for line in f:
                if line.strip():
                    g = json.loads(line)
                    gold[g["qid"]] = g
    samples = [x for p in a.eval for x in load_eval(p)]
    n, centre, right_centre, right, left, lists = breakdown(gold, samples)
    print(f"{'kind':<12} {'n':>4} {'right':>6} {'centre':>7} {'right|centre':>13}")
    for k in sorted(n):
        print(f"{k:<12} {n[k]:>4} {right[k]:>6} {centre[k]:>7} {right_centre[k]:>13}")
    tot = lambda c: sum(c.values())  # noqa: E731
    print(f"{'all':<12} {tot(n):>4} {tot(right):>6} {tot(centre):>7} {tot(right_centre):>13}")
    if left:
        print("left-of:", ", ".join(f"{a} / {b}: {v}" for (a, b), v in sorted(left.items())))
        print("left-of lists:", ", ".join(f"{a}: {v}" for a, v in sorted(lists.items())))
    pairs = swap_pairs(samples)
    if pairs:
        print("options swapped:", ", ".join(f"{a} / {b}: {v}" for (a, b), v in sorted(pairs.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
