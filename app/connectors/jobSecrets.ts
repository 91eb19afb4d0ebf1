/**
 * Job secrets: a job names entries of the SecretStore to expose as environment variables (WANDB_API_KEY, HF_TOKEN,
 * RAY_AUTH_TOKEN, …). This module resolves the names to values for `JobSpec.secretEnv` and lists what must be
 * redacted. Values never enter job records: those keep only the `{ ENV: storeKey }` map.
 */
import { secretForms } from './redact';
import type { SecretStore } from './secrets';
import { ConnectorError, type JobSpec } from './types';

export const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Names the backends set themselves or that would break the job's shell if replaced. */
const RESERVED = new Set(['PATH', 'HOME', 'SHELL', 'USER', 'LOGNAME', 'PWD', 'IFS', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'BASH_ENV', 'ENV', 'SLURM_CONF', 'LOUPE_JOB_ID', 'LOUPE_JOB_NAME']);

/** Throws ConnectorError('invalid') for a bad or reserved variable name. */
export function checkSecretEnvName(name: string, where: string): void {
  if (!ENV_NAME_RE.test(name)) throw new ConnectorError('invalid', where, `environment variable name ${JSON.stringify(name)} is not valid (letters, digits and _, not starting with a digit)`);
  if (RESERVED.has(name) || name.startsWith('SLURM_') || name.startsWith('BASH_FUNC_')) {
    throw new ConnectorError('invalid', where, `${name} cannot carry a secret (the job's shell or the scheduler sets it)`);
  }
}

/**
 * `{ ENV_NAME: storeKey }` → `{ ENV_NAME: value }`. Missing entries are one error naming all of them, so the user
 * can set them in one go.
 */
export async function resolveSecretEnv(store: SecretStore, refs: Record<string, string> | undefined, where = 'job secrets'): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const missing: string[] = [];
  for (const [env, key] of Object.entries(refs ?? {})) {
    checkSecretEnvName(env, where);
    const v = await store.get(key);
    if (v === undefined) missing.push(`${env} ← ${JSON.stringify(key)}`);
    else if (v.includes('\0')) throw new ConnectorError('invalid', where, `secret ${JSON.stringify(key)} contains a NUL byte and cannot be an environment variable`);
    else out[env] = v;
  }
  if (missing.length) {
    throw new ConnectorError('auth', where, `not in the secret store: ${missing.join(', ')}; set ${missing.length > 1 ? 'them' : 'it'} under Training → Connectors first`);
  }
  return out;
}

/** Validate `spec.secretEnv` for a connector (names, no clash with `env`). */
export function checkSecretEnv(spec: JobSpec, where: string): Array<[string, string]> {
  const entries = Object.entries(spec.secretEnv ?? {});
  for (const [k, v] of entries) {
    checkSecretEnvName(k, where);
    if (typeof v !== 'string') throw new ConnectorError('invalid', where, `secret ${k} has no string value`);
    if (spec.env && k in spec.env) throw new ConnectorError('invalid', where, `${k} is both a plain and a secret environment variable; keep only the secret`);
  }
  return entries;
}

/** Everything to mask for a spec's secrets (values and their base64 form). */
export function specSecretForms(spec: JobSpec): string[] {
  return secretForms(Object.values(spec.secretEnv ?? {}));
}
