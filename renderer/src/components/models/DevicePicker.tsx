import { useEffect } from 'react';
import { useModelsStore } from '../../stores/useModelsStore';
import { useAppStore } from '../../stores/useAppStore';
import type { DeviceId } from '../../../../app/contract';

/**
 * The one device picker (Models, Demo, Settings): the devices detection found on this machine; those that cannot
 * run here are listed but disabled, with their one-line reason as the option's title. The choice is the Settings
 * page's `device`, so every place that loads a local model uses the same one.
 */
export function DevicePicker({ testId, label = 'Device' }: { testId: string; label?: string }) {
  const report = useModelsStore((x) => x.devices);
  const loadDevices = useModelsStore((x) => x.loadDevices);
  const device = useAppStore((x) => x.settings?.device ?? 'cpu');
  const saveSettings = useAppStore((x) => x.saveSettings);
  useEffect(() => {
    void loadDevices();
  }, [loadDevices]);
  const listed = report?.devices ?? [];
  const current = listed.find((d) => d.id === device);
  return (
    <label className="muted device-picker">
      {label}{' '}
      <select className="input" value={device} onChange={(e) => void saveSettings({ device: e.target.value as DeviceId })} data-testid={testId} title={current?.reason ?? current?.label ?? ''}>
        {/* A device set elsewhere (a workspace from another machine) that this one does not offer still shows as chosen. */}
        {!current ? <option value={device}>{device}{report ? ' (not offered here)' : ''}</option> : null}
        {listed.map((d) => (
          <option key={d.id} value={d.id} disabled={!d.available && d.id !== device} title={d.reason ?? d.label}>
            {d.id} — {d.available ? d.label : 'unavailable'}
          </option>
        ))}
      </select>
    </label>
  );
}
