import { useEffect } from 'react';
import { PageHeader } from '../components/PageHeader';
import { EmptyState } from '../components/EmptyState';
import { useLabelsStore } from '../stores/useLabelsStore';
import { useRunsStore } from '../stores/useRunsStore';
import { useAppStore } from '../stores/useAppStore';
import { AnnotatorBar } from '../components/annotate/AnnotatorBar';
import { QueueBar } from '../components/annotate/QueueBar';
import { SamplePane } from '../components/annotate/SamplePane';
import { TaxonomyPanel } from '../components/annotate/TaxonomyPanel';
import { TaxonomyEditor } from '../components/annotate/TaxonomyEditor';
import { ExportPanel } from '../components/annotate/ExportPanel';
import { AgreementPanel } from '../components/annotate/AgreementPanel';
import { HelpSheet } from '../components/annotate/HelpSheet';
import { runAction, useAnnotateKeys } from '../components/annotate/useAnnotateKeys';

/**
 * Annotate: audit the failures of the selected runs with a keyboard-first failure taxonomy
 * (Langfuse's queue keys, Label Studio's configurable map and step-level labels).
 */
export function AnnotatePage() {
  const init = useLabelsStore((s) => s.init);
  const configError = useLabelsStore((s) => s.configError);
  const error = useLabelsStore((s) => s.error);
  const notice = useLabelsStore((s) => s.notice);
  const setError = useLabelsStore((s) => s.setError);
  const total = useLabelsStore((s) => s.total);
  const problem = useLabelsStore((s) => s.problem);
  const runs = useRunsStore((s) => s.runs);
  const runsLoading = useRunsStore((s) => s.loading);
  const settingsLoaded = useAppStore((s) => s.settings !== null);
  useEffect(() => {
    if (settingsLoaded) void init();
  }, [init, settingsLoaded]);
  useAnnotateKeys();
  return (
    <section className="page an-page" data-testid="annotate-page">
      <PageHeader
        title="Annotate"
        subtitle="Audit failures with a keyboard-first taxonomy"
        actions={
          <>
            <AnnotatorBar />
            <button type="button" className="btn" onClick={() => runAction('help')} title="Keyboard shortcuts (?)" data-testid="open-help">Keys ?</button>
          </>
        }
      />
      {configError ? <div className="banner banner-error" role="alert">Labels are unavailable: {configError}</div> : null}
      {error ? (
        <div className="banner banner-error" role="alert" data-testid="annotate-error">
          {error} <button type="button" className="btn btn-sm" onClick={() => setError(null)}>Dismiss</button>
        </div>
      ) : null}
      {!runsLoading && runs.length === 0 ? (
        <EmptyState title="No runs to annotate">Run an evaluation (<code>npx loupe eval</code>) or import one (<code>npx loupe import</code>); its failures show up here.</EmptyState>
      ) : (
        <>
          <QueueBar />
          {notice ? <div className="banner an-notice" data-testid="annotate-notice">{notice}</div> : null}
          <div className="an-grid">
            <div className="an-main">
              {total ? <SamplePane /> : !problem ? <EmptyState title="Nothing in the queue">No sample of the ticked runs matches the queue filter.</EmptyState> : null}
            </div>
            <aside className="an-side">
              <TaxonomyPanel />
              <AgreementPanel />
              <ExportPanel />
              <TaxonomyEditor />
            </aside>
          </div>
        </>
      )}
      <HelpSheet />
    </section>
  );
}
