import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useAppStore } from '../../stores/useAppStore';
import { useLabelsStore } from '../../stores/useLabelsStore';

/** Who is labelling: the current annotator (from settings) and a quick switch to the others. */
export function AnnotatorBar() {
  const current = useAppStore((s) => s.settings?.annotator ?? '');
  const known = useLabelsStore(useShallow((s) => s.config?.annotators ?? []));
  const setAnnotator = useLabelsStore((s) => s.setAnnotator);
  const [draft, setDraft] = useState(current);
  useEffect(() => setDraft(current), [current]);
  const others = known.filter((a) => a !== current);
  return (
    <div className="an-annotator">
      <label htmlFor="an-annotator-input" className="muted small">Annotator</label>
      <input
        id="an-annotator-input"
        className={current ? 'input an-annotator-input' : 'input an-annotator-input input-bad'}
        value={draft}
        placeholder="your name, e.g. alice"
        onChange={(e) => setDraft(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            void setAnnotator(draft);
            e.currentTarget.blur();
          }
        }}
        spellCheck={false}
        data-testid="annotator-input"
      />
      {others.length ? (
        <span className="an-others">
          {others.map((a) => (
            <button type="button" key={a} className="chip" onClick={() => void setAnnotator(a)} title={`Switch to ${a}`}>{a}</button>
          ))}
        </span>
      ) : null}
      {!current ? <span className="muted small">Enter a name to start labelling; labels are kept per annotator.</span> : null}
    </div>
  );
}
