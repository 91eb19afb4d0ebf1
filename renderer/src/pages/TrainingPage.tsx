import { useEffect } from 'react';
import { PageHeader } from '../components/PageHeader';
import { TemplatePicker } from '../components/training/TemplatePicker';
import { ParamForm } from '../components/training/ParamForm';
import { ConnectorPicker } from '../components/training/ConnectorPicker';
import { ScriptPreview } from '../components/training/ScriptPreview';
import { JobList } from '../components/training/JobList';
import { JobView } from '../components/training/JobView';
import { useTrainingStore } from '../stores/useTrainingStore';

export function TrainingPage() {
  const init = useTrainingStore((s) => s.init);
  const error = useTrainingStore((s) => s.error);
  const submit = useTrainingStore((s) => s.submit);
  const submitting = useTrainingStore((s) => s.submitting);
  const submitError = useTrainingStore((s) => s.submitError);
  const canSubmit = useTrainingStore((s) => s.rendered !== null);
  const jobName = useTrainingStore((s) => s.jobName);
  const setJobName = useTrainingStore((s) => s.setJobName);
  const available = useTrainingStore((s) => s.templates.find((t) => t.id === s.templateId)?.available ?? true);
  useEffect(() => {
    void init();
  }, [init]);
  return (
    <section className="page tr-page" data-testid="training-page">
      <PageHeader title="Training" subtitle="Job templates for verl-tool, Pixel Reasoner (OpenRLHF), ms-swift and DeepEyes; run locally, on Slurm or on Ray" />
      {error ? <div className="banner banner-error" role="alert">{error}</div> : null}
      <div className="tr-layout">
        <div className="card tr-new" data-testid="new-job">
          <h3>New job</h3>
          <TemplatePicker />
          <ParamForm />
          <ConnectorPicker />
          <div className="tr-section">
            <span className="tr-label">Job script (what the connector receives)</span>
            <ScriptPreview />
          </div>
          <div className="tr-row">
            <input className="input tr-jobname-input" aria-label="job name" data-testid="job-name" value={jobName} placeholder="job name" onChange={(e) => setJobName(e.target.value)} />
            <button type="button" className="btn btn-primary" data-testid="submit-job" disabled={!canSubmit || submitting} onClick={() => void submit()}>
              {submitting ? 'Submitting…' : available ? 'Submit' : 'Submit anyway'}
            </button>
          </div>
          {submitError ? <p className="tr-error" role="alert" data-testid="submit-error">{submitError}</p> : null}
        </div>
        <div className="tr-right">
          <div className="card">
            <h3>Jobs</h3>
            <JobList />
          </div>
          <JobView />
        </div>
      </div>
    </section>
  );
}
