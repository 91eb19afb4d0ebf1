/**
 * serve-model throughput against concurrency on loupe-tiny: the same requests (an image and a question each, seeded,
 * 16 new tokens) sent one at a time and 8 at a time, interleaved in rounds, to `loupe serve-model` with its defaults
 * (one engine process per core for a small model, each batching up to 8 requests' decode steps) and, for comparison,
 * without batching (`--batch 1`) and with one process (`--replicas 1`, with and without batching). Every server must
 * give each request the same text at c8 as at c1 (batching is exact): a difference fails the bench. Besides wall-clock
 * throughput, which other work on the machine moves a lot, each row has the server's CPU time per request (its process
 * and its engine processes, Linux /proc), which it moves far less: what batching saves shows there. The last column
 * is the ceiling those CPU times set: the machine's cores over the server's and this client's CPU a request at c8,
 * against the c1 rate; a c8/c1 near it is as much as concurrency can buy on this machine.
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { BENCH_KEY, startServeModel, treeCpu } from './sweep.bench';
import { noiseBytes } from '../support/noise';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const LOUPE_TINY = path.join(REPO, 'models', 'loupe-tiny', 'model');
const REQUESTS = 24;
const CORES = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
const ROUNDS = 3;

async function bodies(): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const w = 224 + 28 * (i % 4);
    const png = await sharp(Buffer.from(noiseBytes(w * 224 * 3, i + 1)), { raw: { width: w, height: 224, channels: 3 } }).png().toBuffer();
    out.push(
      JSON.stringify({
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }, { type: 'text', text: `How many objects are in part ${i} of the picture?` }] }],
        max_tokens: 16,
        temperature: 0.7,
        seed: i,
        stream: true,
      }),
    );
  }
  return out;
}

/** The streamed text of one response (its content deltas joined). */
const streamedText = (sse: string) =>
  sse
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => (JSON.parse(l.slice(6)) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? '')
    .join('');

/**
 * Requests per second sending `all` with `c` in flight; each response's text goes into `texts` (by request), and a
 * text that differs from one already there fails the bench.
 */
async function throughput(url: string, all: string[], c: number, texts: Map<number, string>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (let i = next++; i < all.length; i = next++) {
        const res = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_KEY}` }, body: all[i] });
        const text = await res.text();
        if (!res.ok || !text.includes('[DONE]')) throw new Error(`HTTP ${res.status}: ${text.slice(0, 200)}`);
        const got = streamedText(text);
        const had = texts.get(i);
        if (had !== undefined && had !== got) throw new Error(`request ${i} at concurrency ${c}: ${JSON.stringify(got)}, before ${JSON.stringify(had)}`);
        texts.set(i, got);
      }
    }),
  );
  return (all.length / (performance.now() - t0)) * 1000;
}

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return (v[(v.length - 1) >> 1]! + v[v.length >> 1]!) / 2;
};

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const all = await bodies();
  const servers = [
    { name: 'default', s: await startServeModel(LOUPE_TINY, ['--dtype', 'q8']) },
    { name: '--batch 1', s: await startServeModel(LOUPE_TINY, ['--dtype', 'q8', '--batch', '1']) },
    { name: '--replicas 1', s: await startServeModel(LOUPE_TINY, ['--dtype', 'q8', '--replicas', '1']) },
    { name: '--replicas 1 --batch 1', s: await startServeModel(LOUPE_TINY, ['--dtype', 'q8', '--replicas', '1', '--batch', '1']) },
  ];
  try {
    const r: Record<string, { c1: number[]; c8: number[]; cpu1: number[]; cpu8: number[]; client8: number[] }> = {};
    // one text per request across servers, rounds and concurrency: sampling is seeded, and batching must not change it
    const texts = new Map<number, string>();
    for (const { name, s } of servers) {
      r[name] = { c1: [], c8: [], cpu1: [], cpu8: [], client8: [] };
      await throughput(s.url, all.slice(0, 8), 8, texts); // warm: every replica has loaded, images cached
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const { name, s } of servers) {
        const cpu0 = treeCpu(s.child.pid!);
        r[name]!.c1.push(await throughput(s.url, all, 1, texts));
        const cpu1 = treeCpu(s.child.pid!);
        const own = process.cpuUsage();
        r[name]!.c8.push(await throughput(s.url, all, 8, texts));
        const ownUs = process.cpuUsage(own);
        r[name]!.client8.push((ownUs.user + ownUs.system) / 1000 / all.length);
        r[name]!.cpu1.push(((cpu1 - cpu0) / all.length) * 1000);
        r[name]!.cpu8.push(((treeCpu(s.child.pid!) - cpu1) / all.length) * 1000);
      }
    }
    const load = os.loadavg()[0]!.toFixed(1);
    return servers.map(({ name, s }) => {
      const { c1, c8, cpu1, cpu8, client8 } = r[name]!;
      const ratios = c1.map((x, i) => c8[i]! / x);
      // what the machine's cores allow at c8 when every request costs the server and this client what they cost
      // here: cores / (server + client CPU a request), over the c1 rate (the client shares the cores)
      const ceilings = c1.map((x, i) => (CORES * 1000) / (cpu8[i]! + client8[i]!) / x);
      return {
        server: `serve-model loupe-tiny q8 ${name}`,
        engines: /(\d+) engine processes/.exec(s.banner)?.[1] ?? '1',
        batch: /up to (\d+) requests a decode step/.exec(s.banner)?.[1] ?? '1',
        requests: REQUESTS * ROUNDS,
        c1_req_per_s: Math.round(median(c1) * 100) / 100,
        c8_req_per_s: Math.round(median(c8) * 100) / 100,
        c8_over_c1: `${median(ratios).toFixed(2)}× (rounds ${ratios.map((x) => x.toFixed(2)).join(' ')})`,
        cpu_ms_per_req_c1: Math.round(median(cpu1)),
        cpu_ms_per_req_c8: Math.round(median(cpu8)),
        client_cpu_ms_per_req_c8: Math.round(median(client8) * 10) / 10,
        c8_over_c1_cpu_ceiling: `${median(ceilings).toFixed(2)}× on ${CORES} cores`,
        load_1m: load,
        same_text: `${texts.size} of ${REQUESTS}`,
      };
    });
  } finally {
    for (const { s } of servers) s.child.kill('SIGTERM');
  }
}
