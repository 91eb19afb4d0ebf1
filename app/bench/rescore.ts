/**
 * Re-score a finished run with another scorer, without running the model again: every sample is read
 * from the source run, scored, and written to a new run whose samples carry both scores
 * (`scores: {<original>: x, <new>: y}`) and whose manifest names the source (`extra.rescoredFrom`).
 * The source run is never modified. Judge details (model, prompt version, temperature, raw reply,
 * cache hit) go into each sample's `extra.judge`.
 */
import type { SampleRecord } from '../contract/trajectory';
import type { RunStore } from '../workspace/runStore';
import type { LlmJudgeScorer } from './scorers/llmJudge';
import type { ScoreResult, Scorer } from './scorers/types';

export type AnyScorer = Scorer | LlmJudgeScorer;

export interface RescoreOptions {
  store: RunStore;
  runId: string;
  scorer: AnyScorer;
  /** Samples scored at once (the judge engine also caps requests in flight). Default 8. */
  concurrency?: number;
  /** PyVision-RL data source for the judge prompt; default: each sample's bench. */
  dataSource?: string;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

export interface RescoreSummary {
  sourceRunId: string;
  runId: string;
  scorer: string;
  originalScorer: string;
  n: number;
  originalAccuracy: number;
  newAccuracy: number;
  /** Samples where `correct` differs between the two scorers. */
  disagreements: number;
  judgeCalls?: number;
  skippedLines: number;
}

/** The full response text a judge reads: every turn's text and observation, as the model's context had them. */
export function responseText(rec: SampleRecord): string {
  const t = rec.trajectory;
  if (!t || t.turns.length === 0) return rec.prediction;
  return t.turns.map((x) => x.text + (x.observation ?? '')).join('');
}

const isJudge = (s: AnyScorer): s is LlmJudgeScorer => 'judge' in s;

export async function rescoreRun(o: RescoreOptions): Promise<RescoreSummary> {
  const manifest = await o.store.readManifest(o.runId);
  const { records, issues } = await o.store.readSamples(o.runId);
  const originalScorer = Object.keys(manifest.scorers ?? {})[0] ?? 'original';
  const name = o.scorer.name;
  const out = await o.store.createRun({
    ...manifest,
    id: undefined,
    createdAt: undefined,
    appVersion: undefined,
    name: `${manifest.name ?? manifest.id} · ${name}`,
    scorers: { [name]: o.scorer.version, ...(manifest.scorers ?? {}) },
    extra: { ...(manifest.extra ?? {}), rescoredFrom: manifest.id, rescoredWith: { name, version: o.scorer.version } },
  });
  const results: Array<ScoreResult | undefined> = new Array(records.length);
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    while (next < records.length) {
      if (o.signal?.aborted) throw o.signal.reason ?? new Error('aborted');
      const i = next++;
      const rec = records[i]!;
      if (isJudge(o.scorer)) {
        const judgePrediction = o.scorer.version.startsWith('deepeyes-eval/') ? rec.prediction : responseText(rec);
        results[i] = await o.scorer.judge({ prediction: judgePrediction, answer: rec.answer, question: rec.question, dataSource: o.dataSource ?? rec.bench }, o.signal);
      } else {
        results[i] = o.scorer.score(rec.prediction, { answer: rec.answer, ...(rec.options ? { options: rec.options } : {}), ...(rec.extra ? { extra: rec.extra } : {}) });
      }
      o.onProgress?.(++done, records.length);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency ?? 8, records.length)) }, worker));
    let disagreements = 0;
    for (let i = 0; i < records.length; i++) {
      const rec = records[i]!;
      const r = results[i]!;
      if (r.correct !== rec.correct) disagreements++;
      await out.appendSample({
        ...rec,
        extracted: r.extracted,
        score: r.score,
        correct: r.correct,
        scores: { ...(rec.scores ?? { [originalScorer]: rec.score }), [name]: r.score },
        extra: { ...(rec.extra ?? {}), original: { scorer: originalScorer, score: rec.score, correct: rec.correct, extracted: rec.extracted }, ...(r.detail ? { judge: r.detail } : {}) },
      });
    }
    const acc = (xs: boolean[]): number => (xs.length ? xs.filter(Boolean).length / xs.length : 0);
    const summary: RescoreSummary = {
      sourceRunId: manifest.id,
      runId: out.id,
      scorer: name,
      originalScorer,
      n: records.length,
      originalAccuracy: acc(records.map((r) => r.correct)),
      newAccuracy: acc(results.map((r) => r!.correct)),
      disagreements,
      ...(isJudge(o.scorer) ? { judgeCalls: o.scorer.calls } : {}),
      skippedLines: issues.length,
    };
    await out.writeManifest({ ...out.manifest, extra: { ...(out.manifest.extra ?? {}), rescore: summary } });
    return summary;
  } finally {
    await out.close();
  }
}
