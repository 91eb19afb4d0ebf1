import { useAppStore } from '../stores/useAppStore';
import { DemoPage } from '../pages/DemoPage';
import { RunsPage } from '../pages/RunsPage';
import { AnnotatePage } from '../pages/AnnotatePage';
import { TrainingPage } from '../pages/TrainingPage';
import { ModelsPage } from '../pages/ModelsPage';
import { SettingsPage } from '../pages/SettingsPage';

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
      return <TrainingPage />;
    case 'models':
      return <ModelsPage />;
    case 'settings':
      return <SettingsPage />;
  }
}
