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
