import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../repoRoot';

/** The cursor-agent stand-in (see its header for what it checks and how it is driven). */
export const cursorAgentStub = path.join(repoRoot, 'test', 'support', 'stubs', 'cursor-agent.cjs');

/**
 * A temp folder holding `cursor-agent` and `agent` executables that run the stub with this Node, for
 * putting first on PATH. Returns the folder; remove it with `fs.rmSync(dir, { recursive: true })`.
 */
export function installCursorAgentStub(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-stub-bin-'));
  const script = `#!/bin/sh\nexec '${process.execPath}' '${cursorAgentStub}' "$@"\n`;
  for (const name of ['cursor-agent', 'agent']) fs.writeFileSync(path.join(dir, name), script, { mode: 0o755 });
  return dir;
}
