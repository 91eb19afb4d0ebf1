// Lint, including the layer directions of DESIGN.md §2 (renderer → app/contract; main/core → app, native;
// app never reaches a door, native/ or the renderer; app/contract stays free of Node; native libraries only
// under native/). The layer rule sees static imports, `export … from`, dynamic `import()`, `require()` and
// type-level `import('…')`, resolves relative paths to the folder they land in, and checks npm packages per layer.
import path from 'node:path';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

const ROOT = path.dirname(fileURLToPath(import.meta.url));
const BUILTINS = new Set(builtinModules.flatMap((n) => [n, `node:${n}`]));
/** Packages that load native code: only native/ (the worker and image ops) may load them. */
const NATIVE_PACKAGES = [/^sharp$/, /^onnxruntime-/, /^@huggingface\//];

/** Which layer a repository-relative path is in (the longest prefix wins). */
const LAYERS = ['app/contract', 'app', 'main/core', 'main/cli', 'main/server', 'main/electron', 'native', 'renderer'];
function layerOf(rel) {
  const p = rel.split(path.sep).join('/');
  return LAYERS.find((l) => p === l || p.startsWith(`${l}/`)) ?? null;
}
const DOORS = ['main/cli', 'main/server', 'main/electron'];

/**
 * What each layer may not reach. `folders`: layer → message; `packages`: [test, message]. A layer missing
 * here (tests/, models/, scripts/) is free: it is not shipped code that another layer builds on.
 */
const natives = (msg) => NATIVE_PACKAGES.map((re) => [(n) => re.test(n), msg]);
const RULES = {
  'app/contract': {
    only: (target) => target === 'app/contract',
    onlyMessage: 'Bad layering: app/contract imports only itself (and zod).',
    packages: [
      [(n) => BUILTINS.has(n), 'Bad layering: app/contract runs in the renderer; no Node imports.'],
      [(n) => n !== 'zod', 'Bad layering: the contract is transport- and UI-free; it imports only zod.'],
    ],
  },
  app: {
    folders: {
      'main/core': 'Bad layering: app/ must not import main/ (main wires app).',
      ...Object.fromEntries(DOORS.map((d) => [d, 'Bad layering: app/ must not import main/ (main wires app).'])),
      native: 'Bad layering: app/ reaches native/ only through interfaces main wires.',
      renderer: 'Bad layering: app/ must not import renderer/.',
    },
    packages: [
      [(n) => ['electron', 'react', 'react-dom', 'zustand'].includes(n.split('/')[0]), 'Bad layering: app/ is plain Node (no Electron, React or UI state).'],
      ...natives('Bad layering: native libraries (sharp, onnxruntime, @huggingface) load only under native/; app/ takes an interface main wires.'),
    ],
  },
  renderer: {
    folders: {
      app: 'Bad layering: the renderer talks to the core only through app/contract.',
      'main/core': 'Bad layering: the renderer must not import main/ or native/.',
      ...Object.fromEntries(DOORS.map((d) => [d, 'Bad layering: the renderer must not import main/ or native/.'])),
      native: 'Bad layering: the renderer must not import main/ or native/.',
    },
    packages: [
      [(n) => BUILTINS.has(n), 'Bad layering: no Node in the renderer.'],
      [(n) => n === 'electron', 'Bad layering: the renderer uses window.loupe via the client, never Electron.'],
      [(n) => n === 'ws', 'Bad layering: the renderer uses the browser WebSocket through the client, never the Node ws package.'],
      ...natives('Bad layering: native libraries load only under native/.'),
    ],
  },
  'main/core': {
    folders: Object.fromEntries(DOORS.map((d) => [d, `Bad layering: main/core is the composition root every door uses; it must not import a door (${d}).`])),
    packages: [
      [(n) => n === 'electron', 'Bad layering: the core never imports electron; main/electron hands in adapters.'],
      ...natives('Bad layering: native libraries load only under native/; main/core wires them through native/.'),
    ],
  },
  'main/cli': { folders: { 'main/electron': 'Bad layering: the CLI must not import the Electron door.' }, packages: natives('Bad layering: native libraries load only under native/.') },
  'main/server': { folders: { 'main/electron': 'Bad layering: the server must not import the Electron door.', 'main/cli': 'Bad layering: the server must not import the CLI door.' }, packages: natives('Bad layering: native libraries load only under native/.') },
  'main/electron': { folders: { 'main/cli': 'Bad layering: the Electron door must not import the CLI door.' }, packages: natives('Bad layering: native libraries load only under native/.') },
  native: {
    folders: {
      'main/core': 'Bad layering: native/ must not import main/ or renderer/.',
      ...Object.fromEntries(DOORS.map((d) => [d, 'Bad layering: native/ must not import main/ or renderer/.'])),
      renderer: 'Bad layering: native/ must not import main/ or renderer/.',
    },
    packages: [[(n) => ['electron', 'react'].includes(n), 'Bad layering: native/ is plain Node.']],
  },
};

const packageName = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : BUILTINS.has(spec) ? spec : spec.split('/')[0]);

const layersRule = {
  meta: { type: 'problem', schema: [], docs: { description: 'Enforce the layer directions of DESIGN.md §2' } },
  create(context) {
    const file = context.filename ?? context.getFilename();
    const from = layerOf(path.relative(ROOT, file));
    const rule = from ? RULES[from] : null;
    if (!rule) return {};
    const check = (node, spec) => {
      if (typeof spec !== 'string') return;
      if (spec.startsWith('.') || spec.startsWith('/')) {
        const target = layerOf(path.relative(ROOT, path.resolve(path.dirname(file), spec)));
        if (rule.only && !rule.only(target)) return context.report({ node, message: rule.onlyMessage });
        const msg = target && target !== from ? rule.folders?.[target] : undefined;
        if (msg) context.report({ node, message: msg });
        return;
      }
      const name = packageName(spec);
      const hit = (rule.packages ?? []).find(([test]) => test(name) || test(spec));
      if (hit) context.report({ node, message: hit[1] });
    };
    const literal = (n) => (n && n.type === 'Literal' ? n.value : n && n.type === 'TemplateLiteral' && n.expressions.length === 0 ? n.quasis[0].value.cooked : undefined);
    return {
      ImportDeclaration: (n) => check(n, n.source.value),
      ExportNamedDeclaration: (n) => n.source && check(n, n.source.value),
      ExportAllDeclaration: (n) => check(n, n.source.value),
      ImportExpression: (n) => check(n, literal(n.source)),
      TSImportType: (n) => { const a = n.source ?? n.argument; return check(n, literal(a?.literal ?? a)); },
      TSExternalModuleReference: (n) => check(n, literal(n.expression)),
      'CallExpression[callee.name="require"]': (n) => check(n, literal(n.arguments[0])),
    };
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'release/**', 'node_modules/**', 'test-results/**', 'models/**/*.py', '**/*.d.ts'] },
  ...tseslint.configs.recommended,
  {
    plugins: { loupe: { rules: { layers: layersRule } } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'warn',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'loupe/layers': 'error',
    },
  },
);
