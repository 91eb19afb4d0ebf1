// GC share of each thread in a `node --cpu-prof` run: the samples in "(garbage collector)" over the busy (non-idle)
// samples, counted from the thread's first sample inside the function named by --from (default: the engine
// runtime's generateNow, so model loading is left out); threads that never enter it are skipped.
// usage: node --cpu-prof --cpu-prof-dir=DIR --import tsx models/loupe-tiny/evaluate.ts --model … --data …
//        node scripts/gc-share.mjs DIR [--from generateNow]
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
const fi = process.argv.indexOf('--from');
const from = fi > 0 ? process.argv[fi + 1] : 'generateNow';
if (!dir || !fs.existsSync(dir)) {
  console.error('usage: node scripts/gc-share.mjs DIR_OF_CPUPROFILES [--from FUNCTION]');
  process.exit(2);
}
for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.cpuprofile')).sort()) {
  const p = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inside = new Map();
  const isInside = (id) => {
    if (inside.has(id)) return inside.get(id);
    let r = false;
    for (let j = id; j !== undefined; j = parent.get(j)) if (nodes.get(j).callFrame.functionName === from) { r = true; break; }
    inside.set(id, r);
    return r;
  };
  const first = p.samples.findIndex(isInside);
  if (first < 0) continue;
  let busy = 0;
  let gc = 0;
  for (let k = first; k < p.samples.length; k++) {
    const fn = nodes.get(p.samples[k]).callFrame.functionName;
    if (fn === '(idle)') continue;
    busy += p.timeDeltas[k];
    if (fn === '(garbage collector)') gc += p.timeDeltas[k];
  }
  console.log(`${f}: from the first ${from}: busy ${(busy / 1000).toFixed(0)} ms, GC ${(gc / 1000).toFixed(0)} ms, GC share ${((100 * gc) / busy).toFixed(1)} %`);
}
