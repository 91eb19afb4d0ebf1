import { getClient } from '../../client';
import { useLabelsStore } from '../../stores/useLabelsStore';
import { TrajectoryView } from '../trajectory';
import { UnitStrip } from './UnitStrip';

const show = (v: unknown): string => (v === undefined || v === null ? '(nothing extracted)' : typeof v === 'string' ? v : JSON.stringify(v));

/** The sample under review: question and options, answer vs ground truth, and the steps with their boxes. */
export function SamplePane() {
  const row = useLabelsStore((s) => s.row);
  const sample = useLabelsStore((s) => s.sample);
  const error = useLabelsStore((s) => s.sampleError);
  const step = useLabelsStore((s) => s.step);
  const lastStep = useLabelsStore((s) => s.lastStep);
  const setStep = useLabelsStore((s) => s.setStep);
  if (!row) return null;
  const client = getClient();
  const t = sample?.trajectory;
  return (
    <div className="an-sample" data-testid="annotate-sample">
      <div className="card an-sample-head">
        <div className="an-sample-id">
          <code data-testid="current-qid">{row.qid}</code>
          <span className="muted small"> in {row.run} · {row.bench}{row.category ? ` / ${row.category}` : ''} · {row.calls} call(s)</span>
        </div>
        <p className="question" data-testid="annotate-question">{row.question}</p>
        {sample?.options?.length ? <ol className="options" type="A">{sample.options.map((o, i) => <li key={i}>{o}</li>)}</ol> : null}
        {sample ? (
          <div className="an-answer">
            <div className={sample.correct ? 'an-answer-box ok' : 'an-answer-box bad'}>
              <span className="muted small">Extracted answer</span>
              <b data-testid="annotate-extracted">{show(sample.extracted)}</b>
              {sample.correct ? <span className="pill ok">correct</span> : <span className="pill bad">wrong</span>}
            </div>
            <div className="an-answer-box">
              <span className="muted small">Ground truth</span>
              <b data-testid="annotate-truth">{show(sample.answer)}</b>
            </div>
            <div className="an-answer-meta muted small">score {sample.score} · stop {sample.stop_reason} · {sample.tool_errors} tool error(s)</div>
          </div>
        ) : null}
      </div>
      {error ? <div className="banner banner-error">{error}</div> : null}
      {sample ? <UnitStrip /> : null}
      {t ? (
        <TrajectoryView
          trajectory={t}
          mediaUrl={(id) => client.mediaUrl(id)}
          activeStep={step ?? lastStep ?? t.turns[0]?.index ?? 0}
          onStepChange={(i) => setStep(i)}
          keyboard={false}
          testId="annotate-trajectory"
        />
      ) : sample ? (
        <div className="card"><pre className="turn-text">{sample.prediction}</pre></div>
      ) : !error ? (
        <div className="muted">Loading sample…</div>
      ) : null}
    </div>
  );
}
