import { useState } from 'react';
import { LoupeCallError, type RemoteConnectorConfig } from '../../../../app/contract';
import { useTrainingStore } from '../../stores/useTrainingStore';

type Kind = RemoteConnectorConfig['kind'];

const FIELDS: Record<Kind, Array<{ name: string; label: string; placeholder?: string; area?: boolean }>> = {
  'slurm-ssh': [
    { name: 'host', label: 'host', placeholder: 'login.cluster.org' },
    { name: 'port', label: 'port', placeholder: '22' },
    { name: 'user', label: 'user' },
    { name: 'keySecret', label: 'key secret name', placeholder: 'ssh/cluster' },
    { name: 'knownHosts', label: 'known_hosts line(s)', placeholder: 'output of ssh-keyscan -p PORT HOST', area: true },
    { name: 'remoteDir', label: 'remote job folder', placeholder: '/scratch/USER/loupe-jobs' },
    { name: 'slurmConf', label: 'SLURM_CONF (optional)' },
    { name: 'partition', label: 'partition (optional)' },
  ],
  slurmrestd: [
    { name: 'baseUrl', label: 'slurmrestd URL', placeholder: 'http://head:6820' },
    { name: 'user', label: 'user' },
    { name: 'tokenSecret', label: 'JWT secret name', placeholder: 'slurm/jwt' },
    { name: 'outputDir', label: 'output folder (on the cluster)' },
    { name: 'partition', label: 'partition (optional)' },
  ],
  ray: [
    { name: 'baseUrl', label: 'Ray dashboard URL', placeholder: 'http://head:8265' },
    { name: 'tokenSecret', label: 'token secret name (optional)' },
  ],
};
const SECRET_FIELD: Record<Kind, string> = { 'slurm-ssh': 'keySecret', slurmrestd: 'tokenSecret', ray: 'tokenSecret' };

/** Add a Slurm / slurmrestd / Ray connector. The secret value goes to the encrypted store and is never shown again. */
export function ConnectorEditor({ onDone }: { onDone: () => void }) {
  const save = useTrainingStore((s) => s.saveConnector);
  const setSecret = useTrainingStore((s) => s.setSecret);
  const setConnector = useTrainingStore((s) => s.setConnector);
  const secrets = useTrainingStore((s) => s.secrets);
  const [kind, setKind] = useState<Kind>('slurm-ssh');
  const [name, setName] = useState('');
  const [v, setV] = useState<Record<string, string>>({});
  const [secret, setSecretValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    const raw: Record<string, unknown> = { kind, name };
    for (const f of FIELDS[kind]) {
      const x = (v[f.name] ?? '').trim();
      if (x) raw[f.name] = f.name === 'port' ? Number(x) : f.name === 'knownHosts' ? (v[f.name] ?? '') : x;
    }
    try {
      const secretName = String(raw[SECRET_FIELD[kind]] ?? '');
      if (secret.trim()) {
        if (!secretName) throw new Error(`give the ${SECRET_FIELD[kind]} name the secret is stored under`);
        await setSecret(secretName, secret);
      }
      await save(raw as RemoteConnectorConfig);
      setSecretValue('');
      setConnector(name);
      onDone();
    } catch (e) {
      setError(e instanceof LoupeCallError && e.issues?.length ? e.issues.map((i) => `${i.path.replace(/^config\./, '')}: ${i.message}`).join('; ') : e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  const secretName = v[SECRET_FIELD[kind]] ?? '';
  return (
    <div className="tr-editor card" data-testid="connector-editor">
      <div className="tr-form">
        <div className="tr-field">
          <label className="tr-label" htmlFor="tr-c-kind">kind</label>
          <select id="tr-c-kind" className="input" data-testid="conn-kind" value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
            <option value="slurm-ssh">Slurm over SSH</option>
            <option value="slurmrestd">slurmrestd (REST + JWT)</option>
            <option value="ray">Ray Jobs</option>
          </select>
        </div>
        <div className="tr-field">
          <label className="tr-label" htmlFor="tr-c-name">name</label>
          <input id="tr-c-name" className="input" data-testid="conn-name" value={name} placeholder="my-cluster" onChange={(e) => setName(e.target.value)} />
        </div>
        {FIELDS[kind].map((f) => (
          <div key={f.name} className={`tr-field${f.area ? ' tr-field-wide' : ''}`}>
            <label className="tr-label" htmlFor={`tr-c-${f.name}`}>{f.label}</label>
            {f.area ? (
              <textarea id={`tr-c-${f.name}`} className="input tr-textarea" rows={2} data-testid={`conn-${f.name}`} value={v[f.name] ?? ''} placeholder={f.placeholder} onChange={(e) => setV({ ...v, [f.name]: e.target.value })} />
            ) : (
              <input id={`tr-c-${f.name}`} className="input" data-testid={`conn-${f.name}`} value={v[f.name] ?? ''} placeholder={f.placeholder} onChange={(e) => setV({ ...v, [f.name]: e.target.value })} />
            )}
          </div>
        ))}
        <div className="tr-field tr-field-wide">
          <label className="tr-label" htmlFor="tr-c-secret">
            {kind === 'slurm-ssh' ? 'private key' : 'token'} → stored encrypted as “{secretName || '…'}”
            {secretName && secrets.includes(secretName) ? <span className="badge badge-ok">stored</span> : null}
          </label>
          <textarea id="tr-c-secret" className="input tr-textarea tr-secret" rows={2} autoComplete="off" spellCheck={false} data-testid="conn-secret" value={secret} placeholder={secretName && secrets.includes(secretName) ? 'leave empty to keep the stored value' : 'paste it here; it is never shown again'} onChange={(e) => setSecretValue(e.target.value)} />
        </div>
      </div>
      {error ? <p className="tr-error" role="alert" data-testid="conn-error">{error}</p> : null}
      <div className="tr-row">
        <button type="button" className="btn btn-primary btn-sm" data-testid="conn-save" disabled={busy || !name} onClick={() => void submit()}>Save connector</button>
        <button type="button" className="btn btn-sm" onClick={onDone}>Cancel</button>
      </div>
    </div>
  );
}
