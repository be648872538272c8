#!/usr/bin/env node
// `node scripts/record-streams.mjs`: re-records test/fixtures/streams/claude/recorded/ (see scripts/record-streams.ts).
// `node scripts/record-streams.mjs gemini|copilot`: re-records that agent's streams (scripts/record-gemini-copilot-streams.ts).
// Bundles the recorder with esbuild into a temp file and runs it; commit the changed fixtures.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const agents = process.argv.slice(2);
const name = agents.length ? 'record-gemini-copilot-streams' : 'record-streams';
const outfile = path.join(root, 'dist', `${name}.js`);
await build({
  entryPoints: [path.join(root, 'scripts', `${name}.ts`)],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile,
  logLevel: 'warning',
});
const r = spawnSync(process.execPath, [outfile, ...agents], { stdio: 'inherit', cwd: root });
process.exitCode = r.status ?? 1;
