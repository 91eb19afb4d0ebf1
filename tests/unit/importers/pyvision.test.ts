/**
 * `loupe import --from pyvision`: PyVision `main.py`'s saved `messages` (fixtures built from the writer's documented
 * shape; see tests/fixtures/importers/README.md): question from the prompt, code turns with their printed text,
 * figures and errors, the answer; images decoded into the workspace. Hostile inputs are refused per file with the
 * field named, and the other files still import.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importRun, workspaceWriter } from '../../../app/importers';
import { Workspace } from '../../../app/workspace';

const FIX = path.resolve(__dirname, '../../fixtures/importers/pyvision');
let tmp: string;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'loupe-pv-import-'));
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

describe('PyVision messages import', () => {
  it('reads both fixture episodes: question, code, stdout, figures, the error turn and the answer', async () => {
    const run = await importRun('pyvision', FIX, { name: 'pv', model: 'gpt-4.1' });
    expect(run.issues).toEqual([]);
    expect(run.stats).toEqual({ files: 2, records: 2, imported: 2, skipped: 0 });
    const glass = run.samples.find((s) => s.qid === 'messages_glass')!;
    expect(glass.question).toBe('What is the object in the picture?');
    expect(glass.extracted).toBe('a glass');
    expect(glass.stop_reason).toBe('answer');
    const t = glass.trajectory!;
    expect(t.media).toHaveLength(1);
    expect(t.media[0]).toMatchObject({ width: 192, height: 83 });
    expect(t.turns).toHaveLength(2);
    const c = t.turns[0]!.call!;
    expect(c.name).toBe('python');
    expect((c.arguments as { code: string }).code).toBe("w, h = image_clue_0.size\nprint('size', w, h)\nplt.imshow(image_clue_0.crop((w // 4, 0, 3 * w // 4, h)))\nplt.axis('off')\nplt.show()");
    expect((c.arguments as { stdout: string }).stdout).toBe('size 192 83\n');
    expect(c.produced).toHaveLength(1);
    expect(c.produced[0]!.id).toMatch(/\.png$/); // labelled image/jpeg by PV, PNG bytes
    expect(t.turns[0]!.observation).toBe('<interpreter>\nText Result:\nsize 192 83\n\nImage Result:\n<image_clue_1><image></image_clue_1></interpreter>\n');
    const bright = run.samples.find((s) => s.qid === 'messages_brightness')!;
    const [bad, ok] = bright.trajectory!.turns;
    expect(bad!.call!.error).toBe("NameError: name 'crop' is not defined");
    expect((ok!.call!.arguments as { stdout: string }).stdout).toBe('mean 87.9\n');
    expect(ok!.call!.produced).toEqual([]);
    expect(bright).toMatchObject({ calls: 2, tool_errors: 1, extracted: 'dark' });
    expect(run.manifest).toMatchObject({ dialect: 'pyvision', model: { id: 'gpt-4.1' } });
    // Stored: every image (question + figure) lands in the workspace's media store.
    const { runId } = await workspaceWriter(tmp).write(run);
    const ws = new Workspace(tmp);
    const { records } = await ws.runs.readSamples(runId);
    for (const id of [...records[0]!.trajectory!.media, ...records.flatMap((r) => r.trajectory!.turns.flatMap((x) => x.call?.produced ?? []))].map((m) => m.id)) {
      await expect(fsp.stat(path.join(tmp, 'media', id))).resolves.toBeTruthy();
    }
  });

  it('hostile files: not a list, a bad role, a non-image data URL, truncated JSON — each reported, the good file imported', async () => {
    const dir = path.join(tmp, 'hostile');
    await fsp.mkdir(dir);
    await fsp.copyFile(path.join(FIX, 'messages_brightness.json'), path.join(dir, 'good.json'));
    await fsp.writeFile(path.join(dir, 'object.json'), '{"messages": 1}');
    await fsp.writeFile(path.join(dir, 'role.json'), JSON.stringify([{ role: 'tool; rm -rf /', content: 'x' }]));
    const first = JSON.parse(await fsp.readFile(path.join(FIX, 'messages_glass.json'), 'utf8')) as Array<{ content: Array<{ type: string; image_url?: { url: string } }> }>;
    first[0]!.content[1]!.image_url!.url = 'data:image/jpeg;base64,' + Buffer.from('#!/bin/sh\necho hi\n').toString('base64');
    await fsp.writeFile(path.join(dir, 'script.json'), JSON.stringify(first));
    await fsp.writeFile(path.join(dir, 'trunc.json'), (await fsp.readFile(path.join(FIX, 'messages_glass.json'), 'utf8')).slice(0, 500));
    await fsp.writeFile(path.join(dir, '..%2f..%2fevil.json'), JSON.stringify([]));
    const run = await importRun('pyvision', dir);
    const by = (f: string) => run.issues.filter((i) => i.file === f).map((i) => `${i.field ?? ''}: ${i.message}`);
    expect(by('object.json')).toEqual(['(file): expected a JSON array of chat messages (what PyVision main.py saves)']);
    expect(by('role.json')).toEqual(['[0].role: expected "user" or "assistant", got "tool; rm -rf /"']);
    expect(by('script.json')).toEqual(['[0].content[1]: image data is neither PNG nor JPEG; left out']);
    expect(by('trunc.json')[0]).toMatch(/not valid JSON/);
    expect(by('..%2f..%2fevil.json')).toEqual(['[0]: the first message must be the user prompt']);
    expect(run.samples.map((s) => s.qid).sort()).toEqual(['good', 'script']);
    expect(run.samples.find((s) => s.qid === 'script')!.trajectory!.media).toEqual([]);
  });
});
