import { lazy, Suspense } from 'react';
import { useAppStore } from '../stores/useAppStore';
import { DemoPage } from '../pages/DemoPage';
import { RunsPage } from '../pages/RunsPage';
import { AnnotatePage } from '../pages/AnnotatePage';
import { ModelsPage } from '../pages/ModelsPage';
import { SettingsPage } from '../pages/SettingsPage';

// The Training page is the only one that needs the contract's zod schemas at run time (its connector form checks
// a connector as the core will); loaded on first visit, so every other page starts without building them.
const TrainingPage = lazy(() => import('../pages/TrainingPage').then((m) => ({ default: m.TrainingPage })));

export function PageView() {
  const page = useAppStore((s) => s.page);
  switch (page) {
    case 'demo':
      return <DemoPage />;
    case 'runs':
      return <RunsPage />;
    case 'annotate':
      return <AnnotatePage />;
    case 'training':
      return (
        <Suspense fallback={<div className="page muted">Loading…</div>}>
          <TrainingPage />
        </Suspense>
      );
    case 'models':
      return <ModelsPage />;
    case 'settings':
      return <SettingsPage />;
  }
}
