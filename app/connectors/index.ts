/**
 * Connection settings (no secrets inside: they name entries of a SecretStore) and the factory that builds a
 * Connector from them.
 */
import { z } from 'zod';
import { RemoteConnectorConfigSchema } from '../contract/domains/training';
import { LocalConnector } from './local';
import { RayConnector } from './ray';
import type { SecretStore } from './secrets';
import { SlurmSshConnector } from './slurm';
import { SlurmRestConnector, type TokenProvider } from './slurmRest';
import { ConnectorError, type Connector } from './types';

export * from './types';
export { pollFollow, followIterator, LineAssembler } from './follow';
export { LocalConnector } from './local';
export { SlurmSshConnector, mapSlurmState } from './slurm';
export { SlurmRestConnector, scontrolTokenProvider } from './slurmRest';
export { RayConnector, mapRayState } from './ray';
export { SshSession, shq } from './ssh';
export {
  EncryptedFileSecretStore,
  MemorySecretStore,
  SafeStorageSecretStore,
  openSecretStore,
  type SafeStorageAdapter,
  type SecretStore,
  type SecretStoreInfo,
} from './secrets';
export { redactText, redactError, secretForms } from './redact';
export { resolveSecretEnv, checkSecretEnv, specSecretForms } from './jobSecrets';

/** The built-in local connector's settings (a jobs folder on this machine). */
export const LocalConnectionSchema = z.object({ kind: z.literal('local'), name: z.string().min(1), root: z.string().min(1) });

/** Connection settings: the local one, or a remote one exactly as the contract declares it (one schema, no drift). */
export const ConnectionConfigSchema = z.discriminatedUnion('kind', [LocalConnectionSchema, ...RemoteConnectorConfigSchema.options]);
export type ConnectionConfig = z.infer<typeof ConnectionConfigSchema>;

async function need(secrets: SecretStore, name: string, what: string): Promise<string> {
  const v = await secrets.get(name);
  if (v === undefined) throw new ConnectorError('auth', what, `secret ${JSON.stringify(name)} is not in the secret store; set it in Settings → Connections`);
  return v;
}

export async function createConnector(input: unknown, secrets: SecretStore, log?: (line: string) => void): Promise<Connector> {
  const parsed = ConnectionConfigSchema.safeParse(input);
  if (!parsed.success) {
    throw new ConnectorError('invalid', 'connection settings', parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  }
  const c = parsed.data;
  switch (c.kind) {
    case 'local':
      return new LocalConnector({ root: c.root });
    case 'slurm-ssh':
      return new SlurmSshConnector({
        ssh: {
          host: c.host,
          port: c.port,
          username: c.user,
          privateKey: await need(secrets, c.keySecret, `connection ${c.name}`),
          ...(c.passphraseSecret ? { passphrase: await need(secrets, c.passphraseSecret, `connection ${c.name}`) } : {}),
          knownHosts: c.knownHosts,
        },
        remoteDir: c.remoteDir,
        ...(c.slurmConf ? { slurmConf: c.slurmConf } : {}),
        ...(c.partition ? { partition: c.partition } : {}),
      });
    case 'slurmrestd': {
      const token: TokenProvider = () => need(secrets, c.tokenSecret, `connection ${c.name}`);
      return new SlurmRestConnector({
        baseUrl: c.baseUrl,
        user: c.user,
        token,
        outputDir: c.outputDir,
        ...(c.partition ? { partition: c.partition } : {}),
        ...(c.apiVersion ? { apiVersion: c.apiVersion } : {}),
      });
    }
    case 'ray':
      return new RayConnector({
        baseUrl: c.baseUrl,
        ...(c.tokenSecret ? { token: await need(secrets, c.tokenSecret, `connection ${c.name}`) } : {}),
        followMode: c.followMode,
        ...(log ? { log } : {}),
      });
  }
}
