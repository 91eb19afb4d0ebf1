import { useEffect } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useModelsStore } from '../../stores/useModelsStore';

const NAMES: Record<string, string> = { cpu: 'CPU', cuda: 'CUDA', webgpu: 'WebGPU', dml: 'DirectML', coreml: 'CoreML' };

/**
 * What this build of onnxruntime-node can run on this machine (as LM Studio lists its runtimes): one line per
 * device, a one-line reason and how to get each one that is missing, onnxruntime's own words behind "details".
 */
export function DeviceList() {
  const s = useModelsStore(useShallow((x) => ({ report: x.devices, error: x.devicesError })));
  const loadDevices = useModelsStore((x) => x.loadDevices);
  useEffect(() => {
    void loadDevices();
  }, [loadDevices]);
  if (s.error) return <div className="banner banner-error" role="alert" data-testid="devices-error">Device detection failed: {s.error}</div>;
  if (!s.report) return <p className="muted" data-testid="devices-loading">Detecting devices…</p>;
  const r = s.report;
  return (
    <div data-testid="device-list">
      <ul className="device-list">
        {r.devices.map((d) => (
          <li key={d.id} className={d.available ? 'device ok' : 'device bad'} data-testid={`device-${d.id}`} data-available={d.available}>
            <span className="device-mark" aria-hidden>{d.available ? '✓' : '✗'}</span>
            <span className="device-name">{d.label}</span>
            <span className="device-why" data-testid={`device-reason-${d.id}`}>
              {d.available ? 'available' : d.reason}
              {d.howTo ? <span className="muted" data-testid={`device-howto-${d.id}`}> · How to get it: {d.howTo}</span> : null}
            </span>
            {d.details ? (
              <details className="device-details">
                <summary>details</summary>
                <pre data-testid={`device-details-${d.id}`}>{d.details}</pre>
              </details>
            ) : null}
          </li>
        ))}
      </ul>
      <p className="muted device-foot" data-testid="devices-foot">
        onnxruntime-node {r.onnxruntime} on {r.platform}
        {r.hidden.length ? ` · not offered here: ${r.hidden.map((h) => NAMES[h] ?? h).join(', ')}` : ''}{' '}
        <button type="button" className="btn btn-sm" onClick={() => void loadDevices(true)} data-testid="devices-recheck">Check again</button>
      </p>
    </div>
  );
}
