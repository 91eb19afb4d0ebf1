import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { PageHeader } from '../components/PageHeader';
import { getClient } from '../client';
import { selectActiveBranch, useDemoStore } from '../stores/useDemoStore';
import { TrajectoryView } from '../components/trajectory';
import { stepNumbers } from '../components/trajectory/geometry';
import { MediaPicker } from '../components/demo/MediaPicker';
import { EnginePicker } from '../components/demo/EnginePicker';
import { PausePanel } from '../components/demo/PausePanel';
import { BranchCompare } from '../components/demo/BranchCompare';
import { ExportBar } from '../components/demo/ExportBar';
import { PresentationMode } from '../components/demo/PresentationMode';
import { AnswerText } from '../components/demo/AnswerText';
import { useAppStore } from '../stores/useAppStore';
import { useDemoPairStore } from '../stores/useDemoPairStore';
import { PairSetup } from '../components/demo/PairSetup';
import { SideBySide } from '../components/demo/SideBySide';

export function DemoPage() {
  const init = useDemoStore((s) => s.init);
  const question = useDemoStore((s) => s.question);
  const setField = useDemoStore((s) => s.set);
  const status = useDemoStore((s) => s.status);
  const run = useDemoStore((s) => s.run);
  const stop = useDemoStore((s) => s.stop);
  const errors = useDemoStore(useShallow((s) => s.errors));
  const branches = useDemoStore(useShallow((s) => s.branches.map((b) => `${b.id}:${b.label}`)));
  const branch = useDemoStore((s) => selectActiveBranch(s));
  const activeBranch = useDemoStore((s) => s.activeBranch);
  const activeStep = useDemoStore((s) => s.activeStep);
  const setActiveStep = useDemoStore((s) => s.setActiveStep);
  const proposal = useDemoStore((s) => s.proposal);
  const editBox = useDemoStore((s) => s.editBox);
  const longTasks = useDemoStore(useShallow((s) => s.longTasks));
  const mediaCount = useDemoStore((s) => s.media.length);
  // Diagnostics (long tasks) are for developers; an audience sees none of it unless Settings turns it on.
  const developer = useAppStore((s) => s.settings?.developer === true);
  const [comparing, setComparing] = useState(false);
  const [presenting, setPresenting] = useState(false);
  const mediaUrl = getClient().mediaUrl;
  // Side by side: two configurations at once (components/demo/SideBySide.tsx, stores/useDemoPairStore.ts).
  const pairMode = useDemoPairStore((s) => s.enabled);
  const setPairMode = useDemoPairStore((s) => s.setEnabled);

  useEffect(() => {
    void init();
  }, [init]);

  const busy = status === 'starting' || status === 'running' || status === 'paused';
  const t = branch?.trajectory;
  const edit =
    proposal && proposal.kind === 'crop' && proposal.target && editBox && branch?.id === 'b0'
      ? { media: proposal.target, targetIndex: proposal.targetIndex ?? 0, box: editBox, step: (t ? stepNumbers(t).size : 0) + 1, onChange: (b: typeof editBox) => setField('editBox', b) }
      : null;

  return (
    <section className="page demo-page">
      <PageHeader
        title="Demo"
        subtitle="Watch a model reason in pixel space, step by step"
        actions={
          <>
            {t && t.turns.length > 0 && !busy ? (
              <button type="button" className="btn" onClick={() => setPresenting(true)} data-testid="present">Present</button>
            ) : null}
          </>
        }
      />
      {/* Talk layout: the setup in a side column that scrolls on its own, the trajectory beside it and above the fold. */}
      <div className="demo-layout">
        <div className="demo-setup demo-side card" data-testid="demo-setup">
          <MediaPicker />
          <div className="demo-ask">
            <textarea className="input demo-question" rows={2} placeholder="Ask a question about the image…" value={question} onChange={(e) => setField('question', e.target.value)} data-testid="question" />
            <EnginePicker />
            <label className="demo-check"><input type="checkbox" checked={pairMode} disabled={busy} onChange={(e) => setPairMode(e.target.checked)} data-testid="pair-mode" /> Side by side: run a second configuration (B) at once</label>
            {pairMode ? <PairSetup /> : null}
            {pairMode ? null : (
            <div className="demo-row">
              <button type="button" className="btn btn-primary" disabled={busy || !question.trim() || mediaCount === 0} onClick={() => void run()} data-testid="run">Run</button>
              <button type="button" className="btn" disabled={!busy} onClick={() => void stop()} data-testid="stop">Stop</button>
              <span className="muted" data-testid="run-status">{status === 'idle' ? '' : status}</span>
              {branch?.replay ? <span className="demo-replay-badge" title={branch.engineLabel}>REPLAY</span> : null}
              {branch?.engineLabel ? <span className="muted demo-engine-label">{branch.engineLabel}</span> : null}
              <span className="grow" />
              {developer && (longTasks.length || status === 'done') ? (
                <span className="muted" data-testid="long-tasks" title={longTasks.join(', ')}>long tasks: {longTasks.length}{longTasks.length ? ` (max ${Math.max(...longTasks)} ms)` : ''}</span>
              ) : null}
            </div>
            )}
          </div>
        </div>
        <div className="demo-main" data-testid="demo-main">
          {pairMode ? <SideBySide /> : null}
          {pairMode ? null : errors.map((e, i) => (
            <div key={i} className="banner banner-error demo-banner" role="alert" data-testid="demo-error">{e}</div>
          ))}
          {pairMode ? null : <PausePanel />}
          {!pairMode && branches.length > 1 ? (
            <div className="demo-row" data-testid="branch-tabs">
              <span className="muted">Branches:</span>
              {branches.map((b) => {
                const [id, label] = b.split(':') as [string, string];
                return (
                  <button type="button" key={id} className={id === activeBranch ? 'seg active' : 'seg'} onClick={() => setField('activeBranch', id)} data-testid={`branch-${id}`}>
                    {label}
                  </button>
                );
              })}
              <button type="button" className="btn btn-sm" onClick={() => setComparing((c) => !c)} data-testid="compare-branches">{comparing ? 'Hide comparison' : 'Compare side by side'}</button>
            </div>
          ) : null}
          {!pairMode && comparing && branches.length > 1 ? <BranchCompare onClose={() => setComparing(false)} /> : null}
          {!pairMode && t && (t.media.length > 0 || t.turns.length > 0) && !comparing ? (
            <>
              {t.finalText !== undefined ? (
                <div className="demo-answer" data-testid="answer">
                  <span className="demo-answer-label">Answer</span> <AnswerText text={t.finalText} />
                  <code className="demo-answer-raw muted" data-testid="answer-raw">{t.finalText.trim()}</code>
                </div>
              ) : null}
              <TrajectoryView trajectory={t} mediaUrl={mediaUrl} activeStep={activeStep} onStepChange={setActiveStep} streaming={branch?.streaming ?? null} paused={status === 'paused'} edit={edit} />
              {status === 'done' || status === 'error' ? <ExportBar /> : null}
            </>
          ) : null}
          {!pairMode && (!t || (t.media.length === 0 && t.turns.length === 0)) ? (
            <div className="demo-placeholder muted" data-testid="demo-placeholder">Pick an example or an image, ask a question, and press Run: the model's steps appear here.</div>
          ) : null}
        </div>
      </div>
      {presenting && t ? <PresentationMode trajectory={t} mediaUrl={mediaUrl} onClose={() => setPresenting(false)} /> : null}
    </section>
  );
}
