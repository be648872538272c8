#!/usr/bin/env node
// `node scripts/record-agent-streams.mjs`: re-records test/fixtures/streams/<agent>/recorded/ (see scripts/record-agent-streams.ts).
// Bundles the recorder with esbuild into a temp file and runs it; commit the changed fixtures.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const outfile = path.join(root, 'dist', 'record-agent-streams.js');
await build({
  entryPoints: [path.join(root, 'scripts', 'record-agent-streams.ts')],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile,
  logLevel: 'warning',
});
const r = spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], { stdio: 'inherit', cwd: root });
process.exitCode = r.status ?? 1;
