import { useEffect, useState } from 'react';
import { PageHeader } from '../components/PageHeader';
import { EmptyState } from '../components/EmptyState';
import { useRunsStore } from '../stores/useRunsStore';
import { useAppStore } from '../stores/useAppStore';
import { RunList } from '../components/browse/RunList';
import { StatsPanel } from '../components/browse/StatsPanel';
import { QueryBar } from '../components/browse/QueryBar';
import { SampleTable } from '../components/browse/SampleTable';
import { NewEvalPanel } from '../components/browse/NewEvalPanel';
import { TrashPanel } from '../components/browse/RunAdmin';
import { DemoScratchPanel } from '../components/browse/DemoScratchPanel';
import { ImportPanel } from '../components/browse/ImportPanel';
import { SamplePage } from './SamplePage';
import { ComparePage } from './ComparePage';

export function RunsPage() {
  const route = useAppStore((s) => s.route);
  if (route[0] === 'compare' && route[1] && route[2]) return <ComparePage a={route[1]} b={route[2]} {...(route[3] ? { pick: route[3] } : {})} />;
  if (route[0] && route[1]) return <SamplePage runId={route[0]} qid={route[1]} />;
  return <RunsOverview />;
}

function RunsOverview() {
  const runs = useRunsStore((s) => s.runs);
  const loading = useRunsStore((s) => s.loading);
  const error = useRunsStore((s) => s.error);
  const load = useRunsStore((s) => s.load);
  const [importing, setImporting] = useState(false);
  useEffect(() => {
    void load();
  }, [load]);
  return (
    <section className="page runs-page">
      <PageHeader title="Runs" subtitle="Evaluations, demos and imports in this workspace" actions={
          <>
            <button type="button" className="btn" onClick={() => setImporting(!importing)} data-testid="import-open" title="Bring in Pixel Reasoner, verl-tool, DeepEyes or lmms-eval outputs">Import…</button>{' '}
            <button type="button" className="btn" onClick={() => void load()}>Reload</button>
          </>
        } />
      {error ? <div className="banner banner-error">{error}</div> : null}
      {importing ? <ImportPanel onClose={() => setImporting(false)} /> : null}
      <NewEvalPanel />
      <DemoScratchPanel />
      {!loading && runs.length === 0 ? (
        <>
          <EmptyState title="No runs yet">Start one with <code>npx loupe eval</code>, import one (Import… above, or <code>npx loupe import</code>), or save a Demo question.</EmptyState>
          <TrashPanel />
        </>
      ) : (
        <>
          <RunList />
          <TrashPanel />
          <StatsPanel />
          <QueryBar />
          <SampleTable />
        </>
      )}
    </section>
  );
}
