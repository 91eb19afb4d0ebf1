/**
 * Credentials (SSH keys, Ray tokens, Slurm JWTs, job secrets like WANDB_API_KEY) live behind `SecretStore`.
 * Two file backends:
 * - `EncryptedFileSecretStore` (browser mode, CLI, and Electron when the OS keychain is unusable): AES-256-GCM, the
 *   key in a machine-local 0600 file OUTSIDE the workspace (the user's config dir, `keys/<keyId>.key`; the store
 *   file names its key by id only), so a copied or synced workspace does not decrypt. A key left inside the
 *   workspace by older versions (`.private/secret.key`) is moved there on first use.
 * - `SafeStorageSecretStore` (Electron): each value encrypted by the OS keychain through Electron's `safeStorage`,
 *   stored as base64 ciphertext. The core never imports electron: `main/electron/main.ts` hands in a
 *   `SafeStorageAdapter`, and `openSecretStore` picks the backend and says which one (and why) in `SecretStoreInfo`.
 * Nothing here writes or logs a secret in plaintext.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { constants as fsc } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../workspace/fsutil';
import { defaultConfigDir } from '../workspace/paths';
import { redactText } from './redact';

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

/** Throws a SecretStoreError naming the allowed characters. */
export function checkSecretName(name: string): void {
  if (!NAME_RE.test(name)) throw new SecretStoreError(`secret name ${JSON.stringify(name)} must be 1-200 characters of A-Z a-z 0-9 . _ : / @ -`);
}

interface Sealed {
  iv: string;
  tag: string;
  data: string;
}
interface FileShape {
  version: 1;
  cipher: 'aes-256-gcm';
  /** Names the key file `<keyDir>/<keyId>.key` (the id is not secret; the key never sits next to the store). */
  keyId?: string;
  entries: Record<string, Sealed>;
}

export interface EncryptedFileSecretStoreOptions {
  /** The encrypted store (e.g. `<workspace>/secrets.enc.json`). */
  file: string;
  /** An explicit machine-local key file (32 random bytes, created 0600 when missing), e.g. the CLI's --key-file. */
  keyFile?: string;
  /** Else: a folder outside the workspace holding one key per store, `<keyId>.key`, the id recorded in the store file. */
  keyDir?: string;
  /** A key file an older version kept inside the workspace: moved into `keyDir` on first use, then deleted. */
  legacyKeyFile?: string;
}

const KEY_ID_RE = /^[a-f0-9]{32}$/;

/**
 * A 0600 JSON file of `{version: 1, cipher, entries}` shared by the two file-backed stores: read (absent = empty;
 * bad JSON or another format = a clear error), atomic write, and one operation at a time.
 */
class SecretFile<T extends { version: number; cipher: string; entries: Record<string, unknown> }> {
  private chain: Promise<unknown> = Promise.resolve();
  constructor(
    readonly file: string,
    private readonly cipher: T['cipher'],
  ) {}

  async read(): Promise<T> {
    const text = await fs.readFile(this.file, 'utf8').catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return null;
      throw e;
    });
    if (text === null) return { version: 1, cipher: this.cipher, entries: {} } as T;
    let j: T;
    try {
      j = JSON.parse(text) as T;
    } catch {
      throw new SecretStoreError(`${this.file} is not valid JSON; restore it from a backup or delete it (all stored secrets are lost)`);
    }
    if (j.version !== 1 || j.cipher !== this.cipher || typeof j.entries !== 'object' || j.entries === null) throw new SecretStoreError(`${this.file}: unknown format`);
    return j;
  }

  async write(shape: T): Promise<void> {
    await writeFileAtomic(this.file, JSON.stringify(shape, null, 1), { mode: 0o600 });
  }

  serial<U>(fn: () => Promise<U>): Promise<U> {
    const p = this.chain.then(fn, fn);
    this.chain = p.catch(() => undefined);
    return p;
  }

  /** Remove one entry; false when there was none. */
  deleteEntry(name: string): Promise<boolean> {
    return this.serial(async () => {
      const shape = await this.read();
      if (!(name in shape.entries)) return false;
      delete shape.entries[name];
      await this.write(shape);
      return true;
    });
  }

  async names(): Promise<string[]> {
    return Object.keys((await this.read()).entries).sort();
  }
}

export class EncryptedFileSecretStore implements SecretStore {
  private key: Promise<Buffer | null> | null = null;
  private keyPath: string;
  private readonly f: SecretFile<FileShape>;
  constructor(private readonly o: EncryptedFileSecretStoreOptions) {
    if (!o.keyFile && !o.keyDir) throw new SecretStoreError('EncryptedFileSecretStore needs keyFile or keyDir');
    this.f = new SecretFile<FileShape>(o.file, 'aes-256-gcm');
    this.keyPath = o.keyFile ?? '(key not chosen yet)';
  }

  /** Where this store's key lives (for messages and the UI). */
  get keyLocation(): string {
    return this.keyPath;
  }

  /**
   * The key, created when `create` and missing. With `keyDir`: the store file's keyId names it; a store without
   * one gets a fresh id, and an older in-workspace key (`legacyKeyFile`) is moved to `<keyDir>/<id>.key` first.
   * Null when there is no key and `create` is false (nothing was ever stored).
   */
  private loadKey(create: boolean): Promise<Buffer | null> {
    const p = (this.key ??= this.f.serial(() => this.resolveKey(create)).then((k) => {
      if (!k) this.key = null; // try again (and create) on the next set
      return k;
    }));
    p.catch(() => (this.key = null));
    return p;
  }

  private async resolveKey(create: boolean): Promise<Buffer | null> {
    if (this.o.keyFile) return this.readKeyFile(this.o.keyFile, create);
    const keyDir = this.o.keyDir as string;
    const shape = await this.f.read();
    if (shape.keyId !== undefined) {
      if (!KEY_ID_RE.test(shape.keyId)) throw new SecretStoreError(`${this.o.file}: keyId ${JSON.stringify(shape.keyId)} is not a key id`);
      this.keyPath = path.join(keyDir, `${shape.keyId}.key`);
      const key = await this.readKeyFile(this.keyPath, false);
      if (!key) {
        throw new SecretStoreError(
          `secrets in ${this.o.file} cannot be decrypted: their key (${this.keyPath}) is not on this machine (a copied workspace does not bring its secrets); set them again here`,
        );
      }
      return key;
    }
    const legacy = this.o.legacyKeyFile ? await fs.readFile(this.o.legacyKeyFile).catch(() => null) : null;
    if (!legacy && !create) return null;
    if (legacy && legacy.length !== 32) throw new SecretStoreError(`key file ${this.o.legacyKeyFile} must hold 32 bytes, found ${legacy.length}`);
    const keyId = randomBytes(16).toString('hex');
    this.keyPath = path.join(keyDir, `${keyId}.key`);
    await fs.mkdir(keyDir, { recursive: true, mode: 0o700 });
    const key = legacy ?? randomBytes(32);
    await fs.writeFile(this.keyPath, key, { mode: 0o600, flag: 'wx' });
    await this.f.write({ ...shape, keyId });
    if (legacy && this.o.legacyKeyFile) {
      // Moved: the workspace no longer holds a key (remove its folder too when that leaves it empty).
      await fs.rm(this.o.legacyKeyFile, { force: true });
      await fs.rmdir(path.dirname(this.o.legacyKeyFile)).catch(() => undefined);
    }
    return key;
  }

  private async readKeyFile(file: string, create: boolean): Promise<Buffer | null> {
    let st = await fs.stat(file).catch(() => null);
    if (!st) {
      if (!create) return null;
      await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      try {
        await fs.writeFile(file, randomBytes(32), { mode: 0o600, flag: 'wx' });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      st = await fs.stat(file);
    }
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
      throw new SecretStoreError(`key file ${file} is readable by others (mode ${(st.mode & 0o777).toString(8)}); run chmod 600 on it`);
    }
    await fs.access(file, fsc.R_OK);
    const key = await fs.readFile(file);
    if (key.length !== 32) throw new SecretStoreError(`key file ${file} must hold 32 bytes, found ${key.length}`);
    return key;
  }

  private async read(): Promise<FileShape> {
    return this.f.read();
  }

  private write(shape: FileShape): Promise<void> {
    return this.f.write(shape);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.f.serial(fn);
  }


  private check(name: string): void {
    checkSecretName(name);
  }

  async get(name: string): Promise<string | undefined> {
    this.check(name);
    const key = await this.loadKey(false);
    const e = (await this.read()).entries[name];
    if (!e) return undefined;
    if (!key) throw new SecretStoreError(`secret ${JSON.stringify(name)} cannot be decrypted: its key file ${this.keyPath} is missing; set it again`);
    try {
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(e.iv, 'base64'));
      d.setAAD(Buffer.from(name, 'utf8')); // binds the value to its name: entries cannot be swapped
      d.setAuthTag(Buffer.from(e.tag, 'base64'));
      return Buffer.concat([d.update(Buffer.from(e.data, 'base64')), d.final()]).toString('utf8');
    } catch {
      throw new SecretStoreError(`secret ${JSON.stringify(name)} cannot be decrypted with ${this.keyPath} (wrong key file or tampered store); set it again`);
    }
  }

  async set(name: string, value: string): Promise<void> {
    this.check(name);
    const key = await this.loadKey(true);
    if (!key) throw new SecretStoreError(`no key for ${this.o.file}`);
    return this.serial(async () => {
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
    return this.f.deleteEntry(name);
  }

  list(): Promise<string[]> {
    return this.f.names();
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

// ───────────── Electron safeStorage backend ─────────────

/**
 * The three safeStorage functions the core needs, injected by the Electron door (`main/electron/main.ts`) so that
 * `app/` and `main/core` stay free of electron imports. Sync or async results are both accepted.
 */
export interface SafeStorageAdapter {
  /** `safeStorage.encryptString(Async)`. */
  encrypt(plainText: string): Buffer | Promise<Buffer>;
  /** `safeStorage.decryptString(Async)`. */
  decrypt(cipherText: Buffer): string | Promise<string>;
  /** `safeStorage.isEncryptionAvailable()`, false as well when Linux fell back to its hard-coded `basic_text` key. */
  available(): boolean;
  /** What protects the key, for the UI (e.g. `gnome_libsecret`, `macOS Keychain`); optional. */
  backend?(): string;
}

interface SafeFileShape {
  version: 1;
  cipher: 'electron-safestorage';
  /** name → base64 of safeStorage.encrypt(JSON.stringify([name, value])). */
  entries: Record<string, string>;
}

export interface SafeStorageSecretStoreOptions {
  /** The store file (e.g. `<workspace>/training/secrets.safe.json`); holds only ciphertext. */
  file: string;
  adapter: SafeStorageAdapter;
}

/**
 * Values encrypted by the OS keychain (Electron safeStorage) and kept as base64 ciphertext in a 0600 JSON file.
 * safeStorage has no associated data, so the plaintext that is encrypted is `[name, value]`: an entry copied
 * under another name is detected on read, like the AES-GCM store's AAD does.
 */
export class SafeStorageSecretStore implements SecretStore {
  private readonly f: SecretFile<SafeFileShape>;
  constructor(private readonly o: SafeStorageSecretStoreOptions) {
    this.f = new SecretFile<SafeFileShape>(o.file, 'electron-safestorage');
  }

  private ensureAvailable(): void {
    if (!this.o.adapter.available()) {
      throw new SecretStoreError('the OS keychain (Electron safeStorage) is not available in this session; secrets cannot be read or stored until it is');
    }
  }

  private async read(): Promise<SafeFileShape> {
    return this.f.read();
  }

  private write(shape: SafeFileShape): Promise<void> {
    return this.f.write(shape);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.f.serial(fn);
  }


  async get(name: string): Promise<string | undefined> {
    checkSecretName(name);
    const b64 = (await this.read()).entries[name];
    if (b64 === undefined) return undefined;
    this.ensureAvailable();
    let pair: unknown;
    try {
      pair = JSON.parse(await this.o.adapter.decrypt(Buffer.from(b64, 'base64')));
    } catch {
      throw new SecretStoreError(`secret ${JSON.stringify(name)} cannot be decrypted by the OS keychain (another user or machine, or the keychain was reset); set it again`);
    }
    if (!Array.isArray(pair) || pair.length !== 2 || pair[0] !== name || typeof pair[1] !== 'string') {
      throw new SecretStoreError(`secret ${JSON.stringify(name)} in ${this.o.file} was stored under another name (tampered store); set it again`);
    }
    return pair[1];
  }

  async set(name: string, value: string): Promise<void> {
    checkSecretName(name);
    this.ensureAvailable();
    return this.serial(async () => {
      const shape = await this.read();
      let sealed: Buffer;
      try {
        sealed = await this.o.adapter.encrypt(JSON.stringify([name, value]));
      } catch (e) {
        throw new SecretStoreError(`the OS keychain refused to encrypt secret ${JSON.stringify(name)}: ${redactText(e instanceof Error ? e.message : String(e), [value])}`);
      }
      shape.entries[name] = Buffer.from(sealed).toString('base64');
      await this.write(shape);
    });
  }

  async delete(name: string): Promise<boolean> {
    checkSecretName(name);
    return this.f.deleteEntry(name);
  }

  list(): Promise<string[]> {
    return this.f.names();
  }
}

// ───────────── choosing the backend ─────────────

/** Which store is in use, for the UI and status lines. */
export interface SecretStoreInfo {
  kind: 'os-keychain' | 'encrypted-file';
  /** `OS keychain (Electron safeStorage)` or `encrypted file (browser mode)` / `encrypted file (OS keychain unavailable)`. */
  label: string;
  /** Why the fallback was taken, or which keychain backs safeStorage. */
  note?: string;
  /** The store file (holds only ciphertext). */
  file: string;
}

export interface OpenSecretStoreOptions {
  /** Folder for the store files (`secrets.safe.json` / `secrets.enc.json`). */
  dir: string;
  /** Key of the AES-GCM store (used when safeStorage is absent or unavailable): an explicit file, or… */
  keyFile?: string;
  /** …a folder outside the workspace with one key per store (see EncryptedFileSecretStoreOptions). */
  keyDir?: string;
  /** An older in-workspace key file to move into keyDir. */
  legacyKeyFile?: string;
  /** Given by the Electron door; absent in browser mode and the CLI. */
  safeStorage?: SafeStorageAdapter;
}

export const SAFE_STORE_FILE = 'secrets.safe.json';
export const ENCRYPTED_STORE_FILE = 'secrets.enc.json';

/**
 * Electron with a usable OS keychain → `SafeStorageSecretStore`; else the AES-GCM file, and `info.note` says why.
 * Entries that exist only in the AES-GCM file (set earlier in browser mode) are copied into the keychain store on
 * open; the AES-GCM file is left as it was, so browser mode on the same workspace keeps working.
 */
export async function openSecretStore(o: OpenSecretStoreOptions): Promise<{ store: SecretStore; info: SecretStoreInfo }> {
  const encFile = path.join(o.dir, ENCRYPTED_STORE_FILE);
  const fileStore = (): EncryptedFileSecretStore =>
    new EncryptedFileSecretStore({
      file: encFile,
      ...(o.keyFile ? { keyFile: o.keyFile } : {}),
      ...(o.keyDir ? { keyDir: o.keyDir } : {}),
      ...(o.legacyKeyFile ? { legacyKeyFile: o.legacyKeyFile } : {}),
    });
  const keyNote = o.keyDir ? { note: `AES-256-GCM; the key is kept outside the workspace, in ${o.keyDir}` } : {};
  if (!o.safeStorage) return { store: fileStore(), info: { kind: 'encrypted-file', label: 'encrypted file (browser mode)', ...keyNote, file: encFile } };
  let ok = false;
  try {
    ok = o.safeStorage.available();
  } catch {
    ok = false;
  }
  if (!ok) {
    return {
      store: fileStore(),
      info: {
        kind: 'encrypted-file',
        label: 'encrypted file (OS keychain unavailable)',
        note: 'Electron safeStorage is not available (no OS keychain, or Linux without libsecret/kwallet); secrets use the AES-256-GCM file with a 0600 key instead',
        file: encFile,
      },
    };
  }
  const safeFile = path.join(o.dir, SAFE_STORE_FILE);
  const store = new SafeStorageSecretStore({ file: safeFile, adapter: o.safeStorage });
  const notes: string[] = [];
  const backend = o.safeStorage.backend?.();
  if (backend) notes.push(`keychain backend: ${backend}`);
  // Carrying entries over must never keep the app from starting: a broken old file is reported, not fatal.
  try {
    const have = new Set(await store.list());
    const old = await fs.stat(encFile).then(() => fileStore(), () => null);
    if (old) {
      for (const name of await old.list()) {
        if (have.has(name)) continue;
        const v = await old.get(name).catch(() => undefined); // unreadable (other key file): leave it
        if (v !== undefined) await store.set(name, v);
      }
    }
  } catch (e) {
    notes.push(`secrets from ${encFile} were not carried over: ${e instanceof Error ? e.message : String(e)}`);
  }
  return { store, info: { kind: 'os-keychain', label: 'OS keychain (Electron safeStorage)', ...(notes.length ? { note: notes.join('; ') } : {}), file: safeFile } };
}

/**
 * Where a workspace keeps its secrets: the store files in `<workspace>/training/`; the AES-GCM key OUTSIDE the
 * workspace, in `<configDir>/keys/<keyId>.key` (0600; the store file names it by id), so a copied or synced
 * workspace does not decrypt. `legacyKeyFile` is where older versions kept the key (`<workspace>/.private/`): it
 * is moved out on first use. The app and `loupe train` both open the store through here, so a secret saved on the
 * Training page is the one the CLI uses.
 */
export function workspaceSecretPaths(workspace: string, configDir: string = defaultConfigDir()): { dir: string; keyDir: string; legacyKeyFile: string } {
  return { dir: path.join(workspace, 'training'), keyDir: path.join(configDir, 'keys'), legacyKeyFile: path.join(workspace, '.private', 'secret.key') };
}

/** The workspace's one secret store (OS keychain when the Electron door hands in safeStorage, else the AES-GCM file). */
export function openWorkspaceSecretStore(workspace: string, safeStorage?: SafeStorageAdapter, configDir?: string): Promise<{ store: SecretStore; info: SecretStoreInfo }> {
  return openSecretStore({ ...workspaceSecretPaths(workspace, configDir), ...(safeStorage ? { safeStorage } : {}) });
}
