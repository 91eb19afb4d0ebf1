/**
 * Job secrets for the training service: resolve `{ ENV: storeKey }` at submit, submit
 * with errors redacted, and mask the values in the job output the UI shows.
 */
import { redactError, redactText, resolveSecretEnv, secretForms, type Connector, type JobSpec, type SecretStore, type SubmitResult } from '../connectors';

/** Resolve the job's secrets into `spec.secretEnv` and submit; any error comes back with the values masked. */
export async function submitWithSecrets(conn: Connector, spec: JobSpec, store: SecretStore, refs: Record<string, string> | undefined): Promise<SubmitResult> {
  if (!refs || !Object.keys(refs).length) return conn.submit(spec);
  const secretEnv = await resolveSecretEnv(store, refs, 'training:submit');
  const hide = secretForms(Object.values(secretEnv));
  try {
    return await conn.submit({ ...spec, secretEnv });
  } catch (e) {
    throw redactError(e, hide);
  }
}

/** The forms to mask in a job's output (best effort: a secret deleted since submit cannot be masked). */
export async function jobSecretEnv(store: SecretStore, refs: Record<string, string> | undefined): Promise<string[]> {
  const values: string[] = [];
  for (const key of Object.values(refs ?? {})) {
    const v = await store.get(key).catch(() => undefined);
    if (v) values.push(v);
  }
  return secretForms(values);
}

export function redactJobText(text: string, hide: readonly string[]): string {
  return hide.length ? redactText(text, hide) : text;
}
