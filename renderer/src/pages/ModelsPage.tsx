import { PageHeader } from '../components/PageHeader';
import { EmptyState } from '../components/EmptyState';

export function ModelsPage() {
  return (
    <section className="page">
      <PageHeader title="Models" subtitle="Open a model folder, validate it, load it" />
      <EmptyState title="Not available in this build yet">This page is being built; the CLI (<code>npx loupe --help</code>) lists what works today.</EmptyState>
    </section>
  );
}
