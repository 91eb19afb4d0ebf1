import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { checkSecretEnv, resolveSecretEnv, specSecretForms } from './jobSecrets';
import { RayConnector } from './ray';
import { redactError } from './redact';
import { MemorySecretStore } from './secrets';
import { SlurmSshConnector } from './slurm';
import { SlurmRestConnector } from './slurmRest';
import { SshSession } from './ssh';
import { ConnectorError, type JobSpec } from './types';

const VALUE = "wandb_'q' $X\nline2";
const spec: JobSpec = { name: 'j', script: 'echo hi', env: { PLAIN: 'p' }, secretEnv: { WANDB_API_KEY: VALUE } };

describe('resolveSecretEnv', () => {
  it('maps ENV → store key to values, and names every missing key at once', async () => {
    const s = new MemorySecretStore();
    await s.set('wandb/key', 'w-123456');
    await s.set('hf', 'hf_abcdef');
    expect(await resolveSecretEnv(s, { WANDB_API_KEY: 'wandb/key', HF_TOKEN: 'hf' })).toEqual({ WANDB_API_KEY: 'w-123456', HF_TOKEN: 'hf_abcdef' });
    expect(await resolveSecretEnv(s, undefined)).toEqual({});
    await expect(resolveSecretEnv(s, { A: 'nope', B: 'nope2', HF_TOKEN: 'hf' })).rejects.toThrow(/not in the secret store: A ← "nope", B ← "nope2"; set them/);
    await expect(resolveSecretEnv(s, { '1BAD': 'hf' })).rejects.toThrow(/not valid/);
    await expect(resolveSecretEnv(s, { SLURM_JOB_ID: 'hf' })).rejects.toThrow(/cannot carry a secret/);
  });

  it('checkSecretEnv refuses a name that is both plain and secret', () => {
    expect(() => checkSecretEnv({ ...spec, env: { WANDB_API_KEY: 'x' } }, 'w')).toThrow(/both a plain and a secret/);
    expect(checkSecretEnv(spec, 'w')).toEqual([['WANDB_API_KEY', VALUE]]);
  });
});

describe('what each connector sends', () => {
  it('slurm-ssh: the value is neither in the command nor in the script; stdin starts with its base64 line', () => {
    const c = new SlurmSshConnector({ ssh: new SshSession({ host: 'h', username: 'u', privateKey: 'k', acceptAnyHostKey: true }), remoteDir: '/r', slurmConf: '/etc/slurm.conf' });
    const script = c.buildScript(spec);
    const { command, stdin } = c.submitCommand(spec, script);
    expect(script).toContain("export PLAIN='p'");
    expect(script).not.toContain('wandb_');
    expect(command).not.toContain('wandb_');
    expect(command).not.toContain(Buffer.from(VALUE).toString('base64'));
    expect(command).toMatch(/export WANDB_API_KEY=.*sbatch --parsable --export=ALL/);
    expect(stdin).toBe(`${Buffer.from(VALUE).toString('base64')}\n${script}`);
  });

  it('slurmrestd: the value goes in job.environment (object for v0.0.38, K=V list later), not in the script', () => {
    const c = new SlurmRestConnector({ baseUrl: 'http://127.0.0.1:1', user: 'u', token: async () => 't', outputDir: '/o' });
    const b38 = c.submitBody(spec, 'v0.0.38') as { script: string; job: { environment: Record<string, string> } };
    expect(b38.job.environment.WANDB_API_KEY).toBe(VALUE);
    expect(b38.script).not.toContain('wandb_');
    const b40 = c.submitBody(spec, 'v0.0.40') as { job: { environment: string[] } };
    expect(b40.job.environment).toContain(`WANDB_API_KEY=${VALUE}`);
  });

  it('ray: the value goes in runtime_env.env_vars only; an error that quotes the request is redacted', async () => {
    const logs: string[] = [];
    let body = '';
    const server = http.createServer((req, res) => {
      let b = '';
      req.on('data', (d: Buffer) => (b += d.toString()));
      req.on('end', () => {
        body = b;
        res.writeHead(400, { 'Content-Type': 'text/plain' });
        res.end(`Traceback (most recent call last):\nTypeError: bad request ${b}`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const ray = new RayConnector({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, log: (l) => logs.push(l) });
      const sb = (await ray.submitBody(spec)) as { entrypoint: string; runtime_env: { env_vars: Record<string, string> } };
      expect(sb.runtime_env.env_vars).toEqual({ PLAIN: 'p', WANDB_API_KEY: VALUE });
      expect(sb.entrypoint).not.toContain('wandb_');
      const err = (await ray.submit(spec).then(() => null, (e: unknown) => e)) as ConnectorError;
      expect(JSON.parse(body).runtime_env.env_vars.WANDB_API_KEY).toBe(VALUE); // it did travel in the body
      expect(err).toBeInstanceOf(ConnectorError);
      expect(err.code).toBe('invalid');
      expect(err.message).toContain('***');
      expect(err.message).not.toContain('wandb_');
      expect(err.detail).not.toContain('wandb_');
      expect(logs.join('\n')).not.toContain('wandb_');
    } finally {
      server.close();
    }
  });

  it('redactError keeps the class and code, masks message and detail, and leaves unrelated errors alone', () => {
    const e = new ConnectorError('backend', 'w', `failed with ${VALUE}`, `detail ${VALUE}`);
    const r = redactError(e, specSecretForms(spec));
    expect(r).toBeInstanceOf(ConnectorError);
    expect(r.code).toBe('backend');
    expect(r.message).toBe('w: failed with ***');
    expect(r.detail).toBe('detail ***');
    const plain = new Error('nothing secret');
    expect(redactError(plain, ['abcdef'])).toBe(plain);
  });
});
