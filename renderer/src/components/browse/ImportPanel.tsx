/**
 * "Import…" on the Runs page: another tool's outputs (Pixel Reasoner, verl-tool, DeepEyes, lmms-eval) read from a
 * path on the machine running the core, through the same service as `loupe import`. A wrong format is one line
 * naming the format the files look like.
 */
import { useState } from 'react';
import { getClient } from '../../client';
import { useRunsStore } from '../../stores/useRunsStore';

const FORMATS = ['pixel-reasoner', 'verl-tool', 'deepeyes', 'lmms-eval'] as const;
type Format = (typeof FORMATS)[number];

export function ImportPanel({ onClose }: { onClose: () => void }) {
  const load = useRunsStore((s) => s.load);
  const [from, setFrom] = useState<Format>('pixel-reasoner');
  const [input, setInput] = useState('');
  const [name, setName] = useState('');
  const [images, setImages] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<{ name: string; summary: string; issues: string[] } | null>(null);
  const submit = async () => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const r = await getClient().call('runs:import', { from, path: input.trim(), ...(name.trim() ? { name: name.trim() } : {}), ...(images.trim() ? { images: images.trim() } : {}) });
      setResult({ name: r.name, summary: r.summary, issues: r.issues });
      await load();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      className="card import-panel"
      data-testid="import-panel"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <h3>Import a run</h3>
      <div className="import-fields">
        <label>
          From
          <select className="input" value={from} onChange={(e) => setFrom(e.target.value as Format)} data-testid="import-from">
            {FORMATS.map((f) => <option key={f} value={f}>{f}</option>)}
          </select>
        </label>
        <label className="grow">
          <span>File or folder <span className="req" aria-hidden>*</span></span>
          <input className="input" required value={input} onChange={(e) => setInput(e.target.value)} placeholder="/path/to/results (on the machine running Loupe)" data-testid="import-path" />
        </label>
        <label>
          Run name
          <input className="input" value={name} onChange={(e) => setName(e.target.value)} placeholder="(from the files)" data-testid="import-name" />
        </label>
        <label>
          Images folder
          <input className="input" value={images} onChange={(e) => setImages(e.target.value)} placeholder="(optional)" data-testid="import-images" />
        </label>
      </div>
      <div>
        <button type="submit" className="btn btn-primary" disabled={busy || !input.trim()} data-testid="import-submit">{busy ? 'Importing…' : 'Import'}</button>{' '}
        <button type="button" className="btn" onClick={onClose}>Close</button>
      </div>
      {error ? <div className="banner banner-error" role="alert" data-testid="import-error">{error}</div> : null}
      {result ? (
        <div className="muted small" data-testid="import-result">
          Imported “{result.name}”: {result.summary}
          {result.issues.length ? <ul className="import-issues">{result.issues.slice(0, 5).map((i) => <li key={i}>{i}</li>)}</ul> : null}
        </div>
      ) : null}
    </form>
  );
}
