/** Sweep plans: grid expansion, deterministic run ids, shards, model refs, manifest conflicts. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RunManifestSchema } from '../../../app/contract/trajectory';
import { buildManifest, expandPlan, inShard, manifestConflicts, parseModelRef, parseShard, shardOf, splitRunId, type PlannedRun, type ResolvedRun } from '../../../app/sweeps/plan';

const local = parseModelRef('models/tiny', '/x');
const resolved: ResolvedRun = {
  engine: { id: 'local:/x/models/tiny', kind: 'local', model: '/x/models/tiny' },
  benchInfo: { files: ['samples.jsonl'], format: 'loupe-bench@1', optionOrder: 'as-in-file' },
  benchRevision: 'sha256:ab',
  benchN: 10,
  n: 10,
  scorers: { 'pr.boxed': 'v1' },
  modelHash: { hash: 'sha256:cd', method: 'm' },
};

describe('plans', () => {
  it('parses model refs: folder, URL (with #model), replay', () => {
    expect(local).toEqual({ kind: 'local', path: '/x/models/tiny', name: 'tiny' });
    expect(parseModelRef('http://127.0.0.1:8000/v1/#qwen')).toEqual({ kind: 'openai', url: 'http://127.0.0.1:8000/v1', model: 'qwen', name: 'qwen' });
    expect(parseModelRef('replay:out/r.jsonl', '/w')).toEqual({ kind: 'replay', file: '/w/out/r.jsonl', name: 'replay-r' });
    expect(() => parseModelRef(' ')).toThrow(/--model is empty/);
  });

  it('crosses models × benchmarks × settings into runs with stable, unique ids', () => {
    const plan = {
      models: [local, parseModelRef('http://h:1/v1#m2')],
      benchmarks: [{ id: 'vstar', data: '/d/v' }, { id: 'loupe-synth', data: '/d/s' }],
      settings: { prompt: ['vcot', 'notool'] as Array<'vcot' | 'notool'>, temperature: [0, 0.7], seed: [0, 1] },
    };
    const runs = expandPlan(plan);
    expect(runs.length).toBe(2 * 2 * 2 * 2 * 2);
    expect(new Set(runs.map((r) => r.id)).size).toBe(runs.length);
    expect(expandPlan(plan).map((r) => r.id)).toEqual(runs.map((r) => r.id));
    expect(runs[0]!.id).toBe('tiny-vstar-vcot');
    expect(runs.find((r) => r.settings.prompt === 'notool' && r.settings.temperature === 0.7 && r.settings.seed === 1 && r.model.name === 'm2' && r.bench.id === 'loupe-synth')!.id).toBe('m2-loupe-synth-notool-t0.7-s1');
    expect(() => expandPlan({ ...plan, name: 'x' })).toThrow(/names one run, but the plan has 32/);
    expect(() => expandPlan({ models: [local], benchmarks: [{ id: 'vstar', data: '/d' }], settings: { dialect: ['nope' as never] } })).toThrow(/unknown dialect "nope"/);
  });

  it('names shards name.shard-<i>of<n> and splits them back', () => {
    const [r] = expandPlan({ models: [local], benchmarks: [{ id: 'vstar', data: '/d' }], name: 'exp1', shard: parseShard('2/4') });
    expect(r!.id).toBe('exp1.shard-2of4');
    expect(splitRunId(r!.id)).toEqual({ name: 'exp1', shard: { index: 2, count: 4 } });
    expect(splitRunId('exp1')).toEqual({ name: 'exp1' });
    expect(() => parseShard('4/4')).toThrow(/i counts from 0/);
    expect(() => parseShard('1-4')).toThrow(/must look like i\/n/);
    expect(() => expandPlan({ models: [local], benchmarks: [{ id: 'vstar', data: '/d' }], name: '../evil' })).toThrow(/not a usable run name/);
  });

  it('puts every qid in exactly one shard', () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { minLength: 1, maxLength: 50 }), fc.integer({ min: 1, max: 9 }), (qids, n) => {
        for (const q of qids) {
          const hits = Array.from({ length: n }, (_, i) => inShard(q, { index: i, count: n })).filter(Boolean).length;
          expect(hits).toBe(1);
          expect(shardOf(q, n)).toBe(shardOf(q, n));
        }
      }),
    );
  });

  it('builds a valid manifest and reports exactly the fields that conflict', () => {
    const run = expandPlan({ models: [local], benchmarks: [{ id: 'vstar', data: '/d' }], settings: { maxTokensPerTurn: 64, minPixels: 3136 } })[0] as PlannedRun;
    const m = RunManifestSchema.parse(buildManifest(run, resolved));
    expect(m).toMatchObject({ model: { id: 'tiny', path: '/x/models/tiny', hash: 'sha256:cd' }, engine: 'local', dialect: 'pixel-reasoner', prompt: 'vcot', minPixels: 3136 });
    expect(m.decoding).toMatchObject({ temperature: 0, maxTokens: 64, seed: 0 });
    expect(m.bench).toMatchObject({ id: 'vstar', revision: 'sha256:ab', n: 10, optionOrder: 'as-in-file' });
    expect(m.zoom).toEqual({ minPixels: 256 * 28 * 28, maxPixels: 5120 * 28 * 28 });
    expect(manifestConflicts(m, buildManifest(run, resolved))).toEqual([]);
    expect(manifestConflicts(m, buildManifest(run, { ...resolved, benchRevision: 'sha256:ef', modelHash: { hash: 'sha256:00', method: 'm' } }))).toEqual(['model.hash', 'bench.revision']);
  });
});
