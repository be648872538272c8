// Bundles every entry point of Ralph Loop with esbuild.
//   dist/extension.js           the VS Code extension (cjs, `vscode` external)
//   dist/cli.js                 the `ralph` CLI (node, shebang): status from the snapshot cache, else dist/cli-read.js
//                               (status / next) or dist/cli-main.js (the full program)
//   dist/webview/*              the dashboard page (browser iife + css)
//   dist/schemas/*.json         JSON schemas of Ralph's files for contributes.jsonValidation (from the zod schemas)
//   dist/test/{unit,component,stress,corpus}/**  mocha tiers on plain Node (`vscode` is the fake in test/support)
//   dist/test/integration/**    the suite run inside a real VS Code extension host (`vscode` external)
//   dist/test/e2e/**            Playwright tests (plain Node)
// Flags: --watch (rebuild on change), --production (minify, no sourcemaps), --only=ext,cli,webview,test,bench,demo
import * as esbuild from 'esbuild';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

const args = process.argv.slice(2);
const production = args.includes('--production');
const watch = args.includes('--watch');
const onlyArg = args.find((a) => a.startsWith('--only='));
const only = onlyArg ? new Set(onlyArg.slice('--only='.length).split(',')) : null;
const want = (name) => !only || only.has(name);

// ESM-only dependencies (execa) read import.meta.url; in a cjs bundle it must come from __filename.
const importMetaShim = "const __importMetaUrl = require('url').pathToFileURL(__filename).href;";
const nodeCommon = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'warning',
  define: {
    'import.meta.url': '__importMetaUrl',
    RALPH_VERSION: JSON.stringify(JSON.parse(fs.readFileSync('package.json', 'utf8')).version),
  },
  banner: { js: importMetaShim },
  legalComments: 'none',
  // jsonc-parser's UMD main cannot be bundled; its ESM build can.
  mainFields: ['module', 'main'],
  // Prompt templates (src/core/loop/templates/*.md) are bundled as text.
  loader: { '.md': 'text' },
};

/** Prints the lines the `$esbuild-watch` problem matcher waits for. */
const watchReporter = {
  name: 'watch-reporter',
  setup(build) {
    build.onStart(() => {
      if (watch) console.log('[watch] build started');
    });
    build.onEnd((result) => {
      for (const e of result.errors)
        console.error(`✘ [ERROR] ${e.text}\n    ${e.location?.file}:${e.location?.line}:${e.location?.column}`);
      if (watch) console.log('[watch] build finished');
    });
  },
};

function filesUnder(dir, suffix) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true })
    .map((f) => path.join(dir, String(f)))
    .filter((f) => f.endsWith(suffix))
    .sort();
}

// Libraries most starts never run are not bundled into the programs: every kB of a bundle is read and pre-parsed at
// each start, used or not. Each is `require`d on first use from a file beside the bundle (in .vscodeignore's allow
// list), through a small shim: `require('./<file>')[<lib>]`. DEFERRED maps each library to its file:
// - yaml (a STATE.md outside the flat subset), jsonc-parser (a positioned JSON error), chokidar (`--watch`): with
//   them, yaml + jsonc-parser + chokidar were 0.37 of dist/cli-waves.js's 0.46 MB, ~12 ms of CPU per pass;
// - mvdan-sh, the shell parser of the command policy and the guard (a 3.1 MB GopherJS build): three quarters of
//   dist/cli-main.js and about 0.2 s of CPU at every start; only commands that read a shell command line load it;
// - bullmq and ioredis (2.4 MB), for remote lanes only (src/core/remote/: `ralph worker`, a parallel run with
//   laneDispatcher "bullmq"), in one file because bullmq must use the same ioredis.
const DEFERRED = {
  yaml: 'yaml.js',
  'jsonc-parser': 'jsonc-parser.js',
  chokidar: 'chokidar.js',
  'mvdan-sh': 'mvdan-sh.js',
  bullmq: 'remote-libs.js',
  ioredis: 'remote-libs.js',
};
/** The plugin that defers `libs` (keys of DEFERRED) of a bundle to their files. */
function deferLibs(libs) {
  return {
    name: 'defer-libs',
    setup(build) {
      build.onResolve({ filter: new RegExp(`^(${libs.join('|')})$`) }, (args) => ({
        path: args.path,
        namespace: 'deferred-lib',
      }));
      build.onLoad({ filter: /.*/, namespace: 'deferred-lib' }, (args) => ({
        contents: `module.exports = require('./${DEFERRED[args.path]}')[${JSON.stringify(args.path)}];`,
        loader: 'js',
      }));
      build.onResolve({ filter: /.*/, namespace: 'deferred-lib' }, (args) => ({ path: args.path, external: true }));
    },
  };
}
const allDeferred = deferLibs(Object.keys(DEFERRED));

/**
 * For the mocha tiers: a package our own code imports is left to Node's `require` at run time when Node can require it
 * (not an ES module, or one whose exports name a `require` build), instead of being copied into each of the ~230
 * test bundles (mvdan-sh, bullmq and zod made a component test's bundle 6 MB and the build's CPU 43 s). ES-module-only
 * packages (execa) and everything they import stay bundled. Each test file still gets its own copy of src/.
 */
const requirableCache = new Map();
function requirable(name) {
  if (!requirableCache.has(name)) {
    let ok = false;
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join('node_modules', name, 'package.json'), 'utf8'));
      ok = pkg.type !== 'module' || JSON.stringify(pkg.exports ?? {}).includes('"require"');
    } catch {
      // not a top-level package: bundle it
    }
    requirableCache.set(name, ok);
  }
  return requirableCache.get(name);
}
const externalLibs = {
  name: 'external-libs',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path === 'vscode' || args.path.startsWith('node:') || args.importer.includes('node_modules')) return;
      const parts = args.path.split('/');
      const name = args.path.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
      return requirable(name) ? { path: args.path, external: true } : undefined;
    });
  },
};

const configs = [];
// The extension's bundle notes when it started evaluating, so activation can be measured from there.
if (want('ext'))
  configs.push({
    ...nodeCommon,
    entryPoints: ['src/extension/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    plugins: [deferLibs(['bullmq', 'ioredis'])],
    banner: { js: `var __ralphBundleStart = performance.now();\n${importMetaShim}` },
  });
// The plan worker thread (src/extension/planLoader.ts): reads plan graphs off the extension host's event loop.
if (want('ext'))
  configs.push({ ...nodeCommon, entryPoints: ['src/extension/planWorker.ts'], outfile: 'dist/planWorker.js' });
// The guard's hook: a tiny dependency-free client (dist/guard-hook.js) and the in-process decider (dist/guard.js).
if (want('cli')) {
  configs.push({
    ...nodeCommon,
    entryPoints: ['src/hook/client.ts'],
    outfile: 'dist/guard-hook.js',
    sourcemap: false,
    banner: {},
  });
  configs.push({ ...nodeCommon, entryPoints: ['src/hook/inProcess.ts'], outfile: 'dist/guard.js' });
}
// dist/cli.js is the tiny entry (status from the snapshot cache); it loads dist/cli-read.js for status and next
// (no commander) and dist/cli-main.js for the rest.
if (want('cli'))
  configs.push({
    ...nodeCommon,
    entryPoints: ['src/cli/entry.ts'],
    outfile: 'dist/cli.js',
    banner: { js: '#!/usr/bin/env node' },
  });
// The three CLI programs see `zod` as src/cli/lazyZod.ts (schemas built on first use; the real zod, dist/zod.js,
// loaded only then): a status answered from the parse cache never compiles or runs zod.
const lazyZod = {
  name: 'lazy-zod',
  setup(build) {
    build.onResolve({ filter: /^zod$/ }, (args) =>
      args.importer.endsWith(path.join('src', 'cli', 'lazyZod.ts'))
        ? undefined
        : { path: path.resolve('src/cli/lazyZod.ts') },
    );
  },
};
const cliProgram = { ...nodeCommon, plugins: [lazyZod] };
if (want('cli'))
  configs.push({ ...nodeCommon, entryPoints: ['src/cli/zodBundle.ts'], outfile: 'dist/zod.js', sourcemap: false });
// `ralph waves check` alone (src/cli/wavesMain.ts), loaded by dist/cli.js for that command line.
// Without the import.meta.url shim (its pathToFileURL at load is a few ms of every pass, bench/waves.bench.ts): nothing
// it bundles reads import.meta.url, and the build fails if something starts to.
const noImportMeta = {
  name: 'no-import-meta',
  setup(build) {
    build.onEnd((result) => {
      const out = build.initialOptions.outfile;
      if (
        !result.errors.length &&
        out &&
        fs.existsSync(out) &&
        fs.readFileSync(out, 'utf8').includes('__importMetaUrl')
      ) {
        return { errors: [{ text: `${out} reads import.meta.url: give it the importMetaShim banner (esbuild.mjs)` }] };
      }
    });
  },
};
// The files of DEFERRED: each exports { <lib>: the library, … } for the libraries it holds.
if (want('cli') || want('ext'))
  for (const file of new Set(Object.values(DEFERRED))) {
    const libs = Object.keys(DEFERRED).filter((l) => DEFERRED[l] === file);
    configs.push({
      ...nodeCommon,
      stdin: {
        contents: `module.exports = { ${libs.map((l) => `${JSON.stringify(l)}: require(${JSON.stringify(l)})`).join(', ')} };`,
        resolveDir: '.',
        sourcefile: file,
      },
      outfile: `dist/${file}`,
      sourcemap: false,
      // bullmq reads import.meta.url: that file keeps the shim banner; the others are checked not to need it.
      ...(file === 'remote-libs.js' ? {} : { banner: {}, plugins: [noImportMeta] }),
    });
  }
// The commands bots poll (src/cli/readEntry.ts), loaded by dist/cli.js when the answer cache cannot answer: without
// the deferred libraries too (a status over plain files never runs them; they were 0.3 of its 0.5 MB).
if (want('cli'))
  configs.push({
    ...cliProgram,
    entryPoints: ['src/cli/readEntry.ts'],
    outfile: 'dist/cli-read.js',
    plugins: [lazyZod, allDeferred],
  });
if (want('cli'))
  configs.push({
    ...cliProgram,
    entryPoints: ['src/cli/wavesMain.ts'],
    outfile: 'dist/cli-waves.js',
    banner: {},
    plugins: [lazyZod, allDeferred, noImportMeta],
  });
// The full program (every other command line) and `ralph task start|done|block|reset` alone (src/cli/taskMain.ts),
// without the deferred libraries (DEFERRED above).
if (want('cli')) {
  configs.push({
    ...cliProgram,
    entryPoints: ['src/cli/main.ts'],
    outfile: 'dist/cli-main.js',
    plugins: [lazyZod, allDeferred],
  });
  configs.push({
    ...cliProgram,
    entryPoints: ['src/cli/taskMain.ts'],
    outfile: 'dist/cli-task.js',
    plugins: [lazyZod, allDeferred],
  });
}
if (want('webview') && fs.existsSync('webview/main.ts')) {
  configs.push({
    bundle: true,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    minify: production,
    sourcemap: production ? false : 'linked',
    logLevel: 'warning',
    entryPoints: ['webview/main.ts', ...filesUnder('webview', '.css')],
    outdir: 'dist/webview',
    // codicon.ttf (imported by webview/main.css) is copied beside the css under its own name.
    loader: { '.ttf': 'file' },
    assetNames: '[name]',
    legalComments: 'none',
  });
}
if (want('test') && !production) {
  // Plain-Node mocha tiers: unit (pure), component (child processes, the real claude CLI, git), stress, corpus.
  for (const tier of ['unit', 'component', 'stress', 'corpus']) {
    const files = filesUnder(`test/${tier}`, '.test.ts');
    fs.rmSync(`dist/test/${tier}`, { recursive: true, force: true }); // a test moved to another tier must not run twice
    if (files.length)
      configs.push({
        ...nodeCommon,
        entryPoints: files,
        outdir: `dist/test/${tier}`,
        outbase: `test/${tier}`,
        alias: { vscode: './test/support/fakeVscode.ts' },
        external: ['playwright-core'],
        plugins: [externalLibs],
      });
  }
  const integration = ['test/integration/index.ts'].filter((f) => fs.existsSync(f));
  if (integration.length)
    configs.push({
      ...nodeCommon,
      entryPoints: integration,
      outdir: 'dist/test/integration',
      outbase: 'test/integration',
      external: ['vscode', 'mocha'],
    });
  const e2e = filesUnder('test/e2e', '.test.ts');
  if (e2e.length)
    configs.push({
      ...nodeCommon,
      entryPoints: e2e,
      outdir: 'dist/test/e2e',
      outbase: 'test/e2e',
      external: ['playwright-core'],
    });
  const runners = filesUnder('test/runners', '.ts');
  if (runners.length)
    configs.push({
      ...nodeCommon,
      entryPoints: runners,
      outdir: 'dist/test/runners',
      outbase: 'test/runners',
      external: ['playwright-core', 'mocha'],
    });
}

if (want('demo') && !production)
  configs.push({
    ...nodeCommon,
    entryPoints: ['scripts/demo.ts'],
    outfile: 'dist/demo.js',
    external: ['playwright-core'],
  });
if (want('bench') && !production) {
  const bench = filesUnder('bench', '.bench.ts');
  // Benches of VS Code adapters (store.bench.ts) run on plain Node against the small fake `vscode`.
  if (bench.length)
    configs.push({
      ...nodeCommon,
      entryPoints: bench,
      outdir: 'dist/bench',
      outbase: 'bench',
      external: ['playwright-core'],
      alias: { vscode: './test/support/fakeVscode.ts' },
    });
}

// The JSON schemas of .ralph/config.json, quantum.json and the IJFW checkpoints (contributes.jsonValidation), built
// from the zod schemas the readers use (src/core/model/jsonSchemas.ts), each config key described by its setting.
async function writeJsonSchemas() {
  const built = await esbuild.build({
    ...nodeCommon,
    entryPoints: ['src/core/model/jsonSchemas.ts'],
    write: false,
    sourcemap: false,
    minify: false,
  });
  const mod = { exports: {} };
  new Function('module', 'exports', 'require', '__filename', built.outputFiles[0].text)(
    mod,
    mod.exports,
    createRequire(path.resolve('src/core/model/jsonSchemas.ts')),
    path.resolve('dist/jsonSchemas.js'),
  );
  const manifest = JSON.parse(fs.readFileSync('package.json', 'utf8'));
  const settingText = {};
  for (const category of manifest.contributes.configuration)
    for (const [name, prop] of Object.entries(category.properties))
      settingText[name.replace(/^ralph\./, '')] = prop.markdownDescription;
  fs.mkdirSync('dist/schemas', { recursive: true });
  for (const { file, schema } of mod.exports.buildJsonSchemas(settingText))
    fs.writeFileSync(path.join('dist', 'schemas', file), `${JSON.stringify(schema, null, 2)}\n`);
}

if (watch) {
  if (want('ext')) await writeJsonSchemas();
  const contexts = await Promise.all(
    configs.map((c) => esbuild.context({ ...c, plugins: [...(c.plugins ?? []), watchReporter] })),
  );
  await Promise.all(contexts.map((c) => c.watch()));
} else {
  const results = await Promise.allSettled(
    configs.map((c) => esbuild.build({ ...c, plugins: [...(c.plugins ?? []), watchReporter] })),
  );
  if (want('ext'))
    results.push(
      ...(await Promise.allSettled([
        writeJsonSchemas().catch((err) => {
          console.error(`✘ [ERROR] JSON schemas: ${err.stack ?? err}`);
          throw err;
        }),
      ])),
    );
  const failed = results.filter((r) => r.status === 'rejected');
  if (failed.length) {
    process.exitCode = 1;
  }
  if (fs.existsSync('dist/cli.js')) fs.chmodSync('dist/cli.js', 0o755);
}
