import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useTrainingStore } from '../../stores/useTrainingStore';
import { SecretStoreLabel } from '../training/SecretStoreLabel';

const NAME_RE = /^[A-Za-z0-9._:/@-]{1,200}$/;

/**
 * Keys: the one secret store (SSH keys, tokens, API keys) that connectors and jobs use. Names are listed; a value
 * goes in once and is never shown back (the contract has no call that returns one).
 */
export function KeysCard() {
  const s = useTrainingStore(useShallow((x) => ({ secrets: x.secrets })));
  const { loadConnectors, setSecret, deleteSecret } = useTrainingStore(useShallow((x) => ({ loadConnectors: x.loadConnectors, setSecret: x.setSecret, deleteSecret: x.deleteSecret })));
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  useEffect(() => {
    void loadConnectors();
  }, [loadConnectors]);

  const nameProblem = name.trim() === '' ? null : NAME_RE.test(name.trim()) ? null : 'names use 1-200 letters, digits and . _ : / @ -';
  const save = async () => {
    setProblem(null);
    setNote(null);
    const n = name.trim();
    if (!n) return setProblem('a name is required');
    if (nameProblem) return setProblem(nameProblem);
    if (value === '') return setProblem('the value is empty');
    try {
      const existed = s.secrets.includes(n);
      await setSecret(n, value);
      setValue('');
      setName('');
      setNote(`${existed ? 'Replaced' : 'Stored'} “${n}”.`);
    } catch (e) {
      setProblem(e instanceof Error ? e.message : String(e));
    }
  };
  const remove = async (n: string) => {
    if (!window.confirm(`Delete the key “${n}”? Connectors that use it stop working until it is set again.`)) return;
    setProblem(null);
    try {
      await deleteSecret(n);
      setNote(`Deleted “${n}”.`);
    } catch (e) {
      setProblem(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <div className="card" data-testid="settings-keys">
      <h3>Keys</h3>
      <SecretStoreLabel />
      {s.secrets.length === 0 ? (
        <p className="muted" data-testid="keys-empty">No keys stored yet.</p>
      ) : (
        <ul className="keys-list" data-testid="keys-list">
          {s.secrets.map((n) => (
            <li key={n} data-testid={`key-${n}`}>
              <code>{n}</code> <span className="muted">••••••• (never shown)</span>
              <button type="button" className="btn btn-sm" onClick={() => void remove(n)} data-testid={`key-delete-${n}`} aria-label={`Delete key ${n}`}>Delete</button>
            </li>
          ))}
        </ul>
      )}
      <div className="settings-row">
        <label className="field">
          <span className="field-label">Name <span className="req" aria-hidden>*</span></span>
          <input className="input" value={name} onChange={(e) => setName(e.target.value)} placeholder="ssh/cluster, slurm/jwt, openai" aria-required="true" aria-invalid={!!nameProblem} data-testid="key-name" />
          {nameProblem ? <span className="field-error" data-testid="key-name-error">{nameProblem}</span> : null}
        </label>
        <label className="field grow">
          <span className="field-label">Value <span className="req" aria-hidden>*</span> (stored encrypted; never shown again)</span>
          <textarea className="input tr-secret" rows={1} autoComplete="off" spellCheck={false} value={value} onChange={(e) => setValue(e.target.value)} aria-required="true" data-testid="key-value" />
        </label>
        <button type="button" className="btn btn-primary" onClick={() => void save()} data-testid="key-save">{s.secrets.includes(name.trim()) ? 'Replace' : 'Store'}</button>
      </div>
      {problem ? <p className="field-error" role="alert" data-testid="key-error">{problem}</p> : null}
      {note ? <p className="muted" data-testid="key-note">{note}</p> : null}
    </div>
  );
}
