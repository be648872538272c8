import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runCli, runCliInProcess } from './cli';
import { repoRoot } from './repoRoot';
import { makeTempFolder, type TempFolder } from './tempFolder';
import { quantumJson, writeFlow, writeFlowState, type TempWorkspace } from './workspace';
import { snapshotFile, type SnapshotKey } from '../../src/core/store/snapshotCache';

/** Past the racy tick (core/store/snapshotCache.ts): files written before are old enough to be served. */
export const PAST_TICK_MS = 2200;

/** Waits out the racy tick: the cache's own rule compares file times with the clock (ctime cannot be set back). */
export const pastTheTick = () => new Promise((r) => setTimeout(r, PAST_TICK_MS));

/**
 * What the answer-cache tests share (test/component/cli/snapshotCache*.cli.test.ts, split so the parallel component
 * tier runs them in several workers): a fresh `XDG_CACHE_HOME` per test, temp folders removed after each, the CLI
 * called cached and uncached, and the plans and fixture copies they compare on. Call inside a `describe`.
 */
export function useSnapshotCache() {
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
  /** The answer without the cache (`RALPH_CACHE=0`), the reference the cached ones must equal: computed in this process. */
  const uncached = async (dir: string, json: boolean) => {
    const r = await runCliInProcess(dir, json ? ['status', '--json'] : ['status'], { ...env(), RALPH_CACHE: '0' });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };
  const entryOf = (dir: string) => snapshotFile(dir, 'status', env());
  /** The key the CLI stored the folder's status answer under, read from the entry itself. */
  const keyOf = (dir: string): SnapshotKey => {
    const e = JSON.parse(fs.readFileSync(entryOf(dir), 'utf8')) as SnapshotKey;
    return { folder: e.folder, command: e.command, build: e.build, env: e.env };
  };

  /** Wave ages move with the clock between two calls (waves are never stored): compared without them. */
  const clockFree = (s: string) =>
    s.replace(/"(\w*_ms)": [\d.]+/g, '"$1": 0').replace(/\b[\dhms.]+ (old|without)\b/g, 'T $1');

  /**
   * Cold (stores), warm (served) and text forms equal the uncached answer; returns whether an entry was stored, and
   * the uncached JSON answer.
   */
  async function sameCachedAndNot(dir: string, what: string): Promise<{ stored: boolean; plain: string }> {
    const plainJson = clockFree(await uncached(dir, true));
    const plainText = clockFree(await uncached(dir, false));
    assert.equal(clockFree(status(dir, true)), plainJson, `${what}: first call`);
    const stored = fs.existsSync(entryOf(dir));
    assert.equal(clockFree(status(dir, true)), plainJson, `${what}: second call`);
    assert.equal(clockFree(status(dir, false)), plainText, `${what}: text`);
    await sameNext(dir, what);
    return { stored, plain: plainJson };
  }

  /**
   * `next` in both forms, cold and warm (processes), equals the uncached answer (computed in this process): exit code
   * and both streams.
   */
  async function sameNext(dir: string, what: string): Promise<void> {
    for (const args of [['next', '--json'], ['next']]) {
      const answer = (extra: NodeJS.ProcessEnv = {}) => {
        const r = runCli(dir, args, { ...env(), ...extra });
        return { code: r.code, stdout: r.stdout, stderr: r.stderr };
      };
      const reference = await runCliInProcess(dir, args, { ...env(), RALPH_CACHE: '0' });
      const plain = { code: reference.code, stdout: reference.stdout, stderr: reference.stderr };
      assert.deepEqual(answer(), plain, `${what}: ${args.join(' ')} first call`);
      assert.deepEqual(answer(), plain, `${what}: ${args.join(' ')} second call`);
    }
  }

  /** A plan of `n` flow-next tasks (every third with a state file), `n` quantum stories and a checklist. */
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
    const dirs: string[] = [];
    for (const src of fixtureFolders()) {
      if (!keep(src)) continue;
      const f = folder(prefix);
      fs.cpSync(src, f.dir, { recursive: true });
      dirs.push(f.dir);
    }
    return dirs;
  }

  /**
   * Cold, warm and text answers equal the uncached ones in a copy of each fixture folder `keep` accepts, stored only
   * without runs and waves; returns how many were stored, of how many folders.
   */
  async function sameOnFixtures(
    prefix: string,
    keep: (src: string) => boolean,
  ): Promise<{ stored: number; of: number }> {
    const dirs = fixtureCopies(prefix, keep);
    await pastTheTick();
    let stored = 0;
    for (const dir of dirs) {
      const s = await sameCachedAndNot(dir, dir);
      const j = JSON.parse(s.plain) as { runs: unknown[]; recent_runs: unknown[]; waves: unknown[] };
      assert.equal(
        s.stored,
        !j.runs.length && !j.recent_runs.length && !j.waves.length,
        `${dir}: stored only without runs and waves`,
      );
      if (s.stored) stored++;
    }
    return { stored, of: dirs.length };
  }

  return {
    env,
    sameOnFixtures,
    cacheDir: () => cacheHome.dir,
    folder,
    status,
    uncached,
    entryOf,
    keyOf,
    clockFree,
    sameCachedAndNot,
    sameNext,
    generated,
    fixtureCopies,
  };
}

/** The fixture folders that hold plans (workspace-basic, seed-formats, ijfw); the others hold agent streams and guard tables. */
export const planFixture = (src: string) =>
  /^test\/fixtures\/(workspace-basic|seed-formats|ijfw)(\/|$)/.test(path.relative(repoRoot, src));

/** Each folder of test/fixtures/ and each of its sub-folders (absolute), in a stable order. */
export function fixtureFolders(): string[] {
  const fixtures = path.join(repoRoot, 'test', 'fixtures');
  const out: string[] = [];
  for (const name of fs.readdirSync(fixtures).sort()) {
    const top = path.join(fixtures, name);
    if (!fs.statSync(top).isDirectory()) continue;
    const subs = fs
      .readdirSync(top)
      .filter((s) => fs.statSync(path.join(top, s)).isDirectory())
      .sort();
    for (const sub of ['', ...subs]) out.push(path.join(top, sub));
  }
  return out;
}
