import * as path from 'node:path';
import { handleHook, type HookAnswer } from '../core/gates/guardHook';

export { handleHook, loadPolicyForGuard } from '../core/gates/guardHook';

/**
 * `dist/guard.js`: the guard decided inside the hook process, for claude runs without a Ralph engine
 * (`ralph guard install`). Writes the `GUARD DENY` / `GUARD REWRITE` lines to `.ralph/activity.log` itself.
 */
export function runInProcess(stdin: string, workspace?: string): Promise<HookAnswer> {
  return handleHook(stdin, {
    workspace,
    gateRunner: {
      node: process.execPath,
      cliPath: path.join(__dirname, 'cli.js'),
      electron: !!process.versions.electron,
    },
    writeActivity: true,
  });
}
