/** `\boxed{…}` spans of an answer, found the way the scorer finds them (balanced braces). */
export function splitBoxed(text: string): Array<{ boxed: boolean; text: string }> {
  const out: Array<{ boxed: boolean; text: string }> = [];
  let rest = 0;
  for (let i = text.indexOf('\\boxed{'); i >= 0; i = text.indexOf('\\boxed{', rest)) {
    let depth = 1;
    let j = i + 7;
    for (; j < text.length && depth > 0; j++) {
      if (text[j] === '{') depth++;
      else if (text[j] === '}') depth--;
    }
    if (depth > 0) break; // unbalanced: leave the rest as written
    if (i > rest) out.push({ boxed: false, text: text.slice(rest, i) });
    out.push({ boxed: true, text: text.slice(i + 7, j - 1) });
    rest = j;
  }
  if (rest < text.length) out.push({ boxed: false, text: text.slice(rest) });
  return out;
}

/**
 * A model's final text with each `\boxed{…}` shown as an answer chip (what an audience reads on a slide); the raw
 * text stays one hover away.
 */
export function AnswerText({ text, testId = 'answer-chip' }: { text: string; testId?: string }) {
  const parts = splitBoxed(text.trim());
  return (
    <span className="answer-text" title={text}>
      {parts.map((p, i) =>
        p.boxed ? (
          <span key={i} className="answer-chip" data-testid={testId}>{p.text}</span>
        ) : (
          <span key={i}>{p.text}</span>
        ),
      )}
    </span>
  );
}
