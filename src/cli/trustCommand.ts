import type { Command } from 'commander';
import { describeTrust, HOW_TO_TRUST } from '../core/trust/trustDecision';
import { trustRecordPath, trustKey } from '../core/trust/trustStore';
import { checkWorkspaceTrust, trustWorkspace } from '../core/trust/workspaceTrust';
import { coverageLines } from '../core/trust/gateFileContent';
import { resolveFolder } from './folder';
import { insideIteration } from '../core/loop/personMarks';
import { jsonDocument, printRefusal } from './jsonResult';
import { writeOut } from './terminalOut';

/**
 * The refusal of `ralph trust` run from inside an agent's iteration: trust is a person's decision,
 * and the agent that just rewrote a gate must not approve its own change. The same test as `ralph task done`'s
 * (loop/personMarks.ts `insideIteration`: the iteration token, the containment init, or an agent ancestor).
 */
export const TRUST_INSIDE_ITERATION =
  "ralph trust refuses to run inside an agent iteration: trusting the workspace is the user's decision, not the agent's. Run `ralph trust` yourself, outside the run (`ralph trust --show` shows what changed).";

/**
 * `ralph trust [--show] [--json]`: trusts the workspace configuration that names programs to run (agent paths and
 * arguments, gates, notify, the command policy's `[gates]`, `[rewrite]`, `[wrap]`, and the workspace files those
 * gates and notify run: scripts, package.json scripts, makefiles; core/trust/gateFiles.ts), as `direnv allow` / `mise trust`
 * do: the hash of that exact content is recorded in the user's state folder (`$XDG_STATE_HOME/ralph/trust/`).
 * `--show` only reports the state. Exit 0; with `--show`, 1 when the content is not trusted. Without `--show`, run
 * from inside an agent's iteration it records nothing and exits 1 ({@link TRUST_INSIDE_ITERATION}).
 */
export function registerTrustCommand(program: Command): void {
  program
    .command('trust')
    .description(
      'Trust the workspace configuration that names programs to run (agent paths and arguments, gates), as it is now',
    )
    .option('--show', 'show the trust state, the content and what changed, without trusting (exit 1 when not trusted)')
    .option(
      '--json',
      'print {success, state, trusted, hash, lines[], diff[], recordFile, covered[{key,via}], uncovered[]}',
    )
    .action(async (opts: { show?: boolean; json?: boolean }, cmd: Command) => {
      const folder = resolveFolder(cmd);
      const recordFile = trustRecordPath(await trustKey(folder));
      if (opts.show) {
        const v = await checkWorkspaceTrust(folder);
        if (opts.json) {
          writeOut(
            jsonDocument({
              success: true,
              state: v.state,
              trusted: v.allowed,
              hash: v.hash,
              lines: v.lines,
              diff: v.diff,
              ...(v.trustedAt ? { trustedAt: v.trustedAt } : {}),
              recordFile,
              covered: v.coverage.covered,
              uncovered: v.coverage.uncovered,
            }),
          );
        } else {
          const out = [`Trust of ${folder}: ${describeTrust(v)}`];
          if (v.state === 'changed')
            out.push(
              'What changed:',
              ...(v.diff.length ? v.diff : ['(the same values in another order)']).map((l) => `  ${l}`),
            );
          if (v.state !== 'nothing') out.push('Content (what it runs):', ...v.lines.map((l) => `  ${l}`));
          out.push(...coverageLines(v.coverage));
          if (!v.allowed) out.push(HOW_TO_TRUST);
          writeOut(out.join('\n') + '\n');
        }
        process.exitCode = v.allowed ? 0 : 1;
        return;
      }
      if (insideIteration(folder)) {
        printRefusal(!!opts.json, `Error: ${TRUST_INSIDE_ITERATION}`, TRUST_INSIDE_ITERATION);
        return;
      }
      const r = await trustWorkspace(folder);
      const before = r!.before;
      if (opts.json) {
        writeOut(
          jsonDocument({
            success: true,
            state: r!.record ? 'trusted' : 'nothing',
            previous: before.state,
            trusted: true,
            hash: before.hash,
            lines: before.lines,
            diff: before.diff,
            ...(r!.record ? { trustedAt: r!.record.trustedAt, recordFile } : {}),
          }),
        );
      } else if (!r!.record) {
        writeOut(`Nothing to trust in ${folder}: its configuration names no program to run.\n`);
      } else {
        const out = [
          before.state === 'trusted'
            ? `Already trusted: ${folder}`
            : `Trusted ${folder}${before.state === 'changed' ? ' (the changed content)' : ''}:`,
        ];
        if (before.state === 'changed')
          out.push(...(before.diff.length ? before.diff : ['(the same values in another order)']).map((l) => `  ${l}`));
        else if (before.state === 'untrusted') out.push(...before.lines.map((l) => `  ${l}`));
        out.push(`Recorded in ${recordFile}.`);
        writeOut(out.join('\n') + '\n');
      }
      process.exitCode = 0;
    });
}
