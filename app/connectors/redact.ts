/** Removing credentials from text before it is logged, shown or stored. */

/** Replace every occurrence of each secret (≥ 4 chars) with `***`; also masks `Bearer <x>` and `SLURM_JWT=<x>`. */
export function redactText(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const s of [...secrets].filter((x) => x && x.length >= 4).sort((a, b) => b.length - a.length)) {
    out = out.split(s).join('***');
  }
  return out
    .replace(/(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/g, '$1***')
    .replace(/(SLURM_JWT=)\S+/g, '$1***')
    .replace(/(X-SLURM-USER-TOKEN:\s*)\S+/gi, '$1***')
    .replace(/(ray-authentication-token=)[^;\s]+/g, '$1***');
}

/**
 * The forms a secret value may take in text we produce or get back: itself, its base64 (how the SSH connector
 * ships it), its JSON-escaped form (request bodies quoted in server errors) and, for multi-line values such as
 * keys, each line of 8 or more characters.
 */
export function secretForms(values: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const v of values) {
    if (!v) continue;
    out.add(v);
    out.add(Buffer.from(v, 'utf8').toString('base64'));
    out.add(JSON.stringify(v).slice(1, -1));
    for (const line of v.split(/\r?\n/)) if (line.trim().length >= 8) out.add(line);
  }
  return [...out];
}

/**
 * The same error with every listed secret masked in its message (and `detail`, for errors that carry one), so
 * that it can be shown, logged or stored in a job record. The class and `code` stay (a ConnectorError stays one).
 */
export function redactError<E>(e: E, secrets: readonly string[]): E {
  if (!(e instanceof Error) || !secrets.some((s) => s.length >= 4)) return e;
  const msg = redactText(e.message, secrets);
  const rec = e as Error & { detail?: unknown };
  const detail = typeof rec.detail === 'string' ? redactText(rec.detail, secrets) : rec.detail;
  if (msg === e.message && detail === rec.detail) return e;
  const copy = Object.create(Object.getPrototypeOf(e) as object) as Error & { detail?: unknown };
  Object.assign(copy, e);
  Object.defineProperty(copy, 'message', { value: msg, writable: true, configurable: true, enumerable: false });
  if (detail !== rec.detail) Object.defineProperty(copy, 'detail', { value: detail, writable: true, configurable: true, enumerable: true });
  copy.stack = `${e.name}: ${msg}`;
  return copy as E;
}

/** `scheme://user:password@host` → `scheme://user:***@host`, anywhere in the text (the user name stays: it is not a secret). */
export function redactUrlPasswords(text: string): string {
  return text.replace(/\b([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/\s:@?#]*):([^/\s@?#]*)@/g, (_m, scheme: string, user: string) => `${scheme}${user}:***@`);
}

/** A JSON-like value with every string passed through `redactUrlPasswords` (for records written to disk). */
export function redactUrlPasswordsDeep<T>(value: T): T {
  if (typeof value === 'string') return redactUrlPasswords(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => redactUrlPasswordsDeep(v)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactUrlPasswordsDeep(v)])) as T;
  return value;
}

/**
 * Bash that defines `loupe_redact`: a filter copying stdin to stdout line by line with every string in the
 * `loupe_forms` array replaced by `***`. Jobs' stored logs go through it (the local connector's output.log, the
 * Slurm output file), so a job that prints its secret does not leave it on disk. Pure bash (no other program
 * needs to exist where the job runs); `${line//"$s"/…}` with a quoted pattern matches the value literally.
 */
export const BASH_REDACT_FILTER = [
  'loupe_redact() {',
  '  local line s',
  '  while IFS= read -r line || [ -n "$line" ]; do',
  '    for s in "${loupe_forms[@]}"; do line=${line//"$s"/***}; done',
  "    printf '%s\\n' \"$line\"",
  '  done',
  '}',
].join('\n');

/**
 * Bash that fills `loupe_forms` from the named environment variables, with the forms `secretForms` lists for
 * values that leave this process (the value, its base64, each line of 8+ characters).
 */
export function bashSecretForms(varNames: readonly string[]): string {
  for (const n of varNames) if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) throw new Error(`bad environment variable name ${JSON.stringify(n)}`);
  return [
    'loupe_forms=()',
    `for loupe_n in ${varNames.join(' ')}; do`,
    '  loupe_v=${!loupe_n-}',
    '  [ ${#loupe_v} -ge 4 ] || continue',
    '  loupe_forms+=("$loupe_v" "$(printf \'%s\' "$loupe_v" | base64 | tr -d \'\\n\')")',
    '  while IFS= read -r loupe_l; do [ ${#loupe_l} -ge 8 ] && loupe_forms+=("$loupe_l"); done <<<"$loupe_v"',
    'done',
    'unset loupe_n loupe_v loupe_l',
  ].join('\n');
}
