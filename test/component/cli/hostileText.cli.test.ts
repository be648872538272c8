import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { visibleText } from '../../../src/protocol/visibleText';
import { runCli, runCliAsync, runCliInProcess } from '../../support/cli';
import { shellStub } from '../../support/stubs/installStubs';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** A title that retitles the window, clears the screen, turns the text red, reads backwards and hides a character. */
const EVIL = 'Evil\x1b]0;PWNED\x07 \x1b[2J\x1b[31m ev\u202eil-bidi ad\u200bmin \u009b2J';
/** How every face shows it. */
const SHOWN = 'Evil\\x1b]0;PWNED\\x07 \\x1b[2J\\x1b[31m ev\\u202eil-bidi ad\\u200bmin \\u009b2J';

/** Fails naming the face when `text` holds a character that acts instead of showing. */
function assertShown(face: string, text: string): void {
  assert.equal(visibleText(text), text, `${face} printed a hidden character raw:\n${JSON.stringify(text)}`);
}

/**
 * Text a repository controls reaches no terminal raw: `ralph run`, `ralph watch`, `ralph status`, `ralph next`,
 * `ralph task`, `ralph waves check` and `ralph doctor`, and `.ralph/activity.log`, show a title's control sequences,
 * bidirectional controls and invisible characters as escapes (src/protocol/visibleText.ts).
 */
describe('cli: hostile repository text on every terminal face', function () {
  this.timeout(120_000);
  let t: TempFolder;
  let bin: string | undefined;
  beforeEach(() => {
    t = makeTempFolder('ralph-hostile-', { ralphDir: true });
  });
  afterEach(() => {
    if (bin) fs.rmSync(bin, { recursive: true, force: true });
    bin = undefined;
    t.dispose();
  });

  it('run, watch (text and JSON) and the activity log', async () => {
    // An agent that says the title back in its own words too (its text reaches the terminal as well).
    bin = shellStub(
      'claude',
      [
        'if [ "$1" = "--version" ]; then echo "9.9.9 (Claude Code)"; exit 0; fi',
        `printf '%s\\n' '{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":[]}'`,
        `printf '%s\\n' '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1","usage":{"input_tokens":1,"output_tokens":1}}'`,
      ].join('\n'),
    );
    t.write('RALPH_TASK.md', `# Task\n- [ ] ${EVIL}\n`);
    t.write(
      '.ralph/config.json',
      JSON.stringify({
        claudePath: path.join(bin, 'claude'),
        maxIterations: 1,
        timing: { betweenIterationsMs: 10, killGraceMs: 500 },
      }),
    );
    const env = { RALPH_TRUST: '1', XDG_STATE_HOME: t.file('state') };
    const run = await runCliAsync(t.dir, ['run', '--no-gates'], env);
    assertShown('ralph run (stdout)', run.stdout);
    assertShown('ralph run (stderr)', run.stderr);
    assert.ok(run.stdout.includes(SHOWN), run.stdout);

    const log = fs.readFileSync(t.file('.ralph/activity.log'), 'utf8');
    assertShown('.ralph/activity.log', log);
    assert.ok(log.includes(SHOWN), log);

    const runId = fs.readdirSync(t.file('.ralph/runs'))[0]!;
    const watch = runCli(t.dir, ['watch', '--run', runId], env);
    assertShown('ralph watch', watch.stdout + watch.stderr);
    assert.ok(watch.stdout.includes(SHOWN), watch.stdout);
    const watchJson = runCli(t.dir, ['watch', '--run', runId, '--json'], env);
    assertShown('ralph watch --json', watchJson.stdout);
    const started = watchJson.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; item?: { title: string } })
      .find((e) => e.type === 'iterationStarted');
    assert.equal(started?.item?.title, EVIL, 'the JSON keeps the title itself');
  });

  it('status, next and task (text and JSON)', async () => {
    t.write(
      'quantum.json',
      JSON.stringify({
        project: 'p',
        branchName: 'b',
        stories: [
          { id: 'US-1', title: EVIL, passes: false, status: 'in_progress' },
          { id: `D-${EVIL}`, title: EVIL, passes: false, status: 'pending' },
          { id: 'US-3', title: 'x', passes: false, status: 'pending', dependsOn: [`D-${EVIL}`] },
        ],
      }),
    );
    for (const args of [['status'], ['status', '--json'], ['next'], ['next', '--json']]) {
      const r = await runCliInProcess(t.dir, args);
      assert.equal(r.code, 0, r.stderr);
      assertShown(`ralph ${args.join(' ')}`, r.stdout + r.stderr);
      if (args.includes('--json')) assert.ok(JSON.stringify(r.json()).includes('\u202e'), 'the JSON value is kept');
    }
    assert.ok((await runCliInProcess(t.dir, ['next'])).stdout.includes(SHOWN));
    for (const args of [
      ['task', 'start', 'US-3'],
      ['task', 'start', 'US-3', '--json'],
    ]) {
      const r = await runCliInProcess(t.dir, args);
      assert.equal(r.code, 1, `${args.join(' ')} refuses: its dependency is open`);
      assertShown(`ralph ${args.join(' ')}`, r.stdout + r.stderr);
    }
    assert.ok((await runCliInProcess(t.dir, ['task', 'start', 'US-3'])).stderr.includes(`D-${SHOWN}`));
  });

  it('waves check (text and JSON) and doctor', async () => {
    const dir = t.file('.ijfw/wave-W9');
    fs.mkdirSync(dir, { recursive: true });
    const cp = path.join(dir, 'subagent-W9-A.checkpoint.json');
    fs.writeFileSync(
      cp,
      JSON.stringify({ sub_id: 'W9-A', wave_id: 'W9', next_step: `run ${EVIL}`, ts: '2020-01-01T00:00:00Z' }),
    );
    fs.utimesSync(cp, new Date('2020-01-01'), new Date('2020-01-01'));
    for (const args of [
      ['waves', 'check', '--phase', 'p'],
      ['waves', 'check', '--phase', 'p', '--json'],
    ]) {
      const r = await runCliInProcess(t.dir, args);
      assertShown(`ralph ${args.join(' ')}`, r.stdout + r.stderr);
      assert.match(r.stdout, /RESUMED|"RESUMED"/);
    }
    t.write('.ralph/config.json', JSON.stringify({ claudePath: `claude-${EVIL}` }));
    for (const args of [['doctor'], ['doctor', '--json']]) {
      const r = await runCliInProcess(t.dir, args, { XDG_STATE_HOME: t.file('state') });
      assertShown(`ralph ${args.join(' ')}`, r.stdout + r.stderr);
      assert.ok((r.stdout + r.stderr).includes('PWNED'), 'the doctor names the configured path');
    }
  });
});
