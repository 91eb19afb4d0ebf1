import { useEffect, useRef, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { LOG_CAP, useTrainingStore } from '../../stores/useTrainingStore';

/** The live log, capped at LOG_CAP lines; follows the end unless the user scrolled up. */
export function LogView() {
  const lines = useTrainingStore(useShallow((s) => s.view?.lines ?? []));
  const truncated = useTrainingStore((s) => s.view?.truncated ?? false);
  const ref = useRef<HTMLPreElement>(null);
  const [stick, setStick] = useState(true);
  useEffect(() => {
    const el = ref.current;
    if (el && stick) el.scrollTop = el.scrollHeight;
  }, [lines, stick]);
  return (
    <div className="tr-log-wrap">
      <div className="tr-row tr-small muted">
        <span data-testid="log-lines">{lines.length} lines</span>
        {truncated ? <span>· earlier lines dropped (showing the last {LOG_CAP}; the backend keeps the full log)</span> : null}
        <span className="grow" />
        <label>
          <input type="checkbox" checked={stick} onChange={(e) => setStick(e.target.checked)} /> follow
        </label>
      </div>
      <pre
        ref={ref}
        className="tr-log"
        data-testid="job-log"
        onScroll={(e) => {
          const el = e.currentTarget;
          const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
          if (atEnd !== stick) setStick(atEnd);
        }}
      >
        {lines.join('\n')}
      </pre>
    </div>
  );
}
