import { useEffect, useState } from 'react';
import type { TaxonomyLabel } from '../../../../app/contract';
import { useLabelsStore } from '../../stores/useLabelsStore';
import { slugLabelId } from './slug';

/**
 * Edit the workspace taxonomy: rename, set keys, archive (kept so old labels still have a name), add.
 * Ids never change once created: label events refer to them.
 */
export function TaxonomyEditor() {
  const taxonomy = useLabelsStore((s) => s.config?.taxonomy);
  const saveTaxonomy = useLabelsStore((s) => s.saveTaxonomy);
  const [open, setOpen] = useState(false);
  const [draft, setDraft] = useState<TaxonomyLabel[]>([]);
  const [newName, setNewName] = useState('');
  const [newKey, setNewKey] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const save = async () => {
    const ok = await saveTaxonomy(draft);
    setProblem(ok ? null : useLabelsStore.getState().error);
  };
  useEffect(() => {
    if (taxonomy) setDraft(taxonomy.map((l) => ({ ...l })));
  }, [taxonomy, open]);
  if (!taxonomy) return null;
  const update = (i: number, patch: Partial<TaxonomyLabel>) => setDraft((d) => d.map((l, j) => (j === i ? { ...l, ...patch } : l)));
  const known = new Set(taxonomy.map((l) => l.id));
  const newId = slugLabelId(newName);
  const add = () => {
    if (!newId || draft.some((l) => l.id === newId)) return;
    setDraft((d) => [...d, { id: newId, name: newName.trim(), description: '', ...(newKey.trim() ? { key: newKey.trim() } : {}) }]);
    setNewName('');
    setNewKey('');
  };
  const dirty = JSON.stringify(draft) !== JSON.stringify(taxonomy);
  return (
    <div className="card an-editor">
      <div className="an-tax-head">
        <h3>Taxonomy</h3>
        <button type="button" className="btn btn-sm" onClick={() => setOpen(!open)} aria-expanded={open} data-testid="edit-taxonomy">{open ? 'Close editor' : 'Edit'}</button>
      </div>
      {open ? (
        <>
          <table className="table compact an-editor-table">
            <thead><tr><th>Name / id</th><th>Key</th><th title="Archived labels are hidden but keep their name for old labels">Archive</th></tr></thead>
            <tbody>
              {draft.map((l, i) => (
                <tr key={l.id} className={l.archived ? 'muted' : undefined}>
                  <td>
                    <input className="input" value={l.name} onChange={(e) => update(i, { name: e.target.value })} aria-label={`name of ${l.id}`} data-testid={`tax-name-${l.id}`} />
                    <code className="small muted">{l.id}</code>{known.has(l.id) ? null : <span className="badge">new</span>}
                  </td>
                  <td><input className="input an-key-input" value={l.key ?? ''} onChange={(e) => { const key = e.target.value; setDraft((d) => d.map((x, j) => { if (j !== i) return x; const { key: _k, ...rest } = x; void _k; return key ? { ...rest, key } : rest; })); }} aria-label={`key of ${l.id}`} data-testid={`tax-key-${l.id}`} /></td>
                  <td><input type="checkbox" checked={!!l.archived} onChange={(e) => update(i, { archived: e.target.checked })} aria-label={`archive ${l.id}`} data-testid={`tax-archived-${l.id}`} /></td>
                </tr>
              ))}
              <tr>
                <td>
                  <input className="input" value={newName} placeholder="new label name" onChange={(e) => setNewName(e.target.value)} onKeyDown={(e) => { if (e.key === 'Enter') add(); }} data-testid="tax-new-name" />
                  <code className="small muted">{newId || 'id from the name'}</code>
                </td>
                <td><input className="input an-key-input" value={newKey} placeholder="key" onChange={(e) => setNewKey(e.target.value)} data-testid="tax-new-key" /></td>
                <td><button type="button" className="btn btn-sm" onClick={add} disabled={!newId || draft.some((l) => l.id === newId)} data-testid="tax-add">Add</button></td>
              </tr>
            </tbody>
          </table>
          {problem ? <pre className="error-text small an-tax-problem" role="alert" data-testid="tax-error">{problem}</pre> : null}
          <div className="an-editor-actions">
            <button type="button" className="btn btn-primary btn-sm" disabled={!dirty} onClick={() => void save()} data-testid="tax-save">Save taxonomy</button>
            <button type="button" className="btn btn-sm" disabled={!dirty} onClick={() => setDraft(taxonomy.map((l) => ({ ...l })))}>Revert</button>
            <span className="muted small">Keys: one character or a chord like <code>Shift+x</code>; saved to this workspace’s labels/taxonomy.json.</span>
          </div>
        </>
      ) : (
        <p className="muted small">{taxonomy.filter((l) => !l.archived).length} labels{taxonomy.some((l) => l.archived) ? `, ${taxonomy.filter((l) => l.archived).length} archived` : ''}.</p>
      )}
    </div>
  );
}
