import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useSweepsStore, type SweepDialect } from '../../stores/useSweepsStore';
import { useRunsStore } from '../../stores/useRunsStore';
import { ModelPicker } from '../models/ModelPicker';
import { useAppStore } from '../../stores/useAppStore';

const DIALECTS: Array<[SweepDialect, string]> = [
  ['pixel-reasoner', 'Pixel Reasoner'],
  ['verl-tool', 'verl-tool'],
  ['deepeyes', 'DeepEyes'],
  ['pyvision', 'PyVision (code, API loop)'],
  ['pyvision-rl', 'PyVision-RL (code, verl env)'],
];

const BENCHES = ['loupe-synth', 'vstar', 'tallyqa', 'infovqa', 'mvbench', 'vsibench', 'hrbench', 'pixel-reasoner'];

function eta(ms: number | null): string {
  if (ms === null) return '';
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s left` : `${s} s left`;
}

/** Start an evaluation sweep (same runner and files as `loupe eval`) and watch it stream in. */
export function NewEvalPanel() {
  const progress = useSweepsStore(useShallow((s) => Object.values(s.progress)));
  const error = useSweepsStore((s) => s.error);
  const starting = useSweepsStore((s) => s.starting);
  const start = useSweepsStore((s) => s.start);
  const cancel = useSweepsStore((s) => s.cancel);
  const subscribe = useSweepsStore((s) => s.subscribe);
  const load = useRunsStore((s) => s.load);
  const [open, setOpen] = useState(false);
  // Starts on the Settings page's default model.
  const defaultModel = useAppStore((x) => x.settings?.defaultModel ?? 'loupe-tiny');
  const [model, setModel] = useState(defaultModel);
  const [bench, setBench] = useState('loupe-synth');
  const [data, setData] = useState('');
  const [vcot, setVcot] = useState(true);
  const [notool, setNotool] = useState(false);
  const [limit, setLimit] = useState('');
  const [maxTokens, setMaxTokens] = useState('');
  const [dialect, setDialect] = useState<SweepDialect>('pixel-reasoner');
  // "Run on cluster": a Slurm array job or one Ray job per shard through a saved connector, merged into one run.
  const startCluster = useSweepsStore((s) => s.startCluster);
  const clusterConnectors = useSweepsStore(useShallow((s) => s.clusterConnectors));
  const loadConnectors = useSweepsStore((s) => s.loadConnectors);
  const [onCluster, setOnCluster] = useState(false);
  const [connector, setConnector] = useState('');
  const [shards, setShards] = useState('2');
  const [runName, setRunName] = useState('');
  const [clusterLoupe, setClusterLoupe] = useState('');
  const [remoteWs, setRemoteWs] = useState('');
  const [clusterCwd, setClusterCwd] = useState('');
  const [formError, setFormError] = useState<string | null>(null);
  useEffect(() => {
    if (open) void loadConnectors();
  }, [open, loadConnectors]);
  const connectorKind = clusterConnectors.find((c) => c.name === connector)?.kind;
  const codeTool = dialect === 'pyvision' || dialect === 'pyvision-rl';
  useEffect(() => subscribe(() => void load()), [subscribe, load]);
  // PyVision has one prompt (its code-tool prompt), so the prompt choice does not apply to it.
  const prompts = codeTool ? (['vcot'] as const).slice() : [...(vcot ? (['vcot'] as const) : []), ...(notool ? (['notool'] as const) : [])];
  return (
    <div className="card" data-testid="new-eval">
      <div className="run-list-head">
        <h3>Evaluations</h3>
        <button type="button" className="btn" onClick={() => setOpen(!open)} data-testid="new-eval-toggle">{open ? 'Close' : 'New evaluation…'}</button>
      </div>
      {open ? (
        <form
          className="eval-form"
          onSubmit={(e) => {
            e.preventDefault();
            setFormError(null);
            if (onCluster) {
              const n = Number(shards);
              if (!connector) return setFormError('Choose a cluster connector, Slurm over SSH or Ray (add one on the Training page under Connectors).');
              if (!Number.isInteger(n) || n < 1 || n > 1000) return setFormError(`Shards: ${JSON.stringify(shards)} is not a whole number from 1 to 1000.`);
              if (!runName.trim()) return setFormError('Name the run: the shards are merged into it, and the name follows it again.');
              if (connectorKind === 'ray' && !remoteWs.trim()) return setFormError('Workspace on the cluster: a Ray connector has no folder of its own; give an absolute folder every Ray node shares.');
              void startCluster({
                connector,
                name: runName.trim(),
                shards: n,
                model,
                bench,
                data,
                dialect,
                prompt: prompts[0] ?? 'vcot',
                ...(limit ? { limit: Number(limit) } : {}),
                ...(maxTokens ? { maxTokens: Number(maxTokens) } : {}),
                ...(clusterLoupe.trim() ? { loupe: clusterLoupe.trim().split(/\s+/) } : {}),
                ...(remoteWs.trim() ? { remoteWorkspace: remoteWs.trim() } : {}),
                ...(clusterCwd.trim() ? { cwd: clusterCwd.trim() } : {}),
              });
              return;
            }
            void start({ model, bench, data, prompts, dialect, ...(limit ? { limit: Number(limit) } : {}), ...(maxTokens ? { maxTokens: Number(maxTokens) } : {}) });
          }}
        >
          <label>Model<ModelPicker value={model} onChange={setModel} allowOther testId="eval-model" /></label>
          <label>Benchmark<select className="input" value={bench} onChange={(e) => setBench(e.target.value)} data-testid="eval-bench">{BENCHES.map((b) => <option key={b}>{b}</option>)}</select></label>
          <label>Dialect<select className="input" value={dialect} onChange={(e) => setDialect(e.target.value as SweepDialect)} data-testid="eval-dialect">{DIALECTS.map(([id, label]) => <option key={id} value={id}>{label}</option>)}</select></label>
          <label>Data folder<input className="input" value={data} onChange={(e) => setData(e.target.value)} placeholder="folder with the published files" data-testid="eval-data" required /></label>
          <label>Limit<input className="input" value={limit} onChange={(e) => setLimit(e.target.value.replace(/\D/g, ''))} placeholder="all" data-testid="eval-limit" /></label>
          <label>Max tokens/turn<input className="input" value={maxTokens} onChange={(e) => setMaxTokens(e.target.value.replace(/\D/g, ''))} placeholder="dialect's" data-testid="eval-max-tokens" /></label>
          {codeTool ? (
            <div className="small muted" data-testid="eval-pyvision-note">
              Prompt vistool_with_img_info_v2; each sample's Python runs in its own sandbox (no network, read-only images). Max turns: {dialect === 'pyvision-rl' ? '30 (the validation limit)' : '30'}.
            </div>
          ) : (
            <fieldset className="prompts"><legend>Prompts</legend>
              <label><input type="checkbox" checked={vcot} onChange={(e) => setVcot(e.target.checked)} data-testid="eval-vcot" /> vcot (tools)</label>
              <label><input type="checkbox" checked={notool} onChange={(e) => setNotool(e.target.checked)} data-testid="eval-notool" /> notool</label>
            </fieldset>
          )}
          <fieldset className="prompts" data-testid="eval-cluster">
            <legend><label><input type="checkbox" checked={onCluster} onChange={(e) => setOnCluster(e.target.checked)} data-testid="eval-on-cluster" /> Run on cluster</label></legend>
            {onCluster ? (
              <div className="eval-cluster-fields">
                <label>Connector<select className="input" value={connector} onChange={(e) => setConnector(e.target.value)} data-testid="eval-cluster-connector">
                  <option value="">{clusterConnectors.length ? 'Choose a cluster connector' : 'No Slurm or Ray connector: add one on the Training page'}</option>
                  {clusterConnectors.map((c) => <option key={c.name} value={c.name}>{c.kind === 'ray' ? 'Ray' : 'Slurm'}: {c.name}</option>)}
                </select></label>
                <label>{connectorKind === 'ray' ? 'Shards (Ray jobs)' : 'Shards (array tasks)'}<input className="input" inputMode="numeric" value={shards} onChange={(e) => setShards(e.target.value)} data-testid="eval-cluster-shards" /></label>
                <label>Run name<input className="input" value={runName} onChange={(e) => setRunName(e.target.value)} placeholder="the merged run" data-testid="eval-cluster-name" /></label>
                <label>Loupe on the cluster<input className="input" value={clusterLoupe} onChange={(e) => setClusterLoupe(e.target.value)} placeholder="loupe" data-testid="eval-cluster-loupe" /></label>
                <label>Workspace on the cluster<input className="input" value={remoteWs} onChange={(e) => setRemoteWs(e.target.value)} placeholder={connectorKind === 'ray' ? 'required: a folder the Ray nodes share' : "loupe-workspace in the connector's folder"} data-testid="eval-cluster-workspace" /></label>
                <label>Job folder<input className="input" value={clusterCwd} onChange={(e) => setClusterCwd(e.target.value)} placeholder={connectorKind === 'ray' ? "Ray's" : "the connector's"} data-testid="eval-cluster-cwd" /></label>
                <div className="small muted">Model and data folder are as the cluster sees them; one prompt per cluster run (the first ticked).{connectorKind === 'ray' ? " Through Ray, a shard's samples arrive when its job ends (read from the job's log)." : ''}</div>
              </div>
            ) : null}
          </fieldset>
          {formError ? <div className="error-text" role="alert" data-testid="eval-form-error">{formError}</div> : null}
          <button type="submit" className="btn btn-primary" disabled={starting || prompts.length === 0} data-testid="eval-start">{onCluster ? 'Submit to cluster' : 'Start'}</button>
        </form>
      ) : null}
      {error ? <div className="error-text" role="alert" data-testid="eval-error">{error}</div> : null}
      {progress.length ? (
        <ul className="sweeps">
          {progress.map((p) => (
            <li key={p.runId} data-testid="sweep-progress" data-state={p.state}>
              <span className="ellipsis" title={p.runId}>{p.name}</span>
              <progress max={Math.max(1, p.total)} value={p.done} />
              <span className="small">{p.where === 'cluster' ? 'cluster · ' : ''}{p.done}/{p.total || '…'} · {p.state}{p.state === 'running' ? ` · ${eta(p.etaMs)}` : ''}{p.done ? ` · ${((100 * p.correct) / Math.max(1, p.done)).toFixed(0)} % correct so far` : ''}</span>
              {p.error ? <span className="error-text">{p.error}</span> : null}
              {p.state === 'running' || p.state === 'starting' ? <button type="button" className="btn" onClick={() => void cancel(p.runId)}>Cancel</button> : null}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
