/**
 * Annotate, end to end in browser mode: an annotator labels 20 failed samples with the keyboard only
 * (sample and step labels, a note, undo), the app is killed with SIGKILL and restarted on the same
 * workspace, the labels are still there, the JSONL/CSV exports hold exactly what was labelled, and a
 * second annotator's labels on the same samples give a Cohen's kappa that the page shows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newPage, ROOT, screenshot, startApp, tempWorkspace, type AppProcess } from './harness';
import { ACTION_DESCRIPTIONS } from '../../app/contract/keymap';
import { CURRENT_COLUMNS, parseCsv } from '../../app/labels/export';
import { DEFAULT_TAXONOMY } from '../../app/labels/taxonomy';

function genRun(workspace: string, n: number, seed: number): void {
  execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/gen-large-run.ts'), '--workspace', workspace, '--n', String(n), '--seed', String(seed)], { cwd: ROOT, stdio: 'pipe' });
}

/** The default taxonomy's keys: label id → key. */
const KEY: Record<string, string> = Object.fromEntries(DEFAULT_TAXONOMY.labels.map((l) => [l.id, l.key!]));
const CYCLE = ['wrong_region', 'right_region_misread', 'no_zoom', 'reasoning_error'] as const;

interface Expected {
  qid: string;
  step: number | null;
  label: string;
  note?: string;
}

async function currentQid(page: Page): Promise<string> {
  return ((await page.getByTestId('current-qid').textContent()) ?? '').trim();
}
async function waitQidChange(page: Page, from: string): Promise<string> {
  await page.waitForFunction((q) => {
    const el = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }).document.querySelector('[data-testid=current-qid]');
    return !!el && (el.textContent ?? '').trim() !== q;
  }, from);
  return currentQid(page);
}
async function progressText(page: Page): Promise<string> {
  return ((await page.getByTestId('progress').textContent()) ?? '').trim();
}
async function waitProgress(page: Page, re: RegExp): Promise<string> {
  await page.waitForFunction((src) => {
    const el = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }).document.querySelector('[data-testid=progress]');
    return new RegExp(src).test((el?.textContent ?? '').trim());
  }, re.source);
  return progressText(page);
}
const pressed = (page: Page, id: string, on: boolean) => page.locator(`[data-testid=label-${id}][aria-pressed=${on}]`).waitFor();

/** Cohen's kappa written out independently of app/labels (two raters, one category per unit). */
function cohen(a: string[], b: string[]): number {
  const n = a.length;
  const cats = [...new Set([...a, ...b])];
  const po = a.filter((x, i) => x === b[i]).length / n;
  const pe = cats.reduce((s, c) => s + (a.filter((x) => x === c).length / n) * (b.filter((x) => x === c).length / n), 0);
  return (po - pe) / (1 - pe);
}

const key = (r: { qid: string; step: number | null; label: string; note?: string }) => `${r.qid}|${r.step ?? ''}|${r.label}|${r.note ?? ''}`;

describe('Annotate: keyboard labelling, crash safety, export, agreement', () => {
  let app: AppProcess;
  let browser: Browser;
  let workspace: string;
  beforeAll(async () => {
    workspace = tempWorkspace('loupe-annotate-');
    genRun(workspace, 120, 7);
    app = await startApp(workspace);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('labels 20 samples by keyboard, survives SIGKILL, exports exactly, and shows Cohen kappa for two annotators', async () => {
    let { page, errors } = await newPage(browser, { width: 1440, height: 1000 });
    await page.goto(`${app.openUrl}#/annotate`);
    await page.getByTestId('annotate-page').waitFor();
    await page.getByTestId('annotator-input').fill('alice');
    await page.getByTestId('annotator-input').press('Enter');
    const start = await waitProgress(page, /^0 \/ \d+ labelled by alice$/);
    const total = Number(/\/ (\d+)/.exec(start)![1]);
    expect(total).toBeGreaterThanOrEqual(25);
    await page.getByTestId('current-qid').waitFor();
    await expect(page.getByTestId('queue-position').textContent()).resolves.toBe(`1 of ${total}`);

    // ---- alice labels 20 samples with the keyboard only ----
    const expected: Expected[] = [];
    const primary = new Map<string, string>(); // qid → alice's first label on the sample (any unit)
    const order: string[] = [];
    let qid = await currentQid(page);
    let stepShot = false;
    for (let i = 0; i < 20; i++) {
      order.push(qid);
      const label = CYCLE[i % CYCLE.length]!;
      const hasStep = (await page.getByTestId('unit-step-0').count()) > 0;
      if (i % 5 === 2 && hasStep) {
        // A step-level label on the first step, then back to the sample for a sample label.
        await page.keyboard.press('ArrowDown');
        await page.locator('[data-testid=unit-step-0][aria-pressed=true]').waitFor();
        await page.keyboard.press(KEY.tool_format_error!);
        await pressed(page, 'tool_format_error', true);
        expected.push({ qid, step: 0, label: 'tool_format_error' });
        primary.set(qid, 'tool_format_error');
        if (!stepShot) {
          await screenshot(page, 'annotate-step-label');
          stepShot = true;
        }
        await page.keyboard.press('s');
        await page.locator('[data-testid=unit-sample][aria-pressed=true]').waitFor();
        await pressed(page, 'tool_format_error', false); // the sample unit has its own labels
      }
      await page.keyboard.press(KEY[label]!);
      await pressed(page, label, true);
      const e: Expected = { qid, step: null, label };
      if (!primary.has(qid)) primary.set(qid, label);
      if (i === 3) {
        // Notes: `n` opens the box; digits and j/k typed there must not toggle labels or move.
        const note = 'crop misses the sign; 1 2 3 j k';
        await page.keyboard.press('n');
        await page.getByTestId('note-input').waitFor();
        await page.keyboard.type(note);
        await page.keyboard.press('Enter');
        await page.getByTestId(`note-${label}`).waitFor();
        await expect(page.getByTestId(`note-${label}`).textContent()).resolves.toBe(`“${note}”`);
        expect(await currentQid(page)).toBe(qid);
        for (const other of ['wrong_region', 'right_region_misread', 'no_zoom'].filter((x) => x !== label)) await pressed(page, other, false);
        e.note = note;
      }
      expected.push(e);
      await page.keyboard.press('Control+Enter');
      qid = await waitQidChange(page, qid);
    }
    await waitProgress(page, new RegExp(`^20 / ${total} labelled by alice$`));

    // Undo: a label added and undone leaves the sample unlabelled.
    await page.keyboard.press(KEY.wrong_region!);
    await pressed(page, 'wrong_region', true);
    await waitProgress(page, /^21 \//);
    await page.keyboard.press('Control+z');
    await pressed(page, 'wrong_region', false);
    await waitProgress(page, /^20 \//);

    // `/` focuses the taxonomy search; typed keys go into it, not to the shortcuts.
    await page.keyboard.press('/');
    await page.keyboard.type('13');
    expect(await page.getByTestId('taxonomy-search').inputValue()).toBe('13');
    await page.keyboard.press('Escape');
    expect(await page.getByTestId('taxonomy-search').inputValue()).toBe('');
    await pressed(page, 'wrong_region', false);
    await pressed(page, 'no_zoom', false);

    // The help sheet lists every action and every label with its chord.
    await page.keyboard.press('?');
    await page.getByTestId('help-sheet').waitFor();
    for (const action of Object.keys(ACTION_DESCRIPTIONS)) {
      const text = (await page.getByTestId(`help-action-${action}`).textContent()) ?? '';
      expect(text).toContain(ACTION_DESCRIPTIONS[action]!);
    }
    for (const l of DEFAULT_TAXONOMY.labels) {
      const text = (await page.getByTestId(`help-label-${l.id}`).textContent()) ?? '';
      expect(text.startsWith(l.key!)).toBe(true);
      expect(text).toContain(l.name);
    }
    expect(await page.getByTestId('help-action-submit').textContent()).toContain('Ctrl+Enter');
    await screenshot(page, 'annotate-help');
    await page.keyboard.press('Escape');
    await page.getByTestId('help-sheet').waitFor({ state: 'detached' });
    await screenshot(page, 'annotate-labelled');
    expect(errors).toEqual([]);
    await page.close();

    // ---- kill the app hard and restart it on the same workspace ----
    await app.stop('SIGKILL');
    app = await startApp(workspace);
    ({ page, errors } = await newPage(browser, { width: 1440, height: 1000 }));
    await page.goto(`${app.openUrl}#/annotate`);
    await waitProgress(page, new RegExp(`^20 / ${total} labelled by alice$`));
    await expect(page.getByTestId('annotator-input').inputValue()).resolves.toBe('alice');
    // The queue resumes at the first unlabelled sample (the undone one); one step back is the 20th.
    await expect(page.getByTestId('queue-position').textContent()).resolves.toBe(`21 of ${total}`);
    const resumed = await currentQid(page);
    await page.keyboard.press('ArrowLeft');
    expect(await waitQidChange(page, resumed)).toBe(order[19]);
    for (const e of expected.filter((x) => x.qid === order[19] && x.step === null)) await pressed(page, e.label, true);
    await screenshot(page, 'annotate-after-restart');

    // ---- exports hold exactly what was labelled ----
    const download = async (testId: string): Promise<{ name: string; text: string }> => {
      const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId(testId).click()]);
      const file = await dl.path();
      return { name: dl.suggestedFilename(), text: fs.readFileSync(file, 'utf8') };
    };
    const want = expected.map(key).sort();
    const jsonl = await download('export-jsonl');
    expect(jsonl.name).toMatch(/^loupe-labels-.*\.jsonl$/);
    const rows = jsonl.text.trim().split('\n').map((l) => JSON.parse(l) as { run: string; qid: string; step: number | null; annotator: string; label: string; note?: string });
    expect(rows.every((r) => r.annotator === 'alice')).toBe(true);
    expect(rows.map(key).sort()).toEqual(want);
    const csv = await download('export-csv');
    expect(csv.name).toMatch(/^loupe-labels-.*\.csv$/);
    const [header, ...cells] = parseCsv(csv.text);
    expect(header).toEqual([...CURRENT_COLUMNS]);
    const col = (name: string) => CURRENT_COLUMNS.indexOf(name as (typeof CURRENT_COLUMNS)[number]);
    const csvRows = cells.map((c) => ({ qid: c[col('qid')]!, step: c[col('step')] === '' ? null : Number(c[col('step')]), label: c[col('label')]!, note: c[col('note')] || undefined, annotator: c[col('annotator')] }));
    expect(csvRows.every((r) => r.annotator === 'alice')).toBe(true);
    expect(csvRows.map(key).sort()).toEqual(want);
    await expect(page.getByTestId('agreement-note').textContent()).resolves.toMatch(/agreement needs two annotators/);

    // ---- a second annotator labels 10 of the same samples ----
    await page.getByTestId('annotator-input').fill('bob');
    await page.getByTestId('annotator-input').press('Enter');
    await waitProgress(page, new RegExp(`^0 / ${total} labelled by bob$`));
    await expect(page.getByTestId('queue-position').textContent()).resolves.toBe(`1 of ${total}`);
    qid = await currentQid(page);
    expect(qid).toBe(order[0]);
    // alice's labels show, muted, on bob's panel.
    await expect(page.getByTestId(`others-${primary.get(qid)!}`).textContent()).resolves.toBe('alice');
    const a: string[] = [];
    const b: string[] = [];
    for (let i = 0; i < 10; i++) {
      expect(qid).toBe(order[i]);
      const alices = primary.get(qid)!;
      // Agree on 7, disagree on 3 (i = 1, 5, 8).
      const label = [1, 5, 8].includes(i) ? (alices === 'ambiguous_question' ? 'grader_error' : 'ambiguous_question') : alices;
      await page.keyboard.press(KEY[label]!);
      await pressed(page, label, true);
      a.push(alices);
      b.push(label);
      await page.keyboard.press('Control+Enter');
      qid = await waitQidChange(page, qid);
    }
    await waitProgress(page, new RegExp(`^10 / ${total} labelled by bob$`));
    const kappa = cohen(a, b);
    await page.getByTestId('agreement-refresh').click();
    await page.waitForFunction((v) => {
      const el = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }).document.querySelector('[data-testid=agreement-kappa]');
      return (el?.textContent ?? '') === v;
    }, kappa.toFixed(3));
    await expect(page.getByTestId('agreement-units').textContent()).resolves.toBe('10');
    expect((await page.getByTestId('agreement-panel').textContent()) ?? '').toContain("Cohen's κ");
    await screenshot(page, 'annotate-agreement');

    // ---- a label is a slice: it opens Runs filtered to it ----
    await page.getByTestId('slice-wrong_region').click();
    await page.getByTestId('query-input').waitFor();
    await expect(page.getByTestId('query-input').inputValue()).resolves.toBe('label = wrong_region');
    const withLabel = new Set([...expected.filter((e) => e.label === 'wrong_region').map((e) => e.qid), ...order.slice(0, 10).filter((_, i) => b[i] === 'wrong_region')]);
    await page.waitForFunction((n) => {
      const el = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }).document.querySelector('[data-testid=row-count]');
      return (el?.textContent ?? '').startsWith(`${n} `);
    }, withLabel.size);
    await page.getByTestId('sample-row').first().waitFor();
    expect(await page.getByTestId('sample-row').count()).toBe(withLabel.size);
    await screenshot(page, 'annotate-slice');
    expect(errors).toEqual([]);
  });

  it('edits the workspace taxonomy: rename, new label with a key, archive; the key map follows', async () => {
    const { page, errors } = await newPage(browser, { width: 1440, height: 1000 });
    await page.goto(`${app.openUrl}#/annotate`);
    await page.getByTestId('current-qid').waitFor();
    await page.getByTestId('edit-taxonomy').click();
    await page.getByTestId('tax-name-needless_zoom').fill('Zoom was not needed');
    await page.getByTestId('tax-archived-ambiguous_question').check();
    await page.getByTestId('tax-new-name').fill('Blurry crop');
    await page.getByTestId('tax-new-key').fill('b');
    await page.getByTestId('tax-add').click();
    await page.getByTestId('tax-save').click();
    await page.getByTestId('label-blurry_crop').waitFor();
    await expect(page.getByTestId('label-needless_zoom').textContent()).resolves.toContain('Zoom was not needed');
    expect(await page.getByTestId('label-ambiguous_question').count()).toBe(0);
    const saved = JSON.parse(fs.readFileSync(path.join(workspace, 'labels', 'taxonomy.json'), 'utf8')) as { labels: Array<{ id: string; key?: string; archived?: boolean }> };
    expect(saved.labels.find((l) => l.id === 'blurry_crop')?.key).toBe('b');
    expect(saved.labels.find((l) => l.id === 'ambiguous_question')?.archived).toBe(true);
    // The new key toggles the new label.
    await page.keyboard.press('b');
    await pressed(page, 'blurry_crop', true);
    // A key clash is refused with a message naming it, and nothing is saved.
    await page.getByTestId('tax-key-blurry_crop').fill('1');
    await page.getByTestId('tax-save').click();
    await page.getByTestId('tax-error').waitFor();
    await expect(page.getByTestId('tax-error').textContent()).resolves.toMatch(/key '1' is already used by 'wrong_region'/);
    expect(JSON.parse(fs.readFileSync(path.join(workspace, 'labels', 'taxonomy.json'), 'utf8')).labels.find((l: { id: string }) => l.id === 'blurry_crop').key).toBe('b');
    await page.getByTestId('tax-error').scrollIntoViewIfNeeded();
    await screenshot(page, 'annotate-taxonomy-editor');
    expect(errors.filter((e) => !/labels:setTaxonomy|invalid taxonomy/.test(e))).toEqual([]);
  });
});
