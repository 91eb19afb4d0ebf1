/**
 * An error in one line: the first sentence-sized line as the headline, anything longer (onnxruntime's assertion
 * text, a stack of causes) behind a "details" disclosure, so a long message never crushes the table around it.
 */
export function ErrorLine({ text, details, className, testId }: { text: string; details?: string | undefined; className?: string; testId: string }) {
  const lines = text.trim().split('\n');
  const first = lines[0] ?? '';
  const head = first.length > 200 ? `${first.slice(0, 197)}…` : first;
  const rest = [first.length > 200 ? first : '', lines.slice(1).join('\n'), details ?? ''].filter((x) => x.trim() !== '').join('\n\n');
  return (
    <div className={`error-line ${className ?? ''}`} role="alert" data-testid={testId}>
      <span className="error-line-head" data-testid={`${testId}-line`} title={head !== first ? first : undefined}>{head}</span>
      {rest ? (
        <details className="error-line-details">
          <summary>details</summary>
          <pre data-testid={`${testId}-details`}>{rest}</pre>
        </details>
      ) : null}
    </div>
  );
}
