import { useShallow } from 'zustand/react/shallow';
import { useDemoStore } from '../../stores/useDemoStore';
import { useDemoPairStore } from '../../stores/useDemoPairStore';
import { ModelPicker } from '../models/ModelPicker';

/**
 * Side by side's B: A is the engine form above (engine, model, dialect, prompt); B picks its own model (or checkpoint),
 * prompt and dialect on the same kind of engine. Run starts both at once on the question and media above.
 */
export function PairSetup() {
  const b = useDemoPairStore(useShallow((s) => s.b));
  const setB = useDemoPairStore((s) => s.setB);
  const run = useDemoPairStore((s) => s.run);
  const stop = useDemoPairStore((s) => s.stop);
  const live = useDemoPairStore((s) => s.starting || (['starting', 'running', 'paused'] as const).some((x) => s.cols.A.status === x || s.cols.B.status === x));
  const d = useDemoStore(useShallow((s) => ({ engineKind: s.engineKind, question: s.question, mediaCount: s.media.length, sources: s.replaySources })));
  return (
    <div className="pair-setup" data-testid="pair-setup">
      <div className="pair-setup-title"><span className="pair-tag pair-tag-a">A</span> is the engine above · <span className="pair-tag pair-tag-b">B</span> differs in:</div>
      {d.engineKind === 'local' ? (
        <label className="field">
          <span className="field-label">B model or checkpoint</span>
          <ModelPicker value={b.localModelId} onChange={(v) => setB('localModelId', v)} testId="pair-b-model" />
        </label>
      ) : d.engineKind === 'openai' ? (
        <label className="field">
          <span className="field-label">B model name (same server)</span>
          <input className="input" value={b.openaiModel} onChange={(e) => setB('openaiModel', e.target.value)} data-testid="pair-b-openai-model" />
        </label>
      ) : (
        <label className="field">
          <span className="field-label">B recording</span>
          <select className="input" value={b.replayKey} onChange={(e) => setB('replayKey', e.target.value)} data-testid="pair-b-replay">
            {d.sources.map((src) => (
              <option key={`${src.runId}::${src.qid}`} value={`${src.runId}::${src.qid}`}>{src.runName ?? src.runId} / {src.qid}</option>
            ))}
          </select>
        </label>
      )}
      <div className="demo-grid">
        <label>B dialect
          <select className="input" value={b.dialect} onChange={(e) => setB('dialect', e.target.value as typeof b.dialect)} data-testid="pair-b-dialect">
            <option value="pixel-reasoner">Pixel Reasoner</option>
            <option value="verl-tool">verl-tool</option>
            <option value="deepeyes">DeepEyes</option>
            <option value="pyvision">PyVision (code tool)</option>
            <option value="pyvision-rl">PyVision-RL (code tool)</option>
          </select>
        </label>
        <label>B prompt
          <select className="input" value={b.prompt} onChange={(e) => setB('prompt', e.target.value as typeof b.prompt)} data-testid="pair-b-prompt">
            <option value="vcot">vcot (tools)</option>
            <option value="notool">notool</option>
          </select>
        </label>
      </div>
      <div className="demo-row">
        <button type="button" className="btn btn-primary" disabled={live || !d.question.trim() || d.mediaCount === 0} onClick={() => void run()} data-testid="pair-run">Run A and B</button>
        <button type="button" className="btn" disabled={!live} onClick={() => void stop()} data-testid="pair-stop">Stop both</button>
      </div>
    </div>
  );
}
