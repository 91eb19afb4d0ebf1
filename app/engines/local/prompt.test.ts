import { describe, expect, it } from 'vitest';
import { EngineError } from '../errors';
import { expandImagePads, imageRuns, reusablePrefix, videoBlocksToImages } from './prompt';
import { StopStrings, argmax, byLogitDescending, drawInOrder, sampleToken, seededRandom } from './sampling';

const P = 9; // image token id in these examples

describe('expandImagePads', () => {
  it('expands each placeholder by its own image’s count', () => {
    expect(expandImagePads('a<|image_pad|>b<|image_pad|>c', [2, 3])).toBe(`a${'<|image_pad|>'.repeat(2)}b${'<|image_pad|>'.repeat(3)}c`);
  });
  it('refuses a count mismatch, naming both numbers', () => {
    expect(() => expandImagePads('a<|image_pad|>b', [1, 1])).toThrow(/1 <\|image_pad\|> placeholder\(s\) but the request holds 2 image\(s\)/);
    expect(() => expandImagePads('a<|image_pad|>b', [1, 1])).toThrow(EngineError);
  });
});

describe('videoBlocksToImages', () => {
  it('turns a video block into one image block per frame', () => {
    const v = '<|vision_start|><|video_pad|><|vision_end|>';
    const i = '<|vision_start|><|image_pad|><|vision_end|>';
    expect(videoBlocksToImages(`x${v}y${v}`, [2, 1])).toBe(`x${i}${i}y${i}`);
    expect(() => videoBlocksToImages(`x${v}`, [])).toThrow(/1 video placeholder\(s\) but the messages hold 0 video/);
  });
});

describe('reusablePrefix', () => {
  const ids = [1, 2, P, P, P, 3, 4, P, P, 5, 6];
  it('finds image runs', () => {
    expect(imageRuns(ids, P)).toEqual([
      [2, 5],
      [7, 9],
    ]);
  });
  it('reuses the whole shared prefix when images are the same', () => {
    const next = [...ids, 7, 8];
    expect(reusablePrefix({ ids, imageKeys: ['a', 'b'], promptLength: 0 }, { ids: next, imageKeys: ['a', 'b'] }, P)).toBe(ids.length);
  });
  it('stops before an image whose identity changed, even if its tokens match', () => {
    expect(reusablePrefix({ ids, imageKeys: ['a', 'b'], promptLength: 0 }, { ids: [...ids, 7], imageKeys: ['a', 'c'] }, P)).toBe(7);
  });
  it('never splits an image run', () => {
    const next = [1, 2, P, P, P, 3, 4, P, P, P, 5];
    expect(reusablePrefix({ ids, imageKeys: ['a', 'b'], promptLength: 0 }, { ids: next, imageKeys: ['a', 'x'] }, P)).toBe(7);
  });
  it('leaves at least one token to run', () => {
    expect(reusablePrefix({ ids, imageKeys: ['a', 'b'], promptLength: 0 }, { ids, imageKeys: ['a', 'b'] }, P)).toBe(ids.length - 1);
  });
  it('with the prompt length known, reuses only a continuation past that prompt', () => {
    // the cache: a 6-token prompt (one image) and 3 generated tokens
    const cached = { ids: [1, 2, P, P, 3, 4, 7, 8, 20], imageKeys: ['a'], promptLength: 6 };
    // the next turn of the same conversation: the prompt, the generated tokens, an observation
    expect(reusablePrefix(cached, { ids: [1, 2, P, P, 3, 4, 7, 8, 20, 10, 11], imageKeys: ['a'] }, P)).toBe(9);
    // a fork that keeps one generated token
    expect(reusablePrefix(cached, { ids: [1, 2, P, P, 3, 4, 7, 5], imageKeys: ['a'] }, P)).toBe(7);
    // the same prompt again (the scene run a second time): afresh
    expect(reusablePrefix(cached, { ids: [1, 2, P, P, 3, 4], imageKeys: ['a'] }, P)).toBe(0);
    // a new question sharing the system prompt and the image: afresh
    expect(reusablePrefix(cached, { ids: [1, 2, P, P, 3, 5, 6], imageKeys: ['a'] }, P)).toBe(0);
  });
});

describe('sampling', () => {
  it('is greedy at temperature 0, first index on ties', () => {
    expect(sampleToken([0, 3, 3, 1], 0, 4, { temperature: 0, topP: 1, topK: -1 }, Math.random)).toBe(1);
    expect(argmax([5, 1, 9, 9], 1, 3)).toBe(1);
  });
  it('top-k 1 is greedy even when sampling', () => {
    const r = seededRandom(1);
    for (let i = 0; i < 20; i++) expect(sampleToken([0, 2, 1], 0, 3, { temperature: 1, topP: 1, topK: 1 }, r)).toBe(1);
  });
  it('top-p keeps only the nucleus', () => {
    const r = seededRandom(2);
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) seen.add(sampleToken([10, 9.5, 0, 0], 0, 4, { temperature: 1, topP: 0.9, topK: -1 }, r));
    expect([...seen].sort()).toEqual([0, 1]);
  });
  it('orders and samples exactly as a stable comparator sort of the ids does, for float32 rows with ties and -0', () => {
    // the plain definition: every id stably sorted by logit with a comparator, top-k's first kept, then the same draw
    const reference = (logits: Float32Array, offset: number, vocab: number, p: { temperature: number; topP: number; topK: number }, rand: () => number) => {
      const order = Array.from({ length: vocab }, (_, i) => i).sort((x, y) => logits[offset + y]! - logits[offset + x]!);
      return drawInOrder(logits, offset, order.slice(0, p.topK > 0 ? Math.min(p.topK, vocab) : vocab), p, rand);
    };
    const params = [
      { temperature: 0.7, topP: 1, topK: -1 },
      { temperature: 1, topP: 0.9, topK: -1 },
      { temperature: 0.5, topP: 0.95, topK: 50 },
      { temperature: 0.8, topP: 1, topK: 2 },
      { temperature: 1, topP: 1, topK: 700 },
    ];
    let draws = 0;
    for (let trial = 0; trial < 40; trial++) {
      const r = seededRandom(100 + trial);
      const V = 819;
      const rows = new Float32Array(2 * V);
      for (let i = 0; i < rows.length; i++) {
        const x = r();
        rows[i] = x < 0.2 ? Math.round(r() * 4) : x < 0.25 ? -0 : x < 0.3 ? 0 : (r() - 0.5) * 30;
      }
      const stable = Array.from({ length: V }, (_, i) => i).sort((x, y) => rows[V + y]! - rows[V + x]!);
      expect([...byLogitDescending(rows, V, V)]).toEqual(stable);
      expect([...byLogitDescending(rows, V, V, 60)]).toEqual(stable.slice(0, 60));
      for (const p of params) {
        for (let row = 0; row < 2; row++) {
          expect(sampleToken(rows, row * V, V, p, seededRandom(trial * 3 + row))).toBe(reference(rows, row * V, V, p, seededRandom(trial * 3 + row)));
          draws++;
        }
      }
    }
    expect(draws).toBe(400);
  });
  it('is reproducible with a seed', () => {
    const draw = (s: number) => {
      const r = seededRandom(s);
      return Array.from({ length: 10 }, () => sampleToken([1, 1, 1, 1], 0, 4, { temperature: 1, topP: 1, topK: -1 }, r));
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });
});

describe('StopStrings', () => {
  const s = new StopStrings(['</tool_call>', 'STOP']);
  it('finds the earliest stop', () => {
    expect(s.check('abc STOP x </tool_call>')).toBe(4);
    expect(s.check('nothing here')).toBe(-1);
  });
  it('holds back a possible stop prefix and an unfinished character', () => {
    expect(s.safeLength('hello </tool')).toBe(6);
    expect(s.safeLength('hello ST')).toBe(6);
    expect(s.safeLength('caf\uFFFD')).toBe(3);
    expect(s.safeLength('plain')).toBe(5);
  });
});
