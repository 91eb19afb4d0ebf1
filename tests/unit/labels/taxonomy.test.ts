import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  addLabel,
  DEFAULT_TAXONOMY,
  loadTaxonomy,
  parseTaxonomy,
  saveTaxonomy,
  searchLabels,
  slugLabelId,
  TaxonomyError,
  taxonomyPath,
  validateTaxonomy,
} from '../../../app/labels';

let ws: string;
beforeEach(async () => {
  ws = await mkdtemp(join(tmpdir(), 'loupe-tax-'));
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

describe('default taxonomy', () => {
  it('has the eight failure kinds with ids, names, descriptions and distinct keys', () => {
    expect(DEFAULT_TAXONOMY.labels.map((l) => l.id)).toEqual([
      'wrong_region',
      'right_region_misread',
      'no_zoom',
      'needless_zoom',
      'tool_format_error',
      'reasoning_error',
      'grader_error',
      'ambiguous_question',
    ]);
    for (const l of DEFAULT_TAXONOMY.labels) {
      expect(l.name.length).toBeGreaterThan(3);
      expect(l.description.length).toBeGreaterThan(20);
    }
    expect(new Set(DEFAULT_TAXONOMY.labels.map((l) => l.key)).size).toBe(8);
    expect(validateTaxonomy(DEFAULT_TAXONOMY)).toEqual([]);
  });
});

describe('workspace taxonomy file', () => {
  it('falls back to a copy of the defaults when labels/taxonomy.json is missing', async () => {
    const t = await loadTaxonomy(ws);
    expect(t).toEqual(DEFAULT_TAXONOMY);
    t.labels.pop();
    expect(DEFAULT_TAXONOMY.labels).toHaveLength(8);
  });

  it('saves and loads an edited taxonomy', async () => {
    const edited = addLabel(DEFAULT_TAXONOMY, { name: 'Frame selection missed the event', key: '9' });
    await saveTaxonomy(ws, edited);
    const text = await readFile(taxonomyPath(ws), 'utf8');
    expect(JSON.parse(text).labels).toHaveLength(9);
    const back = await loadTaxonomy(ws);
    expect(back.labels.at(-1)).toMatchObject({ id: 'frame_selection_missed_the_event', key: '9' });
  });

  it('names the file and the field when the file is invalid', async () => {
    await mkdir(join(ws, 'labels'), { recursive: true });
    await writeFile(taxonomyPath(ws), JSON.stringify({ version: 1, labels: [{ id: 'Bad Id', name: 'x' }] }));
    const err = await loadTaxonomy(ws).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaxonomyError);
    expect((err as Error).message).toContain(taxonomyPath(ws));
    expect((err as Error).message).toContain('labels[0].id');
  });

  it('reports invalid JSON with the file name', async () => {
    await mkdir(join(ws, 'labels'), { recursive: true });
    await writeFile(taxonomyPath(ws), '{"version": 1, "labels": [');
    await expect(loadTaxonomy(ws)).rejects.toThrow(/taxonomy\.json: invalid taxonomy[\s\S]*not valid JSON/);
  });

  it('rejects duplicate ids, reserved ids and clashing keys', () => {
    const bad = {
      version: 1 as const,
      labels: [
        { id: 'a', name: 'A', description: '', key: '1' },
        { id: 'a', name: 'A2', description: '', key: '2' },
        { id: 'none', name: 'None', description: '', key: 'Shift+1' },
        { id: 'c', name: 'C', description: '', key: '2' },
      ],
    };
    const issues = validateTaxonomy(bad);
    expect(issues.map((i) => i.path)).toEqual(['labels[1].id', 'labels[2].id', 'labels[2].key', 'labels[3].key']);
    expect(issues[0]!.message).toContain("duplicate label id 'a'");
    expect(issues[1]!.message).toContain('reserved');
    expect(issues[3]!.message).toContain("already used by 'a'");
    expect(() => parseTaxonomy(JSON.stringify(bad))).toThrow(TaxonomyError);
  });

  it('refuses to save an invalid taxonomy and keeps the old file', async () => {
    await saveTaxonomy(ws, DEFAULT_TAXONOMY);
    const before = await readFile(taxonomyPath(ws), 'utf8');
    const bad = { version: 1 as const, labels: [...DEFAULT_TAXONOMY.labels, { ...DEFAULT_TAXONOMY.labels[0]! }] };
    await expect(saveTaxonomy(ws, bad)).rejects.toThrow(/duplicate label id 'wrong_region'/);
    expect(await readFile(taxonomyPath(ws), 'utf8')).toBe(before);
  });
});

describe('editing helpers', () => {
  it('derives ids from names', () => {
    expect(slugLabelId('Right region, misread')).toBe('right_region_misread');
    expect(slugLabelId('Öl — 3 Fehler')).toBe('ol_3_fehler');
    expect(slugLabelId('3D confusion')).toBe('l_3d_confusion');
  });

  it('addLabel rejects an id that exists', () => {
    expect(() => addLabel(DEFAULT_TAXONOMY, { name: 'Wrong region' })).toThrow(/duplicate label id 'wrong_region'/);
  });

  it('searches names first, then descriptions, hiding archived labels', () => {
    const t = { version: 1 as const, labels: [...DEFAULT_TAXONOMY.labels, { id: 'old_zoom', name: 'Old zoom', description: '', archived: true }] };
    const ids = searchLabels(t, 'zoom').map((l) => l.id);
    // names match first (in taxonomy order), then 'wrong_region' whose description says "zoomed"
    expect(ids).toEqual(['no_zoom', 'needless_zoom', 'wrong_region']);
    expect(searchLabels(t, 'zoom', { includeArchived: true }).map((l) => l.id)).toContain('old_zoom');
    expect(searchLabels(t, 'scorer').map((l) => l.id)).toEqual(['grader_error']);
  });
});
