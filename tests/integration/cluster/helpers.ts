/** Shared pieces of the cluster suites: the CI Slurm connector through the CI sshd, and a cuttable TCP proxy. */
import { readFileSync } from 'node:fs';
import { SlurmSshConnector } from '../../../app/connectors/slurm';
import type { ServicesEnv } from '../connectors/servicesEnv';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { Core } from '../../../main/core';
export { startProxy } from '../../support/tcpProxy';

/** The CI cluster through the CI sshd (optionally through another port, e.g. a proxy's). */
export function ciSlurm(e: ServicesEnv, remoteDir: string, over: { port?: number } = {}): SlurmSshConnector {
  const port = over.port ?? e.sshPort;
  // Through a proxy the host key is the same, listed under the proxy's port.
  const knownHosts = readFileSync(e.knownHosts, 'utf8').split(`[${e.sshHost}]:${e.sshPort}`).join(`[${e.sshHost}]:${port}`);
  return new SlurmSshConnector({
    ssh: { host: e.sshHost, port, username: e.sshUser, privateKey: readFileSync(e.sshKey, 'utf8'), knownHosts, readyTimeoutMs: 10_000, keepaliveMs: 1000 },
    remoteDir,
    slurmConf: e.slurmConf,
    partition: e.partition,
  });
}

/** Poll `cond` until true or `ms` pass; resolves with how long it took (rejects on timeout, naming `what`). */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms: number): Promise<number> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
  return Date.now() - t0;
}

/** Save the CI cluster as a slurm-ssh connector of a workspace, as the Training page's Connectors form does. */
export async function saveCiConnector(core: Core, e: ServicesEnv, name: string, remoteDir: string): Promise<void> {
  const key = await core.dispatch('training:secretSet', { name: `${name}-key`, value: readFileSync(e.sshKey, 'utf8') });
  expect(key.ok, JSON.stringify(key)).toBe(true);
  const r = await core.dispatch('training:connectorSave', {
    config: { kind: 'slurm-ssh', name, host: e.sshHost, port: e.sshPort, user: e.sshUser, keySecret: `${name}-key`, knownHosts: readFileSync(e.knownHosts, 'utf8').trim(), remoteDir, slurmConf: e.slurmConf, partition: e.partition },
  });
  expect(r.ok, JSON.stringify(r)).toBe(true);
}

