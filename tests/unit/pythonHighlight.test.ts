import { describe, expect, it } from 'vitest';
import { tokenizePython } from '../../renderer/src/components/trajectory/pythonHighlight';

describe('tokenizePython (step-card colouring)', () => {
  it('classifies keywords, builtins, calls, strings, comments and numbers', () => {
    const t = tokenizePython("import numpy as np\nx = np.array(image_clue_0)  # pixels\nprint(f'{x.mean():.2f}', 3.5e2)\n");
    const of = (kind: string) => t.filter((k) => k.kind === kind).map((k) => k.text);
    expect(of('kw')).toEqual(['import', 'as']);
    expect(of('builtin')).toEqual(['print']);
    expect(of('fn')).toEqual(['array']);
    expect(of('str')).toEqual(["f'{x.mean():.2f}'"]);
    expect(of('com')).toEqual(['# pixels']);
    expect(of('num')).toEqual(['3.5e2']);
  });

  it('keeps every character: tokens join back to the source, even for broken code', () => {
    for (const src of ['doc = """\n```python\nx = 1\n```\n"""\nprint(doc)', "s = 'unclosed\nprint(1)", 'a=b\t\u3000c # é\n', '', '"""never closed']) {
      expect(tokenizePython(src).map((k) => k.text).join('')).toBe(src);
    }
    expect(tokenizePython('"""never closed')).toEqual([{ kind: 'str', text: '"""never closed' }]);
  });
});
