/**
 * serve-model with several engine processes (replicas) for one model: concurrent requests spread over them, and each
 * request's answer is the one it gets alone (same model, same threads, its own seed), whichever process ran it.
 * Real loupe-tiny ONNX sessions in worker threads, over real HTTP on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { createEngineManager } from '../../../main/core/wiring';
import { serveModel, type ServedModel } from '../../../app/engines/serve/serveModel';
import type { EngineManager } from '../../../app/engines/manager';
import { noiseBytes } from '../../support/noise';

const LOUPE_TINY = fileURLToPath(new URL('../../../models/loupe-tiny/model', import.meta.url));

let engines: EngineManager;
let served: ServedModel;

beforeAll(async () => {
  engines = await createEngineManager({ isolation: 'thread' });
  served = await serveModel(engines, { modelDir: path.resolve(LOUPE_TINY), dtype: 'q8', replicas: 2 }, { apiKey: null });
}, 120_000);
afterAll(async () => {
  await served?.close();
  await engines?.dispose();
});

async function dataUrl(seed: number): Promise<string> {
  const w = 56 + 28 * (seed % 3);
  const png = await sharp(Buffer.from(noiseBytes(w * 84 * 3, seed)), { raw: { width: w, height: 84, channels: 3 } }).png().toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

async function ask(i: number): Promise<string> {
  const res = await fetch(`${served.server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: await dataUrl(i) } }, { type: 'text', text: `What is in region ${i}?` }] }],
      max_tokens: 10,
      temperature: 0.8,
      seed: 1000 + i,
    }),
  });
  const body = (await res.json()) as { choices?: Array<{ message: { content: string } }>; error?: unknown };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.choices![0]!.message.content;
}

describe('serve-model replicas', () => {
  it('reports its engine processes', () => {
    expect(served.info.replicas).toBe(2);
  });

  it('gives every request the same answer alone and among concurrent ones', async () => {
    const ids = [0, 1, 2, 3, 4, 5];
    const alone: string[] = [];
    for (const i of ids) alone.push(await ask(i));
    expect(new Set(alone).size, 'the requests differ, so a mix-up would show').toBeGreaterThan(1);
    const together = await Promise.all(ids.map((i) => ask(i)));
    expect(together).toEqual(alone);
    // and in reverse order, so each request likely lands on the other process than before
    const reversed = await Promise.all([...ids].reverse().map((i) => ask(i)));
    expect(reversed.reverse()).toEqual(alone);
  }, 120_000);
});
