"""The PyVision code runtime for one episode, run by native/pysandbox/index.ts inside the sandbox.

It mirrors the references' persistent runtimes (PyVision `ImageRuntime`, PyVision-RL `SafeImageRuntime`):
one global namespace per episode with the same header imports, the episode images bound as
`image_clue_i`, `print` captured with redirect_stdout, figures collected in `_captured_figures`.
The caller sends the exact source the reference would `exec` (the plt.show() substitution and the
forbidden-call check happen in TypeScript, app/protocol/pyvision.ts).

Protocol: one JSON request per line on stdin; one JSON reply per line on the file descriptor given by
LOUPE_PROTO_FD (stdout and stderr belong to the user code and are discarded by the caller).

Limits enforced here, each surfacing as the text the model saw in training:
- CPU time per run: RLIMIT_CPU (SIGXCPU) -> reported as a timeout, the reference's only time limit.
- memory: RLIMIT_AS -> Python's own MemoryError (its str() is what the reference would show).
- output: the captured text keeps its first and last `maxOutputChars // 2` characters; the reference
  (PV) shows only the first and last 200, so its observation is unchanged; `outputTruncated` is recorded.
- figures: `_captured_figures.append` beyond `maxFigures` raises RuntimeError (PyVision-RL's own capture
  helper raises RuntimeError for bad figures, so this is an error shape its training saw).
Wall time and the kill are the caller's job.
"""
import base64
import io
import json
import os
import resource
import signal
import sys
import time
import traceback
from contextlib import redirect_stdout, redirect_stderr

MAIN_PID = os.getpid()
PROTO = os.fdopen(int(os.environ.get("LOUPE_PROTO_FD", "3")), "w", buffering=1, encoding="utf-8")


def reply(obj):
    PROTO.write(json.dumps(obj) + "\n")
    PROTO.flush()


class CpuLimit(BaseException):
    """Raised from SIGXCPU; a BaseException so user `except Exception` blocks cannot swallow it."""


def _on_xcpu(signum, frame):
    raise CpuLimit()


signal.signal(signal.SIGXCPU, _on_xcpu)


class CappedText(io.TextIOBase):
    """A stdout that keeps the head and the tail of what is written, and counts the rest."""

    def __init__(self, cap):
        self.cap = max(2, cap)
        self.head = []
        self.head_len = 0
        self.tail = ""
        self.total = 0

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self.total += len(s)
        half = self.cap // 2
        if self.head_len < half:
            take = s[: half - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            s = s[len(take):]
        if s:
            self.tail = (self.tail + s)[-half:]
        return len(s)

    def value(self):
        head = "".join(self.head)
        if self.total <= self.cap:
            return head + self.tail
        return head + "\n...[output truncated by Loupe's sandbox]...\n" + self.tail


class FigureList(list):
    """`_captured_figures` with a cap on how many figures one run may add."""

    limit = 1 << 30
    base = 0

    def append(self, item):
        if len(self) - self.base >= self.limit:
            raise RuntimeError(f"Too many figures: at most {self.limit} figures per code run")
        super().append(item)


PV_HEADERS = [
    "import matplotlib",
    "matplotlib.use('Agg')",
    "import matplotlib.pyplot as plt",
    "from PIL import Image",
    "import io",
    "import base64",
    "import numpy as np",
    "_captured_figures = []",
]

PVRL_HEADERS = PV_HEADERS + [
    """def _internal_capture_plt_figure():
    '''Capture current matplotlib figure and save to _captured_figures'''
    fig = plt.gcf()
    width_px = fig.get_figwidth() * fig.dpi
    height_px = fig.get_figheight() * fig.dpi
    aspect_ratio = max(width_px, height_px) / min(width_px, height_px)
    if aspect_ratio >= 200:
        raise RuntimeError(f"Image aspect ratio too extreme: {aspect_ratio:.2f} (must be < 200)")

    buf = io.BytesIO()
    plt.savefig(buf, format='png')
    buf.seek(0)
    _captured_image = base64.b64encode(buf.read()).decode('utf-8')
    _captured_figures.append(_captured_image)
    plt.close()
""",
]


class Runtime:
    def __init__(self, variant, images, scratch, limits):
        from PIL import Image

        self.variant = variant
        self.scratch = scratch
        self.limits = limits
        self.g = {"__name__": "__main__", "_captured_figures": []}
        for h in PVRL_HEADERS if variant == "PVRL" else PV_HEADERS:
            exec(h, self.g)
        figs = FigureList()
        for i, path in enumerate(images):
            img = Image.open(path)
            if variant == "PV":
                # PV decodes the base64 data URL and converts to RGB (base64_to_image).
                img = img.convert("RGB")
                self.g[f"image_clue_{i}"] = img
            else:
                # PVRL binds `image_clue_{message index}`: every input image sits in message 0.
                self.g["image_clue_0"] = img
            figs.append("<input image>")
        self.g["_captured_figures"] = figs
        self.fig_seq = 0

    def run(self, source, run_index):
        limits = self.limits
        cpu_used = resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime
        soft = int(cpu_used) + int(limits["cpuSeconds"]) + 1
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        figs = self.g.get("_captured_figures")
        if isinstance(figs, FigureList):
            figs.limit = int(limits["maxFigures"])
            figs.base = len(figs)
        pre = len(figs) if isinstance(figs, list) else 0
        out = CappedText(int(limits["maxOutputChars"]))
        err = CappedText(4096)
        t0 = time.monotonic()
        c0 = cpu_used
        result = {"error": None, "errorType": None, "timeout": False, "timeoutReason": None, "traceback": None}
        try:
            try:
                with redirect_stdout(out), redirect_stderr(err):
                    exec(source, self.g)
            finally:
                # A process the code forked must never reach the reply below: it leaves here.
                if os.getpid() != MAIN_PID:
                    os._exit(0)
        except CpuLimit:
            result.update(timeout=True, timeoutReason="cpu")
        except SystemExit as e:
            # The reference worker dies on SystemExit and its parent then waits out the timeout.
            result.update(timeout=True, timeoutReason=f"SystemExit({e.code!r})")
        except KeyboardInterrupt:
            result.update(timeout=True, timeoutReason="KeyboardInterrupt")
        except Exception as e:  # noqa: BLE001 - the reference reports str(e) of any Exception
            result.update(error=str(e), errorType=type(e).__name__, traceback=traceback.format_exc(limit=8)[-4000:])
        finally:
            try:
                import matplotlib.pyplot as plt

                if result["error"] is not None and self.variant == "PVRL":
                    plt.close("all")
            except Exception:  # noqa: BLE001
                pass
        if self.limits.get("sandboxed"):
            # Inside the sandbox's own pid namespace, kill(-1) reaches exactly the processes the code
            # left behind (never the namespace's init, never this process). Outside one it would reach
            # every process of the user, so it only happens here.
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                while True:
                    os.waitpid(-1, 0)  # every child got SIGKILL: reap them all before replying
            except ChildProcessError:
                pass
            # Grandchildren were re-parented to the namespace's init, which reaps them on its own
            # time: wait (briefly) until only init and this worker are left.
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
                if not others:
                    break
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                time.sleep(0.02)
        # Restore an unlimited-in-practice soft limit so the worker can reply.
        resource.setrlimit(resource.RLIMIT_CPU, (resource.getrlimit(resource.RLIMIT_CPU)[1], resource.getrlimit(resource.RLIMIT_CPU)[1]))
        figs = self.g.get("_captured_figures")
        new = list(figs[pre:]) if isinstance(figs, list) and len(figs) >= pre else []
        figure_limit_hit = len(new) > int(limits["maxFigures"])
        new = new[: int(limits["maxFigures"])]
        paths, undecodable = [], []
        for k, b64 in enumerate(new):
            path = os.path.join(self.scratch, f"run{run_index:03d}_fig{k:03d}.png")
            try:
                data = base64.b64decode(b64.split(",")[-1] if isinstance(b64, str) else b64)
                with open(path, "wb") as f:
                    f.write(data)
                from PIL import Image

                with Image.open(path) as im:
                    im.verify()
            except Exception:  # noqa: BLE001 - the reference reports an undecodable figure, not why
                undecodable.append(k)
            paths.append(path)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        result.update(
            stdout=out.value(),
            stdoutChars=out.total,
            outputTruncated=out.total > out.cap,
            figures=paths,
            undecodableFigures=undecodable,
            figureLimitHit=figure_limit_hit,
            wallMs=round((time.monotonic() - t0) * 1000, 1),
            cpuMs=round((ru.ru_utime + ru.ru_stime - c0) * 1000, 1),
            maxRssKb=ru.ru_maxrss,
        )
        return result


def main():
    runtime = None
    runs = 0
    # Requests arrive on fd 0; the user code gets /dev/null there so it cannot read (or eat) them.
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdin = open(os.devnull, "r")
    for line in requests:
        req = json.loads(line)
        op = req.get("op")
        try:
            if op == "init":
                lim = req["limits"]
                mem = int(lim["memoryBytes"])
                resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
                fsize = int(lim.get("fileBytes", 256 << 20))
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
                nproc = int(lim.get("maxProcesses", 32))
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
                runtime = Runtime(req["variant"], req["images"], req["scratch"], lim)
                reply({"ok": True, "python": sys.version.split()[0]})
            elif op == "exec":
                runs += 1
                reply({"ok": True, **runtime.run(req["source"], runs)})
            else:
                reply({"ok": False, "error": f"unknown op {op!r}"})
        except BaseException as e:  # noqa: BLE001 - report worker failures instead of dying silently
            reply({"ok": False, "error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
