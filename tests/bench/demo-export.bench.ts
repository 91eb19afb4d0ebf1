/**
 * Demo: a replay episode end to end through the real core (crops on real pixels), and the trajectory
 * exports (self-contained HTML, animated WebP, GIF at the effort the export uses vs sharp's default).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { createCore } from '../../main/core';
import type { DemoEvent, MediaRef } from '../../app/contract';
import { buildStoryboard } from '../../app/export';
import { SharpAnimationRenderer } from '../../native/image/animation';
import { GLASS, GLASS_QUESTION, RECORDED_QID, RECORDED_RUN, writeRecordedRun } from '../e2e/demo.fixture';

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'loupe-bench-demo-'));
  await writeRecordedRun(ws);
  const core = await createCore({ workspace: ws, transport: 'browser' });
  const rows: Array<Record<string, string | number>> = [];
  try {
    const call = async <T>(m: string, p: unknown): Promise<T> => {
      const r = await core.dispatch(m, p);
      if (!r.ok) throw new Error(r.error.message);
      return r.result as T;
    };
    const glass = (await call<{ media: MediaRef[] }>('demo:import', { paths: [GLASS] })).media[0]!;
    let runId = '';
    for (let i = 0; i < 3; i++) {
      let events = 0;
      const t0 = performance.now();
      const done = new Promise<void>((resolve) => {
        const off = core.onEvent((name, p) => {
          const ev = p as DemoEvent;
          if (name !== 'demo:event' || ev.runId !== runId) return;
          events++;
          if (ev.type === 'done') {
            off();
            resolve();
          }
        });
      });
      runId = (await call<{ runId: string }>('demo:run', { media: [glass], question: GLASS_QUESTION, engine: { kind: 'replay', runId: RECORDED_RUN, qid: RECORDED_QID } })).runId;
      await done;
      rows.push({ task: `replay episode #${i + 1} (2 crops of a 1920×830 JPEG)`, ms: Math.round(performance.now() - t0), events });
    }
    for (const format of ['html', 'webp', 'gif'] as const) {
      const t0 = performance.now();
      const r = await call<{ bytes: number; frames?: number }>('demo:export', { runId, format });
      rows.push({ task: `export ${format}`, ms: Math.round(performance.now() - t0), bytes: r.bytes, ...(r.frames ? { frames: r.frames } : {}) });
    }
    // GIF at sharp's default effort, for the record of why the export uses effort 1.
    const got = await call<{ branches: Array<{ trajectory: import('../../app/contract').Trajectory }> }>('demo:get', { runId });
    const frames = buildStoryboard(got.branches[0]!.trajectory);
    const renderer = new SharpAnimationRenderer((id) => path.join(ws, 'media', id));
    const webp = await renderer.render(frames, 'webp');
    const t0 = performance.now();
    const joined = await Promise.all(Array.from({ length: webp.frames }, (_, i) => sharp(Buffer.from(webp.bytes), { page: i }).png().toBuffer()));
    await sharp(joined, { join: { animated: true } }).gif({ loop: 0, delay: frames.map((f) => f.delayMs) }).toBuffer();
    rows.push({ task: 'gif at sharp default effort (same frames)', ms: Math.round(performance.now() - t0), frames: webp.frames });
  } finally {
    await core.dispose();
    fs.rmSync(ws, { recursive: true, force: true });
  }
  return rows;
}
