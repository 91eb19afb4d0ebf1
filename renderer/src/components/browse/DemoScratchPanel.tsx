/**
 * The Demo's scratch space on the Runs page: questions asked in the Demo wait here, out of the run list, its
 * statistics and Annotate's queue, until the user saves one (it becomes a run) or discards it.
 */
import { useEffect, useState } from 'react';
import type { DemoScratchRun } from '../../../../app/contract';
import { getClient } from '../../client';
import { useRunsStore } from '../../stores/useRunsStore';

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function DemoScratchPanel() {
  const load = useRunsStore((s) => s.load);
  const runs = useRunsStore((s) => s.runs);
  const [items, setItems] = useState<DemoScratchRun[]>([]);
  const [naming, setNaming] = useState<{ id: string; name: string } | null>(null);
  const [discarding, setDiscarding] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = async () => {
    try {
      setItems(await getClient().call('demo:scratch', {}));
    } catch (err) {
      setError(message(err));
    }
  };
  useEffect(() => {
    void refresh();
  }, [runs]);
  if (items.length === 0) return null;
  const act = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
      setNaming(null);
      setDiscarding(null);
      await load();
      await refresh();
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <div className="card demo-scratch" data-testid="demo-scratch">
      <h3>
        Demo <span className="muted small">· {items.length} unsaved question(s): not runs until saved, so they stay out of the statistics and Annotate</span>
      </h3>
      {error ? <div className="banner banner-error" data-testid="demo-scratch-error">{error}</div> : null}
      <table className="table compact">
        <tbody>
          {items.map((r) => (
            <tr key={r.id} data-testid="demo-scratch-row" data-run={r.id}>
              <td className="ellipsis" title={r.question}>{r.question || r.name}</td>
              <td className="muted ellipsis">{r.model}</td>
              <td className="muted demo-scratch-when">{new Date(r.createdAt).toLocaleString()}</td>
              <td className="muted nowrap" title={r.live ? 'Still running or paused in step mode: saving or discarding stops it first' : undefined}>{r.turns} turn(s){r.branches > 1 ? ` · ${r.branches} branches` : ''}{r.live ? ' · paused' : ''}</td>
              <td className="run-actions nowrap">
                {naming?.id === r.id ? (
                  <form
                    onSubmit={(e) => {
                      e.preventDefault();
                      void act(() => getClient().call('demo:save', { runId: r.id, name: naming.name }));
                    }}
                  >
                    <input className="input" autoFocus size={28} value={naming.name} onChange={(e) => setNaming({ id: r.id, name: e.target.value })} aria-label="Run name" data-testid="demo-save-name" />{' '}
                    <button type="submit" className="btn btn-sm btn-primary" disabled={!naming.name.trim()} data-testid="demo-save-confirm">Save</button>{' '}
                    <button type="button" className="btn btn-sm" onClick={() => setNaming(null)}>Cancel</button>
                  </form>
                ) : discarding === r.id ? (
                  <span>
                    Discard for good?{' '}
                    <button type="button" className="btn btn-sm btn-primary" onClick={() => void act(() => getClient().call('demo:discard', { runId: r.id }))} data-testid="demo-discard-confirm">Discard</button>{' '}
                    <button type="button" className="btn btn-sm" onClick={() => setDiscarding(null)}>Cancel</button>
                  </span>
                ) : (
                  <>
                    <button type="button" className="linkish" onClick={() => setNaming({ id: r.id, name: r.name })} data-testid={`demo-save-${r.id}`} title={r.live ? 'Stops it where it is, then keeps it as a run on this page' : 'Keep it as a run on this page'}>Save as run</button>
                    <button type="button" className="linkish" onClick={() => setDiscarding(r.id)} data-testid={`demo-discard-${r.id}`}>Discard</button>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
