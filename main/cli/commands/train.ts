/**
 * `loupe train …` — training jobs from the command line: list/render templates, submit to a connection
 * (local, slurm-ssh, slurmrestd, ray), status/logs/follow/cancel/list, parse metrics, and store secrets.
 * By default it works on the workspace through the same training service as the app: jobs in
 * `training/jobs.jsonl` (the Training page shows them, and `list` shows the page's), connectors by name from
 * `training/connectors.json`, and the workspace's one secret store. `--local DIR` / `--connection FILE` talk to a
 * backend directly instead (nothing is recorded in the workspace). Secrets are read from stdin (never argv).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Connector, SecretStore } from '../../../app/connectors';
import type { TrainingService } from '../../../app/training/service';
import type { MetricFormat } from '../../../app/training/metrics';
import { defaultWorkspaceDir } from '../../../app/workspace/paths';
import { repoRoot } from '../../core/repoRoot';

/** What the train commands use, loaded when one runs (not when `loupe` starts: connectors bring ssh2 and more). */
async function loadLib() {
  const [connectors, secrets, service, jobSpec, metrics, templates] = await Promise.all([
    import('../../../app/connectors'),
    import('../../../app/connectors/secrets'),
    import('../../../app/training/service'),
    import('../../../app/training/jobSpec'),
    import('../../../app/training/metrics'),
    import('../../../app/training/templates'),
  ]);
  return { ...connectors, ...secrets, ...service, ...jobSpec, ...metrics, ...templates };
}
let loaded: Awaited<ReturnType<typeof loadLib>> | undefined;
const lib = async () => (loaded ??= await loadLib());

interface StoreOpts {
  workspace?: string;
  secrets?: string;
  keyFile?: string;
}
interface ConnOpts extends StoreOpts {
  connection?: string;
  local?: string;
  connector?: string;
}

const workspaceOf = (o: StoreOpts): string => path.resolve(o.workspace ?? defaultWorkspaceDir());

/** The workspace's secret store (the one the Training page writes), or the files named by --secrets/--key-file. */
async function store(o: StoreOpts): Promise<SecretStore> {
  const { openWorkspaceSecretStore, workspaceSecretPaths, EncryptedFileSecretStore, ENCRYPTED_STORE_FILE } = await lib();
  if (!o.secrets && !o.keyFile) return (await openWorkspaceSecretStore(workspaceOf(o))).store;
  const p = workspaceSecretPaths(workspaceOf(o));
  const key = o.keyFile ? { keyFile: path.resolve(o.keyFile) } : { keyDir: p.keyDir, legacyKeyFile: p.legacyKeyFile };
  return new EncryptedFileSecretStore({ file: path.resolve(o.secrets ?? path.join(p.dir, ENCRYPTED_STORE_FILE)), ...key });
}

/** The training service on the workspace, as the app's core builds it (without live events). */
async function service(o: StoreOpts): Promise<TrainingService> {
  const ws = workspaceOf(o);
  const { openWorkspaceSecretStore, createTrainingService } = await lib();
  const { store: secrets, info } = await openWorkspaceSecretStore(ws);
  return createTrainingService({ workspace: ws, secrets: o.secrets || o.keyFile ? await store(o) : secrets, secretStore: info, packageRoot: repoRoot() });
}

const direct = (o: ConnOpts): boolean => Boolean(o.local || o.connection);

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
  const { createConnector } = await lib();
  if (o.local) return createConnector({ kind: 'local', name: 'local', root: path.resolve(o.local) }, await store(o));
  if (!o.connection) throw new Error('give --connection <file.json> (see app/connectors/index.ts ConnectionConfigSchema) or --local <jobs-dir>');
  return createConnector(readJson(o.connection, '--connection'), await store(o), process.env.LOUPE_DEBUG ? (l) => process.stderr.write(`${l}\n`) : undefined);
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
  const ConnectorError = loaded?.ConnectorError;
  const msg = ConnectorError && e instanceof ConnectorError ? `${e.message} [${e.code}]` : e instanceof Error ? e.message : String(e);
  process.stderr.write(`loupe train: ${msg}\n`);
  process.exitCode = 1;
}

function withStore(c: Command): Command {
  return c
    .option('--workspace <dir>', 'workspace (default: the app\'s)')
    .option('--secrets <file>', 'another encrypted secret store file (default: the workspace\'s, shared with the app)')
    .option('--key-file <file>', 'its machine-local key file (created 0600)');
}
function withConn(c: Command): Command {
  return withStore(c)
    .option('--connector <name>', 'a connector of the workspace: local, or one saved on the Training page', 'local')
    .option('--connection <file>', 'connection settings JSON (direct; not recorded in the workspace)')
    .option('--local <dir>', 'the local connector with this jobs folder (direct; not recorded in the workspace)');
}

/** The connector and backend id for a job named by key or id (workspace), or the direct connector. */
async function target(o: ConnOpts, id: string): Promise<{ c: Connector; id: string; svc?: TrainingService; key?: string }> {
  if (direct(o)) return { c: await connector(o), id };
  const svc = await service(o);
  const job = await svc.find(id);
  if (!job) throw new Error(`no job ${JSON.stringify(id)} in ${workspaceOf(o)} (see \`loupe train list\`); for a job submitted elsewhere give --local or --connection`);
  return { c: await svc.connector(job.connector), id: job.id, svc, key: job.key };
}

async function followPrint(c: Connector, id: string, format: MetricFormat | undefined, mask: (text: string) => string = (t) => t): Promise<number> {
  const { MetricStreamParser, MetricSeries } = await lib();
  const parser = format ? new MetricStreamParser(format) : null;
  const series = new MetricSeries();
  const res = await c.follow(id, {
    onText: (t) => {
      process.stdout.write(mask(t));
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
    .action(async (o: { json?: boolean }) => {
      const { TEMPLATES } = await lib();
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
    .action(async (id: string, o: { params?: string; set: string[]; json?: boolean }) => {
      const { buildTemplate } = await lib();
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
      .option('--secret-env <ENV=name>', 'give the job environment variable ENV from the workspace secret <name> (repeatable)', collect, [] as string[])
      .option('--follow', 'follow the log until the job ends'),
  ).action(async (id: string, o: ConnOpts & { params?: string; set: string[]; name?: string; cwd?: string; follow?: boolean; secretEnv: string[] }) => {
    const { buildTemplate, templateToJobSpec } = await lib();
    try {
      const out = buildTemplate(id, params(o));
      if (direct(o)) {
        const c = await connector(o);
        const spec = templateToJobSpec(out, { name: o.name ?? out.templateId, kind: c.kind, ...(o.cwd ? { cwd: o.cwd } : {}) });
        const r = await c.submit(spec);
        process.stdout.write(`${r.id}\n`);
        for (const n of out.notes) process.stderr.write(`note: ${n}\n`);
        const code = o.follow ? await followPrint(c, r.id, out.metrics.format) : 0;
        await c.close();
        process.exitCode = code;
        return;
      }
      // Through the training service: recorded in the workspace's jobs.jsonl, so the Training page shows it.
      const svc = await service(o);
      try {
        const secretEnv = Object.fromEntries(
          o.secretEnv.map((kv) => {
            const i = kv.indexOf('=');
            if (i <= 0 || i === kv.length - 1) throw new Error(`--secret-env ${JSON.stringify(kv)}: expected ENV=secret-name`);
            return [kv.slice(0, i), kv.slice(i + 1)];
          }),
        );
        const job = await svc.submit({ templateId: id, params: params(o), connector: o.connector ?? 'local', ...(o.name ? { name: o.name } : {}), ...(o.cwd ? { cwd: o.cwd } : {}), ...(o.secretEnv.length ? { secretEnv } : {}) });
        process.stdout.write(`${job.id}\n`);
        process.stderr.write(`recorded as ${job.key} in ${workspaceOf(o)}\n`);
        for (const n of out.notes) process.stderr.write(`note: ${n}\n`);
        let code = 0;
        if (o.follow) {
          // The log as the Training page shows it: secret values masked.
          code = await followPrint(await svc.connector(job.connector), job.id, out.metrics.format, await svc.secretMask(job));
          await svc.refresh(job.key);
        }
        process.exitCode = code;
      } finally {
        await svc.dispose();
      }
    } catch (e) {
      return fail(e);
    }
  });

  withConn(train.command('status <id>').description('job state (id or workspace key)')).action(async (id: string, o: ConnOpts) => {
    try {
      const t = await target(o, id);
      process.stdout.write(`${JSON.stringify(await t.c.status(t.id), null, 2)}\n`);
      if (t.svc && t.key) await t.svc.refresh(t.key);
      await (t.svc ? t.svc.dispose() : t.c.close());
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
      const t = await target(o, id);
      if (o.follow) process.exitCode = await followPrint(t.c, t.id, o.metrics);
      else process.stdout.write((await t.c.logs(t.id, Number(o.offset))).data);
      await (t.svc ? t.svc.dispose() : t.c.close());
    } catch (e) {
      return fail(e);
    }
  });

  withConn(train.command('cancel <id>').description('cancel a job')).action(async (id: string, o: ConnOpts) => {
    try {
      const t = await target(o, id);
      await t.c.cancel(t.id);
      process.stdout.write(`cancel requested for ${id}\n`);
      if (t.svc && t.key) await t.svc.refresh(t.key);
      await (t.svc ? t.svc.dispose() : t.c.close());
    } catch (e) {
      return fail(e);
    }
  });

  withConn(train.command('list').description('the workspace\'s jobs (those the Training page shows), or with --local/--connection the jobs the backend knows')).action(async (o: ConnOpts) => {
    try {
      if (!direct(o)) {
        const svc = await service(o);
        try {
          const jobs = await svc.store.list();
          for (const i of svc.store.issues()) process.stderr.write(`warning: ${i}\n`);
          for (const j of jobs) {
            // States move while no app follows the job: ask the backend for the unfinished ones.
            const now = await svc.refresh(j.key).catch(() => j);
            process.stdout.write(`${now.key}\t${now.state}\t${now.rawState}\t${now.name}\t${now.templateId}\t${now.submittedAt}\n`);
          }
        } finally {
          await svc.dispose();
        }
        return;
      }
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
    .action(async (file: string, o: { format: MetricFormat; json?: boolean }) => {
      const { MetricStreamParser, MetricSeries } = await lib();
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
      await (await store(o)).set(name, value);
      process.stdout.write(`stored ${name}\n`);
    } catch (e) {
      return fail(e);
    }
  });
  withStore(secret.command('list').description('secret names (never values)')).action(async (o: StoreOpts) => {
    try {
      for (const n of await (await store(o)).list()) process.stdout.write(`${n}\n`);
    } catch (e) {
      return fail(e);
    }
  });
  withStore(secret.command('delete <name>')).action(async (name: string, o: StoreOpts) => {
    try {
      process.stdout.write((await (await store(o)).delete(name)) ? `deleted ${name}\n` : `no secret ${name}\n`);
    } catch (e) {
      return fail(e);
    }
  });
}
