/**
 * The local engines' token sampler (app/engines/local/sampling.ts) per token, on float32 logit rows of loupe-tiny's
 * vocabulary (819) and Qwen2.5-VL's (151 936), for the usual settings, against the plain definition it must equal
 * (a comparator sort of every id by logit, then the same top-k cut and draw): the same token every draw (checked here),
 * and what the one-number-per-id typed sort and the top-k selection save. Interleaved, median of the rounds.
 */
import { byLogitDescending, drawInOrder, sampleToken, seededRandom, type SamplingParams } from '../../app/engines/local/sampling';

/** The definition, as the sampler was written before it sorted typed keys: every id sorted with a comparator. */
function plain(logits: Float32Array, vocab: number, p: SamplingParams, rand: () => number): number {
  const order = Array.from({ length: vocab }, (_, i) => i).sort((x, y) => logits[y]! - logits[x]!);
  return drawInOrder(logits, 0, order.slice(0, p.topK > 0 ? Math.min(p.topK, vocab) : vocab), p, rand);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  const settings: Array<[string, SamplingParams]> = [
    ['temperature 0.7', { temperature: 0.7, topP: 1, topK: -1 }],
    ['temperature 1, top-p 0.9', { temperature: 1, topP: 0.9, topK: -1 }],
    ['temperature 0.5, top-k 50, top-p 0.95', { temperature: 0.5, topP: 0.95, topK: 50 }],
    ['Qwen2.5-VL generation_config (top-k 1)', { temperature: 0.1, topP: 0.001, topK: 1 }],
  ];
  for (const vocab of [819, 151_936]) {
    const r = seededRandom(vocab);
    const logits = Float32Array.from({ length: vocab }, () => (r() - 0.5) * 30);
    void byLogitDescending(logits, 0, vocab); // warm
    for (const [name, p] of settings) {
      const rounds = vocab > 10_000 ? 9 : 51;
      const a: number[] = [];
      const b: number[] = [];
      let same = 0;
      for (let i = 0; i < rounds; i++) {
        let t0 = performance.now();
        const x = plain(logits, vocab, p, seededRandom(i));
        a.push(performance.now() - t0);
        t0 = performance.now();
        const y = sampleToken(logits, 0, vocab, p, seededRandom(i));
        b.push(performance.now() - t0);
        if (x === y) same++;
      }
      rows.push({
        vocab,
        setting: name,
        plain_ms: +median(a).toFixed(3),
        sampler_ms: +median(b).toFixed(3),
        plain_over_sampler: `${(median(a) / median(b)).toFixed(1)}×`,
        same_token: `${same} of ${rounds}`,
      });
    }
  }
  return rows;
}
