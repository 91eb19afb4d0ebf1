#!/usr/bin/env python3
"""Carry files larger than one device call allows to the GPU machine, over several back-to-back calls.

A device call sends the repository's working tree (tracked files and untracked files that are not ignored) plus the
paths named in `carry`, 64 MiB in all; a path carried in one call is gone from the device's tree at the next call
unless carried again, while /tmp there lasts as long as the machine stays warm. So:

  here:   python3 scripts/device/carry.py plan OUTDIR FILE... [--assume-moved PATH]... [--reserve-mib 3]
  device: python3 OUTDIR/call-N/carry.py in /tmp/loupe-carry        (first thing in call N, which carries OUTDIR/call-N)

`plan` (before any device time is spent)
  - makes sure `.device-carry/` is ignored (adds `/.device-carry/` to the repository's info/exclude when missing) and
    that OUTDIR lies under it;
  - measures the tree that travels (`git ls-files --cached --others --exclude-standard`, files that exist), less the
    paths given with --assume-moved (tracked folders moved out of the checkout for the calls: say so, and move them
    back after the last call);
  - cuts FILEs into chunks so that each call's folder OUTDIR/call-N plus the tree stays under 64 MiB less the reserve,
    and writes into each call folder its chunks, a MANIFEST (sha256 of every chunk and of every whole file) and a
    copy of this script;
  - checks every FILE that it can (an .xz must pass `xz -t`) and prints the plan: the calls, what each carries and its
    total. Exit 1 when something does not fit or a check fails.
`in` (on the device): copies the call's chunks to DEST, checks each against the MANIFEST, joins every file whose
  chunks are all there and checks the whole; prints `carry: complete` and writes DEST/COMPLETE once all files are
  whole. Run the calls back to back (the machine stays warm about 30 s after a call); a reply that says the machine
  was not warm means DEST is gone: start again at call 1.
"""
import argparse, hashlib, json, os, shutil, subprocess, sys

LIMIT = 64 * 1024 * 1024
MIB = 1024 * 1024


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def tree_bytes(repo, moved):
    names = git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split(b"\0")
    total, moved_bytes = 0, 0
    moved = [m.rstrip("/") + "/" for m in moved]
    for n in names:
        if not n:
            continue
        p = os.path.join(repo, n.decode())
        if not os.path.lexists(p) or os.path.isdir(p):
            continue
        s = os.lstat(p).st_size
        if any((n.decode() + "/").startswith(m) or n.decode().startswith(m) for m in moved):
            moved_bytes += s
        else:
            total += s
    shared = os.path.join(repo, "shared")
    if os.path.isdir(shared) and subprocess.run(["git", "-C", repo, "check-ignore", "-q", "shared"]).returncode == 0:
        for d, _, fs in os.walk(shared):
            total += sum(os.lstat(os.path.join(d, f)).st_size for f in fs)
    return total, moved_bytes


def ensure_exclude(repo):
    common = git(repo, "rev-parse", "--git-common-dir").decode().strip()
    common = common if os.path.isabs(common) else os.path.join(repo, common)
    ex = os.path.join(common, "info", "exclude")
    os.makedirs(os.path.dirname(ex), exist_ok=True)
    lines = open(ex).read().splitlines() if os.path.exists(ex) else []
    if not any(l.strip() in ("/.device-carry/", ".device-carry/", "/.device-carry", ".device-carry") for l in lines):
        with open(ex, "a") as f:
            f.write(("\n" if lines and lines[-1] else "") + "/.device-carry/\n")
        print(f"added /.device-carry/ to {ex}")


def plan(a):
    repo = os.path.realpath(a.repo or git(os.getcwd(), "rev-parse", "--show-toplevel").decode().strip())
    ensure_exclude(repo)
    out = os.path.realpath(a.outdir)
    if not out.startswith(os.path.join(repo, ".device-carry") + os.sep):
        sys.exit(f"OUTDIR must lie under {repo}/.device-carry/ (ignored, so it travels only when carried)")
    for m in a.assume_moved:
        if not os.path.exists(os.path.join(repo, m)):
            print(f"note: --assume-moved {m}: not in the checkout now (already moved out?)")
    tree, moved = tree_bytes(repo, a.assume_moved)
    reserve = int(a.reserve_mib * MIB)
    me = os.path.abspath(__file__)
    overhead = os.path.getsize(me) + 4096  # this script + the MANIFEST in every call folder
    budget = LIMIT - tree - reserve - overhead
    if a.max_call_mib:
        budget = min(budget, int(a.max_call_mib * MIB))
    print(f"tree that travels: {tree / MIB:.1f} MiB" + (f" (with {moved / MIB:.1f} MiB of {', '.join(a.assume_moved)} moved out)" if a.assume_moved else ""))
    if budget < MIB / 4:
        sys.exit(f"only {budget / MIB:.1f} MiB left per call beside the tree: move large tracked folders out (--assume-moved) or shrink the tree")
    files = []
    for f in a.files:
        if not os.path.isfile(f):
            sys.exit(f"{f}: no such file")
        if f.endswith(".xz") and subprocess.run(["xz", "-t", f]).returncode != 0:
            sys.exit(f"{f}: xz -t failed (a broken archive)")
        files.append((os.path.basename(f), os.path.realpath(f), os.path.getsize(f)))
    if len({n for n, _, _ in files}) != len(files):
        sys.exit("two FILEs share a name")
    # chunks: fill call after call up to the budget
    calls, cur, room = [], [], budget
    chunks = []
    for name, path, size in files:
        off, k = 0, 0
        while off < size:
            if room <= 0:
                calls.append(cur)
                cur, room = [], budget
            n = min(size - off, room)
            c = {"file": name, "k": k, "offset": off, "size": n, "name": f"{name}.chunk-{k:02d}"}
            cur.append(c)
            chunks.append(c)
            off, k, room = off + n, k + 1, room - n
        for c in chunks:
            if c["file"] == name:
                c["of"] = k
    if cur:
        calls.append(cur)
    if os.path.isdir(out):
        shutil.rmtree(out)
    manifest = {"files": {}, "chunks": []}
    for i, call in enumerate(calls, 1):
        d = os.path.join(out, f"call-{i}")
        os.makedirs(d)
        for c in call:
            src = dict((n, p) for n, p, _ in files)[c["file"]]
            with open(src, "rb") as f, open(os.path.join(d, c["name"]), "wb") as g:
                f.seek(c["offset"])
                left = c["size"]
                while left:
                    b = f.read(min(left, 1 << 22))
                    g.write(b)
                    left -= len(b)
            manifest["chunks"].append({"name": c["name"], "file": c["file"], "k": c["k"], "call": i, "size": c["size"],
                                       "sha256": sha256(os.path.join(d, c["name"]))})
    for name, path, size in files:
        manifest["files"][name] = {"size": size, "sha256": sha256(path), "chunks": sum(1 for c in chunks if c["file"] == name)}
    ok = True
    for i in range(1, len(calls) + 1):
        d = os.path.join(out, f"call-{i}")
        with open(os.path.join(d, "MANIFEST.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        shutil.copy(me, os.path.join(d, "carry.py"))
        size = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))
        fits = tree + size <= LIMIT
        ok &= fits
        rel = os.path.relpath(d, repo)
        print(f"call {i}: carry {rel}  ({size / MIB:.1f} MiB; with the tree {(tree + size) / MIB:.1f} of 64 MiB{'' if fits else ': DOES NOT FIT'})"
              f"  chunks: {', '.join(c['name'] for c in calls[i - 1])}")
        print(f"        first command there: python3 {rel}/carry.py in /tmp/loupe-carry")
    if not ok:
        sys.exit(1)
    print(f"{len(calls)} call(s); after the last one /tmp/loupe-carry holds: {', '.join(n for n, _, _ in files)}")


def carry_in(a):
    here = os.path.dirname(os.path.abspath(__file__))
    man = json.load(open(os.path.join(here, "MANIFEST.json")))
    dest = a.dest
    cdir = os.path.join(dest, "chunks")
    os.makedirs(cdir, exist_ok=True)
    bad = 0
    for c in man["chunks"]:
        src = os.path.join(here, c["name"])
        if os.path.exists(src):
            if sha256(src) != c["sha256"]:
                print(f"carry: {c['name']} does not match the MANIFEST")
                bad += 1
                continue
            shutil.copy(src, os.path.join(cdir, c["name"]))
            print(f"carry: got {c['name']} ({c['size'] / MIB:.1f} MiB)")
    missing = []
    for name, f in man["files"].items():
        target = os.path.join(dest, name)
        if os.path.exists(target) and os.path.getsize(target) == f["size"]:
            continue
        parts = sorted((c for c in man["chunks"] if c["file"] == name), key=lambda c: c["k"])
        absent = [c for c in parts if not os.path.exists(os.path.join(cdir, c["name"]))]
        if absent:
            missing += [f"{c['name']} (call {c['call']})" for c in absent]
            continue
        with open(target + ".part", "wb") as g:
            for c in parts:
                with open(os.path.join(cdir, c["name"]), "rb") as h:
                    shutil.copyfileobj(h, g)
        if sha256(target + ".part") != f["sha256"]:
            print(f"carry: {name} joined does not match the MANIFEST")
            bad += 1
            continue
        os.replace(target + ".part", target)
        for c in parts:
            os.remove(os.path.join(cdir, c["name"]))
        print(f"carry: {name} complete ({f['size'] / MIB:.1f} MiB)")
    if bad:
        sys.exit(1)
    if missing:
        print(f"carry: still missing {', '.join(missing)}")
    else:
        open(os.path.join(dest, "COMPLETE"), "w").write("\n".join(man["files"]) + "\n")
        print("carry: complete")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("outdir")
    p.add_argument("files", nargs="+")
    p.add_argument("--repo", help="the checkout whose tree travels (default: the one around the current folder)")
    p.add_argument("--assume-moved", action="append", default=[], metavar="PATH")
    p.add_argument("--reserve-mib", type=float, default=3.0)
    p.add_argument("--max-call-mib", type=float, help="carry at most this much per call (below what the tree leaves)")
    p.set_defaults(fn=plan)
    q = sub.add_parser("in")
    q.add_argument("dest")
    q.set_defaults(fn=carry_in)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
