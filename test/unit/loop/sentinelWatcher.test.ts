import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SentinelWatcher } from '../../../src/core/loop/sentinelWatcher';
import { ralphRunDir } from '../../../src/core/model/ralphPaths';

/**
 * SentinelWatcher (core/loop/sentinelWatcher.ts) on a real folder with real `fs.watch`: the poll is set to a minute so
 * that every reaction seen comes from a watch event.
 */
describe('SentinelWatcher: reacts to the sentinel files, not to the run writing its own files', () => {
  const run = { runId: 'r-1', startedAt: new Date(Date.now() - 1000).toISOString() };
  let folder: string;
  let watcher: SentinelWatcher | undefined;
  const settle = () => new Promise((r) => setTimeout(r, 150));

  beforeEach(() => {
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-sentinel-watch-'));
    fs.mkdirSync(ralphRunDir(folder, run.runId), { recursive: true });
    fs.mkdirSync(path.join(folder, 'scripts', 'ralph'), { recursive: true });
  });
  afterEach(() => {
    watcher?.close();
    watcher = undefined;
    fs.rmSync(folder, { recursive: true, force: true });
  });

  /** A watcher whose `check` calls are counted. */
  function counted(): { w: SentinelWatcher; checks: () => number } {
    const w = new SentinelWatcher(folder, run, 60_000);
    let n = 0;
    const check = w.check.bind(w);
    w.check = () => {
      n++;
      return check();
    };
    watcher = w;
    return { w, checks: () => n };
  }

  it('looks again on no write of run.json, a stream, a temp file or a rename in the folders it watches', async () => {
    const { checks } = counted();
    const dir = ralphRunDir(folder, run.runId);
    for (let i = 0; i < 20; i++) {
      fs.writeFileSync(path.join(dir, `run.json.${i}.tmp`), '{}');
      fs.renameSync(path.join(dir, `run.json.${i}.tmp`), path.join(dir, 'run.json'));
      fs.appendFileSync(path.join(dir, 'iter-001.jsonl'), '{"type":"assistant"}\n');
      fs.writeFileSync(path.join(folder, '.ralph', 'status.json'), `${i}`);
    }
    await settle();
    assert.equal(checks(), 0);
  });

  for (const [label, rel, kind] of [
    ["the run's STOP", (f: string) => path.join(ralphRunDir(f, run.runId), 'STOP'), 'stop'],
    ["the run's PAUSE", (f: string) => path.join(ralphRunDir(f, run.runId), 'PAUSE'), 'pause'],
    ['.ralph/stop-requested', (f: string) => path.join(f, '.ralph', 'stop-requested'), 'stop'],
    ['scripts/ralph/STOP', (f: string) => path.join(f, 'scripts', 'ralph', 'STOP'), 'stop'],
    ['scripts/ralph/PAUSE', (f: string) => path.join(f, 'scripts', 'ralph', 'PAUSE'), 'pause'],
  ] as const) {
    it(`reports ${label} at once (before any poll)`, async () => {
      const { w } = counted();
      const seen = new Promise<{ stop: number; pause: number }>((resolve) =>
        w.on('change', (c) => resolve({ stop: c.stop.length, pause: c.pause.length })),
      );
      fs.writeFileSync(rel(folder), 'x\n');
      const c = await seen;
      assert.deepEqual(c, kind === 'stop' ? { stop: 1, pause: 0 } : { stop: 0, pause: 1 });
    });
  }

  it('reports a sentinel removed (PAUSE lifted) at once', async () => {
    const pause = path.join(ralphRunDir(folder, run.runId), 'PAUSE');
    fs.writeFileSync(pause, 'x\n');
    const { w } = counted();
    assert.equal(w.state.pause.length, 1);
    const lifted = new Promise<number>((resolve) => w.on('change', (c) => resolve(c.pause.length)));
    fs.rmSync(pause);
    assert.equal(await lifted, 0);
  });
});
