/**
 * A corrupt or truncated parquet file: a clear error that names the file and says what is wrong, never a
 * JavaScript internal ("Cannot read properties of undefined (reading 'map')"). Real fixture bytes, damaged.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readParquet } from '../../../app/bench/adapters/io';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-pq-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const good = readFileSync(path.join(__dirname, '../../fixtures/benchmarks/pixel_reasoner/parquet/vstar_mvbench_mini.parquet'));

async function errorOf(bytes: Buffer, name: string): Promise<string> {
  const file = path.join(tmp, name);
  writeFileSync(file, bytes);
  try {
    await readParquet(file);
  } catch (e) {
    return (e as Error).message;
  }
  return 'no error';
}

describe('corrupt parquet files', () => {
  it('the fixture itself reads', async () => {
    expect((await readParquet(path.join(__dirname, '../../fixtures/benchmarks/pixel_reasoner/parquet/vstar_mvbench_mini.parquet'))).length).toBeGreaterThan(0);
  });

  const cases: Array<[string, Buffer]> = [
    ['not-parquet.parquet', Buffer.from('id,question\n1,what\n')],
    ['empty.parquet', Buffer.alloc(0)],
    ['truncated.parquet', good.subarray(0, Math.floor(good.length / 2))],
    ['footer-length.parquet', Buffer.concat([good.subarray(0, good.length - 8), Buffer.from([0xff, 0xff, 0xff, 0x7f]), Buffer.from('PAR1')])],
    ['middle-zeroed.parquet', Buffer.concat([good.subarray(0, 4), Buffer.alloc(good.length - 400), good.subarray(good.length - 396)])],
  ];
  for (const [name, bytes] of cases) {
    it(`${name}: names the file and the problem, no JavaScript internals`, async () => {
      const msg = await errorOf(bytes, name);
      expect(msg).toContain(name);
      expect(msg).toMatch(/not a parquet file|corrupt or truncated parquet/);
      expect(msg).not.toMatch(/reading '|undefined|is not a function|Cannot read/);
    });
  }
});
