import { useState } from 'react';
import { useDemoStore } from '../../stores/useDemoStore';
import { fmtBox } from '../trajectory/geometry';
import { CodeEditor } from './CodeEditor';

/** Step mode: the paused call, with run / run edited / stop. */
export function PausePanel() {
  const proposal = useDemoStore((s) => s.proposal);
  const editBox = useDemoStore((s) => s.editBox);
  const editCode = useDemoStore((s) => s.editCode);
  const setField = useDemoStore((s) => s.set);
  const resume = useDemoStore((s) => s.resume);
  const [keep, setKeep] = useState(true);
  if (!proposal) return null;
  const changed =
    proposal.kind === 'code'
      ? editCode !== null && editCode !== proposal.code
      : !!editBox && !!proposal.bboxNormalized && editBox.some((v, i) => Math.abs(v - proposal.bboxNormalized![i]!) > 1e-4);
  return (
    <div className="demo-pause" role="region" aria-label="Paused before a tool call" data-testid="pause-panel">
      <div>
        <strong>Paused before turn {proposal.turnIndex + 1}'s call</strong> <span className="tv-tag">{proposal.name ?? 'unparsed'}</span>
      </div>
      {proposal.kind === 'crop' ? (
        <div className="muted">
          Model's box ({proposal.bboxMode}) {fmtBox(proposal.bboxRaw)} → normalized {fmtBox(proposal.bboxNormalized)}. Drag or resize the box on the image to change it.
          {changed ? <div data-testid="edited-box">Your box: {fmtBox(editBox ?? undefined)}</div> : null}
        </div>
      ) : proposal.kind === 'code' ? (
        <div>
          <div className="muted">The model's Python, before it runs in the sandbox. Edit it to run your version instead.</div>
          <CodeEditor value={editCode ?? ''} onChange={(v) => setField('editCode', v)} testId="code-editor" />
          {changed ? <div className="small muted" data-testid="edited-code-note">Your code runs on this branch; the model's own code runs afterwards on the Original branch, so both stay.</div> : null}
        </div>
      ) : proposal.kind === 'error' ? (
        <pre className="tv-error">{proposal.error}</pre>
      ) : (
        <div className="muted">Frame selection: runs as the model asked.</div>
      )}
      <div className="demo-row">
        {changed ? (
          <button type="button" className="btn btn-primary" onClick={() => void resume('edit', keep)} data-testid="continue-edited">{proposal.kind === 'code' ? 'Run my code' : 'Continue with my box'}</button>
        ) : null}
        <button type="button" className={changed ? 'btn' : 'btn btn-primary'} onClick={() => void resume('run', keep)} data-testid="continue-run">{changed ? 'Discard edit, run as proposed' : 'Continue'}</button>
        <button type="button" className="btn" onClick={() => void resume('stop', false)} data-testid="continue-stop">Stop here</button>
        <label className="demo-check"><input type="checkbox" checked={keep} onChange={(e) => setKeep(e.target.checked)} /> keep pausing</label>
      </div>
    </div>
  );
}
