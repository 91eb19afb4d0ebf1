import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { ServedStartReq } from '../../../../app/contract';
import { useServedStore } from '../../stores/useServedStore';
import { useModelsStore } from '../../stores/useModelsStore';
import { ErrorLine } from '../ErrorLine';

type Backend = ServedStartReq['backend'];

const BACKENDS: Array<{ id: Backend; label: string; dtypes: string }> = [
  { id: 'loupe', label: 'loupe serve-model (ONNX)', dtypes: 'fp32 (default), fp16, q8, int8, uint8, q4, q4f16, bnb4' },
  { id: 'vllm', label: 'vLLM', dtypes: 'auto (default), bfloat16, float16, float32, half, float' },
  { id: 'sglang', label: 'SGLang', dtypes: 'auto (default), bfloat16, float16, float32, half, float' },
  { id: 'transformers', label: 'transformers serve', dtypes: 'auto (default), bfloat16, float16, float32' },
];

/** A typed number field: blank = not set; anything else must be a number (else the form says so). */
function numberOr(text: string, what: string, integer: boolean): number | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  const n = Number(t);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) throw new Error(`${what}: ${JSON.stringify(t)} is not ${integer ? 'a whole number' : 'a number'}`);
  return n;
}

/**
 * The Models page's "Serve" form: start an OpenAI-compatible server for a model folder, here or as a Slurm job
 * through a saved connector, then watch its state and log and stop it. The launcher's messages show as they are.
 */
export function ServePanel() {
  const s = useServedStore(useShallow((x) => ({ engines: x.engines, logs: x.logs, busy: x.busy, formError: x.formError, bounds: x.bounds, slurmConnectors: x.slurmConnectors })));
  const { init, start, stop, loadBounds, loadConnectors } = useServedStore(useShallow((x) => ({ init: x.init, start: x.start, stop: x.stop, loadBounds: x.loadBounds, loadConnectors: x.loadConnectors })));
  const models = useModelsStore(useShallow((x) => x.models));
  const [backend, setBackend] = useState<Backend>('loupe');
  const [modelDir, setModelDir] = useState('');
  const [modelName, setModelName] = useState('');
  const [mode, setMode] = useState<'eval' | 'train'>('eval');
  const [minPixels, setMinPixels] = useState('');
  const [maxPixels, setMaxPixels] = useState('');
  const [port, setPort] = useState('');
  const [dtype, setDtype] = useState('');
  const [gpuMemory, setGpuMemory] = useState('');
  const [where, setWhere] = useState('local');
  const [cwd, setCwd] = useState('');
  const [command, setCommand] = useState('');
  const [localError, setLocalError] = useState<string | null>(null);
  const [openLog, setOpenLog] = useState<string | null>(null);

  useEffect(() => {
    void init();
    void loadConnectors();
  }, [init, loadConnectors]);
  useEffect(() => {
    void loadBounds(mode);
  }, [mode, loadBounds]);

  const submit = async (): Promise<void> => {
    setLocalError(null);
    let req: ServedStartReq;
    try {
      const min = numberOr(minPixels, 'MIN_PIXELS', true);
      const max = numberOr(maxPixels, 'MAX_PIXELS', true);
      const p = numberOr(port, 'port', true);
      const g = numberOr(gpuMemory, 'GPU memory share', false);
      const words = command.trim() ? command.trim().split(/\s+/) : undefined;
      req = {
        backend,
        modelDir: modelDir.trim(),
        mode,
        ...(modelName.trim() ? { modelName: modelName.trim() } : {}),
        ...(min !== undefined ? { minPixels: min } : {}),
        ...(max !== undefined ? { maxPixels: max } : {}),
        ...(p !== undefined ? { port: p } : {}),
        ...(dtype.trim() ? { dtype: dtype.trim() } : {}),
        ...(g !== undefined ? { gpuMemory: g } : {}),
        ...(words ? { launcher: words } : {}),
        where: where === 'local' ? { kind: 'local' } : { kind: 'slurm', connector: where, ...(cwd.trim() ? { cwd: cwd.trim() } : {}) },
      };
    } catch (err) {
      setLocalError(err instanceof Error ? err.message : String(err));
      return;
    }
    const id = await start(req);
    if (id) setOpenLog(id);
  };
  const error = localError ?? s.formError;
  const info = BACKENDS.find((b) => b.id === backend)!;

  return (
    <div className="card" data-testid="serve-panel">
      <h3>Serve a model</h3>
      <p className="muted">An OpenAI-compatible server for a model folder, on this machine or as a Slurm job reached through an SSH tunnel. Once ready, the Demo (engine “Served”) and evaluations use it; it stops when Loupe quits.</p>
      <div className="serve-grid">
        <label className="field">
          <span className="field-label">Server</span>
          <select className="input" value={backend} onChange={(e) => setBackend(e.target.value as Backend)} data-testid="serve-backend">
            {BACKENDS.map((b) => <option key={b.id} value={b.id}>{b.label}</option>)}
          </select>
        </label>
        <label className="field serve-wide">
          <span className="field-label">Model folder <span className="req" aria-hidden>*</span></span>
          <span className="demo-row">
            <input className="input grow" value={modelDir} onChange={(e) => setModelDir(e.target.value)} placeholder="absolute folder on the machine that runs the server" data-testid="serve-folder" />
            <select className="input" value="" onChange={(e) => { if (e.target.value) setModelDir(e.target.value); }} aria-label="A listed model's folder" data-testid="serve-folder-pick">
              <option value="">from the list…</option>
              {models.map((m) => <option key={m.id} value={m.path}>{m.id}</option>)}
            </select>
          </span>
        </label>
        <label className="field">
          <span className="field-label">Served name</span>
          <input className="input" value={modelName} onChange={(e) => setModelName(e.target.value)} placeholder="the folder's name" data-testid="serve-name" />
        </label>
        <label className="field">
          <span className="field-label">Dialect bounds</span>
          <select className="input" value={mode} onChange={(e) => setMode(e.target.value as 'eval' | 'train')} data-testid="serve-mode">
            <option value="eval">eval</option>
            <option value="train">train</option>
          </select>
          <span className="muted" data-testid="serve-bounds">{s.bounds ? `MIN_PIXELS ${s.bounds.minPixels} · MAX_PIXELS ${s.bounds.maxPixels}` : '…'}</span>
        </label>
        <label className="field">
          <span className="field-label">MIN_PIXELS</span>
          <input className="input" inputMode="numeric" value={minPixels} onChange={(e) => setMinPixels(e.target.value)} placeholder="the dialect's" data-testid="serve-min" />
        </label>
        <label className="field">
          <span className="field-label">MAX_PIXELS</span>
          <input className="input" inputMode="numeric" value={maxPixels} onChange={(e) => setMaxPixels(e.target.value)} placeholder="the dialect's" data-testid="serve-max" />
        </label>
        <label className="field">
          <span className="field-label">Port</span>
          <input className="input" inputMode="numeric" value={port} onChange={(e) => setPort(e.target.value)} placeholder="a free one" data-testid="serve-port" />
        </label>
        <label className="field">
          <span className="field-label">dtype</span>
          <input className="input" value={dtype} onChange={(e) => setDtype(e.target.value)} placeholder={info.dtypes.split(' ')[0]} title={info.dtypes} data-testid="serve-dtype" />
        </label>
        {backend !== 'loupe' ? (
          <label className="field">
            <span className="field-label">GPU memory share</span>
            <input className="input" inputMode="decimal" value={gpuMemory} onChange={(e) => setGpuMemory(e.target.value)} placeholder="0.9" data-testid="serve-gpu-memory" />
          </label>
        ) : null}
        <label className="field">
          <span className="field-label">Where</span>
          <select className="input" value={where} onChange={(e) => setWhere(e.target.value)} data-testid="serve-where">
            <option value="local">this machine</option>
            {s.slurmConnectors.map((c) => <option key={c} value={c}>Slurm: {c}</option>)}
          </select>
        </label>
        {where !== 'local' ? (
          <label className="field">
            <span className="field-label">Job folder on the cluster</span>
            <input className="input" value={cwd} onChange={(e) => setCwd(e.target.value)} placeholder="the connector's folder" data-testid="serve-cwd" />
          </label>
        ) : null}
        <label className="field serve-wide">
          <span className="field-label">Command</span>
          <input className="input" value={command} onChange={(e) => setCommand(e.target.value)} placeholder={backend === 'loupe' ? 'node …/bin/loupe.mjs (this Loupe)' : backend === 'sglang' ? 'python3 -m sglang.launch_server' : backend} data-testid="serve-command" />
        </label>
      </div>
      <p className="muted">dtypes: {info.dtypes}</p>
      <div className="demo-row">
        <button type="button" className="btn btn-primary" disabled={s.busy || !modelDir.trim()} onClick={() => void submit()} data-testid="serve-start">Serve</button>
      </div>
      {error ? <ErrorLine className="banner banner-error demo-banner" text={error} testId="serve-error" /> : null}
      {s.engines.length ? (
        <table className="table" data-testid="served-table">
          <thead>
            <tr><th>Engine</th><th>Where</th><th>State</th><th>URL</th><th /></tr>
          </thead>
          <tbody>
            {s.engines.map((e) => (
              <tr key={e.id} data-testid={`served-row-${e.model}`}>
                <td><div>{e.model}</div><div className="muted">{e.backend}</div></td>
                <td>{e.where === 'in-app' ? 'this machine · in the app' : e.where === 'local' ? `this machine${e.pid ? ` · pid ${e.pid}` : ''}` : `Slurm${e.jobId ? ` job ${e.jobId}` : ''}${e.node ? ` on ${e.node}` : ''}`}</td>
                <td><span data-testid={`served-state-${e.model}`}>{e.status}</span>{e.message ? <div className="muted served-message">{e.message}</div> : null}</td>
                <td className="muted">{e.baseURL ?? '—'}</td>
                <td className="models-actions">
                  <button type="button" className="btn btn-sm" onClick={() => setOpenLog(openLog === e.id ? null : e.id)} data-testid={`served-log-toggle-${e.model}`}>{openLog === e.id ? 'Hide log' : 'Log'}</button>
                  {e.status === 'starting' || e.status === 'ready' ? <button type="button" className="btn btn-sm" onClick={() => void stop(e.id)} data-testid={`served-stop-${e.model}`}>Stop</button> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {openLog ? <pre className="served-log" data-testid="served-log">{(s.logs[openLog] ?? []).slice(-200).join('\n') || '(no output yet)'}</pre> : null}
    </div>
  );
}
