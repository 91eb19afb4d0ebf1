import { useEffect } from 'react';
import { PageHeader } from '../components/PageHeader';
import { EmptyState } from '../components/EmptyState';
import { useRunsStore } from '../stores/useRunsStore';

export function RunsPage() {
  const runs = useRunsStore((s) => s.runs);
  const loading = useRunsStore((s) => s.loading);
  const error = useRunsStore((s) => s.error);
  const load = useRunsStore((s) => s.load);
  useEffect(() => {
    void load();
  }, [load]);
  return (
    <section className="page">
      <PageHeader title="Runs" subtitle="Every evaluation, demo and import in this workspace" />
      {error ? <div className="banner banner-error">{error}</div> : null}
      {!loading && runs.length === 0 ? (
        <EmptyState title="No runs yet">Start one with <code>npx loupe eval</code>, or run a question in the Demo.</EmptyState>
      ) : (
        <table className="table" data-testid="runs-table">
          <thead>
            <tr><th>Run</th><th>Model</th><th>Benchmark</th><th>Prompt</th><th className="num">Samples</th><th className="num">Accuracy</th></tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.id}>
                <td>{r.manifest.name ?? r.id}</td>
                <td>{r.manifest.model.id}</td>
                <td>{r.manifest.bench?.id ?? '—'}</td>
                <td>{r.manifest.prompt}</td>
                <td className="num">{r.samples}</td>
                <td className="num">{r.samples ? `${((100 * r.correct) / r.samples).toFixed(1)} %` : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
