import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cliPath, runCli, runCliInProcess } from '../../support/cli';
import { testCacheHome } from '../../support/tempFolder';
import { gitInit, quantumJson, tempWorkspace, writeFlow, type TempWorkspace } from '../../support/workspace';

/** Runs `node dist/cli.js …args` in `cwd` (no `-C`). */
function runIn(cwd: string, args: string[]) {
  return spawnSync(process.execPath, [cliPath, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: testCacheHome(), FLOW_ACTOR: 'tester' },
  });
}

/** `ralph …args` in this process, run in `cwd` (no `-C`). */
const inFolder = (cwd: string, args: string[]) => runCliInProcess(undefined, args, {}, { cwd });

/**
 * The CLI as bots use it: the folder found like flowctl's, indented JSON, a reader that goes away. Commands run in
 * this process (`runCliInProcess`) where their output is the point; as processes where the process is (a working
 * folder without `-C`, a reader that goes away, a pipe that fills).
 */
describe('cli: what bots rely on', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());

  it('from a subfolder without -C, commands work on the git top level', () => {
    ws = tempWorkspace('ralph-bot-');
    gitInit(ws);
    writeFlow(ws, [
      { id: 'fn-1.1', status: 'done' },
      { id: 'fn-1.2', status: 'done', deps: ['fn-1.1'] },
    ]);
    const sub = path.join(ws.dir, 'src', 'deep');
    fs.mkdirSync(sub, { recursive: true });
    const top = execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: sub, encoding: 'utf8' }).trim();
    assert.equal(fs.realpathSync(top), fs.realpathSync(ws.dir));
    const s = runIn(sub, ['status', '--json']);
    assert.equal(s.status, 0);
    assert.deepEqual((JSON.parse(s.stdout) as { tasks: unknown }).tasks, {
      todo: 0,
      in_progress: 0,
      blocked: 0,
      done: 2,
    });
    const r = runIn(sub, ['task', 'reset', 'fn-1.1', '--cascade', '--json']);
    assert.deepEqual(JSON.parse(r.stdout), { success: true, reset: ['fn-1.1', 'fn-1.2'] });
    assert.equal(fs.existsSync(path.join(sub, '.flow')), false);
  });

  it('-C names the starting folder: a subfolder of a repository resolves to its top level', async () => {
    ws = tempWorkspace('ralph-bot-');
    gitInit(ws);
    writeFlow(ws, [{ id: 'fn-1.1' }]);
    fs.mkdirSync(path.join(ws.dir, 'docs'));
    assert.equal(
      ((await runCliInProcess(path.join(ws.dir, 'docs'), ['status', '--json'])).json() as { progress: string })
        .progress,
      '0/1',
    );
  });

  it('outside git, the starting folder itself is the workspace', async () => {
    ws = tempWorkspace('ralph-bot-');
    ws.write('sub/quantum.json', quantumJson([{ id: 'US-001' }]));
    assert.equal(
      ((await inFolder(path.join(ws.dir, 'sub'), ['status', '--json'])).json() as { quantum_exists: boolean })
        .quantum_exists,
      true,
    );
    assert.equal(
      ((await inFolder(ws.dir, ['status', '--json'])).json() as { quantum_exists: boolean }).quantum_exists,
      false,
    );
  });

  it('in a linked worktree (.git is a file), the worktree is the top level', async () => {
    ws = tempWorkspace('ralph-bot-');
    const main = path.join(ws.dir, 'main');
    fs.mkdirSync(main);
    const git = (cwd: string, ...a: string[]) =>
      execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...a], { cwd, encoding: 'utf8' });
    git(main, 'init', '-q');
    fs.writeFileSync(path.join(main, 'quantum.json'), quantumJson([{ id: 'US-001' }]));
    git(main, 'add', '.');
    git(main, 'commit', '-qm', 'init');
    git(main, 'worktree', 'add', '-q', path.join(ws.dir, 'wt'));
    fs.mkdirSync(path.join(ws.dir, 'wt', 'a'));
    const j = (await inFolder(path.join(ws.dir, 'wt', 'a'), ['status', '--json'])).json() as {
      quantum_exists: boolean;
      stories: { pending: number };
    };
    assert.deepEqual([j.quantum_exists, j.stories.pending], [true, 1]);
  });

  it('JSON documents are indented; refusals too', async () => {
    ws = tempWorkspace('ralph-bot-');
    writeFlow(ws, [{ id: 'fn-1.1', status: 'done' }]);
    ws.write('.ralph/config.json', JSON.stringify({ gates: { basic: 'true' } }));
    const state = { XDG_STATE_HOME: path.join(ws.dir, '.state') };
    for (const args of [
      ['status', '--json'],
      ['next', '--json'],
      ['task', 'reset', 'fn-1.1', '--json'],
      ['task', 'start', 'fn-9.9', '--json'],
      ['doctor', '--json'],
      ['pause', '--json'],
      ['trust', '--show', '--json'],
      ['trust', '--json'],
      ['stale', '--json'],
      ['waves', 'check', '--phase', 'p1', '--json'],
    ]) {
      const out = (await runCliInProcess(ws.dir, args, state)).stdout;
      assert.equal(out, JSON.stringify(JSON.parse(out), null, 2) + '\n', args.join(' '));
    }
  });

  it('ends quietly when the reader goes away (status --json | head -c 100)', () => {
    ws = tempWorkspace('ralph-bot-');
    ws.write(
      'quantum.json',
      quantumJson(
        Array.from({ length: 3000 }, (_, i) => ({
          id: `US-${i}`,
          status: 'blocked',
          failureLog: [{ phase: 'x', timestamp: '2026-01-01T00:00:00Z', error: 'e'.repeat(200) }],
        })),
      ),
    );
    // status twice: computed, then served from the answer cache (another code path of the small entry); next and the
    // text form; stale through the full program.
    for (const args of ['status --json', 'status --json', 'status', 'next --json', 'stale --json']) {
      const r = spawnSync(
        'bash',
        [
          '-c',
          `set -o pipefail; export XDG_CACHE_HOME="${testCacheHome()}"; "${process.execPath}" "${cliPath}" -C "${ws.dir}" ${args} | head -c 100 >/dev/null`,
        ],
        { encoding: 'utf8' },
      );
      assert.equal(r.stderr, '', args);
      assert.equal(r.status, 0, args);
    }
  });

  it('a served answer (written to fd 1) larger than a pipe: to a non-blocking pipe read late, a file, a closed stdout', async () => {
    ws = tempWorkspace('ralph-bot-');
    ws.write(
      'quantum.json',
      quantumJson(
        Array.from({ length: 3000 }, (_, i) => ({
          id: `US-${i}`,
          status: 'blocked',
          failureLog: [{ phase: 'x', timestamp: '2026-01-01T00:00:00Z', error: 'e'.repeat(200) }],
        })),
      ),
    );
    const plain = runCli(ws.dir, ['status', '--json'], { RALPH_CACHE: '0' }).stdout;
    assert.ok(plain.length > 256 * 1024, `control: an answer of ${plain.length} bytes, more than a pipe holds`);
    await new Promise((r) => setTimeout(r, 2200)); // past the answer cache's racy tick: stored, then served
    runCli(ws.dir, ['status', '--json']);
    const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bot-out-'));
    try {
      const out = path.join(outDir, 'out.json'); // outside the workspace: not an input of the stored answer
      const env = { ...process.env, XDG_CACHE_HOME: testCacheHome(), FLOW_ACTOR: 'tester' };
      const sh = (script: string) => spawnSync('bash', ['-c', `set -o pipefail; ${script}`], { encoding: 'utf8', env });
      const cli = `"${process.execPath}" "${cliPath}" -C "${ws.dir}" status --json`;
      // The pipe's file description made non-blocking by the writer's side (as a Node parent sharing it does), and
      // read only after a second: the writes fill it, EAGAIN, and the rest must still arrive.
      const nonBlocking = `python3 -c 'import fcntl, os; fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_NONBLOCK)'`;
      for (const [what, script] of [
        ['non-blocking pipe read late', `{ ${nonBlocking} && exec ${cli}; } | { sleep 1; cat; } > "${out}"`],
        ['blocking pipe read late', `${cli} | { sleep 1; cat; } > "${out}"`],
        ['a file', `${cli} > "${out}"`],
      ] as const) {
        const r = sh(script);
        assert.deepEqual([r.status, r.stderr], [0, ''], what);
        assert.equal(fs.readFileSync(out, 'utf8'), plain, what);
      }
      const closed = sh(`${cli} >&-`);
      assert.deepEqual([closed.status, closed.stderr], [0, ''], 'stdout closed');
    } finally {
      fs.rmSync(outDir, { recursive: true, force: true });
    }
  });

  it('the small entry (status, next) and the full program print the same', async () => {
    ws = tempWorkspace('ralph-bot-');
    writeFlow(ws, [
      { id: 'fn-1.1', status: 'done' },
      { id: 'fn-1.2', deps: ['fn-1.1'] },
    ]);
    ws.write('quantum.json', quantumJson([{ id: 'US-001' }]));
    for (const args of [['status', '--json'], ['status'], ['next', '--json'], ['next']]) {
      const fast = await runCliInProcess(ws.dir, args);
      const slow = await runCliInProcess(ws.dir, args, {}, { program: 'cli-main.js' });
      assert.deepEqual([fast.code, fast.stdout, fast.stderr], [slow.code, slow.stdout, slow.stderr], args.join(' '));
    }
    const missing = await runCliInProcess(path.join(ws.dir, 'nope'), ['status', '--json']);
    assert.deepEqual(
      [missing.code, (missing.json() as { error: string }).error],
      [1, `folder not found: ${path.join(ws.dir, 'nope')}`],
    );
    const bad = await runCliInProcess(ws.dir, ['status', '--jsn']);
    assert.equal(bad.code, 2);
  });

  it('the task program (dist/cli-task.js: task start/done/block/reset) and the full program print and write the same', async () => {
    const make = (w: TempWorkspace) => {
      writeFlow(w, [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-1.2', deps: ['fn-1.1'] },
        { id: 'fn-1.3', deps: ['fn-1.2'] },
      ]);
      w.write('quantum.json', quantumJson([{ id: 'US-001' }, { id: 'US-002', deps: ['US-001'] }]));
      return w.dir;
    };
    ws = tempWorkspace('ralph-bot-task-');
    const other = tempWorkspace('ralph-bot-task-full-');
    try {
      const viaEntry = make(ws);
      const viaFull = make(other);
      const steps = [
        ['task', 'start', 'fn-1.2', '--json'],
        ['task', 'done', 'fn-1.2', '--summary', 'did it', '--json'],
        ['task', 'block', 'fn-1.3', '--reason', 'waits', '--json'],
        ['task', 'reset', 'fn-1.1', '--cascade', '--json'],
        ['task', 'reset', 'fn-1.1'],
        ['task', 'start', 'US-001'],
        ['task', 'block', 'US-001', '--reason', 'r', '--json'],
        ['task', 'reset', 'US-001', '--json'],
        ['task', 'reset', 'nope', '--json'],
        ['task', 'reset', 'fn-1.1', '--bogus'],
        ['task', 'done', 'fn-1.1', '--evidence', 'not json'],
        ['task', 'block', 'fn-1.1'],
        ['task', 'reset'],
      ];
      // Files as written, with the clock's timestamps masked (each side writes its own "now").
      const tree = (d: string) =>
        (fs.readdirSync(d, { recursive: true }) as string[])
          .sort()
          .filter((f) => fs.statSync(path.join(d, f)).isFile())
          .map(
            (f) =>
              `${f}\n${fs.readFileSync(path.join(d, f), 'utf8').replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?/g, 'T')}`,
          );
      for (const args of steps) {
        const a = await runCliInProcess(viaEntry, args);
        const b = await runCliInProcess(viaFull, args, {}, { program: 'cli-main.js' });
        const shown = (r: typeof a, d: string) => [
          r.code,
          r.stdout.split(d).join('<ws>'),
          r.stderr.split(d).join('<ws>'),
        ];
        assert.deepEqual(shown(a, viaEntry), shown(b, viaFull), args.join(' '));
        assert.deepEqual(tree(viaEntry), tree(viaFull), `files after ${args.join(' ')}`);
      }
    } finally {
      other.dispose();
    }
  });
});
