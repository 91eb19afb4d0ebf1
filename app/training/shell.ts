/** Small helpers to emit bash safely. */

/** Single-quote for bash. */
export function q(s: string | number | boolean): string {
  const t = String(s);
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(t) ? t : `'${t.replace(/'/g, `'\\''`)}'`;
}

/** `export K=V` lines. */
export function exportLines(env: Record<string, string | number | boolean>): string[] {
  return Object.entries(env).map(([k, v]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`bad environment variable name ${JSON.stringify(k)}`);
    return `export ${k}=${q(v)}`;
  });
}

/** A command with one argument per continuation line. */
export function multiline(cmd: string, args: Array<string | [string, string | number | boolean]>): string {
  const parts = args.map((a) => (Array.isArray(a) ? `${a[0]} ${q(a[1])}` : a));
  return [cmd, ...parts].join(' \\\n    ');
}

/**
 * A hydra list override as ONE shell word, e.g. `data.train_files=[/abs/a.parquet,$PWD/rel/b.parquet]`: every
 * value is single-quoted, relative paths are prefixed with the job's working directory through `"$PWD"`, and the
 * brackets are quoted too (unquoted `[...]` is a glob pattern to bash).
 */
export function hydraPathList(key: string, paths: readonly string[]): string {
  const items = paths.map((x) => (x.startsWith('/') ? `'${x.replace(/'/g, `'\\''`)}'` : `"$PWD"/'${x.replace(/'/g, `'\\''`)}'`));
  return `'${key}=['${items.join("','")}']'`;
}

/** Python bool literal for hydra/fire overrides. */
export function pyBool(b: boolean): 'True' | 'False' {
  return b ? 'True' : 'False';
}

/** Numbers as trainers' configs write them: small values in exponent form (1e-6, not 0.000001). */
export function num(x: number): string {
  return x !== 0 && Math.abs(x) < 1e-3 ? x.toExponential() : String(x);
}
