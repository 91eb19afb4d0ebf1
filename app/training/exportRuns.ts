/**
 * Training data out of runs in the workspace: RL rows in the three trainers' shapes (verl/verl-tool, Pixel Reasoner,
 * ms-swift) for every sample with an answer, and SFT traces (Pixel Reasoner `message_list`, ms-swift `messages`) from
 * the successful trajectories. `loupe export-data` and the Runs page's "Export training data" both call this.
 */
import path from 'node:path';
import type { SampleRecord } from '../contract/trajectory';
import type { MediaStore } from '../workspace/mediaStore';
import type { RunStore } from '../workspace/runStore';
import { exportSftTraces, sftTraceToMsSwift, toMsSwiftRow, toPixelReasonerRow, toVerlRow, writeJsonl, type RlItem, type SftSkip } from './export';

export interface ExportedData {
  dir: string;
  files: Array<{ name: string; rows: number }>;
  /** Samples left out of the RL rows (no answer, no stored media) or of the SFT traces (not correct, tool error …). */
  skipped: { rl: SftSkip[]; sft: SftSkip[] };
}

export async function exportRunData(runs: RunStore, media: MediaStore, runIds: readonly string[], outDir: string): Promise<ExportedData> {
  if (!runIds.length) throw new Error('name at least one run to export');
  const records: SampleRecord[] = [];
  for (const id of runIds) {
    await runs.readManifest(id); // an unknown run is an error naming it, not an empty export
    records.push(...(await runs.readSamples(id)).records);
  }
  const mediaPath = (id: string) => path.resolve(media.pathOf(id));
  const rl: RlItem[] = [];
  const rlSkipped: SftSkip[] = [];
  const systems = new Map<string, string>();
  for (const r of records) {
    const t = r.trajectory;
    const shown = t ? (t.originals.length ? t.originals : t.media) : [];
    const answer = r.answer === null || r.answer === undefined ? '' : Array.isArray(r.answer) ? r.answer.map(String) : String(r.answer);
    if (!t || !shown.length) rlSkipped.push({ qid: r.qid, reason: 'no stored media' });
    else if ((Array.isArray(answer) ? answer.join('') : answer).trim() === '') rlSkipped.push({ qid: r.qid, reason: 'no reference answer' });
    else {
      rl.push({ qid: `${r.bench}/${r.qid}`, question: r.question, media: shown.map((m) => mediaPath(m.id)), isVideo: t.isVideo, answer });
      if (t.system) systems.set(`${r.bench}/${r.qid}`, t.system);
    }
  }
  const sft = exportSftTraces(records, { mediaPath });
  const files: ExportedData['files'] = [];
  const write = async (name: string, rows: unknown[]) => files.push({ name, rows: await writeJsonl(path.join(outDir, name), rows) });
  await write('rl.verl.jsonl', rl.map((it, i) => toVerlRow(it, i, { system: systems.get(it.qid) ?? '' })));
  await write('rl.pixel-reasoner.jsonl', rl.map((it) => toPixelReasonerRow(it)));
  await write('rl.ms-swift.jsonl', rl.map((it) => toMsSwiftRow(it)));
  await write('sft.pixel-reasoner.jsonl', sft.traces);
  await write('sft.ms-swift.jsonl', sft.traces.map((t) => sftTraceToMsSwift(t)));
  return { dir: outDir, files, skipped: { rl: rlSkipped, sft: sft.skipped } };
}
