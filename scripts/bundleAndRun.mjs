// Shared by the recorders' entry points (record-streams.mjs, record-agent-streams.mjs): bundles `scripts/<name>.ts`
// with esbuild into dist/<name>.js and runs it with `args`, from the repository root; the exit code is the script's.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { build } from 'esbuild';

export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

export async function bundleAndRun(name, args) {
  const outfile = path.join(root, 'dist', `${name}.js`);
  await build({
    entryPoints: [path.join(root, 'scripts', `${name}.ts`)],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    outfile,
    // jsonc-parser's UMD main cannot be bundled; its ESM build can (as in esbuild.mjs).
    mainFields: ['module', 'main'],
    logLevel: 'warning',
  });
  const r = spawnSync(process.execPath, [outfile, ...args], { stdio: 'inherit', cwd: root });
  process.exitCode = r.status ?? 1;
}
