/**
 * Imported outputs in the app: a real DeepEyes V* output (tests/fixtures/importers/deepeyes_replication)
 * imported with `loupe import --images`, opened in Chromium — the image with the model's box, the padded
 * box and the crop — compared with a native V* run of the same questions, and managed from the Runs page
 * (rename, tags, delete to the trash and restore, "Locate images…" on a run imported without images).
 *
 * The V* bench images are not in the repository: the images are stand-ins of the size the recorded boxes
 * need (a grid with the box region marked), made here with sharp.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import sharp from 'sharp';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';

const SRC = path.join(ROOT, 'tests/fixtures/importers/deepeyes_replication/deepeyes');
const CATS = ['direct_attributes', 'relative_position'] as const;

interface Rec {
  image: string;
  line: string;
  box: [number, number, number, number];
}

function loupe(...args: string[]): string {
  return execFileSync(process.execPath, [path.join(ROOT, 'bin/loupe.mjs'), ...args], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A grid with the region `box` filled, so the crop is recognisable on screen. */
async function standIn(file: string, w: number, h: number, box: Rec['box']): Promise<void> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const lines: string[] = [];
  for (let x = 0; x < w; x += 100) lines.push(`<line x1="${x}" y1="0" x2="${x}" y2="${h}" stroke="#9ab" stroke-width="4"/>`);
  for (let y = 0; y < h; y += 100) lines.push(`<line x1="0" y1="${y}" x2="${w}" y2="${y}" stroke="#9ab" stroke-width="4"/>`);
  const [x1, y1, x2, y2] = box;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}"><rect width="100%" height="100%" fill="#e8eef2"/>${lines.join('')}<rect x="${x1}" y="${y1}" width="${x2 - x1}" height="${y2 - y1}" fill="#d2452b"/><circle cx="${(x1 + x2) / 2}" cy="${(y1 + y2) / 2}" r="${Math.min(x2 - x1, y2 - y1) / 4}" fill="#ffd23f"/></svg>`;
  await sharp(Buffer.from(svg)).jpeg({ quality: 85 }).toFile(file);
}

describe('Imported DeepEyes V* run in the app', () => {
  let app: AppProcess;
  let browser: Browser;
  let importedId = '';
  let bareId = '';
  let nativeId = '';
  let root = '';
  /** Samples with a stand-in image (and in the native run). */
  let n = 0;
  const picked: Record<string, Rec[]> = {};

  beforeAll(async () => {
    root = tempWorkspace('loupe-imports-e2e-');
    const ws = path.join(root, 'ws');
    const outDir = path.join(root, 'results', 'deepeyes');
    fs.mkdirSync(outDir, { recursive: true });
    const replay: string[] = [];
    for (const cat of CATS) {
      const name = `result_${cat}_deepeyes_acc.jsonl`;
      const text = gunzipSync(fs.readFileSync(path.join(SRC, `${name}.gz`))).toString('utf8');
      fs.writeFileSync(path.join(outDir, name), text);
      // Two records per category whose first box DeepEyes' rule accepts (both sides over 30 px).
      const recs: Rec[] = [];
      for (const line of text.trim().split('\n')) {
        const r = JSON.parse(line) as { image: string; pred_output: Array<{ role: string; content: unknown }> };
        const first = r.pred_output.find((m) => m.role === 'assistant')?.content;
        // One well-formed call (some replies repeat themselves into an unparseable call).
        const m = typeof first === 'string' && first.split('"name"').length === 2 ? /"bbox_2d": \[(\d+), (\d+), (\d+), (\d+)\]/.exec(first) : null;
        if (!m) continue;
        const box = m.slice(1).map(Number) as Rec['box'];
        if (box[2] - box[0] > 30 && box[3] - box[1] > 30) recs.push({ image: r.image, line, box });
        if (recs.length === 2) break;
      }
      picked[cat] = recs;
      for (const r of recs) {
        const w = Math.max(1200, r.box[2] + 300);
        const h = Math.max(900, r.box[3] + 300);
        await standIn(path.join(root, 'images', cat, r.image), w, h, r.box);
        // The same image for a bench copy of the record, as Loupe's V* adapter reads DeepEyes outputs
        // (`images/` beside them: a `direct_attributes/` folder would mean V*'s raw annotation layout).
        await standIn(path.join(root, 'bench', 'images', r.image), w, h, r.box);
        const qid = `vstar-${cat}.${r.image.replace(/\.jpg$/, '')}`;
        replay.push(JSON.stringify({ qid, turns: [`<think>Zoom in.</think>\n<tool_call>\n{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [${r.box.join(', ')}]}}\n</tool_call>`, '<think>Seen.</think>\n<answer>A</answer>'] }));
      }
      fs.writeFileSync(path.join(root, 'bench', `result_${cat}_deepeyes_acc.jsonl`), recs.map((r) => r.line).join('\n') + '\n');
    }
    fs.writeFileSync(path.join(root, 'replay.jsonl'), replay.join('\n') + '\n');

    const out = loupe('import', '--from', 'deepeyes', outDir, '--images', path.join(root, 'images'), '--workspace', ws, '--run', 'DeepEyes V* replication');
    expect(out).toContain('191 imported');
    n = picked.direct_attributes!.length + picked.relative_position!.length;
    expect(n).toBeGreaterThanOrEqual(3);
    expect(out).toContain(`images attached to ${n} of 191 sample(s)`);
    importedId = /run (\S+) "DeepEyes V\* replication"/.exec(out)![1]!;
    const bare = loupe('import', '--from', 'deepeyes', outDir, '--workspace', ws, '--run', 'DeepEyes V* no images');
    bareId = /run (\S+) "/.exec(bare)![1]!;
    loupe('eval', '--model', `replay:${path.join(root, 'replay.jsonl')}`, '--bench', 'vstar', '--data', path.join(root, 'bench'), '--dialect', 'deepeyes', '--workspace', ws, '--run', 'native-vstar', '--no-progress');
    nativeId = fs.readdirSync(path.join(ws, 'runs')).find((d) => !d.startsWith('.') && d !== importedId && d !== bareId)!;
    app = await startApp(ws);
    browser = await launchBrowser();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('a sample shows the image with the model\'s box, the padded box and the crop', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    const r = picked.direct_attributes![0]!;
    const qid = `vstar-direct_attributes.${r.image.replace(/\.jpg$/, '')}`;
    await page.goto(`${app.openUrl}#/runs/${encodeURIComponent(importedId)}/${encodeURIComponent(qid)}`);
    const viewer = page.getByTestId('sample-trajectory').getByTestId('image-viewer');
    await viewer.waitFor();
    await viewer.locator('img').first().waitFor();
    expect(await viewer.locator('img').first().evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    await viewer.getByTestId('box-step-1').waitFor();
    await expect(viewer.locator('.tv-box-pad').count()).resolves.toBeGreaterThan(0);
    const crop = page.getByTestId('crop-step-1');
    await crop.waitFor();
    const [w, h] = [r.box[2] - r.box[0], r.box[3] - r.box[1]];
    await expect(crop.getByTestId('crop-size').textContent()).resolves.toBe(`${w}×${h}`);
    expect(await crop.locator('img').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    await screenshot(page, 'imports-deepeyes-sample');
    // A sample of the same run whose image was not in the folder says so.
    const other = `vstar-direct_attributes.${JSON.parse(fs.readFileSync(path.join(root, 'results/deepeyes/result_direct_attributes_deepeyes_acc.jsonl'), 'utf8').split('\n').find((l) => l && !picked.direct_attributes!.some((p) => p.line === l))!).image.replace(/\.jpg$/, '')}`;
    await page.goto(`${app.openUrl}#/runs/${encodeURIComponent(importedId)}/${encodeURIComponent(other)}`);
    await expect(page.getByTestId('no-image').textContent()).resolves.toMatch(/Image not in the file; attach a folder/);
    expect(errors).toEqual([]);
  });

  it('compares with a native V* run of the same questions', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/runs/compare/${encodeURIComponent(importedId)}/${encodeURIComponent(nativeId)}`);
    await page.getByTestId('compare-summary').waitFor();
    await expect(page.getByTestId('compare-page').textContent()).resolves.toMatch(new RegExp(`Shared samples\\s*${n} \\(only A: ${191 - n}, only B: 0\\)`));
    await screenshot(page, 'imports-compare-native');
    expect(errors).toEqual([]);
  });

  it('the Runs page renames, tags, deletes to the trash, restores, and locates images', async () => {
    const { page, errors } = await newPage(browser, { width: 1400, height: 1000 });
    await page.goto(`${app.openUrl}#/runs`);
    await page.getByTestId(`rename-${bareId}`).click();
    await page.getByTestId('run-editor-input').fill('DeepEyes V* replication');
    await page.getByTestId('run-editor-save').click();
    await expect(page.getByTestId('run-editor-error').textContent()).resolves.toMatch(/already named/);
    await page.getByTestId('run-editor-input').fill('DeepEyes V* (to locate)');
    await page.getByTestId('run-editor-save').click();
    await page.getByTestId('runs-table').getByText('DeepEyes V* (to locate)').waitFor();

    await page.getByTestId(`tags-${bareId}`).click();
    await page.getByTestId('run-editor-input').fill('deepeyes, replication');
    await page.getByTestId('run-editor-save').click();
    await page.getByTestId('run-tag').filter({ hasText: 'replication' }).waitFor();

    await page.getByTestId(`locate-${bareId}`).click();
    await page.getByTestId('run-editor-input').fill(path.join(root, 'images'));
    await page.getByTestId('run-editor-save').click();
    await expect(page.getByTestId('run-editor-result').textContent()).resolves.toMatch(new RegExp(`attached to ${n} sample\\(s\\); ${191 - n} still without an image`));
    await screenshot(page, 'imports-runs-page');

    await page.getByTestId(`trash-${nativeId}`).click();
    // Delete asks first; Cancel keeps the run.
    await page.getByTestId(`trash-confirm-${nativeId}`).getByRole('button', { name: 'Cancel' }).click();
    await page.getByTestId(`trash-${nativeId}`).click();
    await page.getByTestId(`trash-yes-${nativeId}`).click();
    await page.getByTestId('trash-toggle').click();
    await page.getByTestId(`restore-${nativeId}`).waitFor();
    await expect(page.getByTestId(`trash-${nativeId}`).count()).resolves.toBe(0);
    await screenshot(page, 'imports-trash');
    await page.getByTestId(`restore-${nativeId}`).click();
    await page.getByTestId(`trash-${nativeId}`).waitFor();
    expect(errors).toEqual([]);
  });
});
