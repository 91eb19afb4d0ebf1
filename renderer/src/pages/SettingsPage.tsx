import { useEffect, useState } from 'react';
import { useAppStore } from '../stores/useAppStore';
import { PageHeader } from '../components/PageHeader';
import { ModelPicker } from '../components/models/ModelPicker';
import { DevicePicker } from '../components/models/DevicePicker';
import { DeviceList } from '../components/models/DeviceList';
import { KeysCard } from '../components/settings/KeysCard';
import { WorkspaceCard } from '../components/settings/WorkspaceCard';
import type { Theme } from '../../../app/contract';

const THEMES: Theme[] = ['system', 'light', 'dark'];

/** What is wrong with a thread count, in words (null when fine). */
function threadsProblem(v: string): string | null {
  if (v.trim() === '') return 'a number is required (0 = automatic)';
  if (!/^\d+$/.test(v.trim())) return 'a whole number from 0 (automatic) to 256';
  const n = Number(v);
  return n > 256 ? 'at most 256' : null;
}

export function SettingsPage() {
  const settings = useAppStore((s) => s.settings);
  const error = useAppStore((s) => s.error);
  const setTheme = useAppStore((s) => s.setTheme);
  const setDeveloper = useAppStore((s) => s.setDeveloper);
  const saveSettings = useAppStore((s) => s.saveSettings);
  const [threads, setThreads] = useState('');
  // follow the stored value only when it changes: another setting saved meanwhile (the device, the default model)
  // must not overwrite what is being typed here
  const storedThreads = settings?.threads;
  useEffect(() => {
    if (storedThreads !== undefined) setThreads(String(storedThreads));
  }, [storedThreads]);
  const tp = threadsProblem(threads);
  return (
    <section className="page settings-page">
      <PageHeader title="Settings" subtitle="Stored in the workspace's settings.json (keys in the secret store)" />
      {error ? <div className="banner banner-error" role="alert" data-testid="settings-error">{error}</div> : null}
      <WorkspaceCard />
      <div className="card" data-testid="settings-models">
        <h3>Models</h3>
        <div className="settings-row">
          <label className="field">
            <span className="field-label">Default model (the Demo and a new evaluation start on it)</span>
            <ModelPicker value={settings?.defaultModel ?? 'loupe-tiny'} onChange={(v) => void saveSettings({ defaultModel: v })} testId="settings-default-model" />
          </label>
          <DevicePicker testId="settings-device" label="Device" />
          <label className="field">
            <span className="field-label">Threads (0 = automatic)</span>
            <input
              className="input settings-threads"
              inputMode="numeric"
              value={threads}
              aria-invalid={!!tp}
              onChange={(e) => setThreads(e.target.value)}
              onBlur={() => {
                if (!tp && settings && Number(threads) !== settings.threads) void saveSettings({ threads: Number(threads) });
              }}
              onKeyDown={(e) => {
                if (e.key === 'Enter') (e.target as HTMLInputElement).blur();
              }}
              data-testid="settings-threads"
            />
            {tp ? <span className="field-error" data-testid="settings-threads-error">{tp}</span> : null}
          </label>
        </div>
        <p className="muted tr-small">Device and threads apply to the next model load (Models → Load, the Demo, evaluations started here).</p>
        <h4>Devices on this machine</h4>
        <DeviceList />
      </div>
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
      <KeysCard />
      <div className="card">
        <h3>Developer</h3>
        <label className="demo-check">
          <input type="checkbox" checked={settings?.developer === true} onChange={(e) => void setDeveloper(e.target.checked)} data-testid="settings-developer" /> Show diagnostics (long tasks on the Demo page)
        </label>
      </div>
    </section>
  );
}
