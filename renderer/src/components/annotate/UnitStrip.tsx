import { useLabelsStore, stepsOf } from '../../stores/useLabelsStore';
import { useAppStore } from '../../stores/useAppStore';

/** The units of the sample: the whole sample, then each step; counts show where labels are. */
export function UnitStrip() {
  const sample = useLabelsStore((s) => s.sample);
  const labels = useLabelsStore((s) => s.labels);
  const step = useLabelsStore((s) => s.step);
  const setStep = useLabelsStore((s) => s.setStep);
  const who = useAppStore((s) => s.settings?.annotator ?? '');
  const steps = stepsOf(sample);
  const count = (st: number | null) => {
    const here = labels.filter((l) => l.step === st);
    return { mine: here.filter((l) => l.who === who).length, others: here.filter((l) => l.who !== who).length };
  };
  const turnName = (i: number) => {
    const t = sample?.trajectory?.turns.find((x) => x.index === i);
    return t?.call ? (t.call.name ?? 'call') : 'answer';
  };
  const chip = (st: number | null, text: string, title: string) => {
    const c = count(st);
    return (
      <button
        type="button"
        key={st ?? 'sample'}
        className={st === step ? 'an-unit active' : 'an-unit'}
        aria-pressed={st === step}
        onClick={() => setStep(st)}
        title={title}
        data-testid={st === null ? 'unit-sample' : `unit-step-${st}`}
      >
        {text}
        {c.mine ? <span className="an-unit-count">{c.mine}</span> : null}
        {c.others ? <span className="an-unit-count muted-count">{c.others}</span> : null}
      </button>
    );
  };
  return (
    <div className="an-units" role="toolbar" aria-label="Label the sample or one step" data-testid="unit-strip">
      {chip(null, 'Whole sample', 'Label the whole sample')}
      {steps.map((i) => chip(i, `Step ${i + 1} · ${turnName(i)}`, `Label step ${i + 1} only`))}
      <span className="muted small an-unit-now" data-testid="current-unit">{step === null ? 'labelling the whole sample' : `labelling step ${step + 1}`}</span>
    </div>
  );
}
