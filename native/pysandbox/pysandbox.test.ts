/**
 * The PyVision code sandbox against real escapes: a real Python (the system one, with Pillow, numpy and
 * matplotlib), real bubblewrap namespaces, a real TCP server on loopback. Each escape is also tried
 * without isolation where that is safe, to show the check would fail if the sandbox let it through.
 *
 * Needs: /usr/bin/python3 with python3-pil, python3-numpy, python3-matplotlib; bubblewrap.
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pvCodeTurn, pvObservation, pvrlCodeTurn, pvrlObservation } from '../../app/protocol/pyvision';
import { probeIsolation, SandboxUnavailableError, startPySandbox, type PySandbox } from './index';

const dir = mkdtempSync(path.join(tmpdir(), 'loupe-sbtest-'));
const IMAGE = path.join(dir, 'red.png');
const SECRET = path.join(dir, 'secret.txt');
// A 64×48 red PNG written by the same Pillow the runtime decodes with.
const made = spawnSync('/usr/bin/python3', ['-c', `from PIL import Image; Image.new('RGB', (64, 48), (200, 30, 30)).save(${JSON.stringify(IMAGE)})`], { encoding: 'utf8' });
if (made.status !== 0) throw new Error(`cannot write the test image with /usr/bin/python3 + Pillow: ${made.stderr}`);
writeFileSync(SECRET, 'top secret\n');

/** The exact source PV would exec for a model's code (plt.show() → the capture snippet). */
const pv = (code: string): string => pvCodeTurn(`<code>\n\`\`\`python\n${code}\n\`\`\`\n`, 'stop').execSource!;

describe('PyVision sandbox (bubblewrap)', () => {
  let sb: PySandbox;
  let server: Server;
  let port = 0;

  beforeAll(async () => {
    expect(probeIsolation()).toMatchObject({ ok: true, method: 'bwrap' });
    sb = await startPySandbox({ variant: 'PV', images: [IMAGE] }, { limits: { wallSeconds: 20, cpuSeconds: 2, memoryBytes: 1024 ** 3, maxFigures: 8, maxOutputChars: 10_000, maxProcesses: 24 } });
    server = createServer((s) => s.end('hello\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  }, 60_000);

  afterAll(async () => {
    await sb?.close();
    server?.close();
  });

  it('runs PyVision code against image_clue_0 and returns its figure as a real PNG', async () => {
    expect(sb.info).toMatchObject({ isolation: 'bwrap', python: '/usr/bin/python3' });
    const r = await sb.run(pv('print(image_clue_0.size, image_clue_0.mode)\nplt.imshow(image_clue_0)\nplt.show()'));
    expect(r).toMatchObject({ stdout: '(64, 48) RGB\n', error: null, timeout: false, numFigures: 1, limitsHit: [] });
    expect(readFileSync(r.figures[0]!).subarray(1, 4).toString()).toBe('PNG');
    expect(pvObservation(r, 1).observation).toBe('<interpreter>\nText Result:\n(64, 48) RGB\nImage Result:\n<image_clue_1><image></image_clue_1></interpreter>\n');
    // The namespace persists between runs, as in the references' persistent workers.
    await sb.run(pv('kept = 41'));
    expect((await sb.run(pv('print(kept + 1)'))).stdout).toBe('42\n');
  });

  it('reading a file outside the episode: it does not exist in there', async () => {
    const r = await sb.run(pv(`print(open(${JSON.stringify(SECRET)}).read())`));
    expect(r).toMatchObject({ errorType: 'FileNotFoundError', error: `[Errno 2] No such file or directory: '${SECRET}'` });
    const etc = await sb.run(pv("print(open('/etc/passwd').read())"));
    expect(etc.errorType).toBe('FileNotFoundError');
    expect(pvObservation(r, 1).observation).toBe(`<interpreter>Error: [Errno 2] No such file or directory: '${SECRET}'</interpreter>\n`);
  });

  it('writing outside scratch: read-only everywhere but the scratch folder', async () => {
    for (const target of ['/episode/images/evil.png', '/usr/evil', '/evil']) {
      const r = await sb.run(pv(`open(${JSON.stringify(target)}, 'w').write('x')`));
      expect(r.errorType, target).toBe('OSError');
      expect(r.error, target).toBe(`[Errno 30] Read-only file system: '${target}'`);
    }
    const ok = await sb.run(pv("open('/episode/scratch/note.txt', 'w').write('kept')"));
    expect(ok.error).toBeNull();
    expect(readFileSync(path.join(sb.scratchDir, 'note.txt'), 'utf8')).toBe('kept');
  });

  it('opening a socket: no network, not even the host loopback', async () => {
    const local = await sb.run(pv(`import socket\nsocket.create_connection(('127.0.0.1', ${port}), timeout=5)`));
    expect(local).toMatchObject({ errorType: 'ConnectionRefusedError', error: '[Errno 111] Connection refused' });
    const remote = await sb.run(pv("import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=5)"));
    expect(remote).toMatchObject({ errorType: 'OSError', error: '[Errno 101] Network is unreachable' });
  });

  it('a fork bomb: fork fails at the process limit, and nothing is left running', async () => {
    const r = await sb.run(pv('import os\nwhile True:\n    os.fork()'));
    expect(r).toMatchObject({ errorType: 'BlockingIOError', error: '[Errno 11] Resource temporarily unavailable', timeout: false });
    expect(r.limitsHit).toContain('processes');
    // Only the namespace's init and the worker remain.
    const ps = await sb.run(pv("import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"));
    expect(JSON.parse(ps.stdout)).toHaveLength(2);
  });

  it('allocating past the memory limit: Python raises its own MemoryError, the episode goes on', async () => {
    const r = await sb.run(pv('import numpy as np\nx = np.ones((1 << 28,))'));
    expect(r).toMatchObject({ errorType: 'MemoryError', error: 'Unable to allocate 2.00 GiB for an array with shape (268435456,) and data type float64' });
    expect(r.limitsHit).toContain('memory');
    expect(pvrlObservation(r, 1).observation).toBe(
      '\n<|im_start|>user\n<tool_response>\n<interpreter>Execution error: Unable to allocate 2.00 GiB for an array with shape (268435456,) and data type float64</interpreter>\n\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    expect((await sb.run(pv('print(kept)'))).stdout).toBe('41\n');
  });

  it('an infinite loop: the CPU limit stops it and the model sees the timeout text of its training', async () => {
    const r = await sb.run(pv('while True:\n    pass'));
    expect(r).toMatchObject({ timeout: true, timeoutReason: 'cpu', error: null });
    expect(r.limitsHit).toEqual(['cpu']);
    expect(pvObservation(r, 1).observation).toBe('<interpreter>Timeout Error</interpreter>\n');
    expect(pvrlObservation(r, 1).observation).toContain('<interpreter>Execution error: Execution timeout</interpreter>');
    expect((await sb.run(pv('print(kept)'))).stdout).toBe('41\n');
  }, 90_000);

  it('printing 1 GB: the text is capped (head and tail kept) and PV shows what the reference would', async () => {
    const r = await sb.run(pv("import sys\nchunk = 'ab' * (1 << 19)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\nprint('END')"));
    expect(r.error).toBeNull();
    expect(r.stdoutChars).toBe(2 ** 30 + 4);
    expect(r.limitsHit).toContain('output');
    expect(r.stdout.length).toBeLessThan(10_100);
    expect(r.stdout.endsWith('abababEND\n')).toBe(true);
    // PV keeps 200 + 200 code points: the same as without any cap.
    expect(pvObservation(r, 1).textResult).toBe(`${'ab'.repeat(100)}...b${'ab'.repeat(98)}END`);
  }, 90_000);

  it('producing 1000 figures: the run stops at the figure limit with a RuntimeError', async () => {
    // PVRL's plt.show() becomes a helper call, so it works inside a loop (PV's pasted snippet does not:
    // see the pltshow_indented_pv vector).
    const rl = await startPySandbox({ variant: 'PVRL', images: [IMAGE] }, { limits: { maxFigures: 8 } });
    try {
      const src = pvrlCodeTurn('<code>\n```python\nfor i in range(1000):\n    plt.plot([0, i])\n    plt.show()\n```\n</code>', 'stop').execSource!;
      const r = await rl.run(src);
      expect(r).toMatchObject({ errorType: 'RuntimeError', error: 'Too many figures: at most 8 figures per code run' });
      expect(r.limitsHit).toContain('figures');
      expect(pvrlObservation(r, 1).observation).toContain('<interpreter>Execution error: Too many figures: at most 8 figures per code run</interpreter>');
      const ok = await rl.run(pvrlCodeTurn('<code>\n```python\nfor i in range(3):\n    plt.plot([0, i])\n    plt.show()\n```\n</code>', 'stop').execSource!);
      expect(ok).toMatchObject({ error: null, numFigures: 3 });
    } finally {
      await rl.close();
    }
  }, 90_000);

  it('a hang past the wall time: the process group is killed, the next run starts a fresh worker', async () => {
    const quick = await startPySandbox({ variant: 'PVRL', images: [IMAGE] }, { limits: { wallSeconds: 3 } });
    try {
      await quick.run(pv('state = 1'));
      const r = await quick.run(pv('import time\ntime.sleep(60)'));
      expect(r).toMatchObject({ timeout: true, timeoutReason: 'wall', limitsHit: ['wall'] });
      const next = await quick.run(pv("print('state' in globals(), image_clue_0.size)"));
      expect(next).toMatchObject({ stdout: 'False (64, 48)\n', restarted: true });
    } finally {
      await quick.close();
    }
  }, 90_000);

  it('without isolation the same reads and sockets succeed (so the checks above can fail)', async () => {
    const open = await startPySandbox({ variant: 'PV', images: [IMAGE] }, { isolation: 'none', allowUnisolated: true });
    try {
      expect(open.info.isolation).toBe('none');
      expect((await open.run(pv(`print(open(${JSON.stringify(SECRET)}).read())`))).stdout).toBe('top secret\n\n');
      const r = await open.run(pv(`import socket\nprint(socket.create_connection(('127.0.0.1', ${port}), timeout=5).recv(6))`));
      expect(r.stdout).toBe("b'hello\\n'\n");
    } finally {
      await open.close();
    }
  }, 60_000);

  it('refuses to run without isolation unless the user opts in', async () => {
    await expect(startPySandbox({ variant: 'PV', images: [IMAGE] }, { isolation: 'none' })).rejects.toThrow(SandboxUnavailableError);
    await expect(startPySandbox({ variant: 'PV', images: [IMAGE] }, { isolation: 'none' })).rejects.toThrow(/Refusing to run model-written code without isolation/);
  });

  it('PVRL turns reach the sandbox only when the env would execute them', () => {
    expect(pvrlCodeTurn('<code>\n```python\nx = input()\n```\n</code>', 'stop')).toMatchObject({ forbidden: true, execSource: null, isError: true });
    expect(existsSync(IMAGE)).toBe(true);
  });
});
