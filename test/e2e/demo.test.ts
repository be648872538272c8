import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tierVsix } from '../runners/vscodeServer';
import { listProcesses, processesUnder } from '../support/processes';
import { findRepoRoot } from '../support/repoRoot';
import { makeTempDir } from '../support/tempFolder';

const repo = findRepoRoot(__dirname);
/** The demo's screenshot during the run (docs/demo.png in the README is a copy of one). */
const shot = path.join(repo, 'test-results', 'e2e-demo.png');

describe('npm run demo -- --start --exit-when-done (the extension in a browser)', function () {
  // Packaging (when this file runs alone), the server, Chromium and the run: 420 s was too little at load ~30.
  this.timeout(720_000);
  let tmp: string;

  before(() => {
    tmp = makeTempDir('ralph-e2e-demo-');
  });

  after(() => {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('serves the workbench with the extension active at the printed URL, completes the run and leaves no process', async () => {
    // TMPDIR puts the demo's scratch (project, agent HOME, server data) under `tmp`, so every process it starts is findable.
    const demo = spawn(
      process.execPath,
      [
        path.join(repo, 'dist', 'demo.js'),
        '--start',
        '--exit-when-done',
        '--no-open',
        '--keep',
        '--vsix',
        tierVsix(repo),
        '--screenshot',
        shot,
      ],
      {
        cwd: repo,
        // No pause between turns: the demo holds the second task's first turn until its screenshot is taken.
        env: { ...process.env, TMPDIR: tmp, RALPH_DEMO_TURN_MS: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    const urlLine = /^ {2}(http:\/\/127\.0\.0\.1:\d+\/\?folder=\S+)$/m;
    // The URL once the demo prints it, or undefined when it ends first.
    let printed: (url: string | undefined) => void = () => undefined;
    const urlPrinted = new Promise<string | undefined>((resolve) => {
      printed = resolve;
    });
    const onOutput = (b: Buffer) => {
      out += b.toString();
      const url = urlLine.exec(out)?.[1];
      if (url) printed(url);
    };
    demo.stdout.on('data', onOutput);
    demo.stderr.on('data', onOutput);
    const exited = new Promise<number | null>((resolve) => demo.on('close', (code) => resolve(code)));
    void exited.then(() => printed(undefined));
    try {
      const url = await urlPrinted;
      assert.ok(url, `the demo printed its URL:\n${out}`);
      const project = decodeURIComponent(new URL(url).searchParams.get('folder')!);
      assert.ok(project.startsWith(tmp), project);

      // The printed URL serves the workbench (what a person opens in a browser). The demo's own Chromium loads that
      // page, opens the Ralph view and presses Ralph: Start (the output and the screenshot below say so), so a second
      // window would only repeat it and workbench.test.ts's view checks.
      const page = await fetch(url);
      assert.equal(page.status, 200, url);
      assert.match(await page.text(), /vs\/code\/browser\/workbench\/workbench/, 'the VS Code web workbench page');

      const code = await exited;
      assert.equal(code, 0, out);
      assert.match(out, /Ralph: Start pressed \(--start\)/);
      assert.match(out, /run \S+ ended: completed \(exit 0\)/);
      const task = fs.readFileSync(path.join(project, 'RALPH_TASK.md'), 'utf8');
      assert.doesNotMatch(task, /\[ \]/, task);
      assert.equal((task.match(/\[x\]/g) ?? []).length, 3, task);
      assert.ok(fs.existsSync(shot), `the demo wrote its screenshot: ${shot}`);
      // Taken with the dashboard open on the run: a task done, the token chart drawn, a gate row; the gauge counting.
      assert.match(
        out,
        /demo: screenshot written to \S+ \(tree, gauge \d+(?:\.\d+)?k\/\d+(?:\.\d+)?[kM][^,]*, dashboard: [1-9]\/3 done, ([2-9]|\d\d+) chart points, [1-9]\d* gate row\(s\)\)/,
      );
    } finally {
      if (demo.exitCode === null) demo.kill('SIGINT');
      await exited;
    }
    // Nothing the demo started runs on: no server, model server, agent, gate or Chromium under its scratch folder.
    const left = processesUnder(tmp);
    assert.deepEqual(left, [], `processes left: ${left.join(', ')}`);
  });

  it('stops the server, Chromium and the agent in the middle of a run on Ctrl-C (SIGINT)', async () => {
    const scratch = fs.mkdtempSync(path.join(tmp, 'ctrl-c-'));
    const demo = spawn(
      process.execPath,
      [path.join(repo, 'dist', 'demo.js'), '--start', '--no-open', '--vsix', tierVsix(repo)],
      {
        cwd: repo,
        env: { ...process.env, TMPDIR: scratch },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    demo.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    demo.stderr.on('data', (b: Buffer) => {
      out += b.toString();
    });
    const exited = new Promise<number | null>((resolve) => demo.on('close', (code) => resolve(code)));
    try {
      // Ctrl-C once the agent works: a claude process runs in the sample project.
      const deadline = Date.now() + 240_000;
      const agentRuns = () => listProcesses().some((p) => p.cwd?.startsWith(scratch) && p.cmdline.includes('claude'));
      while (!agentRuns() && demo.exitCode === null && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 250));
      assert.ok(agentRuns(), `an agent ran:\n${out}`);
      assert.ok(processesUnder(scratch).length > 2, 'the server, Chromium and the agent run');
      demo.kill('SIGINT');
      assert.equal(await exited, 130, out);
    } finally {
      if (demo.exitCode === null) demo.kill('SIGKILL');
      await exited;
    }
    assert.match(out, /SIGINT: stopping/);
    const left = processesUnder(scratch);
    assert.deepEqual(left, [], `processes left: ${left.join(', ')}\n${out}`);
    assert.deepEqual(
      fs.readdirSync(scratch).filter((d) => d.startsWith('ralph-demo-')),
      [],
      'the sample project is removed',
    );
  });
});
