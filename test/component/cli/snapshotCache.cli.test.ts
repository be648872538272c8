import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runCli } from '../../support/cli';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { flowJson, quantumJson, writeFlow, writeFlowState, type TempWorkspace } from '../../support/workspace';
import { readSnapshot, snapshotFile, type SnapshotKey } from '../../../src/core/store/snapshotCache';
import { writeBaselineMirror } from '../../../src/core/loop/baselineMirror';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Past the racy tick (core/store/snapshotCache.ts): files written before are old enough to be served. */
const PAST_TICK_MS = 2200;

/**
 * The whole-answer cache of `ralph status` (core/store/snapshotCache.ts, answered by the tiny dist/cli.js): the
 * same output with and without it on every fixture and on generated plans, in both forms, and a fresh answer after
 * any change, including one within the timestamp tick of the cache write.
 */
describe('cli: status snapshot cache', function () {
  // Hundreds of CLI processes per test: the limit catches a hang, it is no bound on a loaded machine's speed.
  this.timeout(600_000);
  let cacheHome: TempFolder;
  const folders: TempFolder[] = [];
  const env = () => ({ XDG_CACHE_HOME: cacheHome.dir });
  const folder = (prefix: string) => {
    const f = makeTempFolder(prefix);
    folders.push(f);
    return f;
  };
  beforeEach(() => {
    cacheHome = makeTempFolder('ralph-snap-home-');
  });
  afterEach(() => {
    cacheHome.dispose();
    for (const f of folders.splice(0)) f.dispose();
  });

  const status = (dir: string, json: boolean, extra: NodeJS.ProcessEnv = {}) => {
    const r = runCli(dir, json ? ['status', '--json'] : ['status'], { ...env(), ...extra });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };
  const uncached = (dir: string, json: boolean) => status(dir, json, { RALPH_CACHE: '0' });
  const entryOf = (dir: string) => snapshotFile(dir, 'status', env());
  /** The key the CLI stored the folder's status answer under, read from the entry itself. */
  const keyOf = (dir: string): SnapshotKey => {
    const e = JSON.parse(fs.readFileSync(entryOf(dir), 'utf8')) as SnapshotKey;
    return { folder: e.folder, command: e.command, build: e.build, env: e.env };
  };

  /** Wave ages move with the clock between two calls (waves are never stored): compared without them. */
  const clockFree = (s: string) =>
    s.replace(/"(\w*_ms)": [\d.]+/g, '"$1": 0').replace(/\b[\dhms.]+ (old|without)\b/g, 'T $1');

  /** Cold (stores), warm (served) and text forms equal the uncached answer; returns whether an entry was stored. */
  function sameCachedAndNot(dir: string, what: string): boolean {
    const plainJson = clockFree(uncached(dir, true));
    const plainText = clockFree(uncached(dir, false));
    assert.equal(clockFree(status(dir, true)), plainJson, `${what}: first call`);
    const stored = fs.existsSync(entryOf(dir));
    assert.equal(clockFree(status(dir, true)), plainJson, `${what}: second call`);
    assert.equal(clockFree(status(dir, false)), plainText, `${what}: text`);
    sameNext(dir, what);
    return stored;
  }

  /** `next` in both forms, cold and warm, equals the uncached answer (exit code and both streams). */
  function sameNext(dir: string, what: string): void {
    for (const args of [['next', '--json'], ['next']]) {
      const answer = (extra: NodeJS.ProcessEnv = {}) => {
        const r = runCli(dir, args, { ...env(), ...extra });
        return { code: r.code, stdout: r.stdout, stderr: r.stderr };
      };
      const plain = answer({ RALPH_CACHE: '0' });
      assert.deepEqual(answer(), plain, `${what}: ${args.join(' ')} first call`);
      assert.deepEqual(answer(), plain, `${what}: ${args.join(' ')} second call`);
    }
  }

  function generated(ws: TempWorkspace, n: number): void {
    const tasks = Array.from({ length: n }, (_, i) => ({
      id: `fn-${1 + Math.floor(i / 7)}.${1 + (i % 7)}`,
      status: ['todo', 'done', 'blocked', 'in_progress'][i % 4]!,
      deps: i % 7 ? [`fn-${1 + Math.floor(i / 7)}.${i % 7}`] : [],
    }));
    writeFlow(ws, tasks);
    fs.mkdirSync(path.join(ws.dir, '.git', 'flow-state', 'tasks'), { recursive: true });
    writeFlowState(
      ws,
      Object.fromEntries(
        tasks.filter((_, i) => i % 3 === 0).map((t) => [t.id, { status: 'done', updated_at: '2026-01-11T00:00:00Z' }]),
      ),
    );
    ws.write('.git/HEAD', 'ref: refs/heads/main\n');
    ws.write(
      'quantum.json',
      quantumJson(
        Array.from({ length: n }, (_, i) => ({
          id: `US-${i}`,
          status: ['pending', 'passed', 'failed', 'in_progress'][i % 4]!,
          deps: i ? [`US-${i - 1}`] : [],
          attempts: i % 4 === 2 ? 3 : 0,
        })),
      ),
    );
    ws.write('RALPH_TASK.md', '- [x] a\n- [ ] b\n');
  }

  /** A temp copy of every fixture folder (each folder of test/fixtures/ and each of its sub-folders) that `keep` accepts. */
  function fixtureCopies(prefix: string, keep: (src: string) => boolean = () => true): string[] {
    const fixtures = path.join(repoRoot, 'test', 'fixtures');
    const dirs: string[] = [];
    for (const name of fs.readdirSync(fixtures)) {
      const top = path.join(fixtures, name);
      if (!fs.statSync(top).isDirectory()) continue;
      for (const sub of ['', ...fs.readdirSync(top).filter((s) => fs.statSync(path.join(top, s)).isDirectory())]) {
        const src = path.join(top, sub);
        if (!keep(src)) continue;
        const f = folder(prefix);
        fs.cpSync(src, f.dir, { recursive: true });
        dirs.push(f.dir);
      }
    }
    return dirs;
  }

  it('every fixture folder: the same output cached and uncached (stored only without runs and waves)', async () => {
    const dirs = fixtureCopies('ralph-snap-fx-');
    await sleep(PAST_TICK_MS);
    let stored = 0;
    for (const dir of dirs) {
      const s = sameCachedAndNot(dir, dir);
      const j = JSON.parse(uncached(dir, true)) as { runs: unknown[]; recent_runs: unknown[]; waves: unknown[] };
      assert.equal(
        s,
        !j.runs.length && !j.recent_runs.length && !j.waves.length,
        `${dir}: stored only without runs and waves`,
      );
      if (s) stored++;
    }
    assert.ok(stored >= 3, `some fixtures are served from the cache (${stored} of ${dirs.length})`);
  });

  it('generated plans: the same cold, warm, and after each kind of change (in place within the tick, in place with an old mtime, new file, removed file, new source)', async () => {
    const plans = [1, 50, 700].map((n) => {
      const ws = folder('ralph-snap-gen-');
      generated(ws, n);
      return { ws, n };
    });
    await sleep(PAST_TICK_MS);
    for (const { ws, n } of plans) {
      assert.equal(sameCachedAndNot(ws.dir, `${n}`), true, `${n}: stored`);
      const id = n === 1 ? 'fn-1.1' : 'fn-1.5';
      const file = path.join(ws.dir, '.flow', 'tasks', `${id}.json`);
      const text = fs.readFileSync(file, 'utf8');
      const st = fs.statSync(file);
      // Within the tick of the cache write, the same size, the old mtime put back: only ctime and the racy rule tell.
      fs.writeFileSync(
        file,
        text.replace(/"status": "\w+"/, '"status": "done"').replace(/"title": "[^"]*"/, (t) => t.slice(0, -2) + 'X"'),
      );
      fs.utimesSync(file, st.atime, st.mtime);
      assert.equal(fs.statSync(file).size, st.size);
      assert.equal(status(ws.dir, true), uncached(ws.dir, true), `${n}: changed within the tick`);
      sameNext(ws.dir, `${n}: changed within the tick`);
      // Another change, with an mtime an hour back (an editor or a checkout that sets times).
      fs.writeFileSync(
        file,
        flowJson({ id, epic: 'fn-1', title: 'Changed', status: 'blocked', depends_on: [], blocked_reason: 'why' }),
      );
      fs.rmSync(path.join(ws.dir, '.git', 'flow-state', 'tasks', `${id}.state.json`), { force: true });
      const old = (Date.now() - 3_600_000) / 1000;
      fs.utimesSync(file, old, old);
      const after = JSON.parse(status(ws.dir, true)) as { blocked: { id: string; reason: string }[] };
      assert.equal(after.blocked.find((b) => b.id === id)?.reason, 'why', `${n}: the change is seen`);
      assert.equal(status(ws.dir, true), uncached(ws.dir, true));
      // A new task file, a removed one, a new source.
      ws.write(
        '.flow/tasks/fn-999.1.json',
        flowJson({ id: 'fn-999.1', epic: 'fn-1', title: 'New', status: 'todo', depends_on: [] }),
      );
      assert.equal(status(ws.dir, true), uncached(ws.dir, true), `${n}: new file`);
      fs.rmSync(path.join(ws.dir, '.flow', 'tasks', 'fn-999.1.json'));
      assert.equal(status(ws.dir, true), uncached(ws.dir, true), `${n}: removed file`);
      ws.write('PROMPT.md', '- [ ] new source\n');
      assert.equal(status(ws.dir, false), uncached(ws.dir, false), `${n}: new source`);
      sameNext(ws.dir, `${n}: new source`);
    }
  });

  /**
   * Changes of one task file: after each, the CLI's answer must equal the uncached one.
   */
  const TASK_CHANGES: {
    name: string;
    apply: (task: Record<string, unknown>) => Record<string, unknown> | string;
  }[] = [
    {
      name: 'title (with a terminal escape)',
      apply: (t) => ({ ...t, title: `${String(t.title)} \u001b]0;x\u0007 changed` }),
    },
    {
      name: 'in progress with an assignee',
      apply: (t) => ({
        ...t,
        status: 'in_progress',
        assignee: 'bot@example.invalid',
        claimed_at: '2026-02-01T00:00:00Z',
      }),
    },
    {
      name: 'done, the newest completion',
      apply: (t) => ({ ...t, status: 'done', completed_at: '2027-03-01T00:00:00Z' }),
    },
    { name: 'todo', apply: (t) => ({ ...t, status: 'todo' }) },
    { name: 'an unknown status', apply: (t) => ({ ...t, status: 'weird' }) },
    {
      name: 'blocked with a reason',
      apply: (t) => ({ ...t, status: 'blocked', blocked_reason: 'waits on a human' }),
    },
    {
      name: 'blocked without a reason (read from the markdown)',
      apply: (t) => ({ ...t, status: 'blocked', blocked_reason: null }),
    },
    {
      name: 'other dependencies',
      apply: (t) => ({ ...t, depends_on: [...((t.depends_on as string[] | undefined) ?? []), 'fn-1.1'] }),
    },
    { name: 'another id', apply: (t) => ({ ...t, id: `${String(t.id)}9` }) },
    { name: 'another epic', apply: (t) => ({ ...t, epic: 'fn-77' }) },
    { name: 'not JSON', apply: (t) => JSON.stringify(t).slice(0, -1) },
    { name: 'a schema error', apply: (t) => ({ ...t, depends_on: 'fn-1.1' }) },
  ];

  /**
   * For every task change, then an atomic rewrite and a new file in the folder, then a change of its state file (when
   * it has one): the CLI prints the uncached answer in both forms. The change is made within the racy tick, so
   * nothing is stored and each case is looked up against the same stored answer.
   */
  function sameAfterTaskChanges(dir: string, what: string, taskIds: readonly string[]): number {
    status(dir, true);
    let checked = 0;
    for (const id of taskIds) {
      const file = path.join(dir, '.flow', 'tasks', `${id}.json`);
      assert.ok(fs.existsSync(file), `${what}: ${id} has a task file`);
      const original = fs.readFileSync(file, 'utf8');
      try {
        for (const change of TASK_CHANGES) {
          const next = change.apply(JSON.parse(original) as Record<string, unknown>);
          fs.writeFileSync(file, typeof next === 'string' ? next : JSON.stringify(next, null, 2) + '\n');
          // The stored answer is not served once the file changed (looked up in this process, by the entry's own key);
          // the CLI itself for every third change, in turn in each form (each call costs two Node start-ups).
          assert.equal(readSnapshot(keyOf(dir), env()).answer, undefined, `${what} ${id} ${change.name}: not served`);
          const k = TASK_CHANGES.indexOf(change);
          if (k % 6 === 3)
            assert.equal(status(dir, false), uncached(dir, false), `${what} ${id} ${change.name}: cli text`);
          else if (k % 6 === 0)
            assert.equal(status(dir, true), uncached(dir, true), `${what} ${id} ${change.name}: cli json`);
          checked++;
        }
        // Rewritten atomically (a temporary file, then a rename): the folder's mtime moves, its names do not.
        const tmp = `${file}.tmp`;
        fs.writeFileSync(tmp, original.replace(/"title": "/, '"title": "renamed '));
        fs.renameSync(tmp, file);
        assert.equal(readSnapshot(keyOf(dir), env()).answer, undefined, `${what} ${id}: atomic rewrite, not served`);
        const tasksDir = path.dirname(file);
        fs.writeFileSync(path.join(tasksDir, 'zz-new.json'), '{}');
        assert.equal(status(dir, true), uncached(dir, true), `${what} ${id}: a new name in the folder`);
        fs.rmSync(path.join(tasksDir, 'zz-new.json'));
      } finally {
        fs.writeFileSync(file, original);
      }
    }
    return checked;
  }

  it('after a task file changed == uncached: every fixture folder with flow-next tasks, and generated plans', async () => {
    const dirs = fixtureCopies('ralph-snap-change-fx-', (src) => fs.existsSync(path.join(src, '.flow', 'tasks')));
    const plans = [1, 50, 300].map((n) => {
      const ws = folder('ralph-snap-change-gen-');
      generated(ws, n);
      return { dir: ws.dir, n };
    });
    await sleep(PAST_TICK_MS);
    let checked = 0;
    let folders = 0;
    for (const dir of dirs) {
      status(dir, true);
      if (!fs.existsSync(entryOf(dir))) continue; // runs or waves: nothing stored
      const first = fs
        .readdirSync(path.join(dir, '.flow', 'tasks'))
        .filter((n) => /^fn-.*\.json$/.test(n))
        .sort()[0];
      if (!first) continue;
      checked += sameAfterTaskChanges(dir, dir, [first.replace(/\.json$/, '')]);
      folders++;
    }
    // fn-1.1 has a state file (generated: every third task), fn-1.2 has none.
    for (const { dir, n } of plans)
      checked += sameAfterTaskChanges(dir, `${n}`, n === 1 ? ['fn-1.1'] : n === 50 ? ['fn-1.2'] : ['fn-1.1', 'fn-1.2']);
    assert.ok(folders >= 1, `fixture folders checked: ${folders}`);
    assert.ok(checked > 0);
  });

  it('an open claim baseline without a run record (its mirror outside the workspace): a task done or undone since == uncached (claims and progress follow the task)', async () => {
    // A run whose record is gone while its claims are open (the record deleted): no runs, so the answer is stored;
    // its mirror still makes every task done since the baseline an unverified claim, left out of progress.
    const ws = folder('ralph-snap-claims-');
    const state = folder('ralph-snap-claims-state-');
    const st = { XDG_STATE_HOME: state.dir };
    generated(ws, 20);
    await writeBaselineMirror(
      ws.dir,
      '20261201-000000-gone',
      { at: '2026-12-01T00:00:00.000Z', source: 'flow-next', label: '.flow', done: [] },
      st,
    );
    await sleep(PAST_TICK_MS);
    const plain = () => status(ws.dir, true, { ...st, RALPH_CACHE: '0' });
    const before = JSON.parse(plain()) as {
      unverified_claims: { id: string }[];
      runs: unknown[];
      recent_runs: unknown[];
    };
    assert.ok(
      before.unverified_claims.some((u) => u.id === 'fn-1.2'),
      'control: a done task is a claim',
    );
    assert.equal(before.runs.length + before.recent_runs.length, 0, 'control: no run record');
    assert.equal(status(ws.dir, true, st), plain());
    assert.ok(fs.existsSync(entryOf(ws.dir)), 'control: the answer is stored');
    const taskFile = (id: string) => path.join(ws.dir, '.flow', 'tasks', `${id}.json`);
    const edit = (id: string, over: Record<string, unknown>) =>
      fs.writeFileSync(
        taskFile(id),
        JSON.stringify(
          { ...(JSON.parse(fs.readFileSync(taskFile(id), 'utf8')) as Record<string, unknown>), ...over },
          null,
          2,
        ) + '\n',
      );
    // fn-1.5: todo, no state file, becomes done (a new claim); fn-1.2: done (a claim), becomes todo.
    edit('fn-1.5', { status: 'done', completed_at: '2026-12-02T00:00:00Z' });
    assert.equal(status(ws.dir, true, st), plain(), 'a task done since the baseline');
    assert.equal(status(ws.dir, false, st), status(ws.dir, false, { ...st, RALPH_CACHE: '0' }), 'text');
    edit('fn-1.2', { status: 'todo' });
    assert.equal(status(ws.dir, true, st), plain(), 'a claimed task undone');
  });

  it('serves the stored answer while nothing changed, and never once an input changed', async () => {
    const ws = folder('ralph-snap-serve-');
    generated(ws, 20);
    await sleep(PAST_TICK_MS);
    const plain = uncached(ws.dir, true);
    status(ws.dir, true);
    const file = entryOf(ws.dir);
    const entry = JSON.parse(fs.readFileSync(file, 'utf8')) as {
      outputs: Record<string, string>;
      inputsByFolder: unknown;
    };
    // Stored by folder: `[folder, name, size, mtime, ctime, inode, name, …]`, size -1 for an absent input.
    const inputs = (entry.inputsByFolder as (string | number)[][]).flatMap((run) =>
      Array.from({ length: (run.length - 1) / 5 }, (_, k) => ({
        path: path.join(String(run[0]), String(run[1 + 5 * k])),
        absent: run[2 + 5 * k] === -1,
      })),
    );
    assert.ok(
      inputs.some((i) => i.path === path.join(ws.dir, '.flow', 'tasks', 'fn-1.1.json')),
      'task files are inputs',
    );
    assert.ok(
      inputs.some((i) => i.absent && i.path === path.join(ws.dir, 'PROMPT.md')),
      'absent sources are inputs',
    );
    // A planted answer, written an hour after its inputs: served, which shows the lookup answers alone.
    fs.writeFileSync(file, JSON.stringify({ ...entry, outputs: { json: 'PLANTED\n', text: 'PLANTED TEXT\n' } }));
    assert.equal(status(ws.dir, true), 'PLANTED\n');
    assert.equal(status(ws.dir, false), 'PLANTED TEXT\n');
    // Another build, another environment: not served.
    assert.notEqual(status(ws.dir, true, { FLOW_STATE_DIR: path.join(ws.dir, '.git', 'flow-state') }), 'PLANTED\n');
    ws.write('RALPH_TASK.md', '- [x] a\n- [x] b\n');
    assert.equal(status(ws.dir, true), uncached(ws.dir, true));
    assert.notEqual(uncached(ws.dir, true), plain);
  });

  it('next: the answer is keyed by the actor, and a planted answer shows a warm call is served', async () => {
    const ws = folder('ralph-snap-next-');
    generated(ws, 20);
    await sleep(PAST_TICK_MS);
    const first = runCli(ws.dir, ['next', '--json'], { ...env(), FLOW_ACTOR: 'alice' }).stdout;
    const file = snapshotFile(ws.dir, 'next-json', env());
    const entry = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(file, JSON.stringify({ ...entry, outputs: { out: 'PLANTED\n' } }));
    assert.equal(runCli(ws.dir, ['next', '--json'], { ...env(), FLOW_ACTOR: 'alice' }).stdout, 'PLANTED\n');
    assert.equal(
      runCli(ws.dir, ['next', '--json'], { ...env(), FLOW_ACTOR: 'bob' }).stdout,
      runCli(ws.dir, ['next', '--json'], { ...env(), FLOW_ACTOR: 'bob', RALPH_CACHE: '0' }).stdout,
    );
    assert.ok(first.includes('"success": true'));
  });

  it('ignores a corrupt or foreign entry and rebuilds it; writes nothing into the workspace, nothing with RALPH_CACHE=0', async () => {
    const ws = folder('ralph-snap-corrupt-');
    generated(ws, 5);
    await sleep(PAST_TICK_MS);
    const before = fs.readdirSync(ws.dir, { recursive: true }).map(String).sort();
    const plain = uncached(ws.dir, true);
    assert.equal(fs.existsSync(path.join(cacheHome.dir, 'ralph')), false, 'RALPH_CACHE=0 writes nothing');
    status(ws.dir, true);
    const file = entryOf(ws.dir);
    const good = fs.readFileSync(file, 'utf8');
    const foreign = {
      ...(JSON.parse(good) as Record<string, unknown>),
      folder: '/elsewhere',
      outputs: { json: 'X\n', text: 'X\n' },
    };
    for (const garbage of [
      '{"format": "ralph-snapshot-cache", "version": 1, "inputs": [',
      'null',
      '[]',
      JSON.stringify({ format: 'other' }),
      JSON.stringify(foreign),
      good.replace(/"inputsByFolder":\[/, '"inputsByFolder":[5,'),
    ]) {
      fs.writeFileSync(file, garbage);
      assert.equal(status(ws.dir, true), plain);
      assert.equal(
        (JSON.parse(fs.readFileSync(file, 'utf8')) as { format: string; folder: string }).folder,
        ws.dir,
        'rebuilt',
      );
    }
    assert.deepEqual(fs.readdirSync(ws.dir, { recursive: true }).map(String).sort(), before);
  });

  it('stores nothing while the folder has runs', async () => {
    const ws = folder('ralph-snap-runs-');
    generated(ws, 3);
    const run = path.join(ws.dir, 'scripts', 'ralph', 'runs', '2026-01-01-000000');
    fs.mkdirSync(run, { recursive: true });
    fs.writeFileSync(path.join(run, 'progress.txt'), 'iteration: 1\n');
    await sleep(PAST_TICK_MS);
    assert.equal(sameCachedAndNot(ws.dir, 'runs'), false);
  });
});
