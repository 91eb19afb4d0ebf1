import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { redactText } from './redact';
import { EncryptedFileSecretStore } from './secrets';

const dir = mkdtempSync(path.join(os.tmpdir(), 'loupe-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('EncryptedFileSecretStore', () => {
  it('round-trips values, creates a 0600 key file, and never writes plaintext', async () => {
    const s = new EncryptedFileSecretStore({ file: path.join(dir, 'a', 'secrets.json'), keyFile: path.join(dir, 'key', 'k') });
    const value = '-----BEGIN OPENSSH PRIVATE KEY-----\nsupersecretkeymaterial\n-----END OPENSSH PRIVATE KEY-----';
    await s.set('ssh/cluster-a', value);
    await s.set('ray/token', 'tok-abcdef123456');
    expect(await s.get('ssh/cluster-a')).toBe(value);
    expect(await s.get('ray/token')).toBe('tok-abcdef123456');
    expect(await s.get('missing')).toBeUndefined();
    expect(await s.list()).toEqual(['ray/token', 'ssh/cluster-a']);
    expect(statSync(path.join(dir, 'key', 'k')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dir, 'a', 'secrets.json')).mode & 0o777).toBe(0o600);
    const onDisk = readFileSync(path.join(dir, 'a', 'secrets.json'), 'utf8');
    expect(onDisk).not.toContain('supersecretkeymaterial');
    expect(onDisk).not.toContain('tok-abcdef123456');
    expect(await s.delete('ray/token')).toBe(true);
    expect(await s.delete('ray/token')).toBe(false);
    // A second instance (new process) reads the same values.
    const again = new EncryptedFileSecretStore({ file: path.join(dir, 'a', 'secrets.json'), keyFile: path.join(dir, 'key', 'k') });
    expect(await again.get('ssh/cluster-a')).toBe(value);
  });

  it('a different key, a swapped entry or a loose key file are refused with a clear message', async () => {
    const file = path.join(dir, 'b.json');
    const s = new EncryptedFileSecretStore({ file, keyFile: path.join(dir, 'k1') });
    await s.set('one', 'value-one');
    await s.set('two', 'value-two');
    const other = new EncryptedFileSecretStore({ file, keyFile: path.join(dir, 'k2') });
    await expect(other.get('one')).rejects.toThrow(/cannot be decrypted/);
    const j = JSON.parse(readFileSync(file, 'utf8')) as { entries: Record<string, unknown> };
    j.entries.one = j.entries.two; // swap: AAD binds the name
    writeFileSync(file, JSON.stringify(j));
    await expect(new EncryptedFileSecretStore({ file, keyFile: path.join(dir, 'k1') }).get('one')).rejects.toThrow(/cannot be decrypted/);
    chmodSync(path.join(dir, 'k1'), 0o644);
    await expect(new EncryptedFileSecretStore({ file, keyFile: path.join(dir, 'k1') }).get('two')).rejects.toThrow(/chmod 600/);
    await expect(s.set('bad name!', 'x')).rejects.toThrow(/secret name/);
  });
});

describe('redactText', () => {
  it('masks listed secrets and bearer/JWT patterns', () => {
    const t = redactText('Authorization: Bearer abcdefgh12345678 SLURM_JWT=eyJ.x.y key=hunter22 X-SLURM-USER-TOKEN: zzz', ['hunter22']);
    expect(t).toBe('Authorization: Bearer *** SLURM_JWT=*** key=*** X-SLURM-USER-TOKEN: ***');
  });
});
