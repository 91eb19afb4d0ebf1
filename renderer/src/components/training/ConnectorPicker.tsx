import { useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useTrainingStore } from '../../stores/useTrainingStore';
import { ConnectorEditor } from './ConnectorEditor';
import { SecretStoreLabel } from './SecretStoreLabel';

/** Where the job runs: the built-in local connector or a configured cluster; test the connection in place. */
export function ConnectorPicker() {
  const connectors = useTrainingStore(useShallow((s) => s.connectors));
  const name = useTrainingStore((s) => s.connector);
  const setConnector = useTrainingStore((s) => s.setConnector);
  const probe = useTrainingStore((s) => s.probe[s.connector]);
  const probeConnector = useTrainingStore((s) => s.probeConnector);
  const deleteConnector = useTrainingStore((s) => s.deleteConnector);
  const [editing, setEditing] = useState(false);
  const c = connectors.find((x) => x.name === name);
  return (
    <div className="tr-section">
      <label className="tr-label" htmlFor="tr-connector">Run on</label>
      <div className="tr-row">
        <select id="tr-connector" className="input" data-testid="connector-select" value={name} onChange={(e) => setConnector(e.target.value)}>
          {connectors.map((x) => (
            <option key={x.name} value={x.name}>{x.name} ({x.kind})</option>
          ))}
        </select>
        <button type="button" className="btn btn-sm" data-testid="connector-probe" disabled={probe?.busy} onClick={() => void probeConnector(name)}>Test</button>
        <button type="button" className="btn btn-sm" data-testid="connector-add" onClick={() => setEditing((v) => !v)}>{editing ? 'Close' : 'Add connector…'}</button>
      </div>
      {c ? (
        <p className="muted tr-small">
          {c.summary}
          {c.missingSecrets.length ? <span className="tr-error"> · missing secret{c.missingSecrets.length > 1 ? 's' : ''}: {c.missingSecrets.join(', ')}</span> : null}
          {c.config ? (
            <button type="button" className="tr-link" onClick={() => void deleteConnector(c.name)}>remove</button>
          ) : null}
        </p>
      ) : null}
      {probe ? (
        <p className={probe.ok ? 'tr-ok tr-small' : probe.busy ? 'muted tr-small' : 'tr-error tr-small'} data-testid="probe-result">
          {probe.message}
        </p>
      ) : null}
      <SecretStoreLabel />
      {editing ? <ConnectorEditor onDone={() => setEditing(false)} /> : null}
    </div>
  );
}
