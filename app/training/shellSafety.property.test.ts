/**
 * Property test: no parameter of any job template or connector reaches shell text. Every string parameter gets
 * random text drawn from shell metacharacters, quotes, newlines, `$()`, backticks, globbing and Unicode; the script
 * that would run must parse (`bash -n`), running it must never execute the payload, and the sbatch header must hold
 * exactly the lines it should.
 *
 * Running: the trainers (python, vllm, swift, curl, sbatch, …) are replaced by a PATH of shims that only exit 0;
 * `cd` is a no-op (an exported bash function) so every line of a script runs, whatever directory a value names.
 * The payload runs `loupe_canary`, a shim that creates the canary file: the file appearing means a value became code.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConnectionConfigSchema } from '../connectors';
import { LocalConnector } from '../connectors/local';
import { RayConnector } from '../connectors/ray';
import { SlurmSshConnector } from '../connectors/slurm';
import { SlurmRestConnector } from '../connectors/slurmRest';
import { ConnectorError, type JobSpec } from '../connectors/types';
import { templateToJobSpec } from './jobSpec';
import { buildTemplate, TEMPLATES, TemplateParamsError } from './templates';
import { setTimeout as sleep } from 'node:timers/promises';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-shellsafety-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const CANARY = path.join(tmp, 'canary');
const SHIMS = path.join(tmp, 'bin');
const WORK = path.join(tmp, 'work');
mkdirSync(SHIMS);
mkdirSync(WORK);
// Trainers and cluster tools: harmless. mkdir too, because a connector's remote command creates remoteDir (a random
// absolute path here, on a machine where tests may run as root).
for (const name of ['python', 'python3', 'vllm', 'swift', 'curl', 'hostname', 'shuf', 'ray', 'sbatch', 'mkdir', 'nvidia-smi', 'torchrun', 'accelerate']) {
  writeFileSync(path.join(SHIMS, name), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
}
writeFileSync(path.join(SHIMS, 'loupe_canary'), `#!/bin/sh\n: > '${CANARY}'\n`, { mode: 0o755 });
// The upstream files the templates call (run from WORK: cd is a no-op). The RL script has the placeholder lines the
// template patches with sed, and uses them as the upstream script does.
mkdirSync(path.join(WORK, 'scripts'));
writeFileSync(
  path.join(WORK, 'scripts', 'train_vlm_multi.sh'),
  ['working_dir=/placeholder', 'DATASET=/placeholder', 'testdata=/placeholder', 'rbuffer=${bsz:-512}', 'export WANDB_API_KEY=""', 'echo "$working_dir $DATASET $testdata $rbuffer" >/dev/null', ''].join('\n'),
);
mkdirSync(path.join(WORK, 'examples', 'agent'), { recursive: true });
for (const f of ['final_merged_v1v8_thinklite.sh', 'final_merged_v1v8_thinklite_32b.sh']) writeFileSync(path.join(WORK, 'examples', 'agent', f), 'exit 0\n');
mkdirSync(path.join(WORK, 'models', 'loupe-tiny'), { recursive: true });
writeFileSync(path.join(WORK, 'models', 'loupe-tiny', 'finetune.sh'), 'exit 0\n');

const baseEnv = (): Record<string, string> => ({
  PATH: `${SHIMS}:/usr/local/bin:/usr/bin:/bin`,
  HOME: tmp,
  LOUPE_REPO: WORK,
  'BASH_FUNC_cd%%': '() { :; }',
});

/** Run a script with the shims; returns bash's status and stderr. */
function runScript(script: string, env: Record<string, string> = {}, shell: 'bash' | 'sh' = 'bash', stdin?: string): { status: number | null; stderr: string } {
  const r = spawnSync(shell === 'bash' ? '/bin/bash' : '/bin/sh', ['-c', script], { cwd: WORK, env: { ...baseEnv(), ...env }, encoding: 'utf8', timeout: 20_000, ...(stdin !== undefined ? { input: stdin } : {}) });
  return { status: r.status, stderr: r.stderr };
}

function syntax(script: string): string {
  const r = spawnSync('/bin/bash', ['-n'], { input: script, encoding: 'utf8' });
  return r.status === 0 ? 'ok' : r.stderr;
}

function canaryFired(): boolean {
  const fired = existsSync(CANARY);
  rmSync(CANARY, { force: true });
  return fired;
}

// ───────── the hostile strings ─────────
const ATTACKS = [
  '$(loupe_canary)',
  '`loupe_canary`',
  ';loupe_canary;',
  '\nloupe_canary\n',
  '|loupe_canary',
  '&&loupe_canary',
  "'$(loupe_canary)'",
  '"$(loupe_canary)"',
  "';loupe_canary;'",
  '";loupe_canary;"',
  '\\";loupe_canary;#',
  '${IFS}$(loupe_canary)',
  '$(loupe_canary)#',
  ')\nloupe_canary\n(',
  '#\nloupe_canary',
  '\r\nloupe_canary\r\n',
  "x'\"`loupe_canary`\"'",
  '$((0))$(loupe_canary)',
  '#!/bin/sh\nloupe_canary',
  '\n#SBATCH --wrap=loupe_canary\nloupe_canary',
];
/** Six attacks without control characters, which every free-text parameter must accept and carry literally. */
const ONE_LINE_ATTACKS = ATTACKS.filter((a) => !/[\u0000-\u001f\u007f]/.test(a)).slice(0, 6);
const FRAGMENTS = [
  "'", '"', '`', '$', '(', ')', '{', '}', ';', '&', '|', '<', '>', '*', '?', '[', ']', '~', '!', '#', '\\', ' ', '\t', '\n', '\r',
  '%', '%j', ',', '=', '/', '..', '-', '--', 'a', 'Z', '0', 'é', '日本', '😀', '\u202e', '\u2028', '$HOME', '${x}', '$((1+1))', '*.py', 'loupe_canary',
];
/** Runs per property: modest by default (each run starts several processes); LOUPE_PROPERTY_RUNS=N for a deeper pass. */
const RUNS = (n: number): number => Math.max(1, Math.round(n * (Number(process.env['LOUPE_PROPERTY_RUNS'] ?? '0') / 100 || 1)));

const hostile = fc.oneof(
  fc.constantFrom(...ATTACKS),
  fc.array(fc.constantFrom(...FRAGMENTS, ...ATTACKS), { minLength: 1, maxLength: 10 }).map((a) => a.join('')),
);

// ───────── templates ─────────
type Json = Record<string, unknown>;
/** Dotted paths of every string (or string[]) parameter of a schema, from its JSON schema. */
function stringFields(schema: z.ZodType): Array<{ path: string[]; array: boolean }> {
  const out: Array<{ path: string[]; array: boolean }> = [];
  const walk = (s: Json, prefix: string[]): void => {
    for (const [k, raw] of Object.entries((s['properties'] ?? {}) as Record<string, Json>)) {
      const p = ((raw['anyOf'] as Json[] | undefined)?.find((x) => x['type'] !== 'null') ?? raw) as Json;
      if (p['type'] === 'object') walk(p, [...prefix, k]);
      else if (p['type'] === 'string' && !p['enum']) out.push({ path: [...prefix, k], array: false });
      else if (p['type'] === 'array' && (p['items'] as Json | undefined)?.['type'] === 'string' && !(p['items'] as Json)['enum']) out.push({ path: [...prefix, k], array: true });
    }
  };
  walk(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json, []);
  return out;
}

const REQUIRED: Record<string, Json> = {
  'pixel-reasoner-curiosity-rl': { trainver: 'data/train.parquet', testver: 'data/test.parquet' },
  'ms-swift-grpo-vsibench': { dataset: 'data/train.jsonl' },
  'pyvision-rl-grpo': { modelPath: 'ckpt/sft', trainFiles: ['data/train.parquet'] },
};

function setPath(o: Json, p: string[], v: unknown): void {
  let cur = o;
  for (const k of p.slice(0, -1)) cur = (cur[k] ??= {}) as Json;
  cur[p[p.length - 1] as string] = v;
}
function deletePath(o: Json, p: string[]): void {
  let cur: Json | undefined = o;
  for (const k of p.slice(0, -1)) cur = cur?.[k] as Json | undefined;
  if (cur) delete cur[p[p.length - 1] as string];
}

/**
 * Give every string field a hostile value; fields whose schema refuses it (a clear error naming the field, which is
 * also a safe outcome) fall back to their defaults, so the rest still reach the script. Returns the output and the
 * fields that were accepted with a hostile value.
 */
function buildHostile(id: string, values: string[]): { out: ReturnType<typeof buildTemplate>; accepted: string[] } {
  const t = TEMPLATES.find((x) => x.id === id);
  if (!t) throw new Error(id);
  const fields = stringFields(t.schema);
  const params: Json = structuredClone(REQUIRED[id] ?? {});
  fields.forEach((f, i) => setPath(params, f.path, f.array ? [values[i % values.length], values[(i + 1) % values.length]] : values[i % values.length]));
  let accepted = fields.map((f) => f.path.join('.'));
  for (let attempt = 0; attempt < fields.length + 1; attempt++) {
    try {
      return { out: buildTemplate(id, params), accepted };
    } catch (e) {
      if (!(e instanceof TemplateParamsError)) throw e;
      for (const issue of e.issues) {
        const f = fields.find((x) => issue.path === x.path.join('.') || issue.path.startsWith(`${x.path.join('.')}.`));
        // A refused value of a required field: use a plain one (the test is about the others).
        const plain = (REQUIRED[id] ?? {})[issue.path];
        if (f) {
          if (plain !== undefined) setPath(params, f.path, plain);
          else deletePath(params, f.path);
          accepted = accepted.filter((a) => a !== f.path.join('.'));
        } else throw e;
      }
    }
  }
  throw new Error(`${id}: could not build`);
}

describe('job templates never turn a parameter into shell code', () => {
  const accepted = new Map<string, Set<string>>();
  // custom-script's one text parameter IS the bash script ("runs exactly the script you type"): code by design.
  for (const t of TEMPLATES.filter((x) => x.id !== 'custom-script')) {
    it(`${t.id}: every string parameter, hostile`, () => {
      const seen = accepted.get(t.id) ?? new Set<string>();
      accepted.set(t.id, seen);
      fc.assert(
        fc.property(fc.array(hostile, { minLength: 6, maxLength: 6 }), (values) => {
          const { out, accepted: ok } = buildHostile(t.id, values);
          ok.forEach((f) => seen.add(f));
          const spec = templateToJobSpec(out, { name: 'prop', kind: 'local', extraEnv: { LOUPE_REPO: WORK } });
          expect(syntax(spec.script)).toBe('ok');
          const r = runScript(spec.script, spec.env ?? {});
          expect(canaryFired(), `payload ran\n${spec.script}`).toBe(false);
          expect(r.status, `${r.stderr}\n${spec.script}`).toBe(0);
          for (const s of out.services) {
            expect(syntax(s.script)).toBe('ok');
            runScript(s.script, spec.env ?? {});
            expect(canaryFired(), `payload ran in service ${s.name}\n${s.script}`).toBe(false);
          }
          // Ray runs the entrypoint through /bin/sh with the job's env_vars.
          const ray = templateToJobSpec(out, { name: 'prop', kind: 'ray', cwd: values[0] as string, extraEnv: { LOUPE_REPO: WORK } });
          runScript(ray.script, ray.env ?? {}, 'sh');
          expect(canaryFired(), `payload ran under ray\n${ray.script}`).toBe(false);
        }),
        // One fixed case of one-line attacks first: text parameters refuse control characters, so a random draw can
        // leave a field with no accepted hostile value in all its runs (it happened to trainFiles, whose two values
        // must both be one line), and the check below would then fail by chance.
        { numRuns: RUNS(10), examples: [[ONE_LINE_ATTACKS]] },
      );
    });
  }
  it('the free-text parameters named in the hardening issue take hostile values (the test above is not vacuous)', () => {
    // These hold paths and model ids: any text is a legitimate value, and the job must carry it literally.
    expect([...(accepted.get('verl-tool-pixel-reasoner-grpo') ?? [])]).toEqual(expect.arrayContaining(['model', 'trainFiles', 'dataPrep.localDir', 'repoDir']));
    expect([...(accepted.get('pixel-reasoner-curiosity-rl') ?? [])]).toEqual(expect.arrayContaining(['workDir', 'policy', 'repoDir']));
    expect([...(accepted.get('ms-swift-grpo-vsibench') ?? [])]).toEqual(expect.arrayContaining(['model', 'outputDir']));
  });
});

describe('connectors never turn a setting or spec field into shell code', () => {
  const body = 'echo body-ran\n';
  const specOf = (v: string[]): JobSpec => ({
    name: v[0] as string,
    script: body,
    env: { PLAIN: v[1] as string },
    cwd: v[2] as string,
    resources: { partition: v[3] as string, nodes: 1, cpus: 2 },
  });

  it('slurm-ssh: the sbatch header has exactly its lines, the script parses and no payload runs', () => {
    let built = 0;
    fc.assert(
      // Header fields are sometimes plain (so that scripts get built) and sometimes hostile (so that refusals are
      // tested); env values and SLURM_CONF are always hostile: they are quoted, never refused.
      fc.property(fc.array(hostile, { minLength: 6, maxLength: 6 }), fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }), fc.boolean(), (h, plain, fromConnector) => {
        const v = [plain[0] ? 'job-1' : h[0], h[1], plain[1] ? '/scratch/work' : `/${h[2]}`, plain[2] ? 'debug' : h[3], plain[3] ? 'scratch/out' : h[4], h[5]] as string[];
        let conn: SlurmSshConnector;
        try {
          conn = new SlurmSshConnector({ ssh: { host: '127.0.0.1', port: 1, username: 'x', privateKey: 'x', knownHosts: 'x' }, remoteDir: `/${v[4]}`, slurmConf: v[5] as string, ...(fromConnector ? { partition: v[3] as string } : {}) });
        } catch (e) {
          expect(e).toBeInstanceOf(ConnectorError);
          return;
        }
        const spec = specOf(v);
        if (fromConnector) delete spec.resources?.partition;
        let script: string;
        let cmd: { command: string; stdin: string };
        try {
          script = conn.buildScript(spec);
          cmd = conn.submitCommand(spec, script);
        } catch (e) {
          expect(e).toBeInstanceOf(ConnectorError);
          expect((e as ConnectorError).code).toBe('invalid');
          return;
        }
        built++;
        // sbatch reads #SBATCH lines up to the first line that is neither blank nor a comment (man sbatch).
        const lines = script.split('\n');
        const firstCommand = lines.findIndex((l, i) => i > 0 && l.trim() !== '' && !l.startsWith('#'));
        const header = lines.slice(0, firstCommand).filter((l) => l.startsWith('#SBATCH'));
        expect(header.map((l) => /^#SBATCH (--[a-z-]+)=/.exec(l)?.[1])).toEqual(['--job-name', '--output', '--partition', '--nodes', '--cpus-per-task', '--chdir']);
        // The header is the block right after the shebang, and the body is what the spec gave.
        expect(lines.slice(1, 7)).toEqual(header);
        expect(syntax(script)).toBe('ok');
        const r = runScript(script);
        expect(canaryFired(), `payload ran\n${script}`).toBe(false);
        expect(r.status, r.stderr).toBe(0);
        runScript(cmd.command, {}, 'bash', cmd.stdin);
        expect(canaryFired(), `payload ran in the remote command\n${cmd.command}`).toBe(false);
      }),
      // a fixed first case with every header field plain, so that at least one script is built whatever the draws
      { numRuns: RUNS(60), examples: [[ONE_LINE_ATTACKS, [true, true, true, true], false]] },
    );
    expect(built).toBeGreaterThan(0);
  });

  it('slurm-ssh and slurmrestd settings refuse line breaks and blanks where Slurm reads lines or words', () => {
    const ssh = { kind: 'slurm-ssh', name: 'c', host: 'h', user: 'u', keySecret: 'k', knownHosts: 'h ssh-ed25519 AAAA' };
    expect(ConnectionConfigSchema.safeParse({ ...ssh, remoteDir: '/scratch/jobs' }).success).toBe(true);
    expect(ConnectionConfigSchema.safeParse({ ...ssh, remoteDir: '/scratch/jobs\nloupe_canary' }).success).toBe(false);
    expect(ConnectionConfigSchema.safeParse({ ...ssh, remoteDir: '/scratch/jobs', partition: 'debug\n#SBATCH --wrap=x' }).success).toBe(false);
    expect(ConnectionConfigSchema.safeParse({ ...ssh, remoteDir: '/scratch/jobs', partition: 'debug' }).success).toBe(true);
    const rest = { kind: 'slurmrestd', name: 'r', baseUrl: 'http://127.0.0.1:6820', user: 'u', tokenSecret: 't' };
    expect(ConnectionConfigSchema.safeParse({ ...rest, outputDir: '/out\nx' }).success).toBe(false);
    expect(ConnectionConfigSchema.safeParse({ ...rest, outputDir: '/out', partition: 'a b' }).success).toBe(false);
  });

  it('slurmrestd: the script and environment travel as data; the script runs with them without running a payload', () => {
    fc.assert(
      fc.property(fc.array(hostile, { minLength: 6, maxLength: 6 }), (v) => {
        let conn: SlurmRestConnector;
        try {
          conn = new SlurmRestConnector({ baseUrl: 'http://127.0.0.1:1', user: 'u', token: async () => 't', outputDir: `/${v[4]}`, partition: v[3] as string });
        } catch (e) {
          expect(e).toBeInstanceOf(ConnectorError);
          return;
        }
        const spec = { ...specOf(v), script: 'printf "%s" "$PLAIN" >/dev/null\n' };
        let b: Record<string, unknown>;
        try {
          b = conn.submitBody(spec, 'v0.0.38');
        } catch (e) {
          expect(e).toBeInstanceOf(ConnectorError);
          return;
        }
        const job = b.job as { environment: Record<string, string>; partition?: string };
        expect(job.environment.PLAIN).toBe(v[1]);
        expect(b.script).toBe(`#!/bin/bash\n${spec.script}`);
        runScript(b.script as string, { PLAIN: job.environment.PLAIN as string });
        expect(canaryFired()).toBe(false);
      }),
      { numRuns: RUNS(40) },
    );
  });

  it('ray: the entrypoint (run by /bin/sh) never runs a payload from the working directory or env', async () => {
    const conn = new RayConnector({ baseUrl: 'http://127.0.0.1:1' });
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 6, maxLength: 6 }), async (v) => {
        const out = { templateId: 'x', script: 'printf "%s" "$PLAIN" >/dev/null\n', env: { PLAIN: v[1] as string }, files: [], services: [], resources: {}, metrics: { format: 'auto' as const }, notes: [] };
        const spec = templateToJobSpec(out, { name: 'prop', kind: 'ray', cwd: v[2] as string });
        const b = await conn.submitBody(spec);
        const envVars = (b.runtime_env as { env_vars: Record<string, string> }).env_vars;
        expect(envVars.PLAIN).toBe(v[1]);
        runScript(b.entrypoint as string, envVars, 'sh');
        expect(canaryFired()).toBe(false);
      }),
      { numRuns: RUNS(40) },
    );
  });

  it('local: a jobs folder whose name holds shell text still runs the job and records its exit code', async () => {
    await fc.assert(
      fc.asyncProperty(hostile, async (v) => {
        // One folder level under tmp: the name is hostile, the place is not.
        const name = v.replace(/[/\0]/g, '_').replace(/^\.\.?$/, '_dots');
        const root = path.join(tmp, 'local', name);
        const c = new LocalConnector({ root });
        const { id } = await c.submit({ name: 'prop', script: 'exit 3\n', env: { PATH: baseEnv().PATH as string } });
        const deadline = Date.now() + 10_000;
        let st = await c.status(id);
        while (st.state === 'running' && Date.now() < deadline) {
          await sleep(50);
          st = await c.status(id);
        }
        expect(canaryFired(), `payload ran for root ${JSON.stringify(root)}`).toBe(false);
        expect(st.exitCode, JSON.stringify(st)).toBe(3);
      }),
      { numRuns: RUNS(10) },
    );
  });
});

// The canary shim must itself work, or the assertions above prove nothing.
it('the canary fires when a payload does run', () => {
  runScript('echo $(loupe_canary)');
  expect(canaryFired()).toBe(true);
  chmodSync(path.join(SHIMS, 'loupe_canary'), 0o755);
});
