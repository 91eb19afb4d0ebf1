import { useAppStore } from '../stores/useAppStore';
import { PageHeader } from '../components/PageHeader';
import type { Theme } from '../../../app/contract';

const THEMES: Theme[] = ['system', 'light', 'dark'];

export function SettingsPage() {
  const settings = useAppStore((s) => s.settings);
  const info = useAppStore((s) => s.info);
  const setTheme = useAppStore((s) => s.setTheme);
  const setDeveloper = useAppStore((s) => s.setDeveloper);
  return (
    <section className="page">
      <PageHeader title="Settings" subtitle="Stored in the workspace's settings.json" />
      <div className="card">
        <h3>Appearance</h3>
        <div className="segmented" role="radiogroup" aria-label="Theme">
          {THEMES.map((t) => (
            <button key={t} type="button" role="radio" aria-checked={settings?.theme === t} className={settings?.theme === t ? 'seg active' : 'seg'} onClick={() => void setTheme(t)} data-testid={`theme-${t}`}>
              {t}
            </button>
          ))}
        </div>
      </div>
      <div className="card">
        <h3>Developer</h3>
        <label className="demo-check">
          <input type="checkbox" checked={settings?.developer === true} onChange={(e) => void setDeveloper(e.target.checked)} data-testid="settings-developer" /> Show diagnostics (long tasks on the Demo page)
        </label>
      </div>
      <div className="card">
        <h3>Workspace</h3>
        <dl className="kv">
          <dt>Folder</dt>
          <dd><code>{info?.workspace ?? '…'}</code></dd>
          <dt>Core</dt>
          <dd>Loupe {info?.version ?? '…'} · Node {info?.node ?? '…'} · {info?.platform ?? ''}</dd>
        </dl>
      </div>
    </section>
  );
}
