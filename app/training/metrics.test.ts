import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  MetricSeries,
  MetricStreamParser,
  parseMsSwiftLine,
  parseOpenRlhfLine,
  parsePixelReasonerTqdm,
  parsePythonLiteral,
  parseVerlConsoleLine,
  parseVerlJsonlLine,
} from './metrics';

const here = path.dirname(fileURLToPath(import.meta.url));
const transcript = JSON.parse(readFileSync(path.join(here, '../../tests/fixtures/ray-jobs-2.58/transcript.json'), 'utf8')) as Array<{ name: string; response: { body: unknown } | null }>;
const rayLog = (transcript.find((e) => e.name === 'logs_succeeded')?.response?.body as { logs: string }).logs;

describe('verl console lines', () => {
  it('parses the real Ray-recorded log (ANSI + TaskRunner prefix, np.float64, inf)', () => {
    const pts = new MetricStreamParser('verl-console').push(rayLog);
    expect(pts.map((p) => p.step)).toEqual([0, 1, 2, 3, 4, 5]);
    const s3 = pts[3]?.metrics ?? {};
    expect(s3['actor/grad_norm']).toBe(Number.POSITIVE_INFINITY);
    expect(s3['critic/score/mean']).toBe(0.34375);
    expect(s3['actor/lr']).toBe(1e-6);
    expect(s3['training/global_step']).toBe(3);
    expect(pts[0]?.metrics).toEqual({ 'val-core/openai/gsm8k/reward/mean@1': 0.125 });
  });

  it('splits pairs at the last colon, keeps negatives, maps nan/True, ignores non-step lines', () => {
    const p = parseVerlConsoleLine('\u001b[36m(TaskRunner pid=77, ip=10.0.0.2)\u001b[0m step:7 - a:b/c:-0.5 - x:nan - ok:True - n:np.int64(3) - bad:abc');
    expect(p?.step).toBe(7);
    expect(p?.metrics['a:b/c']).toBe(-0.5);
    expect(Number.isNaN(p?.metrics.x)).toBe(true);
    expect(p?.metrics.ok).toBe(1);
    expect(p?.metrics.n).toBe(3);
    expect('bad' in (p?.metrics ?? {})).toBe(false);
    expect(parseVerlConsoleLine('INFO step:3 happened')).toBeNull();
    expect(parseVerlConsoleLine('stepped:3 - a:1')).toBeNull();
  });
});

describe('JSONL loggers', () => {
  it('verl FileLogger lines incl. Python NaN/Infinity', () => {
    const p = parseVerlJsonlLine('{"step": 4, "data": {"critic/score/mean": 0.5, "actor/grad_norm": Infinity, "x": NaN, "neg": -Infinity}}');
    expect(p).toMatchObject({ step: 4, source: 'verl-jsonl' });
    expect(p?.metrics['critic/score/mean']).toBe(0.5);
    expect(p?.metrics['actor/grad_norm']).toBe(Infinity);
    expect(p?.metrics.neg).toBe(-Infinity);
    expect(Number.isNaN(p?.metrics.x)).toBe(true);
    expect(parseVerlJsonlLine('{"step": "x", "data": {}}')).toBeNull();
  });

  it('ms-swift logging.jsonl: "12/500" and numeric global_step/max_steps, nested rewards, strings skipped', () => {
    const a = parseMsSwiftLine('{"loss": 0.01, "grad_norm": 1.5, "learning_rate": 1e-06, "reward": 0.42, "rewards/VsiMra/mean": 0.4, "completions/mean_length": 311.0, "global_step/max_steps": "12/500", "elapsed_time": "1m 3s"}');
    expect(a?.step).toBe(12);
    expect(a?.metrics).toEqual({ loss: 0.01, grad_norm: 1.5, learning_rate: 1e-6, reward: 0.42, 'rewards/VsiMra/mean': 0.4, 'completions/mean_length': 311 });
    expect(parseMsSwiftLine('{"loss": 0.2, "global_step/max_steps": 13}')?.step).toBe(13);
    // The console print is a Python repr.
    expect(parseMsSwiftLine("{'loss': 0.3, 'reward': 0.5, 'global_step/max_steps': '14/500'}")).toMatchObject({ step: 14, metrics: { loss: 0.3, reward: 0.5 } });
  });

  it('OpenRLHF "✨ Global step N: {dict}" lines (python literal with numpy scalars)', () => {
    const p = parseOpenRlhfLine("INFO 2026-01-05 10:00:00 ppo_trainer.py:512] ✨ Global step 9: {'policy_loss': -0.02, 'reward': np.float64(0.61), 'kl': 0.0, 'timing/generate': 12.5, 'nan_thing': nan, 'flag': True}");
    expect(p?.step).toBe(9);
    expect(p?.metrics.reward).toBe(0.61);
    expect(p?.metrics['timing/generate']).toBe(12.5);
    expect(p?.metrics.flag).toBe(1);
    expect(Number.isNaN(p?.metrics.nan_thing)).toBe(true);
    expect(() => parsePythonLiteral("{'a': 1")).toThrow(/python literal/);
  });

  it('old OpenRLHF tqdm postfix counts steps', () => {
    const s = new MetricStreamParser('openrlhf');
    const pts = s.push('Episode [1/3]: 10%|█ | 1/10 [00:10<01:30, act_loss=-0.01, reward=0.2, kl=0.001]\r2/10 [act_loss=0.02, reward=0.3, kl=0.002]\n');
    expect(pts).toHaveLength(1);
    expect(pts[0]).toMatchObject({ step: 1, metrics: { act_loss: 0.02, reward: 0.3, kl: 0.002 } });
  });
});

describe('MetricStreamParser chunking', () => {
  it('any split of the same text gives the same points', () => {
    const whole = new MetricStreamParser().push(rayLog);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: rayLog.length }), { maxLength: 12 }), (cuts) => {
        const at = [...new Set(cuts)].sort((a, b) => a - b);
        const p = new MetricStreamParser();
        const got = [];
        let prev = 0;
        for (const c of [...at, rayLog.length]) {
          got.push(...p.push(rayLog.slice(prev, c)));
          prev = c;
        }
        got.push(...p.end());
        expect(got).toEqual(whole);
      }),
      { numRuns: 40 },
    );
  });
});

describe('MetricSeries', () => {
  it('EMA is debiased, skips non-finite values, and repeated steps overwrite', () => {
    const s = new MetricSeries(0.5);
    s.add({ step: 1, metrics: { loss: 1 } });
    s.add({ step: 2, metrics: { loss: 3 } });
    s.add({ step: 3, metrics: { loss: Number.NaN } });
    s.add({ step: 2, metrics: { loss: 3 } }); // re-read of the same log line
    const v = s.get('loss');
    expect(v.steps).toEqual([1, 2, 3]);
    expect(v.smoothed[0]).toBeCloseTo(1, 12);
    expect(v.smoothed[1]).toBeCloseTo((0.5 * 0.5 + 0.5 * 3) / (1 - 0.25), 12);
    expect(v.smoothed[2]).toBe(v.smoothed[1]);
    expect(s.get('loss', 0).smoothed.slice(0, 2)).toEqual([1, 3]);
    expect(s.latest('loss')?.step).toBe(3);
    expect(() => new MetricSeries(1)).toThrow(/smoothing/);
  });
});

describe('Pixel Reasoner RL tqdm postfix', () => {
  // Written by tqdm 4.64.1's own set_postfix, as Pixel Reasoner's OpenRLHF fork calls it in ppo_train
  // (one bar per PPO epoch, `\r` refreshes): tests/fixtures/training/README.md.
  const log = readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../../tests/fixtures/training/pixel_reasoner_rl_tqdm.log'), 'utf8');

  it('one point per training step (the last epoch\'s finished bar), with policy_loss and reward', () => {
    const p = new MetricStreamParser();
    const pts = [...p.push(log), ...p.end()];
    expect(pts.map((x) => x.step)).toEqual([1, 2, 3]);
    for (const x of pts) {
      expect(x.source).toBe('openrlhf-tqdm');
      expect(Object.keys(x.metrics).sort()).toEqual(['actor_lr', 'kl', 'policy_loss', 'response_length', 'reward']);
      expect(x.metrics.actor_lr).toBe(1e-6);
      expect(x.metrics.response_length).toBe(430); // the last micro-batch of the bar
      expect(Math.abs(x.metrics.policy_loss!)).toBeLessThan(0.05);
    }
    // reward = 0.3 + 0.1·step + noise < 0.05 in the fixture's generator
    expect(pts.map((x) => Math.floor(x.metrics.reward! * 10))).toEqual([3, 4, 5]);
  });

  it('reads tqdm\'s short numbers (`-.0262`, `1e-6`) and ignores bars that are not finished', () => {
    expect(parsePixelReasonerTqdm('\rTrain epoch [2/2]: 100%|##| 4/4 [00:01<00:00, 3.1it/s, policy_loss=-.0262, actor_lr=1e-6, reward=.5]')).toEqual({ metrics: { policy_loss: -0.0262, actor_lr: 1e-6, reward: 0.5 }, endsStep: true });
    expect(parsePixelReasonerTqdm('\rTrain epoch [1/2]: 100%|##| 4/4 [00:01<00:00, 3.1it/s, policy_loss=0.1]')?.endsStep).toBe(false);
    expect(parsePixelReasonerTqdm('\rTrain epoch [2/2]:  50%|#  | 2/4 [00:01<00:01, 3.1it/s, policy_loss=0.1]')?.endsStep).toBe(false);
    expect(parsePixelReasonerTqdm('step:3 - actor/pg_loss:0.1')).toBeNull();
    // OpenRLHF forks that print `short_status` (`pg`, `rm`, …) give the long names.
    expect(parsePixelReasonerTqdm('\rTrain epoch [1/1]: 100%|##| 8/8 [00:09<00:00, 1.1s/it, pg=0.012, rm=0.4, ret=0.1, glen=512, tlen=1.4e+3, kl=0, act_lr=1e-6]')).toEqual({
      metrics: { policy_loss: 0.012, reward: 0.4, return: 0.1, response_length: 512, total_length: 1400, kl: 0, actor_lr: 1e-6 },
      endsStep: true,
    });
  });
});
