import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sharedDir } from './corpus';
import { repoRoot } from './repoRoot';

/** flowctl 4.4.0, the reference implementation of `.flow/` (run in place with python3, never copied). */
export const flowctlPath: string = path.join(sharedDir, 'peers', 'flow-next', 'flowctl.py');

/** What a process printed and how it ended; `json()` parses stdout. */
export interface ToolResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: () => Record<string, unknown>;
}

/**
 * Where Python keeps flowctl's compiled bytecode for the tests (git-ignored, beside the repository's other caches).
 * flowctl compiles its 50,000-line source at every call when run as a script (about 1 s of CPU); imported as a module
 * it is compiled once and loaded from here after: about a third of the CPU per call, the same output.
 */
const pycache = path.join(repoRoot, '.bench', 'pycache');

/** Imports flowctl from its folder as a module (so its bytecode is cached) and runs its `main()` as the script would. */
const launcher = [
  'import sys',
  `sys.path.insert(0, ${JSON.stringify(path.dirname(flowctlPath))})`,
  `sys.argv[0] = ${JSON.stringify(flowctlPath)}`,
  'import flowctl',
  'flowctl.main()',
].join('; ');

/**
 * Runs flowctl with `args` in `cwd` (flowctl has no `-C`: it uses the git top level of its cwd): its `main()`, the
 * script's entry, with the arguments as the script sees them; bytecode cached in {@link pycache}.
 */
export function runFlowctl(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): ToolResult {
  const base: NodeJS.ProcessEnv = { ...process.env };
  delete base.PYTHONDONTWRITEBYTECODE;
  const r = spawnSync('python3', ['-c', launcher, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...base, PYTHONPYCACHEPREFIX: pycache, FLOW_ACTOR: 'tester', ...env },
  });
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    json: () => JSON.parse(r.stdout) as Record<string, unknown>,
  };
}

/** Like {@link runFlowctl}, throwing with flowctl's output when it does not exit 0. */
export function flowctlOk(cwd: string, ...args: string[]): Record<string, unknown> {
  const r = runFlowctl(cwd, [...args, '--json']);
  if (r.code !== 0) throw new Error(`flowctl ${args.join(' ')} exited ${r.code}: ${r.stdout}${r.stderr}`);
  return r.json();
}

/**
 * Declares a suite that needs flowctl (and python3): without them it still runs one test that fails and says
 * why, like describeCorpus.
 */
export function describeFlowctl(title: string, fn: () => void): void {
  describe(title, () => {
    const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
    if (!fs.existsSync(flowctlPath) || python.status !== 0) {
      it('needs flowctl and python3', () => {
        throw new Error(
          `flowctl not found at ${flowctlPath} or python3 missing (${python.error?.message ?? python.stderr}): set RALPH_SHARED_DIR to the shared material's folder (default ../shared)`,
        );
      });
      return;
    }
    fn();
  });
}
