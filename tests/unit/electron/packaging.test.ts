/**
 * The packaged app's file layout, from electron.config.ts through electron-builder's own file matcher
 * (app-builder-lib's getMainFileMatchers / getNodeModuleFileMatcher / getFileMatchers, the code `electron-builder`
 * runs), over this checkout's built dist/ and installed node_modules. `electron-builder --dir` itself needs the
 * Electron zip, which cannot be downloaded here. Per target: the bundles, the renderer, the models and the unpacked
 * native modules are in; no sources, tests, maps or other platforms' binaries. Sizes before and after the excludes
 * (the configuration this replaced vs. today's) are written to test-results/packaging-sizes.json.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Configuration } from 'electron-builder';
import config from '../../../electron.config';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const require = createRequire(import.meta.url);

interface Stat {
  isDirectory(): boolean;
}
type Filter = (file: string, stat: Stat) => boolean;
interface Matcher {
  from: string;
  to: string;
  patterns: string[];
  isEmpty(): boolean;
  containsOnlyIgnore(): boolean;
  prependPattern(p: string): void;
  createFilter(): Filter;
}
interface FileMatcherModule {
  getMainFileMatchers(appDir: string, destination: string, expand: (p: string) => string, platformOptions: object, packager: object, outDir: string, isElectronCompile: boolean): Matcher[];
  getNodeModuleFileMatcher(appDir: string, destination: string, expand: (p: string) => string, platformOptions: object, packager: object): Matcher;
  getFileMatchers(config: Configuration, name: 'extraResources' | 'asarUnpack', destination: string, options: { macroExpander: (p: string) => string; customBuildOptions: object; globalOutDir: string; defaultSrc: string }): Matcher[] | null;
}
// electron-builder's matcher (internal module of its app-builder-lib; the same code that copies the files).
const fm = require('app-builder-lib/out/fileMatcher.js') as FileMatcherModule;

/** The configuration this change replaced (sources shipped, whole models folder, every platform's binaries). */
const BEFORE: Configuration = {
  directories: { output: 'release', buildResources: 'build' },
  files: ['dist/**/*', 'app/**/*', 'main/**/*', 'native/**/*', 'package.json', '!**/*.test.ts', '!**/*.map'],
  extraResources: [{ from: 'models', to: 'models', filter: ['**/*', '!**/__pycache__/**'] }],
  asarUnpack: ['node_modules/sharp/**/*', 'node_modules/@img/**/*', 'node_modules/onnxruntime-node/**/*', 'node_modules/onnxruntime-common/**/*'],
};

type Target = { name: string; platform: 'linux' | 'darwin' | 'win32'; os: 'linux' | 'mac' | 'win'; arch: 'x64' | 'arm64' };
// onnxruntime-node ships macOS binaries for arm64 only.
const TARGETS: Target[] = [
  { name: 'linux x64 (AppImage, deb)', platform: 'linux', os: 'linux', arch: 'x64' },
  { name: 'macOS arm64 (dmg)', platform: 'darwin', os: 'mac', arch: 'arm64' },
  { name: 'Windows x64 (nsis)', platform: 'win32', os: 'win', arch: 'x64' },
];

interface Layout {
  /** Paths inside app.asar (relative to the app root). */
  asar: Map<string, number>;
  /** Paths in app.asar.unpacked. */
  unpacked: Map<string, number>;
  /** Paths under resources/ (extraResources). */
  resources: Map<string, number>;
}

function walk(dir: string, rel: string, filter: Filter, out: Map<string, number>, abs = (r: string) => path.join(dir, r)): void {
  for (const e of fs.readdirSync(rel ? abs(rel) : dir, { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    const st = fs.statSync(abs(r));
    if (!filter(abs(r), st)) continue;
    if (st.isDirectory()) walk(dir, r, filter, out, abs);
    else out.set(r, st.size);
  }
}

/** Production dependencies (dependencies + optionalDependencies, transitively; electron itself is never copied). */
function productionPackages(): string[] {
  const seen = new Set<string>();
  const visit = (name: string, from: string) => {
    let dir = from;
    for (;;) {
      const candidate = path.join(dir, 'node_modules', name);
      if (fs.existsSync(path.join(candidate, 'package.json'))) {
        const real = path.relative(ROOT, candidate).split(path.sep).join('/');
        if (seen.has(real)) return;
        seen.add(real);
        const pkg = JSON.parse(fs.readFileSync(path.join(candidate, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
        for (const d of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) visit(d, candidate);
        return;
      }
      // Node's resolution: up the folders to the package root; not found = an optional dependency for another platform.
      if (dir === ROOT) return;
      dir = path.dirname(dir);
    }
  };
  const root = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; optionalDependencies?: Record<string, string> };
  for (const d of Object.keys({ ...root.dependencies, ...root.optionalDependencies })) if (d !== 'electron') visit(d, ROOT);
  return [...seen].sort();
}

function layoutFor(cfg: Configuration, t: Target): Layout {
  const expand = (p: string) => p.replace(/\$\{platform\}/g, t.platform).replace(/\$\{arch\}/g, t.arch).replace(/\$\{os\}/g, t.os);
  const packager = { info: { projectDir: ROOT, buildResourcesDir: cfg.directories?.buildResources ?? 'build', isPrepackedAppAsar: false, config: cfg, debugLogger: { isEnabled: false } } };
  const outDir = path.join(ROOT, cfg.directories?.output ?? 'dist');
  const asar = new Map<string, number>();
  const app = fm.getMainFileMatchers(ROOT, '', expand, {}, packager, outDir, false);
  for (const m of app) walk(m.from, '', m.createFilter(), asar);
  const nm = fm.getNodeModuleFileMatcher(ROOT, '', expand, {}, packager.info).createFilter();
  for (const pkg of productionPackages()) {
    const dir = path.join(ROOT, pkg);
    if (!nm(dir, fs.statSync(dir))) continue;
    walk(ROOT, pkg, nm, asar);
  }
  const unpackMatchers = fm.getFileMatchers(cfg, 'asarUnpack', '', { macroExpander: expand, customBuildOptions: {}, globalOutDir: outDir, defaultSrc: ROOT });
  const unpack = unpackMatchers?.[0]?.createFilter();
  const unpacked = new Map<string, number>();
  for (const [f, size] of asar) {
    if (unpack?.(path.join(ROOT, f), { isDirectory: () => false })) {
      unpacked.set(f, size);
      asar.delete(f);
    }
  }
  const resources = new Map<string, number>();
  for (const m of fm.getFileMatchers(cfg, 'extraResources', 'RESOURCES', { macroExpander: expand, customBuildOptions: {}, globalOutDir: outDir, defaultSrc: ROOT }) ?? []) {
    if (m.isEmpty() || m.containsOnlyIgnore()) m.prependPattern('**/*');
    const files = new Map<string, number>();
    walk(m.from, '', m.createFilter(), files);
    const to = path.relative('RESOURCES', m.to).split(path.sep).join('/');
    for (const [f, size] of files) resources.set(to ? `${to}/${f}` : f, size);
  }
  return { asar, unpacked, resources };
}

const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const mb = (n: number) => Math.round((n / 1e6) * 10) / 10;

describe('packaged layout (electron.config.ts through electron-builder’s file matcher)', () => {
  beforeAll(() => {
    // What ships is what `npm run build` wrote; build what is missing.
    if (!fs.existsSync(path.join(ROOT, 'dist', 'renderer', 'index.html'))) execFileSync(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'error'], { cwd: ROOT });
    execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-node.mjs')], { cwd: ROOT });
  }, 300_000);

  const linux = TARGETS[0]!;

  it('ships the bundles, the renderer and package.json in the asar, and no sources, tests, maps or tsx', () => {
    const { asar, unpacked } = layoutFor(config, linux);
    for (const f of ['package.json', 'dist/main/electron/main.cjs', 'dist/main/electron/preload.cjs', 'dist/main/electron/core.cjs', 'dist/workers/engine.cjs', 'dist/workers/image.cjs', 'dist/workers/pilResample.cjs', 'dist/renderer/index.html']) {
      expect(asar.has(f), f).toBe(true);
    }
    const main = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { main: string }).main;
    expect(asar.has(main)).toBe(true);
    const all = [...asar.keys(), ...unpacked.keys()];
    expect(all.filter((f) => /\.(ts|tsx|map)$/.test(f))).toEqual([]);
    expect(all.filter((f) => /(^|\/)(tests?|__tests__)\//.test(f) || /\.test\./.test(f))).toEqual([]);
    expect(all.filter((f) => /^(app|main|native|renderer|scripts|models|ci|docs)\//.test(f))).toEqual([]);
    expect(all.filter((f) => /^node_modules\/(tsx|esbuild|@esbuild|onnxruntime-web|electron|vite|vitest|playwright-core|typescript)\//.test(f))).toEqual([]);
    // Runtime dependencies the bundles require are there.
    for (const dep of ['@huggingface/transformers', 'zod', 'ws', 'ssh2', 'hyparquet', 'commander']) expect(all.some((f) => f.startsWith(`node_modules/${dep}/`)), dep).toBe(true);
  });

  it('unpacks sharp and onnxruntime-node from the asar, with only the target’s onnxruntime binaries', () => {
    for (const t of TARGETS) {
      const { asar, unpacked } = layoutFor(config, t);
      const ort = [...unpacked.keys()].filter((f) => f.startsWith('node_modules/onnxruntime-node/bin/'));
      expect(ort.length, t.name).toBeGreaterThan(0);
      expect(ort.every((f) => f.includes(`/${t.platform}/${t.arch}/`)), t.name).toBe(true);
      expect(ort.some((f) => f.endsWith('onnxruntime_binding.node')), t.name).toBe(true);
      expect([...unpacked.keys()].some((f) => f.startsWith('node_modules/sharp/dist/')), t.name).toBe(true);
      expect([...asar.keys()].filter((f) => f.endsWith('.node'))).toEqual([]);
    }
    // The @img binaries installed here are this machine's (linux x64); each platform's build installs its own.
    expect([...layoutFor(config, linux).unpacked.keys()].some((f) => /^node_modules\/@img\/sharp-linux-x64\/.*\.node$/.test(f))).toBe(true);
  });

  it('puts the bundled models and examples in resources/models, where app/paths.ts looks, and none of the training code', () => {
    const { resources } = layoutFor(config, linux);
    for (const f of ['models/loupe-tiny/model/config.json', 'models/loupe-tiny/model/preprocessor_config.json', 'models/loupe-tiny/examples/samples.jsonl', 'models/tiny-random-qwen25vl/config.json', 'native/pysandbox/worker.py']) expect(resources.has(f), f).toBe(true);
    expect([...resources.keys()].some((f) => /^models\/loupe-tiny\/model\/onnx\/.+\.onnx$/.test(f))).toBe(true);
    // Every example image samples.jsonl names is there.
    const samples = fs.readFileSync(path.join(ROOT, 'models/loupe-tiny/examples/samples.jsonl'), 'utf8').split('\n').filter(Boolean);
    for (const s of samples) {
      const image = (JSON.parse(s) as { image?: string }).image;
      if (image) expect(resources.has(`models/loupe-tiny/examples/${image}`), image).toBe(true);
    }
    // No training code: the one Python file is the PyVision sandbox's worker, which the sandbox bind-mounts.
    expect([...resources.keys()].filter((f) => /\.(py|ts|sh)$/.test(f) || f.includes('__pycache__'))).toEqual(['native/pysandbox/worker.py']);
  });

  it('electron-builder loads electron.config.ts as `npm run dist` does, and its schema accepts it', async () => {
    const cfgModule = require('app-builder-lib/out/util/config/config.js') as {
      getConfig(projectDir: string, configPath: string | null, fromOptions: null): Promise<Configuration>;
      validateConfiguration(c: Configuration, debugLogger: { isEnabled: boolean }): Promise<void>;
    };
    const loaded = await cfgModule.getConfig(ROOT, path.join(ROOT, 'electron.config.ts'), null);
    await expect(cfgModule.validateConfiguration(loaded, { isEnabled: false })).resolves.toBeUndefined();
    // electron-builder normalises `files` into one file set.
    expect(loaded.files).toEqual([{ filter: config.files }]);
    expect(loaded.electronFuses).toEqual(config.electronFuses);
  });

  it('sets the fuses and the targets a user builds with `npm run dist`', () => {
    expect(config.electronFuses).toMatchObject({ runAsNode: false, enableCookieEncryption: true, enableEmbeddedAsarIntegrityValidation: true, onlyLoadAppFromAsar: true, grantFileProtocolExtraPrivileges: false });
    expect(config.linux?.target).toEqual(['AppImage', 'deb']);
    expect(config.mac?.target).toEqual(['dmg']);
    expect(config.win?.target).toEqual(['nsis']);
    expect(config.asar).toBe(true);
  });

  it('reports the packaged size per target, before and after the excludes', () => {
    const rows = TARGETS.map((t) => {
      const before = layoutFor(BEFORE, t);
      const after = layoutFor(config, t);
      const size = (l: Layout) => ({ asarMB: mb(total(l.asar)), unpackedMB: mb(total(l.unpacked)), resourcesMB: mb(total(l.resources)), totalMB: mb(total(l.asar) + total(l.unpacked) + total(l.resources)), files: l.asar.size + l.unpacked.size + l.resources.size });
      return { target: t.name, before: size(before), after: size(after) };
    });
    fs.mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, 'test-results', 'packaging-sizes.json'), JSON.stringify({ note: 'app files only (asar + unpacked + extraResources), without the Electron runtime; @img binaries are those installed here (linux x64)', rows }, null, 2));
    for (const r of rows) expect(r.after.totalMB, r.target).toBeLessThan(r.before.totalMB);
  });
});
