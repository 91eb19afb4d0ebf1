/**
 * The Electron safeStorage backend, driven through an injected adapter built on real crypto (AES-256-GCM with a
 * key held only in memory, standing in for the OS keychain: Electron cannot run under vitest), and the choice
 * between it and the AES-GCM file that `openSecretStore` makes.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EncryptedFileSecretStore, openSecretStore, SafeStorageSecretStore, type SafeStorageAdapter } from './secrets';

const dir = mkdtempSync(path.join(os.tmpdir(), 'loupe-safestore-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An "OS keychain": a random key that never leaves memory; output is iv | tag | ciphertext like a real KMS blob. */
function keychain(opts: { available?: () => boolean } = {}): SafeStorageAdapter & { calls: number } {
  const key = randomBytes(32);
  const a = {
    calls: 0,
    encrypt(s: string): Buffer {
      a.calls += 1;
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([c.update(s, 'utf8'), c.final()]);
      return Buffer.concat([iv, c.getAuthTag(), data]);
    },
    async decrypt(b: Buffer): Promise<string> {
      const d = createDecipheriv('aes-256-gcm', key, b.subarray(0, 12));
      d.setAuthTag(b.subarray(12, 28));
      return Buffer.concat([d.update(b.subarray(28)), d.final()]).toString('utf8');
    },
    available: opts.available ?? (() => true),
    backend: () => 'test keychain',
  };
  return a;
}

const SSH_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n';
const TOKEN = "wandb-ABCdef0123456789 'quoted' $HOME";

describe('SafeStorageSecretStore (injected adapter on real crypto)', () => {
  it('round-trips values through the adapter; the store file holds only base64 ciphertext, mode 0600', async () => {
    const file = path.join(dir, 'a', 'secrets.safe.json');
    const kc = keychain();
    const s = new SafeStorageSecretStore({ file, adapter: kc });
    await s.set('ssh/cluster', SSH_KEY);
    await s.set('WANDB', TOKEN);
    expect(kc.calls).toBe(2);
    expect(await s.get('ssh/cluster')).toBe(SSH_KEY);
    expect(await s.get('WANDB')).toBe(TOKEN);
    expect(await s.get('missing')).toBeUndefined();
    expect(await s.list()).toEqual(['WANDB', 'ssh/cluster']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const onDisk = readFileSync(file, 'utf8');
    for (const needle of ['b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ', 'wandb-ABCdef0123456789', 'BEGIN OPENSSH', Buffer.from(TOKEN).toString('base64')]) {
      expect(onDisk).not.toContain(needle);
    }
    const j = JSON.parse(onDisk) as { cipher: string; entries: Record<string, string> };
    expect(j.cipher).toBe('electron-safestorage');
    expect(Object.values(j.entries).every((v) => /^[A-Za-z0-9+/]+=*$/.test(v))).toBe(true);
    // A new instance (next app start) with the same keychain reads them back.
    expect(await new SafeStorageSecretStore({ file, adapter: kc }).get('ssh/cluster')).toBe(SSH_KEY);
    expect(await s.delete('WANDB')).toBe(true);
    expect(await s.delete('WANDB')).toBe(false);
    expect(await s.list()).toEqual(['ssh/cluster']);
  });

  it('another keychain, a renamed entry or an unavailable keychain give errors that say what to do', async () => {
    const file = path.join(dir, 'b.json');
    const kc = keychain();
    const s = new SafeStorageSecretStore({ file, adapter: kc });
    await s.set('one', 'value-one');
    await s.set('two', 'value-two');
    await expect(new SafeStorageSecretStore({ file, adapter: keychain() }).get('one')).rejects.toThrow(/cannot be decrypted by the OS keychain.*set it again/);
    const j = JSON.parse(readFileSync(file, 'utf8')) as { entries: Record<string, string> };
    j.entries.one = j.entries.two as string; // the name is sealed with the value
    writeFileSync(file, JSON.stringify({ ...j, version: 1, cipher: 'electron-safestorage' }));
    await expect(s.get('one')).rejects.toThrow(/stored under another name/);
    expect(await s.get('two')).toBe('value-two');
    let up = true;
    const flaky = new SafeStorageSecretStore({ file, adapter: keychain({ available: () => up }) });
    up = false;
    await expect(flaky.set('three', 'x')).rejects.toThrow(/OS keychain \(Electron safeStorage\) is not available/);
    await expect(s.set('bad name!', 'x')).rejects.toThrow(/secret name/);
  });

  it('an adapter error that quotes the value is redacted', async () => {
    const s = new SafeStorageSecretStore({
      file: path.join(dir, 'c.json'),
      adapter: { encrypt: (v) => { throw new Error(`cannot encrypt ${v}`); }, decrypt: () => '', available: () => true },
    });
    const err = await s.set('k', 'hunter2-secret-value').then(() => null, (e: Error) => e);
    expect(err?.message).toMatch(/refused to encrypt/);
    expect(err?.message).not.toContain('hunter2-secret-value');
  });
});

describe('openSecretStore', () => {
  it('browser mode (no adapter): the AES-GCM file, labelled as such', async () => {
    const d = path.join(dir, 'browser');
    const { store, info } = await openSecretStore({ dir: d, keyFile: path.join(d, 'key') });
    expect(store).toBeInstanceOf(EncryptedFileSecretStore);
    expect(info).toMatchObject({ kind: 'encrypted-file', label: 'encrypted file (browser mode)' });
    await store.set('x', 'plain-text-never');
    expect(readFileSync(path.join(d, 'secrets.enc.json'), 'utf8')).not.toContain('plain-text-never');
  });

  it('Electron with the keychain unavailable: falls back to the AES-GCM file and says why', async () => {
    const d = path.join(dir, 'fallback');
    const kc = keychain({ available: () => false });
    const { store, info } = await openSecretStore({ dir: d, keyFile: path.join(d, 'key'), safeStorage: kc });
    expect(store).toBeInstanceOf(EncryptedFileSecretStore);
    expect(info.kind).toBe('encrypted-file');
    expect(info.label).toMatch(/OS keychain unavailable/);
    expect(info.note).toMatch(/safeStorage is not available/);
    await store.set('k', 'v-123456');
    expect(kc.calls).toBe(0);
  });

  it('Electron with a keychain: safeStorage store; entries from the browser-mode file are carried over', async () => {
    const d = path.join(dir, 'electron');
    const key = path.join(d, 'key');
    const before = new EncryptedFileSecretStore({ file: path.join(d, 'secrets.enc.json'), keyFile: key });
    await before.set('ray/token', 'tok-from-browser-mode');
    const kc = keychain();
    const { store, info } = await openSecretStore({ dir: d, keyFile: key, safeStorage: kc });
    expect(store).toBeInstanceOf(SafeStorageSecretStore);
    expect(info).toMatchObject({ kind: 'os-keychain', label: 'OS keychain (Electron safeStorage)', note: 'keychain backend: test keychain' });
    expect(await store.get('ray/token')).toBe('tok-from-browser-mode');
    await store.set('hf', 'hf_NEWTOKEN123');
    const safeText = readFileSync(path.join(d, 'secrets.safe.json'), 'utf8');
    expect(safeText).not.toContain('tok-from-browser-mode');
    expect(safeText).not.toContain('hf_NEWTOKEN123');
    // Reopening does not re-import over newer values, and the browser file stays readable for browser mode.
    await store.set('ray/token', 'tok-rotated-in-electron');
    const again = await openSecretStore({ dir: d, keyFile: key, safeStorage: kc });
    expect(await again.store.get('ray/token')).toBe('tok-rotated-in-electron');
    expect(await before.get('ray/token')).toBe('tok-from-browser-mode');
    expect(existsSync(path.join(d, 'secrets.enc.json'))).toBe(true);
  });
});

describe('openSecretStore with a broken browser-mode file', () => {
  it('still opens the keychain store and says what was not carried over', async () => {
    const d = path.join(dir, 'broken');
    mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, 'secrets.enc.json'), '{not json');
    const { store, info } = await openSecretStore({ dir: d, keyFile: path.join(d, 'key'), safeStorage: keychain() });
    expect(info.kind).toBe('os-keychain');
    expect(info.note).toMatch(/not carried over: .*not valid JSON/);
    await store.set('a', 'value-a-123');
    expect(await store.get('a')).toBe('value-a-123');
  });
});
