import { PageHeader } from '../components/PageHeader';
import { EmptyState } from '../components/EmptyState';

export function DemoPage() {
  return (
    <section className="page">
      <PageHeader title="Demo" subtitle="Watch a model reason in pixel space, step by step" />
      <EmptyState title="Not available in this build yet">This page is being built; the CLI (<code>npx loupe --help</code>) lists what works today.</EmptyState>
    </section>
  );
}
