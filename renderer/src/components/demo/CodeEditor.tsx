import { useRef } from 'react';
import { tokenizePython } from '../trajectory/pythonHighlight';

/**
 * A Python editor with the step cards' colouring: a transparent textarea (the real input: caret, selection,
 * undo, paste) over a `<pre>` that paints the same text with the same tokenizer, scrolled in step.
 */
export function CodeEditor({ value, onChange, testId }: { value: string; onChange(v: string): void; testId?: string }) {
  const pre = useRef<HTMLPreElement>(null);
  const rows = Math.min(18, Math.max(4, value.split('\n').length + 1));
  return (
    <div className="code-editor" style={{ height: `calc(${rows} * 1.45em + 14px)` }}>
      <pre className="tv-code code-editor-paint" aria-hidden="true" ref={pre} data-testid={testId ? `${testId}-paint` : undefined}>
        {tokenizePython(value).map((t, i) => (t.kind === 'text' ? t.text : <span key={i} className={`py-${t.kind}`}>{t.text}</span>))}
        {/* a trailing newline in a textarea shows an empty last line; the pre needs a character to match it */}
        {value.endsWith('\n') ? ' ' : null}
      </pre>
      <textarea
        className="code-editor-input"
        spellCheck={false}
        autoCapitalize="off"
        autoCorrect="off"
        value={value}
        aria-label="Python code to run"
        onChange={(e) => onChange(e.target.value)}
        onScroll={(e) => {
          if (pre.current) {
            pre.current.scrollTop = e.currentTarget.scrollTop;
            pre.current.scrollLeft = e.currentTarget.scrollLeft;
          }
        }}
        onKeyDown={(e) => {
          // Tab indents (4 spaces, as the model writes) instead of leaving the editor.
          if (e.key !== 'Tab' || e.shiftKey) return;
          e.preventDefault();
          const el = e.currentTarget;
          const { selectionStart: a, selectionEnd: b } = el;
          onChange(value.slice(0, a) + '    ' + value.slice(b));
          requestAnimationFrame(() => el.setSelectionRange(a + 4, a + 4));
        }}
        data-testid={testId}
      />
    </div>
  );
}
