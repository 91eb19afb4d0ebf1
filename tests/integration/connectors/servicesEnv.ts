/**
 * Reads the env file written by `ci/services-up.sh` (real Slurm, slurmrestd and sshd on 127.0.0.1).
 * Location: $LOUPE_CI_ENV, else <tmpdir>/loupe-ci/services.env. When absent, or when the services it names do not
 * answer, the suites say why in one line and skip — or fail under CI=true, since `npm test` starts them
 * (tests/support/requirements.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Requirement } from '../../support/requirements';

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

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** Why the real services are missing, set by `loadServicesEnv` when it returns null. */
export const SERVICES: Requirement = {
  what: 'real Slurm, slurmrestd and sshd',
  reason: '',
  provisioned: true,
};

export function loadServicesEnv(): ServicesEnv | null {
  if (!existsSync(servicesEnvFile)) {
    SERVICES.reason = `${servicesEnvFile} not found; \`npm test\` starts them, or run \`sudo bash ci/services-up.sh\``;
    return null;
  }
  // A stale env file (services stopped since) is a missing service, not a crash in the middle of a suite.
  const check = spawnSync('bash', [path.join(ROOT, 'ci', 'services-up.sh'), '--check'], { encoding: 'utf8', timeout: 30_000 });
  if (check.status !== 0) {
    SERVICES.reason = `${servicesEnvFile} exists but the services do not answer; \`npm test\` starts them, or run \`sudo bash ci/services-up.sh\``;
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
