/**
 * slurmrestd and Slurm arrays: a job spec that asks for an array is refused with a clear error before anything is
 * sent (the token is never even asked for), instead of running one task where n were asked.
 */
import { expect, it } from 'vitest';
import { SlurmRestConnector } from '../../../app/connectors/slurmRest';
import { closedPort } from '../../support/ports';

it('refuses an array job, naming the connector to use instead, and sends nothing', async () => {
  let tokens = 0;
  const c = new SlurmRestConnector({
    baseUrl: `http://127.0.0.1:${await closedPort()}`,
    user: 'u',
    outputDir: '/cluster/out',
    apiVersion: 'v0.0.40',
    token: async () => {
      tokens++;
      return 't';
    },
  });
  await expect(c.submit({ name: 'loupe-sweep-x', script: 'echo hi', resources: { array: '0-3' } })).rejects.toThrow(/array jobs \("0-3"\) are not supported through slurmrestd; use a Slurm connector over SSH \(slurm-ssh\)/);
  expect(tokens).toBe(0);
  // Without an array the same connector goes to the network (and says it cannot reach it): the refusal is the array's.
  await expect(c.submit({ name: 'plain', script: 'echo hi' })).rejects.toThrow();
  expect(tokens).toBeGreaterThan(0);
});
