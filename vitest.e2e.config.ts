import { defineConfig } from 'vitest/config';

// e2e: real app process + real Chromium; one file at a time (2 cores), generous timeouts.
export default defineConfig({
  test: {
    include: ['tests/e2e/**/*.e2e.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default', './tests/support/fileTrail.ts'],
  },
});
