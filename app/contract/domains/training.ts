/**
 * Training: job templates (parameter forms derived from the templates' zod schemas), connectors per workspace
 * (local always; Slurm over SSH, slurmrestd, Ray), secrets (write-only through the contract), jobs, live logs,
 * parsed metrics and checkpoints. The core keeps job records in `<workspace>/training/jobs.jsonl`.
 */
import { z } from 'zod';
import { Empty } from '../common';

/** One form field of a template, flattened (nested objects become dotted names like `dataPrep.enabled`). */
export const TemplateFieldSchema = z.object({
  /** Dotted path into the parameter object. */
  name: z.string(),
  type: z.enum(['string', 'text', 'number', 'integer', 'boolean', 'enum', 'string[]', 'enum[]']),
  /** JSON default from the template's schema (seeded from the upstream launch scripts); absent = no default. */
  default: z.unknown().optional(),
  /** True when the field has no default and must be given. */
  required: z.boolean(),
  /** `null` is a valid value (e.g. `filterLen` off). */
  nullable: z.boolean(),
  description: z.string().optional(),
  min: z.number().optional(),
  max: z.number().optional(),
  /** `min`/`max` exclude the bound. */
  exclusiveMin: z.boolean().optional(),
  /** Allowed values for enum / enum[] fields. */
  options: z.array(z.string()).optional(),
  pattern: z.string().optional(),
});
export type TemplateField = z.infer<typeof TemplateFieldSchema>;

export const TemplateInfoSchema = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string(),
  /** Where the defaults come from. */
  source: z.string(),
  /** False when what the template launches is not shipped with this build (the page says so before submit). */
  available: z.boolean(),
  /** Why it is unavailable, or what to know first. */
  notice: z.string().optional(),
  /** When unavailable: the reason in a few words, for the template list ("torch is missing", "not in this build"). */
  unavailableReason: z.string().optional(),
  fields: z.array(TemplateFieldSchema),
});
export type TemplateInfo = z.infer<typeof TemplateInfoSchema>;

export const FieldIssueSchema = z.object({ path: z.string(), message: z.string() });
export type FieldIssue = z.infer<typeof FieldIssueSchema>;

/** The job a template produces for one connector, shown before submit. */
export const RenderedJobSchema = z.object({
  templateId: z.string(),
  /** The exact bash body the connector receives (extra files inlined as heredocs). */
  script: z.string(),
  env: z.record(z.string(), z.string()),
  files: z.array(z.object({ path: z.string(), chars: z.number().int() })),
  services: z.array(z.object({ name: z.string(), note: z.string(), script: z.string() })),
  notes: z.array(z.string()),
  resources: z.record(z.string(), z.union([z.number(), z.string()])),
  metricsFormat: z.string(),
});
export type RenderedJob = z.infer<typeof RenderedJobSchema>;

export const RenderResultSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), job: RenderedJobSchema }),
  /** Each problem names its field (dotted path) so the form can put it next to the input. */
  z.object({ ok: z.literal(false), issues: z.array(FieldIssueSchema) }),
]);
export type RenderResult = z.infer<typeof RenderResultSchema>;

/**
 * Text fields of connector forms say what is wrong in words (`host is required`), never zod's own text
 * (`Invalid input: expected string, received undefined`): the messages go next to the field as they are.
 */
const text = (what: string) => z.string({ error: (iss) => (iss.input === undefined || iss.input === null ? `${what} is required` : `${what} must be text`) });
const requiredText = (what: string) => text(what).min(1, `${what} is required`);
const url = (what: string, example: string) =>
  z.url({ protocol: /^https?$/, error: (iss) => (iss.input === undefined || iss.input === '' ? `${what} is required` : `${what} must be a URL such as ${example}`) });
const secretName = (what: string) => text(what).min(1, `${what} is required`).regex(/^[A-Za-z0-9._:/@-]{1,200}$/, `${what}: use 1-200 letters, digits and . _ : / @ -`);
const ConnName = text('name').min(1, 'name is required').regex(/^[A-Za-z0-9._-]{1,64}$/, 'connector names use 1-64 letters, digits, ".", "_" and "-"');
const SecretName = secretName('secret name');
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names use letters, digits and _, not starting with a digit');
/** Job secrets: environment variable → secret-store name (values never cross the contract or enter job records). */
const SecretEnvSchema = z.record(EnvName, SecretName);

/** Which secret store the core uses. */
export const SecretStoreInfoSchema = z.object({
  kind: z.enum(['os-keychain', 'encrypted-file']),
  /** `OS keychain (Electron safeStorage)` or `encrypted file (browser mode)`. */
  label: z.string(),
  /** Why the encrypted file is used in Electron, or which keychain backs safeStorage. */
  note: z.string().optional(),
});
export type SecretStoreInfo = z.infer<typeof SecretStoreInfoSchema>;

/**
 * A directory on a cluster that Loupe writes into `#SBATCH` lines and job settings: absolute, one word, no control
 * characters (a line break would add lines to the batch script) and no `%` (sbatch expands `%j`, `%u`… in file
 * names, so the log would not be where Loupe looks).
 */
export const clusterDirSchema = (what: string) =>
  requiredText(what)
    .regex(/^\//, `${what} must be an absolute path on the cluster`)
    .regex(/^[^\s\u0000-\u001f\u007f%]*$/, `${what} must be one word: no spaces, line breaks, control characters or %`);
/** A Slurm partition, or a comma-separated list of them (`#SBATCH --partition=` takes one word). */
export const SlurmPartitionSchema = text('partition').regex(/^[A-Za-z0-9._-]+(?:,[A-Za-z0-9._-]+)*$/, 'a partition name (letters, digits, . _ -; several separated by commas)');

/**
 * Remote connector settings. Secrets are referenced by name, never included. (`local` is built in.) The one schema
 * of connection settings: app/connectors builds its ConnectionConfigSchema from it.
 */
export const RemoteConnectorConfigSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('slurm-ssh'),
    name: ConnName,
    host: requiredText('host'),
    port: z.number({ error: 'port must be a whole number from 1 to 65535' }).int('port must be a whole number from 1 to 65535').min(1, 'port must be from 1 to 65535').max(65535, 'port must be from 1 to 65535').default(22),
    user: requiredText('user'),
    /** Secret holding the private key text. */
    keySecret: secretName('key secret name'),
    passphraseSecret: secretName('passphrase secret name').optional(),
    /** known_hosts line(s) for the host (public data). */
    knownHosts: text('known_hosts line').min(1, 'paste the host line from known_hosts (ssh-keyscan -p PORT HOST)'),
    remoteDir: clusterDirSchema('remote job folder'),
    slurmConf: z.string().optional(),
    partition: SlurmPartitionSchema.optional(),
  }),
  z.object({
    kind: z.literal('slurmrestd'),
    name: ConnName,
    baseUrl: url('slurmrestd URL', 'http://head:6820'),
    user: requiredText('user'),
    tokenSecret: secretName('JWT secret name'),
    outputDir: clusterDirSchema('output folder'),
    partition: SlurmPartitionSchema.optional(),
    /** slurmrestd API version to speak (e.g. `v0.0.40`; default: the newest the server offers). */
    apiVersion: z.string().regex(/^v0\.0\.\d+$/, 'apiVersion looks like v0.0.40').optional(),
  }),
  z.object({
    kind: z.literal('ray'),
    name: ConnName,
    baseUrl: url('Ray dashboard URL', 'http://head:8265'),
    tokenSecret: secretName('token secret name').optional(),
    followMode: z.enum(['ws', 'poll']).default('ws'),
  }),
]);
export type RemoteConnectorConfig = z.infer<typeof RemoteConnectorConfigSchema>;

export const ConnectorInfoSchema = z.object({
  name: z.string(),
  kind: z.enum(['local', 'slurm-ssh', 'slurmrestd', 'ray']),
  /** One line for the picker, e.g. `root@127.0.0.1:2222 → /scratch/jobs`. */
  summary: z.string(),
  /** Null for the built-in local connector. */
  config: RemoteConnectorConfigSchema.nullable(),
  /** Referenced secrets that are not in the store yet. */
  missingSecrets: z.array(z.string()),
});
export type ConnectorInfo = z.infer<typeof ConnectorInfoSchema>;

export const ConnectorListSchema = z.object({
  connectors: z.array(ConnectorInfoSchema),
  /** Names of stored secrets (never values). */
  secrets: z.array(z.string()),
  secretStore: SecretStoreInfoSchema.optional(),
});
export type ConnectorList = z.infer<typeof ConnectorListSchema>;

export const JobStateSchema = z.enum(['pending', 'running', 'succeeded', 'failed', 'cancelled', 'unknown']);
export type TrainingJobState = z.infer<typeof JobStateSchema>;

/** A job as Loupe records it (one line per change in `training/jobs.jsonl`; the last line per key wins). */
export const TrainingJobSchema = z.object({
  /** `<connector>/<backend id>`: unique across connectors. */
  key: z.string(),
  /** The backend's id (local-…, Slurm job id, Ray submission id). */
  id: z.string(),
  name: z.string(),
  connector: z.string(),
  connectorKind: z.enum(['local', 'slurm-ssh', 'slurmrestd', 'ray']),
  templateId: z.string(),
  templateTitle: z.string(),
  params: z.record(z.string(), z.unknown()),
  metricsFormat: z.string(),
  state: JobStateSchema,
  rawState: z.string(),
  message: z.string().optional(),
  exitCode: z.number().int().nullable().optional(),
  /** ISO times. */
  submittedAt: z.string(),
  endedAt: z.string().optional(),
  /** Checkpoint paths seen in the log (on the machine that ran the job). */
  checkpoints: z.array(z.string()),
  /** Secret environment variables the job got: ENV → secret-store name (names only). */
  secretEnv: SecretEnvSchema.optional(),
});
export type TrainingJob = z.infer<typeof TrainingJobSchema>;

/** One parsed step. Non-finite values (nan, inf) cross as null. */
export const MetricPointSchema = z.object({ step: z.number(), metrics: z.record(z.string(), z.number().nullable()) });
export type TrainingMetricPoint = z.infer<typeof MetricPointSchema>;

/** What the job view needs on open: the record, the log tail so far and every metric point so far. */
export const JobSnapshotSchema = z.object({
  job: TrainingJobSchema,
  log: z.string(),
  /** Byte offset after `log`; `training:log` events ending at or before it are already included. */
  logOffset: z.number().int(),
  /** Earlier log text was dropped from memory (the full log stays on the backend). */
  logTruncated: z.boolean(),
  points: z.array(MetricPointSchema),
  /** True while the core follows the job (events will arrive). */
  following: z.boolean(),
});
export type JobSnapshot = z.infer<typeof JobSnapshotSchema>;

const JobKey = z.object({ key: z.string().min(1) });

export const trainingCalls = {
  /** recheck: look again for what a template needs on this machine (the Training page's "Check again"). */
  'training:templates': { req: z.object({ recheck: z.boolean().optional() }), res: z.object({ templates: z.array(TemplateInfoSchema) }) },
  /** Validate parameters and show the job (script, env, notes) for a connector kind. */
  'training:render': {
    req: z.object({ templateId: z.string(), params: z.record(z.string(), z.unknown()), connector: z.string().default('local') }),
    res: RenderResultSchema,
  },
  'training:connectors': { req: Empty, res: ConnectorListSchema },
  'training:connectorSave': { req: z.object({ config: RemoteConnectorConfigSchema }), res: ConnectorListSchema },
  'training:connectorDelete': { req: z.object({ name: z.string() }), res: ConnectorListSchema },
  /** Reach the backend and authenticate; `ok: false` carries the reason. */
  'training:connectorProbe': { req: z.object({ name: z.string() }), res: z.object({ ok: z.boolean(), message: z.string() }) },
  /** Store a secret (encrypted); the value never comes back through the contract. */
  'training:secretSet': { req: z.object({ name: SecretName, value: z.string().min(1, 'the secret is empty') }), res: ConnectorListSchema },
  /** Remove a stored secret by name (the one secret store; the Settings page's Keys). */
  'training:secretDelete': { req: z.object({ name: SecretName }), res: ConnectorListSchema },
  'training:submit': {
    req: z.object({
      templateId: z.string(),
      params: z.record(z.string(), z.unknown()),
      connector: z.string().default('local'),
      /** Job name (A-Z a-z 0-9 . _ -); default: the template id. */
      name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'job names use 1-64 letters, digits, ".", "_" and "-"').optional(),
      /** Secrets to expose to the job as environment variables (e.g. `{ WANDB_API_KEY: "wandb/key" }`). */
      secretEnv: SecretEnvSchema.optional(),
    }),
    res: TrainingJobSchema,
  },
  /** Every recorded job, newest first; live states refreshed from the backends where reachable. */
  /** Every job of the workspace; `issues` names lines of jobs.jsonl that were skipped (torn or not a job record). */
  'training:jobs': { req: Empty, res: z.object({ jobs: z.array(TrainingJobSchema), issues: z.array(z.string()).optional() }) },
  /** Open a job: starts following it when it is not finished; returns what is known so far. */
  'training:open': { req: JobKey, res: JobSnapshotSchema },
  'training:cancel': { req: JobKey, res: TrainingJobSchema },
  /** The command that evaluates a checkpoint with `loupe eval` (shown, not run). */
  'training:evalCommand': {
    req: z.object({ key: z.string(), checkpoint: z.string().min(1), bench: z.string().default('vstar') }),
    res: z.object({ command: z.string(), note: z.string() }),
  },
} as const;

export const trainingEvents = {
  /** Whole log lines from `offset` to `nextOffset` (bytes). */
  'training:log': z.object({ key: z.string(), text: z.string(), offset: z.number().int(), nextOffset: z.number().int() }),
  'training:metric': z.object({ key: z.string(), points: z.array(MetricPointSchema) }),
  'training:state': TrainingJobSchema,
  'training:checkpoint': z.object({ key: z.string(), path: z.string() }),
} as const;
