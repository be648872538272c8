import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildStatus } from '../../../src/core/control/status';
import { nextWork } from '../../../src/core/sources/operations';
import { openParseCache } from '../../../src/core/store/parseCache';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { flowJson, quantumJson, writeFlow, writeFlowState } from '../../support/workspace';

const HOUR_AGO = (Date.now() - 3_600_000) / 1000;

/** Sets every file under `dir` an hour back, so the cache may serve it (older than the racy tick). */
function age(dir: string): void {
  for (const f of fs.readdirSync(dir, { recursive: true }).map((x) => path.join(dir, String(x))))
    if (fs.statSync(f).isFile()) fs.utimesSync(f, HOUR_AGO, HOUR_AGO);
}

/** The parse cache of the read-only commands (store/parseCache.ts): same answers cached and uncached. */
describe('parse cache', () => {
  let ws: TempFolder;
  let cacheHome: TempFolder;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    ws = makeTempFolder('ralph-cache-ws-');
    cacheHome = makeTempFolder('ralph-cache-home-');
    env = { XDG_CACHE_HOME: cacheHome.dir };
  });
  afterEach(() => {
    ws.dispose();
    cacheHome.dispose();
  });

  const probe = { isAlive: () => true, hostNames: [] };
  const status = (cached: boolean) => buildStatus(ws.dir, { env, probe, cached });
  const next = (cached: boolean) => {
    try {
      return nextWork({ folder: ws.dir, env, actor: 'a', cached });
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
  const sameCachedAndNot = () => {
    const plain = status(false);
    assert.deepEqual(status(true), plain, 'first cached run (cold)');
    assert.deepEqual(status(true), plain, 'second cached run (warm)');
    assert.deepEqual(next(true), next(false));
    return plain;
  };

  function generated(n: number): void {
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

  it('every fixture: the same status and next, cached and uncached', () => {
    const fixtures = path.join(repoRoot, 'test', 'fixtures');
    for (const name of fs.readdirSync(fixtures)) {
      fs.cpSync(path.join(fixtures, name), ws.dir, { recursive: true });
      age(ws.dir);
      sameCachedAndNot();
    }
  });

  for (const n of [1, 50, 700]) {
    it(`a generated plan of ${n} tasks and ${n} stories: the same, cold, warm and after one file changes`, () => {
      generated(n);
      age(ws.dir);
      sameCachedAndNot();
      // fn-1.1 has no flow-state overlay when there is one task only; else fn-1.5 (todo, no overlay).
      const id = n === 1 ? 'fn-1.1' : 'fn-1.5';
      fs.rmSync(path.join(ws.dir, '.git', 'flow-state', 'tasks', `${id}.state.json`), { force: true });
      ws.write(
        `.flow/tasks/${id}.json`,
        flowJson({ id, epic: 'fn-1', title: 'Changed', status: 'blocked', depends_on: [], blocked_reason: 'why' }),
      );
      assert.equal(status(true).blocked.find((b) => b.id === id)?.reason, 'why');
      sameCachedAndNot();
    });
  }

  it('files that do not parse give the same problems cached and uncached', () => {
    generated(3);
    ws.write('.flow/tasks/fn-1.2.json', '{ "id": "fn-1.2",, }');
    ws.write('quantum.json', '{"stories": [ {"id": 3} ]}');
    age(ws.dir);
    assert.ok(sameCachedAndNot().problems.length >= 2);
  });

  it('serves an unchanged file (same size, mtime, inode) from the cache, and nothing once changed', () => {
    generated(7);
    age(ws.dir);
    status(true);
    const file = path.join(ws.dir, '.flow', 'tasks', 'fn-1.5.json');
    const text = fs.readFileSync(file, 'utf8');
    // The same size and mtime: only a cache hit can still say "todo" (what git's index would also miss).
    fs.writeFileSync(file, text.replace('"todo"', '"done"'));
    fs.utimesSync(file, HOUR_AGO, HOUR_AGO);
    assert.equal(status(true).tasks.todo, status(false).tasks.todo + 1);
    fs.writeFileSync(file, text.replace('"todo"', '"done" '));
    fs.utimesSync(file, HOUR_AGO, HOUR_AGO);
    assert.deepEqual(status(true), status(false), 'another size: read again');
  });

  it("never serves a racy entry (modified within the tick of the cache's write)", () => {
    generated(7);
    status(true);
    const file = path.join(ws.dir, '.flow', 'tasks', 'fn-1.5.json');
    const st = fs.statSync(file);
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('"todo"', '"done"'));
    fs.utimesSync(file, st.atime, st.mtime);
    assert.deepEqual(status(true), status(false));
  });

  it('ignores and rebuilds a corrupt or foreign cache file', () => {
    generated(5);
    age(ws.dir);
    const plain = status(false);
    status(true);
    const cacheFiles = fs.readdirSync(path.join(cacheHome.dir, 'ralph'));
    assert.deepEqual(cacheFiles.map((f) => f.replace(/^[0-9a-f]{8}-/, '')).sort(), ['flow.json', 'quantum.json']);
    for (const garbage of [
      '{"format": "ralph-parse-cache", "version": 1, "entries": 5',
      'null',
      JSON.stringify({ format: 'ralph-parse-cache', version: 999, entries: {} }),
      JSON.stringify({ format: 'other' }),
    ]) {
      for (const f of cacheFiles) fs.writeFileSync(path.join(cacheHome.dir, 'ralph', f), garbage);
      assert.deepEqual(status(true), plain);
      for (const f of cacheFiles)
        assert.equal(
          (JSON.parse(fs.readFileSync(path.join(cacheHome.dir, 'ralph', f), 'utf8')) as { format: string }).format,
          'ralph-parse-cache',
        );
    }
  });

  it('writes nothing into the workspace, and nothing at all with RALPH_CACHE=0', () => {
    generated(3);
    const before = fs.readdirSync(ws.dir, { recursive: true }).map(String).sort();
    status(true);
    assert.deepEqual(fs.readdirSync(ws.dir, { recursive: true }).map(String).sort(), before);
    fs.rmSync(path.join(cacheHome.dir, 'ralph'), { recursive: true, force: true });
    env = { ...env, RALPH_CACHE: '0' };
    assert.equal(openParseCache(ws.dir, 'flow', env), undefined);
    status(true);
    assert.equal(fs.existsSync(path.join(cacheHome.dir, 'ralph')), false);
  });
});
