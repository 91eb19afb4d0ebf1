#!/usr/bin/env python3
"""Summarise onnxruntime profiler traces (the JSON files `enableProfiling` writes; Loupe's engine writes them with
LOUPE_ORT_PROFILE=PREFIX, see scripts/device/engine-bench.ts) into a small JSON: per session file, its runs split into
prefill and decode steps, and for the decode steps (the median step) where the time goes: per execution provider, per
op type (top N), the copies between host and device (Memcpy nodes), and the gap between the run's wall time and the
sum of its nodes' times (what the executor spends between nodes).

  python3 models/ort_profile_summary.py PREFIX_*.json [--top 15] [--per-run] [--out summary.json]

  python3 models/ort_profile_summary.py --brief summary.json   (one line per run of a --per-run summary)

--per-run adds every run of each file (wall time, nodes, the top op types): a run of the decode loop holds all its
steps, so comparing two loop runs over the same lengths (the first time, then again) shows which op pays for a length
met the first time. Each run also lists its slow nodes: per op type, the nodes that took 20 times the op's median or
more (at least 1 ms), which is how a one-time cost per shape shows (one node a step, the first layer's).

A node's time on the CUDA provider is the host time of its Compute() call, which for most CUDA kernels is the launch
(the kernels run asynchronously); a node that waits for the device (a copy to the host) absorbs the queued kernels'
time. So on CUDA the summary tells host overhead and synchronisation points, not kernel durations.
"""
import argparse, collections, json, statistics, sys

CONTROL_FLOW = {"Loop", "If", "Scan"}


def runs_of(events):
    """[(run event, [node events inside it])] in time order."""
    runs = sorted((e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"), key=lambda e: e["ts"])
    nodes = sorted((e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")), key=lambda e: e["ts"])
    out, i = [], 0
    for r in runs:
        end = r["ts"] + r["dur"]
        inside = []
        while i < len(nodes) and nodes[i]["ts"] < r["ts"]:
            i += 1
        while i < len(nodes) and nodes[i]["ts"] <= end:
            inside.append(nodes[i])
            i += 1
        out.append((r, inside))
    return out


def seq_len(nodes):
    """The sequence length a decoder run processed: dim -2 of the first MatMul's first input (1 for a decode step)."""
    for n in nodes:
        if n["args"].get("op_name") == "MatMul":
            shapes = n["args"].get("input_type_shape") or []
            if shapes:
                dims = next(iter(shapes[0].values()))
                if len(dims) >= 2:
                    return dims[-2]
    return None


def slow_nodes(nodes, factor=20, floor_us=1000):
    """Per op type with 4 or more nodes in the run: the nodes that took at least `factor` times the op's median and at
    least `floor_us` (a one-time cost, such as a plan built for a shape met the first time, stands out from the launches
    around it): how many, their time, the op's median and its first node's time. Control-flow nodes are left out."""
    by_op = collections.defaultdict(list)
    for n in nodes:
        op = n["args"].get("op_name", "?")
        if op not in CONTROL_FLOW:
            by_op[f"{op} ({n['args'].get('provider', '?').replace('ExecutionProvider', '')})"].append(n["dur"])
    out = []
    for op, durs in by_op.items():
        if len(durs) < 4:
            continue
        med = statistics.median(durs)
        slow = [d for d in durs if d >= max(floor_us, factor * med)]
        if slow:
            out.append({"op": op, "count": len(slow), "of": len(durs), "us": sum(slow), "median_us": med, "first_us": durs[0]})
    return sorted(out, key=lambda o: -o["us"])


def summarise_run(run, nodes, top):
    by_provider = collections.Counter()
    by_op = collections.Counter()
    count_op = collections.Counter()
    cpu_ops = collections.Counter()
    for n in nodes:
        a = n["args"]
        prov = a.get("provider", "?").replace("ExecutionProvider", "")
        op = a.get("op_name", "?")
        by_provider[prov] += n["dur"]
        by_op[f"{op} ({prov})"] += n["dur"]
        count_op[f"{op} ({prov})"] += 1
        if prov == "CPU":
            cpu_ops[op] += 1
    # a control-flow node's time holds its body's nodes, which are listed too: counted once, as the body's
    node_sum = sum(n["dur"] for n in nodes if n["args"].get("op_name") not in CONTROL_FLOW)
    memcpy = {k: count_op[k] for k in count_op if k.startswith("Memcpy")}
    return {
        "slow_nodes": slow_nodes(nodes),
        "wall_us": run["dur"],
        "nodes": len(nodes),
        "node_time_us": node_sum,
        "gap_us": run["dur"] - node_sum,
        "by_provider_us": dict(by_provider.most_common()),
        "top_ops_us": [{"op": k, "us": v, "count": count_op[k]} for k, v in by_op.most_common(top)],
        "memcpy_nodes": memcpy,
        "cpu_nodes_by_op": dict(cpu_ops.most_common()),
    }


def summarise_file(path, top, per_run=False):
    events = json.load(open(path))
    runs = runs_of(events)
    rows = [(r, n, seq_len(n)) for r, n in runs]
    decode = [(r, n) for r, n, s in rows if s == 1]
    other = [(r, n, s) for r, n, s in rows if s != 1]
    res = {"file": path.split("/")[-1], "runs": len(runs), "decode_steps": len(decode),
           "other_runs": [{"seq_len": s, "wall_us": r["dur"], "nodes": len(n)} for r, n, s in other][:8]}
    if per_run:
        res["runs_detail"] = [dict(seq_len=s, **summarise_run(r, n, top)) for r, n, s in rows]
    if decode:
        walls = [r["dur"] for r, _ in decode]
        med = statistics.median(walls)
        r, n = min(decode, key=lambda rn: abs(rn[0]["dur"] - med))
        res["decode_wall_us"] = {"median": med, "min": min(walls), "max": max(walls), "mean": statistics.mean(walls)}
        res["median_decode_step"] = summarise_run(r, n, top)
    elif runs:
        r, n = max(runs, key=lambda rn: rn[0]["dur"])
        res["longest_run"] = summarise_run(r, n, top)
    return res


def brief(summary, top=4):
    """One line per run of a --per-run summary: file, run index, sequence length, wall ms, nodes, the top op types."""
    lines = []
    if not isinstance(summary, list):
        raise ValueError("not a list of file summaries")
    for f in summary:
        if not isinstance(f, dict) or "runs_detail" not in f:
            raise ValueError("an entry without runs_detail")
        for k, r in enumerate(f["runs_detail"]):
            ops = ", ".join(f"{o['op']} {o['us'] / 1000:.1f} ms ×{o['count']}" for o in r["top_ops_us"][:top])
            slow = "".join(
                f"; slow: {o['op']} {o['count']} of {o['of']} nodes {o['us'] / 1000:.1f} ms (median {o['median_us'] / 1000:.2f} ms, first {o['first_us'] / 1000:.1f} ms)"
                for o in r.get("slow_nodes", [])[:2])
            lines.append(f"{f['file']} run {k}: seq {r['seq_len']}, {r['wall_us'] / 1000:.1f} ms, {r['nodes']} nodes, gap {r['gap_us'] / 1000:.1f} ms; {ops}{slow}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--per-run", action="store_true", help="every run of each file, not only the median decode step")
    ap.add_argument("--out")
    ap.add_argument("--brief", action="store_true", help="FILES are --per-run summaries: print one line per run")
    a = ap.parse_args()
    if a.brief:
        for path in a.files:
            try:
                summary = json.load(open(path))
                lines = brief(summary)
            except (OSError, ValueError, KeyError, TypeError) as e:
                print(f"{path}: not a --per-run summary ({e})", file=sys.stderr)
                return 1
            print("\n".join(lines) if lines else f"{path}: no runs")
        return 0
    out = []
    for f in a.files:
        try:
            out.append(summarise_file(f, a.top, a.per_run))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            print(f"{f}: not an onnxruntime profile ({type(e).__name__}: {e})", file=sys.stderr)
            return 1
    text = json.dumps(out, indent=1)
    if a.out:
        open(a.out, "w").write(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
