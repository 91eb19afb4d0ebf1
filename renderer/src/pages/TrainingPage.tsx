import { PageHeader } from '../components/PageHeader';
import { EmptyState } from '../components/EmptyState';

export function TrainingPage() {
  return (
    <section className="page">
      <PageHeader title="Training" subtitle="Local fine-tunes and cluster jobs (Slurm, Ray)" />
      <EmptyState title="Not available in this build yet">This page is being built; the CLI (<code>npx loupe --help</code>) lists what works today.</EmptyState>
    </section>
  );
}
