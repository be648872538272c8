import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { handleHook, type HookAnswer } from '../../../src/core/gates/guardHook';
import { guardStateDir } from '../../../src/core/gates/guardState';
import { fixture } from '../../support/fixtures';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/**
 * The second black-box attack table of the guard (issue 17): written by a helper who had not read the guard's code,
 * from the rules the README and the issue claim. Each row of test/fixtures/guard/holdout-attacks-2.json is fed to the
 * hook's decision (`handleHook`, the same path `ralph guard` runs) in a fresh workspace whose `.ralph/command-policy`
 * is test/fixtures/guard/holdout-policy-2, and the verdict must be the row's `expect`.
 *
 * Row fields: `command` (Bash; `<ws>` is the workspace, `<state>` the external gate-state folder), `expect`
 * (`deny` | `allow` | `rewrite`), `why`; optional `tool` + `file_path` (a Write/Edit/MultiEdit call, path relative to
 * the workspace) and `before` (calls made first in the same workspace and state; after each Bash one the gate's
 * `<label>-latest.exit` files are written, as a finished gate leaves them).
 *
 * The workspace holds: `.ralph/handoff.md`, `src/a.ts`, `README.md`, `docs/`, `x.sh` (a script whose content is
 * `git push`) and `r`, a symlink to `.ralph`.
 */

type Verdict = 'deny' | 'allow' | 'rewrite';
interface FileCall {
  tool: 'Write' | 'Edit' | 'MultiEdit';
  file_path: string;
}
interface Row {
  command: string;
  expect: Verdict;
  why: string;
  tool?: FileCall['tool'];
  file_path?: string;
  before?: (string | FileCall)[];
}

const rows = JSON.parse(fs.readFileSync(fixture('guard', 'holdout-attacks-2.json'), 'utf8')) as Row[];
const policy = fs.readFileSync(fixture('guard', 'holdout-policy-2'), 'utf8');
const runner = { node: '/usr/bin/node', cliPath: '/opt/ralph/dist/cli.js' };
const LABELS = ['basic', 'full', 'final', 'unit', 'integration', 'e2e', 'lint', 'format'];

function verdictOf(a: HookAnswer): { verdict: Verdict | string; detail: string } {
  if (a.exitCode === 2) return { verdict: 'deny', detail: a.stderr.trim() };
  if (a.exitCode !== 0) return { verdict: `exit ${a.exitCode}`, detail: a.stderr.trim() };
  if (!a.stdout.trim()) return { verdict: 'allow', detail: '' };
  const out = JSON.parse(a.stdout) as {
    hookSpecificOutput?: {
      permissionDecision?: string;
      permissionDecisionReason?: string;
      updatedInput?: { command?: unknown };
    };
  };
  const h = out.hookSpecificOutput ?? {};
  if (h.permissionDecision === 'deny') return { verdict: 'deny', detail: h.permissionDecisionReason ?? '' };
  if (h.permissionDecision === 'allow' && h.updatedInput)
    return { verdict: 'rewrite', detail: String(h.updatedInput.command) };
  return { verdict: h.permissionDecision ?? 'unknown', detail: a.stdout };
}

function label(r: Row): string {
  const what = r.tool ? `${r.tool} ${r.file_path}` : JSON.stringify(r.command);
  return `${r.expect}: ${what}${r.before ? ` after ${JSON.stringify(r.before)}` : ''} (${r.why})`;
}

describe('guard: holdout attack table 2 (black-box, test/fixtures/guard/holdout-attacks-2.json)', () => {
  let ws: TempFolder;
  let home: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-holdout2-', {
      ralphDir: true,
      files: {
        '.ralph/command-policy': policy,
        '.ralph/handoff.md': '# handoff\n',
        'src/a.ts': 'export const a = 1;\n',
        'README.md': '# x\n',
        'docs/': '',
        'x.sh': 'git push\n',
      },
    });
    fs.symlinkSync('.ralph', ws.file('r'));
    home = makeTempFolder('ralph-holdout2-home-');
  });
  afterEach(() => {
    ws.dispose();
    home.dispose();
  });
  const env = () => ({
    HOME: home.dir,
    XDG_STATE_HOME: path.join(home.dir, 'state'),
    PATH: process.env.PATH ?? '/usr/bin:/bin',
  });
  const subst = (s: string) => s.replaceAll('<ws>', ws.dir).replaceAll('<state>', guardStateDir(ws.dir, env()));

  async function call(c: string | FileCall): Promise<HookAnswer> {
    const input =
      typeof c === 'string'
        ? { tool_name: 'Bash', tool_input: { command: subst(c), description: 'd' } }
        : {
            tool_name: c.tool,
            tool_input:
              c.tool === 'Edit'
                ? { file_path: ws.file(c.file_path), old_string: 'a', new_string: 'b' }
                : c.tool === 'MultiEdit'
                  ? { file_path: ws.file(c.file_path), edits: [{ old_string: 'a', new_string: 'b' }] }
                  : { file_path: ws.file(c.file_path), content: 'x\n' },
          };
    const raw = JSON.stringify({
      session_id: 's',
      transcript_path: '/tmp/t',
      cwd: ws.dir,
      hook_event_name: 'PreToolUse',
      ...input,
    });
    // The table's policy is the user's own, trusted (RALPH_TRUST=1: an untrusted one loses its [gates]/[rewrite]/[wrap] rows).
    return handleHook(raw, {
      workspace: ws.dir,
      env: { ...env(), RALPH_TRUST: '1' },
      gateRunner: runner,
      writeActivity: false,
    });
  }

  it('the table has at least 40 attacks and 8 false-positive traps, each with a reason', () => {
    assert.ok(rows.filter((r) => r.expect !== 'allow').length >= 40);
    assert.ok(rows.filter((r) => r.expect === 'allow').length >= 8);
    for (const r of rows) {
      assert.ok(['deny', 'allow', 'rewrite'].includes(r.expect), label(r));
      assert.ok(r.why.length > 0 && (r.tool ? !!r.file_path : r.command.length > 0), label(r));
    }
  });

  for (const r of rows) {
    it(label(r), async () => {
      for (const b of r.before ?? []) {
        const v = verdictOf(await call(b));
        assert.notEqual(v.verdict, 'deny', `set-up call ${JSON.stringify(b)} was denied: ${v.detail}`);
        if (typeof b === 'string') {
          const later = new Date(Date.now() + 5);
          for (const l of LABELS) {
            const f = ws.write(`.ralph/gates/${l}-latest.exit`, '0');
            fs.utimesSync(f, later, later);
          }
        }
      }
      const v = verdictOf(
        await call(r.tool ? { tool: r.tool as FileCall['tool'], file_path: r.file_path! } : r.command),
      );
      assert.equal(v.verdict, r.expect, `${label(r)}\n  guard said ${v.verdict}${v.detail ? `: ${v.detail}` : ''}`);
    });
  }
});
