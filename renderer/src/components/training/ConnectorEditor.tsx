import { useState } from 'react';
import { RemoteConnectorConfigSchema, type RemoteConnectorConfig } from '../../../../app/contract';
import { LoupeCallError } from '../../../../app/contract/callError';
import { useTrainingStore } from '../../stores/useTrainingStore';

type Kind = RemoteConnectorConfig['kind'];

/** The form's fields; `required` ones are marked (*) and checked before anything is sent. */
const FIELDS: Record<Kind, Array<{ name: string; label: string; placeholder?: string; area?: boolean; required?: boolean }>> = {
  'slurm-ssh': [
    { name: 'host', label: 'host', placeholder: 'login.cluster.org', required: true },
    { name: 'port', label: 'port', placeholder: '22 (default)' },
    { name: 'user', label: 'user', required: true },
    { name: 'keySecret', label: 'key secret name', placeholder: 'ssh/cluster', required: true },
    { name: 'knownHosts', label: 'known_hosts line(s)', placeholder: 'output of ssh-keyscan -p PORT HOST', area: true, required: true },
    { name: 'remoteDir', label: 'remote job folder', placeholder: '/scratch/USER/loupe-jobs', required: true },
    { name: 'slurmConf', label: 'SLURM_CONF (optional)' },
    { name: 'partition', label: 'partition (optional)' },
  ],
  slurmrestd: [
    { name: 'baseUrl', label: 'slurmrestd URL', placeholder: 'http://head:6820', required: true },
    { name: 'user', label: 'user', required: true },
    { name: 'tokenSecret', label: 'JWT secret name', placeholder: 'slurm/jwt', required: true },
    { name: 'outputDir', label: 'output folder (on the cluster)', placeholder: '/scratch/USER/loupe-out', required: true },
    { name: 'partition', label: 'partition (optional)' },
  ],
  ray: [
    { name: 'baseUrl', label: 'Ray dashboard URL', placeholder: 'http://head:8265', required: true },
    { name: 'tokenSecret', label: 'token secret name (optional)' },
  ],
};

/** Problems by field (the first path element), each in the schema's plain words. */
function byField(issues: ReadonlyArray<{ path: string; message: string }>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of issues) {
    const field = i.path.replace(/^config\./, '').split('.')[0] || 'form';
    out[field] ??= i.message;
  }
  return out;
}
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
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);

  const submit = async (): Promise<void> => {
    setError(null);
    const raw: Record<string, unknown> = { kind, name };
    for (const f of FIELDS[kind]) {
      const x = (v[f.name] ?? '').trim();
      if (x) raw[f.name] = f.name === 'port' ? (/^\d+$/.test(x) ? Number(x) : x) : f.name === 'knownHosts' ? (v[f.name] ?? '') : x;
    }
    // Checked here first, with the contract's own schema, so each problem sits under its field before anything is sent.
    const checked = RemoteConnectorConfigSchema.safeParse(raw);
    if (!checked.success) {
      setFieldErrors(byField(checked.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }))));
      return;
    }
    setFieldErrors({});
    setBusy(true);
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
      if (e instanceof LoupeCallError && e.issues?.length) setFieldErrors(byField(e.issues));
      else setError(e instanceof Error ? e.message : String(e));
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
          <select id="tr-c-kind" className="input" data-testid="conn-kind" value={kind} onChange={(e) => {
              setKind(e.target.value as Kind);
              setFieldErrors({});
            }}>
            <option value="slurm-ssh">Slurm over SSH</option>
            <option value="slurmrestd">slurmrestd (REST + JWT)</option>
            <option value="ray">Ray Jobs</option>
          </select>
        </div>
        <div className="tr-field">
          <label className="tr-label" htmlFor="tr-c-name">name <span className="req" title="required">*</span></label>
          <input id="tr-c-name" className="input" data-testid="conn-name" value={name} placeholder="my-cluster" aria-required="true" aria-invalid={!!fieldErrors['name']} onChange={(e) => setName(e.target.value)} />
          {fieldErrors['name'] ? <span className="field-error" data-testid="conn-error-name">{fieldErrors['name']}</span> : null}
        </div>
        {FIELDS[kind].map((f) => (
          <div key={f.name} className={`tr-field${f.area ? ' tr-field-wide' : ''}`}>
            <label className="tr-label" htmlFor={`tr-c-${f.name}`}>
              {f.label}
              {f.required ? <> <span className="req" title="required">*</span></> : null}
            </label>
            {f.area ? (
              <textarea id={`tr-c-${f.name}`} className="input tr-textarea" rows={2} data-testid={`conn-${f.name}`} value={v[f.name] ?? ''} placeholder={f.placeholder} aria-required={f.required === true} aria-invalid={!!fieldErrors[f.name]} onChange={(e) => setV({ ...v, [f.name]: e.target.value })} />
            ) : (
              <input id={`tr-c-${f.name}`} className="input" data-testid={`conn-${f.name}`} value={v[f.name] ?? ''} placeholder={f.placeholder} aria-required={f.required === true} aria-invalid={!!fieldErrors[f.name]} onChange={(e) => setV({ ...v, [f.name]: e.target.value })} />
            )}
            {fieldErrors[f.name] ? <span className="field-error" data-testid={`conn-error-${f.name}`}>{fieldErrors[f.name]}</span> : null}
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
      <p className="muted tr-required-note"><span className="req">*</span> required</p>
      {Object.keys(fieldErrors).length ? <p className="tr-error" role="alert" data-testid="conn-error">Fix the marked fields: {Object.keys(fieldErrors).length === 1 ? 'one problem' : `${Object.keys(fieldErrors).length} problems`}.</p> : null}
      {error ? <p className="tr-error" role="alert" data-testid="conn-error">{error}</p> : null}
      <div className="tr-row">
        <button type="button" className="btn btn-primary btn-sm" data-testid="conn-save" disabled={busy || !name} onClick={() => void submit()}>Save connector</button>
        <button type="button" className="btn btn-sm" onClick={onDone}>Cancel</button>
      </div>
    </div>
  );
}
