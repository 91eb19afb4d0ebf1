import { PageHeader } from '../components/PageHeader';
import { EmptyState } from '../components/EmptyState';

export function AnnotatePage() {
  return (
    <section className="page">
      <PageHeader title="Annotate" subtitle="Audit failures with a keyboard-first taxonomy" />
      <EmptyState title="Not available in this build yet">This page is being built; the CLI (<code>npx loupe --help</code>) lists what works today.</EmptyState>
    </section>
  );
}
