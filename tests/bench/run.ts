/**
 * `npm run bench`: runs every tests/bench/*.bench.ts (or those named on the command line) and prints
 * each one's rows as a table. Performance targets live here, never as timed assertions in tests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

type Row = Record<string, string | number>;

function table(rows: Row[]): string {
  if (rows.length === 0) return '(no rows)';
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: string | number | undefined) => (v === undefined ? '' : typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(4)) : v);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => `| ${vals.map((v, i) => v.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(cols), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map((r) => line(cols.map((c) => cell(r[c]))))].join('\n');
}

async function main(): Promise<void> {
  const dir = path.dirname(new URL(import.meta.url).pathname);
  const only = process.argv.slice(2);
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.bench.ts') && (only.length === 0 || only.some((o) => f.includes(o)))).sort();
  let failed = 0;
  for (const f of files) {
    process.stdout.write(`\n## ${f.replace('.bench.ts', '')}\n\n`);
    try {
      const mod = (await import(pathToFileURL(path.join(dir, f)).href)) as { bench?: () => Promise<Row[]> };
      if (typeof mod.bench !== 'function') throw new Error('exports no bench()');
      process.stdout.write(`${table(await mod.bench())}\n`);
    } catch (err) {
      failed++;
      process.stdout.write(`failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    }
  }
  process.exitCode = failed ? 1 : 0;
}

void main();
