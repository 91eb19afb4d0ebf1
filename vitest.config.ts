import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Two groups. Most files run two at a time (vitest's default on a 2-core machine is one: cores - 1); many of them
 * wait on child processes, servers and Python, so a second fork fills the idle core. The files that submit jobs to
 * the one local Slurm node or hold its sshd run afterwards, one at a time, so their jobs never queue behind each
 * other's. LOUPE_TEST_WORKERS overrides the first group's count (1 gives the old serial order).
 */
const SERVICES = [
  'tests/integration/cluster/**/*.test.ts',
  'tests/integration/connectors/job-secrets.test.ts',
  'tests/integration/connectors/local.test.ts',
  'tests/integration/connectors/slurm-ssh.test.ts',
  'tests/integration/connectors/slurmrestd.test.ts',
];
const workers = Number(process.env.LOUPE_TEST_WORKERS) || Math.max(2, os.availableParallelism() - 1);

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default', './tests/support/fileTrail.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['app/**/*.test.ts', 'native/**/*.test.ts', 'main/**/*.test.ts', 'tests/unit/**/*.test.ts', 'tests/integration/**/*.test.ts'],
          exclude: ['**/node_modules/**', ...SERVICES],
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'services',
          include: SERVICES,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
