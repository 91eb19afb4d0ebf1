import { useShallow } from 'zustand/react/shallow';
import { useDemoStore, type EngineKind } from '../../stores/useDemoStore';
import { ModelPicker } from '../models/ModelPicker';

const KINDS: Array<{ id: EngineKind; label: string }> = [
  { id: 'replay', label: 'Replay' },
  { id: 'local', label: 'Local model' },
  { id: 'openai', label: 'OpenAI-compatible' },
];

/** Engine, dialect, prompt and settings. Replay is labelled as what it is: recorded text, real tools. */
export function EnginePicker() {
  const s = useDemoStore(useShallow((x) => ({ engineKind: x.engineKind, replayKey: x.replayKey, localModelId: x.localModelId, openaiUrl: x.openaiUrl, openaiModel: x.openaiModel, openaiKey: x.openaiKey, dialect: x.dialect, prompt: x.prompt, stepMode: x.stepMode })));
  const settings = useDemoStore(useShallow((x) => x.settings));
  const sources = useDemoStore(useShallow((x) => x.replaySources));
  const setField = useDemoStore((x) => x.set);
  const setSetting = useDemoStore((x) => x.setSetting);
  const useReplayMedia = useDemoStore((x) => x.useReplayMedia);

  return (
    <div className="demo-engine">
      <div className="segmented" role="radiogroup" aria-label="Engine">
        {KINDS.map((k) => (
          <button type="button" key={k.id} role="radio" aria-checked={s.engineKind === k.id} className={s.engineKind === k.id ? 'seg active' : 'seg'} onClick={() => setField('engineKind', k.id)} data-testid={`engine-${k.id}`}>
            {k.label}
          </button>
        ))}
      </div>
      {s.engineKind === 'replay' ? (
        <div className="demo-replay">
          <div className="demo-replay-note" data-testid="replay-label">
            <span className="demo-replay-badge">REPLAY</span> Recorded model text, replayed turn by turn; the tools run for real on your image. The text cannot react to an edited box.
          </div>
          <div className="demo-row">
            <select className="input grow" value={s.replayKey} onChange={(e) => setField('replayKey', e.target.value)} data-testid="replay-source">
              {sources.length === 0 ? <option value="">No recorded trajectories in this workspace (import a run, or run a model first)</option> : null}
              {sources.map((src) => (
                <option key={`${src.runId}::${src.qid}`} value={`${src.runId}::${src.qid}`}>
                  {src.runName ?? src.runId} / {src.qid} — {src.question.slice(0, 60)} ({src.calls} calls, {src.dialect})
                </option>
              ))}
            </select>
            <button type="button" className="btn" onClick={useReplayMedia} disabled={!s.replayKey} data-testid="use-recorded" title="Use the recording's question, dialect and image">Use its question</button>
          </div>
        </div>
      ) : s.engineKind === 'local' ? (
        <div className="demo-row">
          <ModelPicker value={s.localModelId} onChange={(v) => setField('localModelId', v)} testId="local-model" className="grow" />
        </div>
      ) : (
        <div className="demo-row">
          <input className="input grow" value={s.openaiUrl} onChange={(e) => setField('openaiUrl', e.target.value)} placeholder="http://127.0.0.1:8000/v1" data-testid="openai-url" />
          <input className="input" value={s.openaiModel} onChange={(e) => setField('openaiModel', e.target.value)} placeholder="model name (required)" aria-required="true" data-testid="openai-model" />
          <input className="input" type="password" autoComplete="off" value={s.openaiKey} onChange={(e) => setField('openaiKey', e.target.value)} placeholder="API key (if the server needs one)" aria-label="API key" data-testid="openai-key" />
        </div>
      )}
      <div className="demo-grid">
        <label>Dialect
          <select className="input" value={s.dialect} onChange={(e) => setField('dialect', e.target.value as typeof s.dialect)} data-testid="dialect">
            <option value="pixel-reasoner">Pixel Reasoner</option>
            <option value="verl-tool">verl-tool</option>
            <option value="deepeyes">DeepEyes</option>
            <option value="pyvision">PyVision (code tool)</option>
            <option value="pyvision-rl">PyVision-RL (code tool)</option>
          </select>
        </label>
        <label>Prompt
          <select className="input" value={s.prompt} onChange={(e) => setField('prompt', e.target.value as typeof s.prompt)} data-testid="prompt">
            <option value="vcot">vcot (tools)</option>
            <option value="notool">notool</option>
          </select>
        </label>
        <label>MIN_PIXELS<input className="input" inputMode="numeric" value={settings.minPixels} onChange={(e) => setSetting('minPixels', e.target.value)} placeholder="engine default" /></label>
        <label>MAX_PIXELS<input className="input" inputMode="numeric" value={settings.maxPixels} onChange={(e) => setSetting('maxPixels', e.target.value)} placeholder="engine default" /></label>
        <label>Temperature<input className="input" inputMode="decimal" value={settings.temperature} onChange={(e) => setSetting('temperature', e.target.value)} /></label>
        <label>Max calls<input className="input" inputMode="numeric" value={settings.maxCalls} onChange={(e) => setSetting('maxCalls', e.target.value)} placeholder="dialect default" /></label>
        <label>Max tokens / turn<input className="input" inputMode="numeric" value={settings.maxTokensPerTurn} onChange={(e) => setSetting('maxTokensPerTurn', e.target.value)} placeholder="dialect default" data-testid="max-tokens" /></label>
        <label>Turn timeout (ms)<input className="input" inputMode="numeric" value={settings.turnTimeoutMs} onChange={(e) => setSetting('turnTimeoutMs', e.target.value)} data-testid="turn-timeout" /></label>
        <label className="demo-check"><input type="checkbox" checked={s.stepMode} onChange={(e) => setField('stepMode', e.target.checked)} data-testid="step-mode" /> Step mode (pause before each call)</label>
      </div>
    </div>
  );
}
