import { PAGES, useAppStore, type Page } from '../stores/useAppStore';

const LABELS: Record<Page, { label: string; icon: string; hint: string }> = {
  demo: { label: 'Demo', icon: '◎', hint: 'Watch a model reason in pixel space' },
  runs: { label: 'Runs', icon: '▤', hint: 'Evaluation runs and samples' },
  annotate: { label: 'Annotate', icon: '✎', hint: 'Audit failures, keyboard first' },
  training: { label: 'Training', icon: '⟳', hint: 'Local fine-tunes and cluster jobs' },
  models: { label: 'Models', icon: '◇', hint: 'Open, validate and load models' },
  settings: { label: 'Settings', icon: '⚙', hint: 'Theme, workspace, annotator' },
};

export function NavBar() {
  const page = useAppStore((s) => s.page);
  const navigate = useAppStore((s) => s.navigate);
  return (
    <nav className="nav" aria-label="Main">
      <div className="brand" title="Loupe">
        <span className="brand-mark" aria-hidden>◉</span>
        <span className="brand-name">Loupe</span>
      </div>
      <ul>
        {PAGES.map((p) => (
          <li key={p}>
            <button type="button" className={p === page ? 'nav-item active' : 'nav-item'} aria-current={p === page ? 'page' : undefined} title={LABELS[p].hint} onClick={() => navigate(p)} data-testid={`nav-${p}`}>
              <span className="nav-icon" aria-hidden>{LABELS[p].icon}</span>
              <span className="nav-label">{LABELS[p].label}</span>
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
