/**
 * `loupe train …` — training jobs from the command line: list/render templates, submit to a connection
 * (local, slurm-ssh, slurmrestd, ray), status/logs/follow/cancel/list, parse metrics, and store secrets.
 * Secrets are read from stdin (never argv) into the encrypted store.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { createConnector, ConnectorError, EncryptedFileSecretStore, type Connector } from '../../../app/connectors';
import { templateToJobSpec } from '../../../app/training/jobSpec';
import { MetricSeries, MetricStreamParser, type MetricFormat } from '../../../app/training/metrics';
import { buildTemplate, TEMPLATES } from '../../../app/training/templates';
import { defaultConfigDir } from '../../../app/workspace/paths';

interface StoreOpts {
  secrets: string;
  keyFile: string;
}
interface ConnOpts extends StoreOpts {
  connection?: string;
  local?: string;
}

function store(o: StoreOpts): EncryptedFileSecretStore {
  return new EncryptedFileSecretStore({ file: path.resolve(o.secrets), keyFile: path.resolve(o.keyFile) });
}

function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${what}: cannot read ${file} (${(e as Error).message})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new Error(`${what}: ${file} is not valid JSON (${(e as Error).message})`);
  }
}

async function connector(o: ConnOpts): Promise<Connector> {
  if (o.local) return createConnector({ kind: 'local', name: 'local', root: path.resolve(o.local) }, store(o));
  if (!o.connection) throw new Error('give --connection <file.json> (see app/connectors/index.ts ConnectionConfigSchema) or --local <jobs-dir>');
  return createConnector(readJson(o.connection, '--connection'), store(o), process.env.LOUPE_DEBUG ? (l) => process.stderr.write(`${l}\n`) : undefined);
}

/** `--set a.b=1 --set c=true` → nested object (values parsed as JSON when they parse). */
function parseSets(sets: string[], base: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(base);
  for (const s of sets) {
    const i = s.indexOf('=');
    if (i <= 0) throw new Error(`--set ${JSON.stringify(s)}: expected key=value`);
    const keys = s.slice(0, i).split('.');
    let v: unknown = s.slice(i + 1);
    try {
      v = JSON.parse(v as string);
    } catch {
      /* a plain string */
    }
    let cur = out;
    keys.slice(0, -1).forEach((k) => {
      if (typeof cur[k] !== 'object' || cur[k] === null) cur[k] = {};
      cur = cur[k] as Record<string, unknown>;
    });
    cur[keys[keys.length - 1] as string] = v;
  }
  return out;
}

function params(o: { params?: string; set: string[] }): Record<string, unknown> {
  const base = o.params ? (readJson(o.params, '--params') as Record<string, unknown>) : {};
  return parseSets(o.set, base);
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

/** Report an error a user can act on and set a failing exit code (no process.exit: in-process callers keep running). */
function fail(e: unknown): void {
  const msg = e instanceof ConnectorError ? `${e.message} [${e.code}]` : e instanceof Error ? e.message : String(e);
  process.stderr.write(`loupe train: ${msg}\n`);
  process.exitCode = 1;
}

function withStore(c: Command): Command {
  return c
    .option('--secrets <file>', 'encrypted secret store', path.join('.workspace', 'secrets.enc.json'))
    .option('--key-file <file>', 'machine-local key file (created 0600, outside any workspace)', path.join(defaultConfigDir(), 'secret.key'));
}
function withConn(c: Command): Command {
  return withStore(c).option('--connection <file>', 'connection settings JSON').option('--local <dir>', 'use the local connector with this jobs folder');
}

async function followPrint(c: Connector, id: string, format: MetricFormat | undefined): Promise<number> {
  const parser = format ? new MetricStreamParser(format) : null;
  const series = new MetricSeries();
  const res = await c.follow(id, {
    onText: (t) => {
      process.stdout.write(t);
      if (parser) series.addAll(parser.push(t));
    },
    onStatus: (s) => process.stderr.write(`[${id}] ${s.state} (${s.rawState})${s.message ? `: ${s.message}` : ''}\n`),
    onWarning: (w) => process.stderr.write(`[${id}] warning: ${w}\n`),
  }).done;
  if (parser) {
    series.addAll(parser.end());
    for (const k of series.keys()) {
      const l = series.latest(k);
      if (l) process.stderr.write(`  ${k} @${l.step} = ${l.value}\n`);
    }
  }
  process.stderr.write(`[${id}] ${res.reason}: ${res.status.state}${res.error ? ` — ${res.error.message}` : ''}\n`);
  return res.status.state === 'succeeded' ? 0 : 1;
}

export function register(program: Command): void {
  const train = program.command('train').description('training jobs: templates, submit, follow, metrics (local, Slurm, Ray)');

  train
    .command('templates')
    .description('list training templates')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => {
      const rows = TEMPLATES.map((t) => ({ id: t.id, title: t.title, source: t.source }));
      if (o.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      else for (const r of rows) process.stdout.write(`${r.id.padEnd(32)} ${r.title}\n`);
    });

  train
    .command('render <template>')
    .description('print the job a template produces (script, env, files, services, notes)')
    .option('--params <file>', 'parameters JSON')
    .option('--set <key=value>', 'override one parameter (repeatable; dotted keys)', collect, [] as string[])
    .option('--json', 'print the whole output as JSON')
    .action((id: string, o: { params?: string; set: string[]; json?: boolean }) => {
      try {
        const out = buildTemplate(id, params(o));
        if (o.json) return void process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
        process.stdout.write(`# template ${out.templateId}\n`);
        for (const [k, v] of Object.entries(out.env)) process.stdout.write(`# env ${k}=${v}\n`);
        for (const f of out.files) process.stdout.write(`# file ${f.path} (${f.content.length} chars)\n`);
        for (const s of out.services) process.stdout.write(`# service ${s.name}: ${s.note}\n`);
        for (const n of out.notes) process.stdout.write(`# note: ${n}\n`);
        process.stdout.write(out.script);
      } catch (e) {
        return fail(e);
      }
    });

  withConn(
    train
      .command('submit <template>')
      .description('build a template and submit it')
      .option('--params <file>', 'parameters JSON')
      .option('--set <key=value>', 'override one parameter (repeatable)', collect, [] as string[])
      .option('--name <name>', 'job name')
      .option('--cwd <dir>', 'working directory on the executing machine')
      .option('--follow', 'follow the log until the job ends'),
  ).action(async (id: string, o: ConnOpts & { params?: string; set: string[]; name?: string; cwd?: string; follow?: boolean }) => {
    try {
      const out = buildTemplate(id, params(o));
      const c = await connector(o);
      const spec = templateToJobSpec(out, { name: o.name ?? out.templateId, kind: c.kind, ...(o.cwd ? { cwd: o.cwd } : {}) });
      const r = await c.submit(spec);
      process.stdout.write(`${r.id}\n`);
      for (const n of out.notes) process.stderr.write(`note: ${n}\n`);
      const code = o.follow ? await followPrint(c, r.id, out.metrics.format) : 0;
      await c.close();
      process.exitCode = code;
    } catch (e) {
      return fail(e);
    }
  });

  withConn(train.command('status <id>').description('job state')).action(async (id: string, o: ConnOpts) => {
    try {
      const c = await connector(o);
      process.stdout.write(`${JSON.stringify(await c.status(id), null, 2)}\n`);
      await c.close();
    } catch (e) {
      return fail(e);
    }
  });

  withConn(
    train
      .command('logs <id>')
      .description('print the log (from a byte offset), or follow it')
      .option('--offset <n>', 'byte offset', '0')
      .option('--follow', 'follow until the job ends')
      .option('--metrics <format>', 'also parse metrics: auto|verl-console|verl-jsonl|openrlhf|ms-swift'),
  ).action(async (id: string, o: ConnOpts & { offset: string; follow?: boolean; metrics?: MetricFormat }) => {
    try {
      const c = await connector(o);
      if (o.follow) process.exitCode = await followPrint(c, id, o.metrics);
      else process.stdout.write((await c.logs(id, Number(o.offset))).data);
      await c.close();
    } catch (e) {
      return fail(e);
    }
  });

  withConn(train.command('cancel <id>').description('cancel a job')).action(async (id: string, o: ConnOpts) => {
    try {
      const c = await connector(o);
      await c.cancel(id);
      process.stdout.write(`cancel requested for ${id}\n`);
      await c.close();
    } catch (e) {
      return fail(e);
    }
  });

  withConn(train.command('list').description('jobs the backend knows')).action(async (o: ConnOpts) => {
    try {
      const c = await connector(o);
      for (const j of await c.list()) process.stdout.write(`${j.id}\t${j.state}\t${j.rawState}\t${j.name ?? ''}\n`);
      await c.close();
    } catch (e) {
      return fail(e);
    }
  });

  train
    .command('metrics <file>')
    .description('parse a trainer log or JSONL file and print the last value of each metric')
    .option('--format <format>', 'auto|verl-console|verl-jsonl|openrlhf|ms-swift', 'auto')
    .option('--json', 'print every series as JSON')
    .action((file: string, o: { format: MetricFormat; json?: boolean }) => {
      try {
        const p = new MetricStreamParser(o.format);
        const s = new MetricSeries();
        s.addAll(p.push(readFileSync(file, 'utf8')));
        s.addAll(p.end());
        if (o.json) return void process.stdout.write(`${JSON.stringify(s.keys().map((k) => s.get(k)))}\n`);
        if (!s.size) return fail(new Error(`${file}: no metric lines found (format ${o.format})`));
        for (const k of s.keys()) {
          const l = s.latest(k);
          process.stdout.write(`${k}\t${l?.step}\t${l?.value}\n`);
        }
      } catch (e) {
        return fail(e);
      }
    });

  const secret = train.command('secret').description('credentials in the encrypted store (values come from stdin)');
  withStore(secret.command('set <name>').description('store stdin as secret <name>')).action(async (name: string, o: StoreOpts) => {
    try {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      const value = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
      if (!value) throw new Error('stdin was empty; pipe the secret in, e.g. `loupe train secret set ssh/cluster < ~/.ssh/id_ed25519`');
      await store(o).set(name, value);
      process.stdout.write(`stored ${name}\n`);
    } catch (e) {
      return fail(e);
    }
  });
  withStore(secret.command('list').description('secret names (never values)')).action(async (o: StoreOpts) => {
    try {
      for (const n of await store(o).list()) process.stdout.write(`${n}\n`);
    } catch (e) {
      return fail(e);
    }
  });
  withStore(secret.command('delete <name>')).action(async (name: string, o: StoreOpts) => {
    try {
      process.stdout.write((await store(o).delete(name)) ? `deleted ${name}\n` : `no secret ${name}\n`);
    } catch (e) {
      return fail(e);
    }
  });
}
