import { useState } from 'react';
import { getClient } from '../../client';
import { useAppStore } from '../../stores/useAppStore';

/**
 * The workspace folder: where it is now, and the one to open at the next start (kept per user, outside any
 * workspace). The core serves one workspace for its whole life, so a change takes effect when Loupe restarts.
 */
export function WorkspaceCard() {
  const info = useAppStore((s) => s.info);
  const [dir, setDir] = useState('');
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const choose = async (path: string) => {
    setResult(null);
    try {
      const r = await getClient().call('settings:workspace', { path });
      setResult({ ok: true, text: r.restartNeeded ? `Loupe opens ${r.next} at its next start; this session keeps ${r.current}.` : `${r.next} is the workspace open now; nothing to switch.` });
    } catch (e) {
      setResult({ ok: false, text: e instanceof Error ? e.message : String(e) });
    }
  };
  return (
    <div className="card" data-testid="settings-workspace">
      <h3>Workspace</h3>
      <dl className="kv">
        <dt>Folder</dt>
        <dd><code data-testid="workspace-path">{info?.workspace ?? '…'}</code></dd>
        <dt>Core</dt>
        <dd>Loupe {info?.version ?? '…'} · Node {info?.node ?? '…'} · {info?.platform ?? ''}</dd>
      </dl>
      <div className="settings-row">
        <label className="field grow">
          <span className="field-label">Open another folder at the next start (absolute path on the machine running Loupe; created when missing)</span>
          <input className="input" value={dir} onChange={(e) => setDir(e.target.value)} placeholder="/data/loupe-workspace" data-testid="workspace-input" />
        </label>
        <button type="button" className="btn" disabled={!dir.trim()} onClick={() => void choose(dir)} data-testid="workspace-change">Change</button>
        <button type="button" className="btn" onClick={() => void choose('')} data-testid="workspace-default" title="Forget the chosen folder: the platform's default opens next time">Use default</button>
      </div>
      {result ? <p className={result.ok ? 'muted' : 'field-error'} role={result.ok ? 'status' : 'alert'} data-testid="workspace-result">{result.text}</p> : null}
      <p className="muted tr-small">LOUPE_WORKSPACE or --workspace, when given, still decide.</p>
    </div>
  );
}
