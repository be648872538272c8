#!/usr/bin/env node
// `npm run bench`: builds, then runs every benchmark in bench/*.bench.ts (bundled to dist/bench/*.js).
// Each prints one JSON object per line: {"name": "...", "value": N, "unit": "...", ...extra}. Lines that are
// not JSON objects are passed to stderr. `node scripts/bench.mjs NAME...` runs only the named files.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(root);
const b = spawnSync(process.execPath, ['esbuild.mjs'], { stdio: 'inherit' });
if (b.status !== 0) process.exit(1);
const want = process.argv.slice(2);
const files = fs.existsSync('dist/bench')
  ? fs
      .readdirSync('dist/bench')
      .filter((f) => f.endsWith('.bench.js'))
      .sort()
  : [];
let failed = 0;
for (const f of files) {
  if (want.length && !want.some((w) => f.includes(w))) continue;
  const r = spawnSync(process.execPath, ['--expose-gc', path.join('dist/bench', f)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  for (const line of (r.stdout ?? '').split('\n')) {
    if (!line.trim()) continue;
    try {
      const o = JSON.parse(line);
      if (o && typeof o === 'object' && 'name' in o) {
        console.log(JSON.stringify(o));
        continue;
      }
    } catch {
      /* not JSON */
    }
    process.stderr.write(line + '\n');
  }
  if (r.status !== 0) {
    failed++;
    console.error(`benchmark ${f} exited ${r.status}`);
  }
}
process.exit(failed ? 1 : 0);
