import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { cliPath } from '../../support/cli';
import { claudeBinary, requireClaude, withoutClaudeVars } from '../../support/claude';
import { makeTempDir, makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { writeFlow } from '../../support/workspace';

const quantum = {
  project: 'p',
  stories: [
    {
      id: 'US-001',
      title: 'Parser',
      status: 'pending',
      priority: 1,
      dependsOn: [],
      retries: { attempts: 0, maxAttempts: 3 },
    },
  ],
};

/** A hand-written quantum.json: one story on two lines, one on one line, no `startedAt`, no file `updatedAt`. */
const compact =
  '{\n  "project": "p",\n  "stories": [\n    {"id": "US-001", "title": "Parser", "status": "pending",\n     "priority": 1, "dependsOn": []},\n    {"id": "US-002", "title": "Printer", "status": "pending", "priority": 2, "dependsOn": ["US-001"]}\n  ]\n}\n';

/**
 * New-user try (session 3): the real Claude CLI refuses `--permission-mode bypassPermissions` as root unless
 * IS_SANDBOX=1. `ralph run` must end failed at once with the cause and the fix, not retry into a cap; and such a run,
 * which does no work, must leave a compact quantum.json as it was (it turned a two-line story into 9 lines and added
 * `"startedAt": null`).
 */
describe('cli: ralph run as root without IS_SANDBOX (the real claude refuses)', function () {
  this.timeout(90_000);
  let t: TempFolder | undefined;
  let home: string | undefined;
  afterEach(() => {
    t?.dispose();
    if (home) fs.rmSync(home, { recursive: true, force: true });
    t = home = undefined;
  });

  /** Runs `ralph run` as root without IS_SANDBOX on `quantumText`; returns the exit status, the output and the one run record. */
  function runRefused(
    quantumText: string | null,
    maxIterations: number,
  ): { status: number | null; out: string; record: Record<string, unknown> } {
    assert.equal(process.getuid?.(), 0, 'this test runs as root (the CLI refuses only as root), as the tiers do here');
    requireClaude();
    t = makeTempFolder('ralph-root-', { ralphDir: true });
    home = makeTempDir('ralph-root-home-');
    t.write('.ralph/config.json', JSON.stringify({ claudePath: claudeBinary }));
    if (quantumText !== null) t.write('quantum.json', quantumText);
    else writeFlow(t, [{ id: 'fn-1.1' }]);
    const env = {
      ...withoutClaudeVars(),
      HOME: home,
      ANTHROPIC_API_KEY: 'test',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
    delete (env as Record<string, string>).IS_SANDBOX;
    const r = spawnSync(
      process.execPath,
      [cliPath, '-C', t.dir, 'run', '--no-gates', '--trust', '--max-iterations', String(maxIterations)],
      { encoding: 'utf8', timeout: 60_000, env },
    );
    const runs = fs.readdirSync(t.file('.ralph/runs'));
    assert.equal(runs.length, 1);
    return {
      status: r.status,
      out: r.stdout + r.stderr,
      record: JSON.parse(t.read(`.ralph/runs/${runs[0]}/run.json`)) as Record<string, unknown>,
    };
  }

  it('ends failed with exit 1, a line naming the cause and the fix, and the run record says failed', () => {
    const { status, out, record } = runRefused(JSON.stringify(quantum, null, 2), 3);
    assert.equal(status, 1, out);
    assert.match(out, /AGENT REFUSED TO START/);
    assert.doesNotMatch(out, /API ERROR/);
    assert.match(out, /as root/);
    assert.match(out, /run ralph as a normal \(non-root\) user/);
    assert.match(out, /IS_SANDBOX=1/);
    assert.equal(record.state, 'failed', JSON.stringify(record));
    assert.match(record.endReason as string, /as root/);
    assert.equal(JSON.parse(t!.read('quantum.json')).stories[0].status, 'pending', 'the story was given back');
  });

  it('leaves a compact quantum.json byte-identical: the started-then-given-back story and the untouched one', () => {
    const { out, record } = runRefused(compact, 2);
    assert.match(out, /AGENT REFUSED TO START/, 'the run did no work');
    assert.ok(((record.iteration as number | undefined) ?? 0) >= 1, `the story was started: ${JSON.stringify(record)}`);
    assert.equal(t!.read('quantum.json'), compact);
  });

  it('gives a flow-next task it started back to todo, its claim removed: nothing stays in progress', () => {
    const { status, out, record } = runRefused(null, 2);
    assert.equal(status, 1, out);
    assert.match(out, /AGENT REFUSED TO START/, 'the run did no work');
    assert.ok(((record.iteration as number | undefined) ?? 0) >= 1, `the task was started: ${JSON.stringify(record)}`);
    const task = JSON.parse(t!.read('.flow/tasks/fn-1.1.json')) as Record<string, unknown>;
    assert.equal(task.status, 'todo', JSON.stringify(task));
    assert.equal(task.assignee ?? null, null, 'no claim is left');
    assert.equal(task.claimed_at ?? null, null);
  });
});
