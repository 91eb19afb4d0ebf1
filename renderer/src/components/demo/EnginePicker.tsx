import { useShallow } from 'zustand/react/shallow';
import { useDemoStore, type EngineKind } from '../../stores/useDemoStore';
import { ModelPicker } from '../models/ModelPicker';
import { DevicePicker } from '../models/DevicePicker';
import { useServedStore } from '../../stores/useServedStore';

const KINDS: Array<{ id: EngineKind; label: string }> = [
  { id: 'replay', label: 'Replay' },
  { id: 'local', label: 'Local model' },
  { id: 'openai', label: 'OpenAI-compatible' },
  { id: 'served', label: 'Served' },
];

/** What is wrong with an OpenAI-compatible server URL, in words (null when it looks right). */
export function openaiUrlProblem(url: string): string | null {
  const u = url.trim();
  if (u === '') return 'the server URL is required, e.g. http://127.0.0.1:8000/v1';
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    return 'not a URL: write it as http://HOST:PORT/v1';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'the URL must start with http:// or https://';
  return null;
}

/** Engine, dialect, prompt and settings. Replay is labelled as what it is: recorded text, real tools. */
export function EnginePicker() {
  const s = useDemoStore(useShallow((x) => ({ engineKind: x.engineKind, replayKey: x.replayKey, localModelId: x.localModelId, openaiUrl: x.openaiUrl, openaiModel: x.openaiModel, openaiKey: x.openaiKey, servedId: x.servedId, dialect: x.dialect, prompt: x.prompt, stepMode: x.stepMode })));
  const settings = useDemoStore(useShallow((x) => x.settings));
  const sources = useDemoStore(useShallow((x) => x.replaySources));
  const setField = useDemoStore((x) => x.set);
  const setSetting = useDemoStore((x) => x.setSetting);
  const useReplayMedia = useDemoStore((x) => x.useReplayMedia);
  const urlProblem = openaiUrlProblem(s.openaiUrl);
  const served = useServedStore(useShallow((x) => x.engines));
  const live = served.filter((e) => e.status === 'ready' || e.status === 'starting');

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
          <DevicePicker testId="demo-device" />
        </div>
      ) : s.engineKind === 'served' ? (
        <div className="demo-row">
          <select className="input grow" value={s.servedId} onChange={(e) => setField('servedId', e.target.value)} data-testid="served-engine" aria-label="Served engine">
            <option value="">{live.length ? 'Choose a served engine' : 'No served engine: start one on the Models page (Serve a model)'}</option>
            {live.map((e) => (
              <option key={e.id} value={e.id} disabled={e.status !== 'ready'}>
                {e.model} · {e.backend} · {e.where === 'slurm' ? `Slurm${e.jobId ? ` job ${e.jobId}` : ''}` : e.where === 'in-app' ? 'this machine (in the app)' : 'this machine'} · {e.status}
              </option>
            ))}
          </select>
        </div>
      ) : (
        <div className="demo-row">
          <label className="field grow">
            <span className="field-label">Server URL <span className="req" aria-hidden>*</span></span>
            <input className="input" value={s.openaiUrl} onChange={(e) => setField('openaiUrl', e.target.value)} placeholder="http://127.0.0.1:8000/v1" aria-required="true" aria-invalid={!!urlProblem} data-testid="openai-url" />
            {urlProblem ? <span className="field-error" data-testid="openai-url-error">{urlProblem}</span> : null}
          </label>
          <label className="field">
            <span className="field-label">Model name <span className="req" aria-hidden>*</span></span>
            <input className="input" value={s.openaiModel} onChange={(e) => setField('openaiModel', e.target.value)} placeholder="as the server serves it" aria-required="true" data-testid="openai-model" />
          </label>
          <label className="field">
            <span className="field-label">API key</span>
            <input className="input" type="password" autoComplete="off" value={s.openaiKey} onChange={(e) => setField('openaiKey', e.target.value)} placeholder="API key (if the server needs one)" aria-label="API key" data-testid="openai-key" />
          </label>
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
