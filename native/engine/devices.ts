/**
 * Device detection: what this build of onnxruntime-node can run on this machine, as LM Studio shows it. For each
 * execution provider the build knows on this platform (`listSupportedBackends()`), the provider's library is looked
 * for beside the binding and a one-node ONNX model is run on it (a provider that loads but has no adapter, driver or
 * CUDA libraries fails here, not at model load). Platform-only providers (DirectML on Windows, CoreML on macOS) are
 * not offered elsewhere. Every unavailable device has a one-line reason and a one-line "how to get it"; the raw
 * onnxruntime text is kept apart (`details`) for a disclosure, never for the headline.
 *
 * `probeDevices()` runs here, in the calling process; `detectDevices()` runs it in a child process (a GPU driver that
 * crashes during the probe ends the child, not the core), or in-process inside Electron's utilityProcess, which is
 * itself the crash boundary (no child Node processes there: the RunAsNode fuse is off).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fork } from 'node:child_process';
import type { DeviceReport, DeviceStatus } from '../../app/contract';
import { fromBundle, workerFile } from '../../app/paths';
import { inUtilityProcess } from './isolatedTransport';
import { explainDeviceError } from './deviceErrors';

export { explainDeviceError };

type DeviceId = DeviceStatus['id'];

/** The smallest model a provider must run: y = Identity(x), x float[1], IR 8, opset 13 (hand-encoded protobuf). */
export function identityModel(): Uint8Array {
  const varint = (n: number): number[] => {
    const b: number[] = [];
    while (n > 127) {
      b.push((n & 127) | 128);
      n >>>= 7;
    }
    b.push(n);
    return b;
  };
  const len = (no: number, payload: number[]) => [...varint((no << 3) | 2), ...varint(payload.length), ...payload];
  const int = (no: number, v: number) => [...varint(no << 3), ...varint(v)];
  const str = (s: string) => [...Buffer.from(s, 'utf8')];
  // ValueInfoProto{name, type: TypeProto{tensor_type{elem_type FLOAT, shape{dim{dim_value 1}}}}}
  const valueInfo = (name: string) => [...len(1, str(name)), ...len(2, len(1, [...int(1, 1), ...len(2, len(1, int(1, 1)))]))];
  const node = [...len(1, str('x')), ...len(2, str('y')), ...len(4, str('Identity'))];
  const graph = [...len(1, node), ...len(2, str('loupe-device-probe')), ...len(11, valueInfo('x')), ...len(12, valueInfo('y'))];
  return new Uint8Array([...int(1, 8), ...len(7, graph), ...len(8, [...len(1, []), ...int(2, 13)])]);
}

const LABELS: Record<DeviceId, string> = {
  cpu: 'CPU',
  cuda: 'NVIDIA GPU (CUDA)',
  webgpu: 'GPU (WebGPU)',
  dml: 'GPU (DirectML)',
  coreml: 'Apple Neural Engine / GPU (CoreML)',
};

/** Which platform a provider belongs to; absent = any platform the build lists it on. */
const PLATFORM_ONLY: Partial<Record<DeviceId, NodeJS.Platform>> = { dml: 'win32', coreml: 'darwin' };

const HOW_TO: Record<Exclude<DeviceId, 'cpu'>, string> = {
  cuda: 'install an NVIDIA driver with CUDA 12 and cuDNN 9, then reinstall onnxruntime-node with ONNXRUNTIME_NODE_INSTALL=cuda12 (or unpack the kit of scripts/device/pack-cuda-ep.sh)',
  webgpu: 'install a GPU driver with Vulkan (Linux), Metal (macOS) or Direct3D 12 (Windows) support',
  dml: 'update Windows and the GPU driver (DirectML needs Direct3D 12)',
  coreml: 'CoreML needs macOS on Apple silicon or a Mac with a supported GPU',
};

interface OrtLike {
  listSupportedBackends?: () => Array<{ name: string; bundled: boolean }>;
  InferenceSession: { create(m: Uint8Array, o: { executionProviders: string[] }): Promise<{ run(f: Record<string, unknown>): Promise<unknown>; release?(): Promise<void> }> };
  Tensor: new (type: 'float32', data: Float32Array, dims: number[]) => unknown;
  env?: { versions?: { node?: string } };
}

function ortModule(): { ort: OrtLike; bindingDir: string; version: string } {
  const req = createRequire(import.meta.url);
  const ort = req('onnxruntime-node') as OrtLike;
  const pkg = req.resolve('onnxruntime-node/package.json');
  const version = (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { version: string }).version;
  const bindingDir = path.join(path.dirname(pkg), 'bin', 'napi-v6', process.platform, process.arch);
  return { ort, bindingDir, version };
}

/** Provider libraries that must sit beside the binding for a provider onnxruntime-node does not bundle. */
function missingLibraries(device: DeviceId, bindingDir: string, platform: NodeJS.Platform): string[] {
  if (device !== 'cuda') return [];
  const libs = platform === 'win32' ? ['onnxruntime_providers_shared.dll', 'onnxruntime_providers_cuda.dll'] : ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'];
  return libs.filter((l) => !fs.existsSync(path.join(bindingDir, l)));
}

async function runOn(ort: OrtLike, device: string): Promise<void> {
  const s = await ort.InferenceSession.create(identityModel(), { executionProviders: [device] });
  try {
    await s.run({ x: new ort.Tensor('float32', new Float32Array([1]), [1]) });
  } finally {
    await s.release?.().catch(() => undefined);
  }
}

/** Detect in this process (loads onnxruntime-node and creates a session per provider). */
export async function probeDevices(platform: NodeJS.Platform = process.platform): Promise<DeviceReport> {
  const { ort, bindingDir, version } = ortModule();
  const listed = new Map((ort.listSupportedBackends?.() ?? [{ name: 'cpu', bundled: true }]).map((b) => [b.name, b.bundled]));
  const devices: DeviceStatus[] = [];
  const hidden: DeviceId[] = [];
  for (const id of ['cpu', 'cuda', 'webgpu', 'dml', 'coreml'] as const) {
    const only = PLATFORM_ONLY[id];
    if ((only && only !== platform) || (id !== 'cpu' && !listed.has(id))) {
      hidden.push(id);
      continue;
    }
    const missing = missingLibraries(id, bindingDir, platform);
    if (id !== 'cpu' && missing.length) {
      devices.push({ id, label: LABELS[id], available: false, reason: `this onnxruntime-node was installed without its CUDA provider (${missing.join(', ')} missing)`, howTo: HOW_TO.cuda });
      continue;
    }
    try {
      await runOn(ort, id);
      devices.push({ id, label: LABELS[id], available: true });
    } catch (err) {
      const raw = err instanceof Error ? err.message : String(err);
      devices.push({ id, label: LABELS[id], available: false, reason: explainDeviceError(id, raw), ...(id !== 'cpu' ? { howTo: HOW_TO[id] } : {}), details: raw.trim() });
    }
  }
  return { platform: `${platform}-${process.arch}`, onnxruntime: version, devices, hidden };
}

let cached: Promise<DeviceReport> | null = null;

/** Detect once per process, off the caller's process where one can be started; `fresh` probes again. */
export function detectDevices(fresh = false): Promise<DeviceReport> {
  if (!cached || fresh) {
    cached = (inUtilityProcess() ? probeDevices() : probeInChild()).catch((err: unknown) => {
      cached = null;
      throw err;
    });
  }
  return cached;
}

function probeInChild(timeoutMs = 60_000): Promise<DeviceReport> {
  return new Promise((resolve, reject) => {
    // Dawn and onnxruntime print warnings about missing drivers on stderr: expected here, so not passed on.
    const child = fork(workerFile('devices'), [], { execArgv: fromBundle ? [] : ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    let done = false;
    const timer = setTimeout(() => {
      finish(new Error(`device detection did not answer within ${timeoutMs / 1000} s`));
      child.kill('SIGKILL');
    }, timeoutMs);
    const finish = (err: Error | null, report?: DeviceReport) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(report!);
    };
    child.on('message', (m: { report?: DeviceReport; error?: string }) => {
      if (m.report) finish(null, m.report);
      else finish(new Error(`device detection failed: ${m.error ?? 'no answer'}`));
    });
    child.on('error', (e) => finish(new Error(`device detection could not start: ${e.message}`)));
    child.on('exit', (code, signal) => finish(new Error(`device detection ended early (${signal ? `killed by ${signal}` : `exit code ${code}`}); a GPU driver may have crashed during the probe`)));
  });
}
