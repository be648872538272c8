import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { runCliCapped } from '../../support/cli';

/**
 * Issue 12, bounded input, through the CLI: whatever a task source holds, `ralph status` exits 0 (its documented
 * code) and names the refused file and why; `ralph doctor` does not read it either. Children are capped (prlimit).
 */
describe('cli: bounded input (issue 12)', function () {
  this.timeout(120_000);
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-bounded-cli-');
  });
  afterEach(() => t.dispose());

  const cases: {
    name: string;
    make: (t: TempFolder) => void;
    problem: RegExp;
    json?: (j: Record<string, unknown>) => void;
  }[] = [
    {
      name: 'quantum.json linked to /dev/zero',
      make: (t) => fs.symlinkSync('/dev/zero', t.file('quantum.json')),
      problem: /quantum\.json: refused: a character device, not a regular file/,
    },
    {
      name: 'a 600 MB quantum.json',
      make: (t) => {
        fs.writeFileSync(t.file('quantum.json'), '');
        fs.truncateSync(t.file('quantum.json'), 600 * 1024 * 1024);
      },
      problem: /quantum\.json: refused: 600\.0 MiB is more than the 64\.0 MiB limit/,
    },
    {
      name: 'quantum.json nested 200,000 deep',
      make: (t) => t.write('quantum.json', '['.repeat(200_000) + ']'.repeat(200_000)),
      problem: /quantum\.json:1:513: refused: arrays and objects nested more than 512 deep/,
    },
    {
      name: 'a task file that is a directory',
      make: (t) => fs.mkdirSync(t.file('RALPH_TASK.md')),
      problem: /RALPH_TASK\.md: refused: a directory, not a regular file/,
    },
    {
      name: 'a flow-next task linked to /dev/zero',
      make: (t) => {
        t.write('.flow/meta.json', '{"schema_version":2}\n');
        fs.mkdirSync(t.file('.flow/tasks'), { recursive: true });
        fs.symlinkSync('/dev/zero', t.file('.flow/tasks/fn-1.1.json'));
      },
      problem: /\.flow\/tasks\/fn-1\.1\.json: refused: a character device/,
    },
    {
      name: 'a NUL byte in a task text',
      make: (t) => t.write('RALPH_TASK.md', '# T\n- [ ] one\0\n'),
      problem: /RALPH_TASK\.md:2:10: refused: the file contains a NUL byte/,
    },
    {
      name: 'duplicate story ids',
      make: (t) =>
        t.write(
          'quantum.json',
          JSON.stringify({
            project: 'p',
            branchName: 'b',
            stories: [
              { id: 'US-1', title: 'a', passes: false },
              { id: 'US-1', title: 'b', passes: false },
            ],
          }),
        ),
      problem: /quantum\.json:1:\d+: stories\.1\.id: duplicate story id "US-1"/,
    },
  ];

  for (const c of cases) {
    it(`status exits 0 and names the file: ${c.name}`, () => {
      c.make(t);
      const r = runCliCapped(t.dir, ['status']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, c.problem);
      const j = runCliCapped(t.dir, ['status', '--json']);
      assert.equal(j.code, 0, j.stderr);
      assert.ok((j.json().problems as { message: string }[]).length > 0);
      const d = runCliCapped(t.dir, ['doctor']);
      assert.notEqual(d.code, null, 'doctor ends within its memory cap');
      assert.ok(!/TypeError|RangeError|at .*\.js:\d+/.test(d.stdout + d.stderr), d.stdout + d.stderr);
    });
  }

  it('CR-only line endings are read as lines: the boxes count, the list is not "complete"', () => {
    t.write('RALPH_TASK.md', '# T\r- [ ] one\r- [x] two\r- [ ] three\r');
    const r = runCliCapped(t.dir, ['status', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(JSON.stringify(r.json().checklists), /"done":1,"total":3|"total":3,"done":1/);
  });
});

/** Issue 12: task content cannot drive the terminal through `ralph status` / `ralph next`. */
describe('cli: control characters in titles are printed escaped (issue 12)', function () {
  this.timeout(60_000);
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-escape-cli-');
  });
  afterEach(() => t.dispose());

  it('status and next, text and JSON', () => {
    const title = 'Evil\x1b]0;owned\x07\rAll 3 stories passed\u009b2J';
    t.write(
      'quantum.json',
      JSON.stringify({
        project: 'p',
        branchName: 'b',
        stories: [
          { id: 'US-1', title, passes: false, status: 'in_progress' },
          { id: 'US-2', title: 'B\x1b[2J', passes: false, status: 'blocked' },
        ],
      }),
    );
    t.write('RALPH_TASK.md', `# T\n- [ ] box \x1b[2J clears\n`);
    for (const args of [['status'], ['status', '--json'], ['next'], ['next', '--json']]) {
      const r = runCliCapped(t.dir, args);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(
        !/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(r.stdout),
        `${args.join(' ')}: ${JSON.stringify(r.stdout)}`,
      );
    }
    assert.match(
      runCliCapped(t.dir, ['status']).stdout,
      /In progress: US-1 Evil\\x1b\]0;owned\\x07\\rAll 3 stories passed\\u009b2J\n/,
    );
  });
});
