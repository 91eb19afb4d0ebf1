/**
 * Scorer throughput: how many predictions per second each reference-exact scorer handles, on
 * realistic inputs (short answers and long reasoning traces). Printed as a table by `npm run bench`.
 */
import { getScorer } from '../../app/bench/scorers';
import { prBoxedTrace } from '../../app/bench/scorers/prBoxed';

const LONG = `<think>${'Let me look at the region near the top left. '.repeat(200)}</think>\n<tool_call>{"name":"crop_image_normalized","arguments":{"bbox_2d":[0.1,0.1,0.4,0.4],"target_image":1}}</tool_call><|im_end|>\n<|im_start|>user\nHere is the cropped image (Image Size: 812x560):<|im_end|>\n<|im_start|>assistant\nThe sign reads 42. \\boxed{42}<|im_end|>`;

const CASES: Array<{ scorer: string; prediction: string; answer: unknown }> = [
  { scorer: 'anls', prediction: 'the quick brown fox jumped over a lazy dog', answer: ['the quick brown fox jumps over the lazy dog', 'a fox'] },
  { scorer: 'mra.tis', prediction: '3.7 meters', answer: '3.2' },
  { scorer: 'mra.lmmsEval', prediction: 'About three hundred and twenty-one', answer: '321' },
  { scorer: 'tallyqa.count', prediction: 'I count 10 objects in the image.', answer: 10 },
  { scorer: 'mc.vstar', prediction: 'The best option is (B) a small sign.', answer: 'B' },
  { scorer: 'mc.vsi', prediction: 'B. sofa', answer: 'B' },
  { scorer: 'mc.mvbench', prediction: '(C) Under the second object from the left.', answer: 'C' },
  { scorer: 'pr.boxed', prediction: 'So the answer is \\boxed{42}<|im_end|>', answer: '42' },
  { scorer: 'pr.boxed', prediction: LONG, answer: ['42', 'forty two'] },
];

function timeIt(fn: () => void, minMs = 200): { perSec: number; iters: number } {
  let iters = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < minMs) {
    for (let i = 0; i < 50; i++) fn();
    iters += 50;
    t = performance.now();
  }
  return { perSec: Math.round((iters / (t - t0)) * 1000), iters };
}

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  for (const c of CASES) {
    const s = getScorer(c.scorer);
    const { perSec, iters } = timeIt(() => s.score(c.prediction, { answer: c.answer }));
    rows.push({ scorer: c.scorer, predictionChars: c.prediction.length, perSec, iters });
  }
  const { perSec, iters } = timeIt(() => prBoxedTrace(`<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n${LONG}`, ['42']));
  rows.push({ scorer: 'pr_boxed trace (vector shape)', predictionChars: LONG.length, perSec, iters });
  return rows;
}
