/**
 * Run hygiene on the Runs page: rename, tag, locate images, delete to the trash, restore, empty the
 * trash. Editors open inline under the run's row (no `window.prompt`: Electron does not implement it).
 */
import { useEffect, useState } from 'react';
import type { RunSummary, TrashedRun } from '../../../../app/contract';
import { getClient } from '../../client';
import { useRunsStore } from '../../stores/useRunsStore';

type Editing = { runId: string; kind: 'rename' | 'tags' | 'images' } | null;

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The per-row buttons. */
export function RunRowActions({ run, onEdit }: { run: RunSummary; onEdit: (e: Editing) => void }) {
  const load = useRunsStore((s) => s.load);
  const [busy, setBusy] = useState(false);
  const [confirm, setConfirm] = useState(false);
  if (!run.manifest) return null;
  const trash = async () => {
    setBusy(true);
    try {
      await getClient().call('runs:trash', { runId: run.id });
      await load();
    } finally {
      setBusy(false);
      setConfirm(false);
    }
  };
  if (confirm) {
    return (
      <span className="run-actions" data-testid={`trash-confirm-${run.id}`}>
        Move “{run.manifest.name ?? run.id}” to the trash?{' '}
        <button type="button" className="btn btn-sm btn-primary" disabled={busy} onClick={() => void trash()} data-testid={`trash-yes-${run.id}`}>Delete</button>{' '}
        <button type="button" className="btn btn-sm" onClick={() => setConfirm(false)}>Cancel</button>
      </span>
    );
  }
  return (
    <span className="run-actions">
      <button type="button" className="linkish" onClick={() => onEdit({ runId: run.id, kind: 'rename' })} data-testid={`rename-${run.id}`}>Rename</button>
      <button type="button" className="linkish" onClick={() => onEdit({ runId: run.id, kind: 'tags' })} data-testid={`tags-${run.id}`}>Tags</button>
      {run.manifest.kind === 'import' ? (
        <button type="button" className="linkish" onClick={() => onEdit({ runId: run.id, kind: 'images' })} data-testid={`locate-${run.id}`} title="Attach the benchmark's images from a folder, by the file names the records give">
          Locate images…
        </button>
      ) : null}
      <button type="button" className="linkish" disabled={busy} onClick={() => setConfirm(true)} data-testid={`trash-${run.id}`} title="Move to the trash (restore it from the trash below)">Delete</button>
    </span>
  );
}

/** The inline editor for one run (rename, tags, or the image folder). */
export function RunEditor({ run, editing, onDone }: { run: RunSummary; editing: NonNullable<Editing>; onDone: () => void }) {
  const load = useRunsStore((s) => s.load);
  const initial = editing.kind === 'rename' ? (run.manifest?.name ?? run.id) : editing.kind === 'tags' ? (run.manifest?.tags ?? []).join(', ') : '';
  const [value, setValue] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      if (editing.kind === 'rename') await getClient().call('runs:rename', { runId: run.id, name: value });
      else if (editing.kind === 'tags') await getClient().call('runs:tag', { runId: run.id, tags: value.split(',').map((t) => t.trim()).filter(Boolean) });
      else {
        const r = await getClient().call('runs:locateImages', { runId: run.id, folder: value });
        setResult(`Images attached to ${r.attached} sample(s); ${r.missing} still without an image (${r.folderImages} image file(s) in the folder).`);
        await load();
        return;
      }
      await load();
      onDone();
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };
  const label = editing.kind === 'rename' ? 'New name' : editing.kind === 'tags' ? 'Tags (comma-separated)' : 'Folder with the images';
  return (
    <form
      className="run-editor"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
      data-testid="run-editor"
    >
      <label>
        {label}{' '}
        <input autoFocus value={value} onChange={(e) => setValue(e.target.value)} placeholder={editing.kind === 'images' ? '/path/to/benchmark/images' : undefined} size={editing.kind === 'images' ? 48 : 32} data-testid="run-editor-input" />
      </label>{' '}
      <button type="submit" className="btn btn-sm btn-primary" disabled={busy || !value.trim()} data-testid="run-editor-save">{editing.kind === 'images' ? 'Attach' : 'Save'}</button>{' '}
      <button type="button" className="btn btn-sm" onClick={onDone}>{result ? 'Close' : 'Cancel'}</button>
      {error ? <div className="banner banner-error" data-testid="run-editor-error">{error}</div> : null}
      {result ? <div className="muted" data-testid="run-editor-result">{result}</div> : null}
    </form>
  );
}

/** Deleted runs: restore one, or empty the trash after a second click. */
export function TrashPanel() {
  const runs = useRunsStore((s) => s.runs);
  const load = useRunsStore((s) => s.load);
  const [trash, setTrash] = useState<TrashedRun[]>([]);
  const [open, setOpen] = useState(false);
  const [confirm, setConfirm] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const refresh = async () => {
    try {
      setTrash(await getClient().call('runs:trashList', {}));
    } catch (err) {
      setError(message(err));
    }
  };
  // The trash changes whenever the run list does (a delete reloads the runs).
  useEffect(() => {
    void refresh();
  }, [runs]);
  if (trash.length === 0 && !open) return null;
  const act = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
      await load();
      await refresh();
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <div className="card trash-panel" data-testid="trash-panel">
      <button type="button" className="linkish" onClick={() => setOpen(!open)} data-testid="trash-toggle">
        Trash ({trash.length}) {open ? '▾' : '▸'}
      </button>
      {open ? (
        <>
          {error ? <div className="banner banner-error">{error}</div> : null}
          <ul className="trash-list">
            {trash.map((r) => (
              <li key={r.id}>
                <span title={r.id}>{r.manifest?.name ?? r.id}</span> <span className="muted">{r.manifest?.bench?.id ?? ''}</span>{' '}
                <button type="button" className="btn btn-sm" onClick={() => void act(() => getClient().call('runs:restore', { runId: r.id }))} data-testid={`restore-${r.id}`}>Restore</button>
              </li>
            ))}
          </ul>
          {trash.length > 0 ? (
            confirm ? (
              <span>
                Delete {trash.length} run(s) for good?{' '}
                <button type="button" className="btn btn-sm btn-primary" onClick={() => void act(async () => { await getClient().call('runs:emptyTrash', {}); setConfirm(false); })} data-testid="empty-trash-confirm">Delete for good</button>{' '}
                <button type="button" className="btn btn-sm" onClick={() => setConfirm(false)}>Cancel</button>
              </span>
            ) : (
              <button type="button" className="btn btn-sm" onClick={() => setConfirm(true)} data-testid="empty-trash">Empty trash</button>
            )
          ) : (
            <span className="muted">The trash is empty.</span>
          )}
        </>
      ) : null}
    </div>
  );
}

export type { Editing };
