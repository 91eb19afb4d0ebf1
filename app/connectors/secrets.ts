/**
 * Credentials (SSH keys, Ray tokens, Slurm JWTs) live behind `SecretStore`. Browser mode uses
 * `EncryptedFileSecretStore` (AES-256-GCM, key in a machine-local 0600 file); Electron wires safeStorage later.
 * Nothing here writes or logs a secret in plaintext.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';

export interface SecretStore {
  get(name: string): Promise<string | undefined>;
  set(name: string, value: string): Promise<void>;
  delete(name: string): Promise<boolean>;
  /** Names only, never values. */
  list(): Promise<string[]>;
}

export class SecretStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretStoreError';
  }
}

const NAME_RE = /^[A-Za-z0-9._:/@-]{1,200}$/;

interface Sealed {
  iv: string;
  tag: string;
  data: string;
}
interface FileShape {
  version: 1;
  cipher: 'aes-256-gcm';
  entries: Record<string, Sealed>;
}

export interface EncryptedFileSecretStoreOptions {
  /** The encrypted store (e.g. `<workspace>/secrets.enc.json`). */
  file: string;
  /** A machine-local key file (32 random bytes, created 0600 when missing; e.g. in the user's config dir, not the workspace). */
  keyFile: string;
}

export class EncryptedFileSecretStore implements SecretStore {
  private key: Buffer | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  constructor(private readonly o: EncryptedFileSecretStoreOptions) {}

  private async loadKey(): Promise<Buffer> {
    if (this.key) return this.key;
    let st = await fs.stat(this.o.keyFile).catch(() => null);
    if (!st) {
      await fs.mkdir(path.dirname(this.o.keyFile), { recursive: true, mode: 0o700 });
      try {
        await fs.writeFile(this.o.keyFile, randomBytes(32), { mode: 0o600, flag: 'wx' });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      st = await fs.stat(this.o.keyFile);
    }
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
      throw new SecretStoreError(`key file ${this.o.keyFile} is readable by others (mode ${(st.mode & 0o777).toString(8)}); run chmod 600 on it`);
    }
    const key = await fs.readFile(this.o.keyFile);
    if (key.length !== 32) throw new SecretStoreError(`key file ${this.o.keyFile} must hold 32 bytes, found ${key.length}`);
    this.key = key;
    return key;
  }

  private async read(): Promise<FileShape> {
    const text = await fs.readFile(this.o.file, 'utf8').catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return null;
      throw e;
    });
    if (text === null) return { version: 1, cipher: 'aes-256-gcm', entries: {} };
    let j: FileShape;
    try {
      j = JSON.parse(text) as FileShape;
    } catch {
      throw new SecretStoreError(`${this.o.file} is not valid JSON; restore it from a backup or delete it (all stored secrets are lost)`);
    }
    if (j.version !== 1 || typeof j.entries !== 'object' || j.entries === null) throw new SecretStoreError(`${this.o.file}: unknown format`);
    return j;
  }

  private async write(shape: FileShape): Promise<void> {
    await fs.mkdir(path.dirname(this.o.file), { recursive: true });
    const tmp = `${this.o.file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, JSON.stringify(shape, null, 1), { mode: 0o600 });
    await fs.rename(tmp, this.o.file);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.chain.then(fn, fn);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private check(name: string): void {
    if (!NAME_RE.test(name)) throw new SecretStoreError(`secret name ${JSON.stringify(name)} must be 1-200 characters of A-Z a-z 0-9 . _ : / @ -`);
  }

  async get(name: string): Promise<string | undefined> {
    this.check(name);
    const key = await this.loadKey();
    const e = (await this.read()).entries[name];
    if (!e) return undefined;
    try {
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(e.iv, 'base64'));
      d.setAAD(Buffer.from(name, 'utf8')); // binds the value to its name: entries cannot be swapped
      d.setAuthTag(Buffer.from(e.tag, 'base64'));
      return Buffer.concat([d.update(Buffer.from(e.data, 'base64')), d.final()]).toString('utf8');
    } catch {
      throw new SecretStoreError(`secret ${JSON.stringify(name)} cannot be decrypted with ${this.o.keyFile} (wrong key file or tampered store); set it again`);
    }
  }

  async set(name: string, value: string): Promise<void> {
    this.check(name);
    return this.serial(async () => {
      const key = await this.loadKey();
      const shape = await this.read();
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      c.setAAD(Buffer.from(name, 'utf8'));
      const data = Buffer.concat([c.update(value, 'utf8'), c.final()]);
      shape.entries[name] = { iv: iv.toString('base64'), tag: c.getAuthTag().toString('base64'), data: data.toString('base64') };
      await this.write(shape);
    });
  }

  async delete(name: string): Promise<boolean> {
    this.check(name);
    return this.serial(async () => {
      const shape = await this.read();
      if (!(name in shape.entries)) return false;
      delete shape.entries[name];
      await this.write(shape);
      return true;
    });
  }

  async list(): Promise<string[]> {
    return Object.keys((await this.read()).entries).sort();
  }
}

/** In-memory store for tests and for the CLI's one-shot flags. */
export class MemorySecretStore implements SecretStore {
  private readonly m = new Map<string, string>();
  async get(name: string): Promise<string | undefined> {
    return this.m.get(name);
  }
  async set(name: string, value: string): Promise<void> {
    this.m.set(name, value);
  }
  async delete(name: string): Promise<boolean> {
    return this.m.delete(name);
  }
  async list(): Promise<string[]> {
    return [...this.m.keys()].sort();
  }
}
