"""Where a loupe-tiny evaluation loses its answers: the first crop's aim, and left-of's reading against its option letter.

Reads a run's evaluation file (`runs/*/vN-*-vcot.json`: qid, category, correct, extracted and the turns' texts) and the
loupe-synth samples it was run on (`npx loupe synth --seed S --n 80` writes samples.jsonl, with each target's box), and
prints per kind:
- centre: the first `crop_image_normalized` box holds the target's centre (the first crop, on the global view);
- right|centre: of those, answered right;
- left-of: the tag the final turn says it read ("The left tag shows K") is the left one, and the boxed option letter is
  the letter of the option it read (consistent) or not.

    python3 models/loupe-tiny/eval_breakdown.py --samples DIR/samples.jsonl [...] --eval RUN.json [...]
"""
import argparse
import collections
import json
import re
import sys

BOX = re.compile(r'"bbox_2d":\s*\[([^\]]*)\]')
READ = re.compile(r"The left tag shows (\w)")


def load_eval(path):
    with open(path) as f:
        return json.load(f)["samples"]


def breakdown(gold, samples):
    n, centre, right_centre, right = (collections.Counter() for _ in range(4))
    left = collections.Counter()
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
    return n, centre, right_centre, right, left


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", nargs="+", required=True, help="loupe-synth samples.jsonl files the runs were made on")
    ap.add_argument("--eval", nargs="+", required=True, help="evaluation files (runs/*/vN-*-vcot.json)")
    a = ap.parse_args(argv)
    gold = {}
    for p in a.samples:
        with open(p) as f:
            for line in f:
                if line.strip():
                    g = json.loads(line)
                    gold[g["qid"]] = g
    samples = [x for p in a.eval for x in load_eval(p)]
    n, centre, right_centre, right, left = breakdown(gold, samples)
    print(f"{'kind':<12} {'n':>4} {'right':>6} {'centre':>7} {'right|centre':>13}")
    for k in sorted(n):
        print(f"{k:<12} {n[k]:>4} {right[k]:>6} {centre[k]:>7} {right_centre[k]:>13}")
    tot = lambda c: sum(c.values())  # noqa: E731
    print(f"{'all':<12} {tot(n):>4} {tot(right):>6} {tot(centre):>7} {tot(right_centre):>13}")
    if left:
        print("left-of:", ", ".join(f"{a} / {b}: {v}" for (a, b), v in sorted(left.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
