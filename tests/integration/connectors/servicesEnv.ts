/**
 * Reads the env file written by `ci/services-up.sh` (real Slurm, slurmrestd and sshd on 127.0.0.1).
 * Location: $LOUPE_CI_ENV, else <tmpdir>/loupe-ci/services.env. When absent, the suites skip and say why.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface ServicesEnv {
  slurmConf: string;
  jobsDir: string;
  partition: string;
  restUrl: string;
  restUser: string;
  restTokenFile: string;
  sshHost: string;
  sshPort: number;
  sshUser: string;
  sshKey: string;
  knownHosts: string;
}

export const servicesEnvFile = process.env.LOUPE_CI_ENV ?? path.join(os.tmpdir(), 'loupe-ci', 'services.env');

export function loadServicesEnv(): ServicesEnv | null {
  if (!existsSync(servicesEnvFile)) {
    console.warn(`[connectors] SKIP real-service tests: ${servicesEnvFile} not found; run \`bash ci/services-up.sh\` (as root) first`);
    return null;
  }
  const kv: Record<string, string> = {};
  for (const line of readFileSync(servicesEnvFile, 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) kv[m[1] as string] = m[2] as string;
  }
  const need = (k: string): string => {
    const v = kv[k];
    if (!v) throw new Error(`${servicesEnvFile} lacks ${k}; re-run ci/services-up.sh`);
    return v;
  };
  return {
    slurmConf: need('LOUPE_SLURM_CONF'),
    jobsDir: need('LOUPE_SLURM_JOBS_DIR'),
    partition: need('LOUPE_SLURM_PARTITION'),
    restUrl: need('LOUPE_SLURM_REST_URL'),
    restUser: need('LOUPE_SLURM_REST_USER'),
    restTokenFile: need('LOUPE_SLURM_REST_TOKEN_FILE'),
    sshHost: need('LOUPE_SSH_HOST'),
    sshPort: Number(need('LOUPE_SSH_PORT')),
    sshUser: need('LOUPE_SSH_USER'),
    sshKey: need('LOUPE_SSH_KEY'),
    knownHosts: need('LOUPE_SSH_KNOWN_HOSTS'),
  };
}

/** A bash body printing verl console-logger lines (as concat_dict_to_str + pprint would), `steps` of them. */
export function verlMetricsScript(steps: number, sleepS = 0.2): string {
  return [
    'echo "starting fake verl trainer on $(hostname)"',
    `for s in $(seq 1 ${steps}); do`,
    '  score=$(awk -v s=$s "BEGIN{printf \\"%.4f\\", 0.2 + 0.05*s}")',
    '  echo "step:$s - training/global_step:$s - actor/pg_loss:np.float64(-0.00$s) - critic/score/mean:np.float64($score) - response_length/mean:31$s.5 - actor/grad_norm:inf"',
    `  sleep ${sleepS}`,
    'done',
    'echo "training finished"',
  ].join('\n');
}
