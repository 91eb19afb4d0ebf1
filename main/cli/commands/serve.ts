import type { Command } from 'commander';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { startServer } from '../../server';
import { packageRoot, rendererDir as builtRendererDir } from '../../../app/paths';

/** Find a system Chromium-family browser to open the app window in. */
export function findBrowser(): string | null {
  const candidates = [process.env.LOUPE_BROWSER, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  return null;
}

export interface BrowserModeOptions {
  host?: string;
  port?: number;
  workspace?: string;
  open?: boolean;
  /** Remote page origins let in when listening beyond loopback (`--allow-origin`, repeatable). */
  allowOrigins?: string[];
}

/**
 * Browser mode's port when none is given: the same on every start, so a bookmark or an SSH tunnel
 * (`ssh -L 8420:127.0.0.1:8420 gpu-box`) keeps working. When it is taken (a second Loupe), the next free one of
 * the following 19 is used and printed.
 */
export const DEFAULT_PORT = 8420;
const PORT_TRIES = 20;

/**
 * Build the renderer when it is missing (a fresh clone after `npm install`, where only `npm start` used to build
 * it), with the vite that `npm install` put in node_modules.
 */
export function ensureRenderer(root: string = packageRoot(), log: (s: string) => void = (s) => process.stderr.write(s)): string {
  const rendererDir = root === packageRoot() ? builtRendererDir() : path.join(root, 'dist', 'renderer');
  if (fs.existsSync(path.join(rendererDir, 'index.html'))) return rendererDir;
  const vite = path.join(root, 'node_modules', 'vite', 'bin', 'vite.js');
  if (!fs.existsSync(vite)) {
    throw new Error(`the renderer is not built (${rendererDir} is missing) and vite is not installed to build it: run \`npm install\` (with dev dependencies), then \`npm run build\``);
  }
  log('Building the user interface (first start only; about a minute)…\n');
  const r = spawnSync(process.execPath, [vite, 'build', '--logLevel', 'error'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0 || !fs.existsSync(path.join(rendererDir, 'index.html'))) {
    throw new Error(`building the renderer failed (vite exited with ${r.status ?? r.signal}); run \`npm run build:renderer\` to see why`);
  }
  return rendererDir;
}

function addressInUse(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === 'EADDRINUSE';
}

/** Start browser mode: core + server; open an app window when a display exists, else print the URL. */
export async function runBrowserMode(opts: BrowserModeOptions): Promise<void> {
  const rendererDir = ensureRenderer();
  // Loaded here, not at the top: every `loupe` command loads this file to register `serve`.
  const [{ createCore }, server_] = await Promise.all([import('../../core'), import('../../server')]);
  const core = await createCore({ workspace: opts.workspace, transport: 'browser', warmRunIndex: true });
  const allow = opts.allowOrigins?.length ? { allowOrigins: opts.allowOrigins } : {};
  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  const ports = opts.port !== undefined ? [opts.port] : Array.from({ length: PORT_TRIES }, (_, i) => DEFAULT_PORT + i);
  for (const port of ports) {
    try {
      server = await server_.startServer({ core, host: opts.host, port, rendererDir, ...allow });
      break;
    } catch (err) {
      if (!addressInUse(err)) throw err;
      if (opts.port !== undefined) {
        await core.dispose();
        throw new Error(`port ${port} is in use (another Loupe or program listens there): pick another with --port, or leave --port out to use ${DEFAULT_PORT} or the next free one`);
      }
    }
  }
  // Every port of the range taken: any free one, rather than not starting.
  server ??= await server_.startServer({ core, host: opts.host, port: 0, rendererDir, ...allow });
  process.stdout.write(`Loupe (browser mode) is running.\n  open: ${server.openUrl}\n  workspace: ${core.workspace}\n`);
  const display = process.env.DISPLAY || process.env.WAYLAND_DISPLAY || process.platform === 'darwin' || process.platform === 'win32';
  const browser = findBrowser();
  if (opts.open !== false && display && browser) {
    // Not the token URL: argv is visible to every local user in ps. The browser opens a private one-time login file.
    const loginFile = await server.writeLoginFile();
    const child = spawn(browser, [`--app=${pathToFileURL(loginFile).href}`, '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'], { stdio: 'ignore', detached: true });
    child.on('error', () => process.stdout.write('  (could not open a browser window; open the URL above)\n'));
    child.unref();
  } else {
    process.stdout.write('  (no display or browser found: open the URL above in a browser)\n');
  }
  const stop = async () => {
    await server.close();
    await core.dispose();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

export function register(program: Command): void {
  program
    .command('serve')
    .description('start browser mode: the app served on 127.0.0.1 with a token URL (use --host to listen elsewhere)')
    .option('--host <host>', 'address to listen on (default 127.0.0.1; anything else allows remote clients)')
    .option('--port <port>', `port (default ${DEFAULT_PORT}, or the next free one after it)`, (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--port must be an integer 0–65535, got ${JSON.stringify(v)}`);
      return n;
    })
    .option('--workspace <dir>', 'workspace folder (runs, media, labels, settings)')
    .option('--no-open', 'do not open a browser window')
    .option('--allow-origin <origin>', 'with --host: let a browser at this origin in, e.g. http://gpu-box.lab:8765 (repeatable)', (v: string, all: string[]) => [...all, v], [] as string[])
    .action(async (o: { host?: string; port?: number; workspace?: string; open: boolean; allowOrigin: string[] }) => {
      const { allowOrigin, ...rest } = o;
      await runBrowserMode({ ...rest, allowOrigins: allowOrigin });
    });
}
