import type { Command } from 'commander';
import path from 'node:path';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { createCore } from '../../core';
import { startServer } from '../../server';
import { rendererDir as builtRendererDir } from '../../../app/paths';

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

/** Start browser mode: core + server; open an app window when a display exists, else print the URL. */
export async function runBrowserMode(opts: BrowserModeOptions): Promise<void> {
  const rendererDir = builtRendererDir();
  if (!fs.existsSync(path.join(rendererDir, 'index.html'))) {
    throw new Error(`the renderer is not built (${path.relative(process.cwd(), rendererDir) || rendererDir} is missing): run \`npm run build\` first`);
  }
  const core = await createCore({ workspace: opts.workspace, transport: 'browser' });
  const server = await startServer({ core, host: opts.host, port: opts.port, rendererDir, ...(opts.allowOrigins?.length ? { allowOrigins: opts.allowOrigins } : {}) });
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
    .option('--port <port>', 'port (default: a free one)', (v) => Number.parseInt(v, 10))
    .option('--workspace <dir>', 'workspace folder (runs, media, labels, settings)')
    .option('--no-open', 'do not open a browser window')
    .option('--allow-origin <origin>', 'with --host: let a browser at this origin in, e.g. http://gpu-box.lab:8765 (repeatable)', (v: string, all: string[]) => [...all, v], [] as string[])
    .action(async (o: { host?: string; port?: number; workspace?: string; open: boolean; allowOrigin: string[] }) => {
      const { allowOrigin, ...rest } = o;
      await runBrowserMode({ ...rest, allowOrigins: allowOrigin });
    });
}
