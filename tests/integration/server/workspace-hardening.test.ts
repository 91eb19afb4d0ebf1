/**
 * Workspace files a client cannot turn against the core: one bad line in an append-only file is reported and
 * skipped (never fatal), a file a request names stays inside the workspace, and a run's manifest keeps no
 * password from a model URL. Real core, real files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore, type Core } from '../../../main/core';
import type { TrainingJob } from '../../../app/contract';
import { RunStore } from '../../../app/workspace/runStore';
import { LabelStore } from '../../../app/labels/store';
import { EncryptedFileSecretStore, openSecretStore } from '../../../app/connectors/secrets';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-wshard-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const job = (key: string, over: Partial<TrainingJob> = {}): TrainingJob => ({
  key,
  id: key.split('/')[1] as string,
  name: 'j',
  connector: 'nowhere',
  connectorKind: 'ray',
  templateId: 'custom-script',
  templateTitle: 'Custom bash script',
  params: {},
  metricsFormat: 'auto',
  state: 'succeeded',
  rawState: 'SUCCEEDED',
  submittedAt: '2026-11-27T10:00:00.000Z',
  checkpoints: [],
  ...over,
});

describe('append-only files: a bad line is reported and skipped', () => {
  let core: Core;
  let ws: string;
  beforeAll(async () => {
    ws = path.join(tmp, 'jobs-ws');
    fs.mkdirSync(path.join(ws, 'training'), { recursive: true });
    const lines = [
      JSON.stringify(job('nowhere/a')),
      // A state written by another version, and a record missing most of its fields.
      JSON.stringify({ ...job('nowhere/b'), state: 'preempted-v9' }),
      JSON.stringify({ key: 'nowhere/c' }),
      'not json at all',
      JSON.stringify(job('nowhere/d', { submittedAt: '2026-11-27T11:00:00.000Z' })),
    ];
    fs.writeFileSync(path.join(ws, 'training', 'jobs.jsonl'), `${lines.join('\n')}\n`);
    core = await createCore({ workspace: ws, transport: 'browser' });
  });
  afterAll(() => core.dispose());

  it('training:jobs answers with the good records and an issue per bad line, on every call', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await core.dispatch('training:jobs', {});
      expect(r.ok, JSON.stringify(r)).toBe(true);
      const res = (r as { result: { jobs: TrainingJob[]; issues?: string[] } }).result;
      expect(res.jobs.map((j) => j.key)).toEqual(['nowhere/d', 'nowhere/a']);
      expect(res.issues).toHaveLength(3);
      expect(res.issues?.[0]).toMatch(/jobs\.jsonl:2: .*state/);
      expect(res.issues?.[2]).toMatch(/jobs\.jsonl:4: not valid JSON/);
    }
  });

  it('a bad record of a known job leaves its last good record in place', async () => {
    const r = await core.dispatch('training:open', { key: 'nowhere/a' });
    // The connector does not exist, so following fails; the record itself must read.
    expect(r.ok, JSON.stringify(r)).toBe(true);
  });

  it('label files: a bad line is an issue with its line number, the rest reads', async () => {
    const store = new LabelStore(path.join(tmp, 'labels-ws'));
    await store.append({ who: 'ann', run: 'r1', qid: 'q1', step: null, label: 'ok', op: 'add' });
    fs.appendFileSync(store.fileOf('ann'), '{"v":1,"who":"ann"}\n');
    await store.append({ who: 'ann', run: 'r1', qid: 'q2', step: null, label: 'ok', op: 'add' });
    const read = await store.read('ann');
    expect(read.events.map((e) => e.qid)).toEqual(['q1', 'q2']);
    expect(read.issues).toEqual([expect.objectContaining({ line: 2, file: store.fileOf('ann') })]);
  });
});

describe('files a request names stay inside the workspace', () => {
  let core: Core;
  let ws: string;
  beforeAll(async () => {
    ws = path.join(tmp, 'export-ws');
    core = await createCore({ workspace: ws, transport: 'browser' });
    // An imported lmms-eval run whose doc_id climbs out of the folder.
    const runs = new RunStore(path.join(ws, 'runs'));
    const run = await runs.createRun({ id: 'imported-1', kind: 'import', model: { id: 'm' }, engine: 'import', dialect: 'pixel-reasoner', prompt: 'vcot' });
    const media = { id: `${'a'.repeat(64)}.png`, width: 10, height: 10 };
    await run.appendSample({
      qid: '../../../../escaped',
      bench: 'b',
      question: 'q',
      answer: 'a',
      prediction: 'a',
      score: 1,
      correct: true,
      stop_reason: 'answer',
      calls: 0,
      tool_errors: 0,
      trajectory: { dialect: 'pixel-reasoner', prompt: 'vcot', media: [media], originals: [media], isVideo: false, question: 'q', turns: [{ index: 0, text: 'a' }], stopReason: 'answer', finalText: 'a' },
    });
    await run.close();
  });
  afterAll(() => core.dispose());

  it('demo:export of a sample id holding ../ writes inside <workspace>/exports', async () => {
    const r = await core.dispatch('demo:export', { runId: 'imported-1', format: 'html' });
    expect(r.ok, JSON.stringify(r)).toBe(true);
    const file = (r as { result: { path: string } }).result.path;
    expect(path.relative(path.join(ws, 'exports'), file)).not.toMatch(/^\.\.|\//);
    expect(fs.existsSync(file)).toBe(true);
    expect(fs.existsSync(path.join(tmp, 'escaped.html'))).toBe(false);
    expect(fs.readdirSync(tmp).filter((f) => f.includes('escaped'))).toEqual([]);
  });

  it('a run id or media id that climbs out is refused with a clear error', async () => {
    for (const [method, payload] of [
      ['demo:export', { runId: '../../x', format: 'html' }],
      ['samples:get', { runId: '../runs', qid: 'q' }],
    ] as const) {
      const r = await core.dispatch(method, payload);
      expect(r.ok, `${method} ${JSON.stringify(payload)}`).toBe(false);
    }
    expect(core.mediaPath('../settings.json')).toBeNull();
  });
});

describe('run manifests keep no password from a model URL', () => {
  it('https://user:pass@host/… is stored as https://user:***@host/…', async () => {
    const runs = new RunStore(path.join(tmp, 'manifest-ws', 'runs'));
    const run = await runs.createRun({
      id: 'url-1',
      model: { id: 'https://alice:s3cret-Pa55@llm.example:8000/v1#qwen', path: 'http://bob:hunter22@10.0.0.1/v1' },
      engine: 'openai',
      dialect: 'pixel-reasoner',
      prompt: 'vcot',
      extra: { endpoint: 'https://carol:p%40ss@h.example/v1' },
    });
    await run.close();
    const text = fs.readFileSync(path.join(tmp, 'manifest-ws', 'runs', 'url-1', 'manifest.json'), 'utf8');
    expect(text).not.toContain('s3cret-Pa55');
    expect(text).not.toContain('hunter22');
    expect(text).not.toContain('p%40ss');
    const m = JSON.parse(text) as { model: { id: string; path: string } };
    expect(m.model.id).toBe('https://alice:***@llm.example:8000/v1#qwen');
    expect(m.model.path).toBe('http://bob:***@10.0.0.1/v1');
  });
});

describe('the secret key lives outside the workspace', () => {
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));

  it('a secret set through the core leaves no key in the workspace; a copied workspace does not decrypt', async () => {
    const ws = path.join(tmp, 'secret-ws');
    const configDir = path.join(tmp, 'config-a');
    const core = await createCore({ workspace: ws, transport: 'browser', configDir });
    const set = await core.dispatch('training:secretSet', { name: 'wandb', value: 'wandb-value-0123456789' });
    expect(set.ok, JSON.stringify(set)).toBe(true);
    await core.dispose();
    const files = walk(ws);
    expect(files.filter((f) => f.endsWith('.key') || f.includes('.private'))).toEqual([]);
    expect(files.some((f) => fs.readFileSync(f).includes('wandb-value-0123456789'))).toBe(false);
    const keys = walk(path.join(configDir, 'keys'));
    expect(keys).toHaveLength(1);
    expect(fs.statSync(keys[0] as string).mode & 0o777).toBe(0o600);
    // Same machine, same config: reads back.
    const again = await openSecretStore({ dir: path.join(ws, 'training'), keyDir: path.join(configDir, 'keys') });
    expect(await again.store.get('wandb')).toBe('wandb-value-0123456789');
    // The workspace copied elsewhere (another machine: another config dir): a clear error, not the secret.
    const copy = path.join(tmp, 'secret-ws-copy');
    fs.cpSync(ws, copy, { recursive: true });
    const other = await openSecretStore({ dir: path.join(copy, 'training'), keyDir: path.join(tmp, 'config-b', 'keys') });
    await expect(other.store.get('wandb')).rejects.toThrow(/is not on this machine/);
  });

  it('a key an older version kept in the workspace is moved out, and its secrets still read', async () => {
    const ws = path.join(tmp, 'legacy-ws');
    const legacyKey = path.join(ws, '.private', 'secret.key');
    const old = new EncryptedFileSecretStore({ file: path.join(ws, 'training', 'secrets.enc.json'), keyFile: legacyKey });
    await old.set('hf', 'hf_legacy_token_value');
    expect(fs.existsSync(legacyKey)).toBe(true);
    const configDir = path.join(tmp, 'config-legacy');
    const core = await createCore({ workspace: ws, transport: 'browser', configDir });
    const list = await core.dispatch('training:connectors', {});
    expect(list.ok).toBe(true);
    await core.dispose();
    const moved = await openSecretStore({ dir: path.join(ws, 'training'), keyDir: path.join(configDir, 'keys'), legacyKeyFile: legacyKey });
    expect(await moved.store.get('hf')).toBe('hf_legacy_token_value');
    expect(fs.existsSync(legacyKey)).toBe(false);
    expect(fs.existsSync(path.join(ws, '.private'))).toBe(false);
    expect(walk(path.join(configDir, 'keys'))).toHaveLength(1);
  });
});

describe('samples.jsonl through the browse index', () => {
  it('a corrupt middle line and a torn tail are counted and skipped; every good record opens at its own offset', async () => {
    const ws = path.join(tmp, 'browse-ws');
    const runs = new RunStore(path.join(ws, 'runs'));
    const run = await runs.createRun({ id: 'r-1', model: { id: 'm' }, engine: 'scripted', dialect: 'pixel-reasoner', prompt: 'vcot' });
    const rec = (qid: string) => ({ qid, bench: 'b', question: `question ${qid}`, answer: 'a', prediction: `pred ${qid}`, score: 1, correct: true, stop_reason: 'answer' as const, calls: 0, tool_errors: 0 });
    await run.appendSample(rec('q1'));
    await run.close();
    const file = path.join(ws, 'runs', 'r-1', 'samples.jsonl');
    fs.appendFileSync(file, '{"qid": "broken", "bench"\r\n');
    fs.appendFileSync(file, `${JSON.stringify(rec('q2'))}\r\n${JSON.stringify(rec('q3'))}\n{"qid":"q4","ben`);
    const core = await createCore({ workspace: ws, transport: 'browser' });
    try {
      const list = await core.dispatch('runs:list', {});
      expect(list.ok, JSON.stringify(list)).toBe(true);
      expect((list as { result: Array<{ id: string; samples: number; unreadable: number }> }).result).toEqual([expect.objectContaining({ id: 'r-1', samples: 3, unreadable: 2 })]);
      for (const q of ['q1', 'q2', 'q3']) {
        const got = await core.dispatch('samples:get', { runId: 'r-1', qid: q });
        expect(got.ok, JSON.stringify(got)).toBe(true);
        expect((got as { result: { prediction: string } }).result.prediction).toBe(`pred ${q}`);
      }
    } finally {
      await core.dispose();
    }
  });
});
