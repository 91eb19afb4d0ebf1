/**
 * The one contract between the UI and the core. Every call is `'domain:verb' → { req, res }` and every
 * stream is `'domain:event' → payload`, each with a zod schema. Both transports (Electron IPC and the
 * browser-mode WebSocket) carry exactly these; the core validates every incoming payload.
 * No Node imports here: the renderer imports this file.
 */
import { z } from 'zod';
import { demoCalls, demoEvents } from './domains/demo';
import { browseCalls } from './domains/browse';
import { labelsCalls, labelsEvents } from './domains/labels';
import { sweepsCalls, sweepsEvents } from './domains/sweeps';
import { trainingCalls, trainingEvents } from './domains/training';
import { DeviceIdSchema, modelsCalls } from './domains/models';
import { servedCalls, servedEvents } from './domains/served';

export * from './trajectory';
export * from './attention';
export * from './domains/demo';
export * from './domains/browse';
export * from './domains/sweeps';
export * from './domains/training';
export * from './domains/models';
export * from './domains/labels';
export * from './domains/served';
import { Empty } from './common';

/** State of the inference engine as the status bar shows it. */
export const EngineStateSchema = z.object({
  /** idle = nothing loaded; loading; ready = a model is loaded; busy = generating; error. */
  status: z.enum(['idle', 'loading', 'ready', 'busy', 'error']),
  model: z.string().nullable(),
  /** The device that actually runs the model (after any fallback). */
  device: z.string().nullable(),
  message: z.string().optional(),
});
export type EngineState = z.infer<typeof EngineStateSchema>;

export const ThemeSchema = z.enum(['light', 'dark', 'system']);
export type Theme = z.infer<typeof ThemeSchema>;

export const SettingsSchema = z.object({
  theme: ThemeSchema.default('system'),
  annotator: z.string().default(''),
  /** Show developer diagnostics (the Demo's long-task count); off for talks and everyday use. */
  developer: z.boolean().default(false),
  /** The model the Demo and a new evaluation start on (a registered name, see `models:list`). */
  defaultModel: z.string().min(1).max(200).default('loupe-tiny'),
  /** The device local models load on (the Demo, the Models page's Load, UI sweeps); see `models:devices`. */
  device: DeviceIdSchema.default('cpu'),
  /** ONNX Runtime intra-op threads for local models; 0 = automatic. */
  threads: z.number().int().min(0).max(256).default(0),
});
export type Settings = z.infer<typeof SettingsSchema>;

export const AppInfoSchema = z.object({
  name: z.string(),
  version: z.string(),
  workspace: z.string(),
  /** Which door the UI came through. */
  transport: z.enum(['electron', 'browser']),
  platform: z.string(),
  node: z.string(),
  engine: EngineStateSchema,
});
export type AppInfo = z.infer<typeof AppInfoSchema>;




/** Calls of the app domain. Other domains declare theirs in `./domains/*.ts`, merged below. */
const appCalls = {
  'app:info': { req: Empty, res: AppInfoSchema },
  'settings:get': { req: Empty, res: SettingsSchema },
  'settings:set': { req: SettingsSchema.partial().strict(), res: SettingsSchema },
  /**
   * The workspace the app opens at its next start (a per-user setting outside any workspace): the folder is created
   * when missing and must be writable. `LOUPE_WORKSPACE` or `--workspace` still win over it.
   */
  'settings:workspace': { req: z.object({ path: z.string().max(4096) }).strict(), res: z.object({ current: z.string(), next: z.string(), restartNeeded: z.boolean() }) },
  'engine:state': { req: Empty, res: EngineStateSchema },
} as const;

const appEvents = {
  'engine:state': EngineStateSchema,
  'settings:changed': SettingsSchema,
  'runs:changed': z.object({ runId: z.string() }),
} as const;

/**
 * Every request/response pair. The contract is one module: each domain's calls sit in one file under
 * `domains/` (so parallel work on two pages never edits the same lines) and are merged here.
 */
export const calls = { ...appCalls, ...demoCalls, ...modelsCalls, ...browseCalls, ...labelsCalls, ...sweepsCalls, ...trainingCalls, ...servedCalls } as const;

/** Every server-pushed stream. */
export const events = { ...appEvents, ...demoEvents, ...labelsEvents, ...sweepsEvents, ...trainingEvents, ...servedEvents } as const;

export type Calls = typeof calls;
export type Events = typeof events;
export type CallName = keyof Calls;
export type EventName = keyof Events;
export type CallReq<C extends CallName> = z.input<Calls[C]['req']>;
export type CallRes<C extends CallName> = z.output<Calls[C]['res']>;
export type EventPayload<E extends EventName> = z.output<Events[E]>;

/** An error as it crosses the contract: users can act on it. */
export const ContractErrorSchema = z.object({
  code: z.enum(['invalid_payload', 'unknown_method', 'handler_error', 'transport_error', 'unauthorized']),
  message: z.string(),
  /** For invalid payloads: each problem with the field path. */
  issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
export type ContractError = z.infer<typeof ContractErrorSchema>;

/** What a renderer gets, whichever transport carries it. */
export interface LoupeClient {
  call<C extends CallName>(method: C, req: CallReq<C>): Promise<CallRes<C>>;
  /** Subscribe to an event stream; returns a disposer. */
  on<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void): () => void;
  /** Absolute URL of a workspace media file (loupe-media:// in Electron, /media/ in browser mode). */
  mediaUrl(mediaId: string): string;
  /**
   * URL that downloads an export (file name under the workspace's `exports/`) over HTTP: browser mode, where the
   * file on the server is of no use to a browser over an SSH tunnel. Null where the door has no such route.
   */
  exportUrl(name: string): string | null;
  /**
   * Save an export where the user chooses (Electron: the system's save dialog, then a copy of the file). Resolves to
   * the chosen path, or null when the user cancelled. Absent where the door has no dialog (browser mode downloads).
   */
  saveExport?(name: string): Promise<string | null>;
  readonly transport: 'electron' | 'browser';
}

/** The raw bridge the Electron preload exposes as `window.loupe` (exactly this, nothing else). */
export interface LoupeBridge {
  invoke(method: string, payload: unknown): Promise<{ ok: true; result: unknown } | { ok: false; error: ContractError }>;
  subscribe(listener: (event: string, payload: unknown) => void): () => void;
  /** Save a file of the workspace's `exports/` through the system's save dialog (main process). */
  saveExport(name: string): Promise<SaveExportReply>;
}

/** main's answer to a save-export request: the chosen path (null: the user cancelled), or why it failed. */
export type SaveExportReply = { ok: true; saved: string | null } | { ok: false; message: string };

export { LoupeCallError } from './callError';

/** Format zod issues as `field: problem` entries. */
export function describeIssues(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): Array<{ path: string; message: string }> {
  return issues.map((i) => ({ path: i.path.length ? i.path.map(String).join('.') : '(root)', message: i.message }));
}

/** Wire format of the WebSocket transport. */
export type WireMessage =
  | { type: 'call'; id: number; method: string; payload: unknown }
  | { type: 'result'; id: number; ok: true; result: unknown }
  | { type: 'result'; id: number; ok: false; error: ContractError }
  | { type: 'event'; event: string; payload: unknown };
