import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { processesUnder } from '../../support/processes';
import { repoRoot } from '../../support/repoRoot';
import { makeTempDir } from '../../support/tempFolder';

/** `npm run demo`'s bundle (built by `node esbuild.mjs`, or `--only=demo`). */
const demoJs = path.join(repoRoot, 'dist', 'demo.js');

describe('npm run demo without VS Code server', () => {
  let tmp: string;
  before(() => {
    assert.ok(fs.existsSync(demoJs), `${demoJs} is missing: run node esbuild.mjs`);
    tmp = makeTempDir('ralph-demo-missing-');
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it('explains what to do (set-up with apt, or --cli) instead of a stack trace, and starts nothing', () => {
    const r = spawnSync(process.execPath, [demoJs, '--no-open'], {
      encoding: 'utf8',
      env: { ...process.env, RALPH_VSCODE_SERVER: path.join(tmp, 'nowhere'), TMPDIR: tmp },
      timeout: 60_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /VS Code's server cannot start here: the test VS Code server is not installed \(no .*nowhere\/out\/server-main\.js\)/,
    );
    assert.match(r.stderr, /bash scripts\/setup-test-env\.sh/);
    assert.match(r.stderr, /apt \(so as root or with sudo the first time\)/);
    assert.match(r.stderr, /npm run demo -- --cli/);
    assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
    assert.deepEqual(fs.readdirSync(tmp), [], 'no sample project was made');
  });

  it('--cli runs the headless demo (ralph run on the checklist, then on quantum.json) to complete, and leaves no agent', async function () {
    this.timeout(420_000);
    const scratch = fs.mkdtempSync(path.join(tmp, 'cli-'));
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [demoJs, '--cli'], {
        env: { ...process.env, TMPDIR: scratch },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
      });
      child.stderr.on('data', (b: Buffer) => {
        out += b.toString();
      });
      child.on('close', (code) => resolve({ code, out }));
    });
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /checklist run: exit 0; quantum run: exit 0; claude processes left: 0/);
    assert.match(r.out, /stories: US-002 passed, US-001 passed/);
    assert.match(r.out, /\nRalph Loop demo: complete/);
    assert.deepEqual(processesUnder(scratch), [], 'nothing the demo started runs on');
    // (The Claude CLI leaves its own socket folders in TMPDIR: only the demo's project folder must be gone.)
    assert.deepEqual(
      fs.readdirSync(scratch).filter((d) => d.startsWith('ralph-demo-')),
      [],
      'the sample project is removed',
    );
  });

  /**
   * The headless demo in `dir`; `onFirstLoop` runs once the first run's first iteration starts (its `LOOP 1 START`
   * line). Resolves with the demo's exit code and output.
   */
  function cliDemo(
    scratch: string,
    dir: string,
    onFirstLoop: (demo: ReturnType<typeof spawn>) => void,
  ): Promise<{ code: number | null; out: string }> {
    return new Promise((resolve) => {
      // The scripted turns are paced so the person's stop lands within the checklist run (3 iterations).
      const child = spawn(process.execPath, [demoJs, '--cli', '--dir', dir], {
        env: { ...process.env, TMPDIR: scratch, RALPH_DEMO_TURN_MS: '400' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let seen = false;
      const take = (b: Buffer) => {
        out += b.toString();
        if (!seen && /LOOP 1 START/.test(out)) {
          seen = true;
          onFirstLoop(child);
        }
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      child.on('close', (code) => resolve({ code, out }));
    });
  }

  it("--cli ends at a person's STOP: no second run, the last line says it was stopped and how, exit 3", async function () {
    this.timeout(420_000);
    const scratch = fs.mkdtempSync(path.join(tmp, 'stop-'));
    const dir = path.join(scratch, 'slugify');
    const r = await cliDemo(scratch, dir, () => {
      const s = spawnSync(process.execPath, [path.join(repoRoot, 'dist', 'cli.js'), 'stop'], {
        cwd: dir,
        encoding: 'utf8',
      });
      assert.equal(s.status, 0, s.stderr);
    });
    assert.equal(r.code, 3, r.out);
    assert.doesNotMatch(r.out, /2\/2: quantum/, 'the quantum run is not started');
    assert.match(r.out, /checklist run: exit 3; quantum run: not started; claude processes left: 0/);
    assert.match(
      r.out,
      /\nRalph Loop demo: stopped by you: the checklist run stopped by a STOP \(ralph stop, or a STOP file\); the quantum run was not started/,
    );
    assert.doesNotMatch(r.out, /FAILED/);
    assert.deepEqual(processesUnder(scratch), [], 'nothing the demo started runs on');
  });

  it('--cli ends at a Ctrl-C: the run is cancelled once, no second run, the last line says Ctrl-C, exit 130', async function () {
    this.timeout(420_000);
    const scratch = fs.mkdtempSync(path.join(tmp, 'int-'));
    const dir = path.join(scratch, 'slugify');
    const r = await cliDemo(scratch, dir, (demo) => demo.kill('SIGINT'));
    assert.equal(r.code, 130, r.out);
    assert.doesNotMatch(r.out, /2\/2: quantum/, 'the quantum run is not started');
    assert.match(r.out, /ralph: SIGINT: ending the agent and stopping/, 'the run had the signal passed on');
    assert.equal(r.out.match(/ralph: SIGINT:/g)?.length, 1, 'passed on once');
    assert.doesNotMatch(r.out, /Ctrl-C twice/, 'not taken for a second Ctrl-C');
    assert.match(
      r.out,
      /\nRalph Loop demo: stopped by you \(Ctrl-C\): the checklist run cancelled \(Ctrl-C\); the quantum run was not started/,
    );
    assert.doesNotMatch(r.out, /FAILED/);
    assert.deepEqual(processesUnder(scratch), [], 'nothing the demo started runs on');
  });
});
