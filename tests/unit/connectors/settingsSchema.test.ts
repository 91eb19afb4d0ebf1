import { describe, expect, it } from 'vitest';
import { ConnectionConfigSchema } from '../../../app/connectors';
import { RemoteConnectorConfigSchema } from '../../../app/contract';

const rest = { kind: 'slurmrestd', name: 'rest', baseUrl: 'http://127.0.0.1:6820', user: 'alice', tokenSecret: 'slurm/jwt', outputDir: '/scratch/jobs', apiVersion: 'v0.0.40' } as const;

describe('connection settings: one schema', () => {
  it('keeps apiVersion through the contract (what connectors.json is read with) and the connector factory', () => {
    expect(RemoteConnectorConfigSchema.parse(rest)).toMatchObject({ apiVersion: 'v0.0.40' });
    expect(ConnectionConfigSchema.parse(rest)).toMatchObject({ apiVersion: 'v0.0.40' });
    expect(RemoteConnectorConfigSchema.safeParse({ ...rest, apiVersion: 'latest' }).success).toBe(false);
  });
  it('the factory accepts exactly the contract’s remote kinds plus local', () => {
    expect(ConnectionConfigSchema.options.map((o) => o.shape.kind.value).sort()).toEqual(['local', ...RemoteConnectorConfigSchema.options.map((o) => o.shape.kind.value)].sort());
    expect(ConnectionConfigSchema.parse({ kind: 'local', name: 'local', root: '/tmp/jobs' })).toEqual({ kind: 'local', name: 'local', root: '/tmp/jobs' });
  });
});
