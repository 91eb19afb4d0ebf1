/**
 * Messages of the Electron door. Two channels:
 *  - main ⇄ core (the utility process's parentPort): start-up, safeStorage on the core's behalf (it is a
 *    main-process API), media paths for the `loupe-media:` protocol, and handing over a window's MessagePort;
 *  - window ⇄ core (a MessagePort per window, straight to the utility process, never through main): contract
 *    calls and events.
 */
import type { Reply } from '../../app/contract/dispatch';

/** What main tells the core when it starts it. */
export interface CoreInit {
  type: 'init';
  workspace?: string;
  /** safeStorage as main sees it; the core asks main to encrypt/decrypt when `available`. */
  safeStorage: { available: boolean; backend: string };
}

export type MainToCore =
  | CoreInit
  /** The window's port arrives with this message (`ports[0]`). */
  | { type: 'connect' }
  | { type: 'mediaPath'; id: number; mediaId: string }
  | { type: 'exportPath'; id: number; name: string }
  | { type: 'safeStorage:reply'; id: number; ok: true; value: string | Uint8Array }
  | { type: 'safeStorage:reply'; id: number; ok: false; message: string }
  | { type: 'shutdown' };

export type CoreToMain =
  | { type: 'ready'; workspace: string }
  | { type: 'failed'; message: string }
  | { type: 'mediaPath:reply'; id: number; path: string | null }
  | { type: 'exportPath:reply'; id: number; path: string | null }
  | { type: 'safeStorage'; id: number; op: 'encrypt'; text: string }
  | { type: 'safeStorage'; id: number; op: 'decrypt'; data: Uint8Array };

/** Window → core over its port. */
export interface PortCall {
  id: number;
  method: string;
  payload: unknown;
}

/** Core → window over its port. */
export type PortMessage = { kind: 'reply'; id: number; reply: Reply } | { kind: 'event'; event: string; payload: unknown };

/** The IPC channel on which main hands a window its port (the preload listens on it; the page never sees it). */
export const PORT_CHANNEL = 'loupe:port';
/** The IPC channel of the one renderer → main request: save an export through the system's save dialog. */
export const SAVE_EXPORT_CHANNEL = 'loupe:save-export';

/** Where the renderer is served from: a standard, secure custom scheme instead of file://. */
export const APP_SCHEME = 'app';
export const APP_HOST = 'loupe';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
export const MEDIA_SCHEME = 'loupe-media';

/** The renderer's Content-Security-Policy in the Electron door. */
export const CSP = `default-src 'self'; img-src 'self' data: blob: ${MEDIA_SCHEME}:; media-src 'self' blob: ${MEDIA_SCHEME}:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'`;

/** True for a URL of our own renderer (navigation, redirects and IPC senders are held to this). */
export function isAppUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === `${APP_SCHEME}:` && u.host === APP_HOST;
  } catch {
    return false;
  }
}
