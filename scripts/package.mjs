#!/usr/bin/env node
// Packages the extension (`npm run package`, the e2e tier's .vsix): `vsce package --no-dependencies` (everything is
// bundled) with its `vscode:prepublish` production build, and fails when vsce prints a warning or asks a question.
// A warning is something the Marketplace or a user would meet (a missing repository or LICENSE, too many files, an
// SVG icon ...): it is fixed in the manifest, never waved through. The package has no repository URL on purpose
// (`--allow-missing-repository`: none rather than a made-up one). Arguments after the script's name go to vsce
// (e.g. `--out dist/ralph-loop.vsix`).
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const vsce = path.join(root, 'node_modules', '@vscode', 'vsce', 'vsce');
const args = [
  vsce,
  'package',
  '--no-dependencies',
  '--no-rewrite-relative-links',
  '--allow-missing-repository',
  ...process.argv.slice(2),
];
// stdin closed: a question vsce asks reads an empty answer and aborts instead of waiting for ever.
const r = spawnSync(process.execPath, args, {
  cwd: root,
  stdio: ['ignore', 'pipe', 'pipe'],
  encoding: 'utf8',
  env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
});
process.stdout.write(r.stdout ?? '');
process.stderr.write(r.stderr ?? '');
const output = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
const warnings = output.split('\n').filter((l) => /\bWARNING\b|\[y\/N\]/.test(l));
if (r.status !== 0) {
  console.error(`package: vsce exited with ${r.status ?? r.signal}`);
  process.exit(1);
}
if (warnings.length) {
  console.error(`package: vsce printed ${warnings.length} warning(s); fix them in package.json or .vscodeignore:`);
  for (const w of warnings) console.error(`  ${w.trim()}`);
  process.exit(1);
}
