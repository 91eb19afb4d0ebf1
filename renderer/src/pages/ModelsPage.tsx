import { AttentionCardLine } from '../components/models/AttentionCardLine';
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { PageHeader } from '../components/PageHeader';
import { useModelsStore } from '../stores/useModelsStore';
import { useAppStore } from '../stores/useAppStore';
import { DevicePicker } from '../components/models/DevicePicker';
import { DeviceList } from '../components/models/DeviceList';
import { ErrorLine } from '../components/ErrorLine';
import { ServePanel } from '../components/models/ServePanel';

function size(bytes: number | undefined): string {
  if (bytes === undefined) return '—';
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${(bytes / 1e3).toFixed(0)} KB`;
}

export function ModelsPage() {
  const s = useModelsStore(useShallow((x) => ({ models: x.models, loaded: x.loaded, busy: x.busy, error: x.error, report: x.report })));
  const { load, validate, add, remove, loadModel, unload } = useModelsStore(useShallow((x) => ({ load: x.load, validate: x.validate, add: x.add, remove: x.remove, loadModel: x.loadModel, unload: x.unload })));
  const engine = useAppStore((x) => x.engine);
  const [folder, setFolder] = useState('');
  useEffect(() => {
    void load();
  }, [load]);

  return (
    <section className="page">
      <PageHeader title="Models" subtitle="Open a model folder, validate it, load it" />
      <div className="card">
        <h3>Open a model folder</h3>
        <div className="demo-row">
          <input className="input grow" placeholder="Folder on the machine running Loupe (transformers.js layout: config.json, tokenizer, onnx/…)" value={folder} onChange={(e) => setFolder(e.target.value)} data-testid="model-folder" />
          <button type="button" className="btn" disabled={!folder.trim() || !!s.busy} onClick={() => void validate(folder.trim())} data-testid="model-validate">Validate</button>
          <button type="button" className="btn btn-primary" disabled={!folder.trim() || !!s.busy} onClick={() => void add(folder.trim())} data-testid="model-add">Add</button>
        </div>
        {s.report ? (
          <div className={s.report.ok ? 'models-report ok' : 'models-report bad'} data-testid="model-report">
            <strong>{s.report.ok ? 'Usable model folder' : 'Not usable'}</strong> · {s.report.dir}
            {s.report.suggestion ? (
              <div className="models-suggestion" data-testid="model-suggestion">
                The model is in <code>{s.report.suggestion}</code>.{' '}
                <button
                  type="button"
                  className="btn btn-sm"
                  onClick={() => {
                    const sub = s.report?.suggestion ?? '';
                    setFolder(sub);
                    void validate(sub);
                  }}
                  data-testid="model-use-suggestion"
                >
                  Use that folder
                </button>
              </div>
            ) : null}
            {s.report.errors.length ? (
              <ul className="models-errors">{s.report.errors.map((e) => <li key={e}>{e}</li>)}</ul>
            ) : null}
            {s.report.warnings.length ? <ul className="muted">{s.report.warnings.map((e) => <li key={e}>{e}</li>)}</ul> : null}
            <dl className="kv">
              <dt>type</dt><dd>{s.report.modelType ?? '—'}</dd>
              <dt>size</dt><dd>{size(s.report.sizeBytes)}</dd>
              <dt>dtypes</dt><dd>{s.report.dtypes.join(', ') || 'none complete'}</dd>
              <dt>est. memory</dt><dd>{size(s.report.memoryEstimateBytes)}</dd>
            </dl>
          </div>
        ) : null}
      </div>
      {s.error ? <ErrorLine className="banner banner-error demo-banner" text={s.error} testId="models-error" /> : null}
      <div className="card">
        <div className="demo-row">
          <h3 className="grow">Models</h3>
          <DevicePicker testId="model-device" />
        </div>
        <table className="table" data-testid="models-table">
          <thead>
            <tr><th>Model</th><th>Type</th><th>dtypes</th><th className="num">Size</th><th className="num">Est. memory</th><th>State</th><th /></tr>
          </thead>
          <tbody>
            {s.models.map((m) => {
              const isLoaded = s.loaded?.id === m.id;
              return (
                <tr key={m.id} data-testid={`model-row-${m.id}`}>
                  <td><div>{m.name}</div><div className="muted models-path">{m.path}</div>{m.attention ? <AttentionCardLine card={m.attention} testId={`model-attention-${m.id}`} /> : null}</td>
                  <td>{m.modelType ?? '—'}</td>
                  <td>{m.dtypes.join(', ')}</td>
                  <td className="num">{size(m.sizeBytes)}</td>
                  <td className="num">{size(m.memoryEstimateBytes)}</td>
                  <td data-testid={`model-state-${m.id}`}>
                    {isLoaded ? `loaded · asked ${s.loaded!.requestedDevice}, running on ${s.loaded!.device ?? '?'}${s.loaded!.dtype ? ` · ${s.loaded!.dtype}` : ''} · ${s.loaded!.loadMs} ms` : s.busy === `load:${m.id}` ? 'loading…' : '—'}
                    {isLoaded && s.loaded!.fallbackReason ? <ErrorLine className="demo-error" text={s.loaded!.fallbackReason} details={s.loaded!.fallbackDetails} testId={`model-fallback-${m.id}`} /> : null}
                  </td>
                  <td className="models-actions">
                    {isLoaded ? (
                      <button type="button" className="btn btn-sm" disabled={!!s.busy} onClick={() => void unload()} data-testid={`model-unload-${m.id}`}>Unload</button>
                    ) : (
                      <button type="button" className="btn btn-sm btn-primary" disabled={!!s.busy} onClick={() => void loadModel(m.id)} data-testid={`model-load-${m.id}`}>Load</button>
                    )}
                    {!m.bundled ? <button type="button" className="btn btn-sm" onClick={() => void remove(m.id)}>Remove</button> : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        <p className="muted engine-line" data-testid="engine-line">Engine: {engine ? `${engine.status}${engine.model ? ` · ${engine.model}` : ''}${engine.device ? ` · ${engine.device}` : ''}${engine.message ? ` — ${engine.message}` : ''}` : '…'}</p>
      </div>
      <ServePanel />
      <div className="card">
        <h3>Devices</h3>
        <DeviceList />
      </div>
    </section>
  );
}
