import * as assert from 'node:assert/strict';
import type * as ChildProcess from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  byFolder,
  packSnapshotInputs,
  readSnapshot,
  recordFsReads,
  removeFolderCaches,
  snapshotEnvKey,
  snapshotFile,
  unpackSnapshotInputs,
  writeSnapshot,
  type SnapshotInput,
  type SnapshotKey,
} from '../../../src/core/store/snapshotCache';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { fnv1a } from '../../../src/core/store/fnv';
import { cacheDir } from '../../../src/core/store/cacheDir';

const HOUR_AGO = (Date.now() - 3_600_000) / 1000;

/** The whole-answer cache's pieces (core/store/snapshotCache.ts); the CLI's use is test/component/cli/snapshotCache.cli.test.ts. */
describe('snapshot cache', () => {
  let ws: TempFolder;
  let home: TempFolder;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    ws = makeTempFolder('ralph-snapunit-ws-');
    home = makeTempFolder('ralph-snapunit-home-');
    env = { XDG_CACHE_HOME: home.dir };
  });
  afterEach(() => {
    ws.dispose();
    home.dispose();
  });

  it('records the paths the synchronous readers ask about, present or not, except ignored folders, and puts fs back', () => {
    ws.write('a.json', '{}');
    fs.mkdirSync(path.join(ws.dir, 'd'));
    const original = fs.readFileSync;
    const rec = recordFsReads([path.join(ws.dir, 'ignored')]);
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const real = require('node:fs') as typeof fs;
      real.readFileSync(path.join(ws.dir, 'a.json'), 'utf8');
      real.existsSync(path.join(ws.dir, 'missing.md'));
      real.readdirSync(path.join(ws.dir, 'd'));
      real.statSync(path.join(ws.dir, 'ignored', 'x'), { throwIfNoEntry: false });
      assert.equal(rec.tainted, undefined);
      assert.deepEqual(
        [...rec.paths],
        ['a.json', 'missing.md', 'd'].map((p) => path.join(ws.dir, p)),
      );
    } finally {
      rec.stop();
    }
    assert.equal(fs.readFileSync, original);
  });

  it('an asynchronous read or a child process taints the recording', () => {
    const rec = recordFsReads();
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      (require('node:fs') as typeof fs).stat(ws.dir, () => undefined);
      assert.equal(rec.tainted, 'fs.stat');
    } finally {
      rec.stop();
    }
    const rec2 = recordFsReads();
    try {
      // The unit tier refuses child processes; the recorder notes the attempt before the call goes through.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      assert.throws(() => (require('node:child_process') as typeof ChildProcess).spawnSync('git'));
      assert.equal(rec2.tainted, 'child_process.spawnSync');
    } finally {
      rec2.stop();
    }
  });

  it('writes no entry while an input changed within the racy tick (its ctime is now)', () => {
    ws.write('a.json', '{"x":1}');
    fs.utimesSync(path.join(ws.dir, 'a.json'), HOUR_AGO, HOUR_AGO);
    const key: SnapshotKey = { folder: ws.dir, command: 'status', build: 'b1', env: snapshotEnvKey(env) };
    const inputs = [path.join(ws.dir, 'a.json'), path.join(ws.dir, 'absent.md')];
    // a.json's ctime is now: within the racy tick, nothing is written.
    assert.equal(writeSnapshot(key, inputs, { outputs: { json: 'J' }, exitCode: 0 }, { env }), false);
    assert.equal(fs.existsSync(snapshotFile(ws.dir, 'status', env)), false);
  });

  it('after a miss, lists the unchanged inputs with the identity just seen (the recomputation stats only the changed ones)', () => {
    const key: SnapshotKey = { folder: ws.dir, command: 'status', build: 'b1', env: '' };
    const file = snapshotFile(ws.dir, 'status', env);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const a = ws.write('a.json', '{}');
    const b = ws.write('b.json', '{}');
    fs.utimesSync(a, HOUR_AGO, HOUR_AGO);
    fs.utimesSync(b, HOUR_AGO, HOUR_AGO);
    const sig = (p: string) => {
      const st = fs.statSync(p);
      return [p, st.size, st.mtimeMs, st.ctimeMs, st.ino];
    };
    const inputs = [sig(a), sig(b), [path.join(ws.dir, 'gone.md')]] as SnapshotInput[];
    fs.writeFileSync(
      file,
      JSON.stringify({
        format: 'ralph-snapshot-cache',
        version: 2,
        ...key,
        inputsByFolder: packSnapshotInputs(inputs),
        outputs: { json: 'J' },
        exitCode: 0,
      }),
    );
    // The entry is written long after its inputs' ctime (now): back-date nothing, wait for nothing: write its mtime in the future.
    const future = (Date.now() + 10_000) / 1000;
    fs.utimesSync(file, future, future);
    assert.equal(readSnapshot(key, env).answer?.outputs.json, 'J');
    fs.writeFileSync(b, '{"x":1}');
    const found = readSnapshot(key, env);
    assert.equal(found.answer, undefined);
    assert.equal(found.changed, b);
    const stA = fs.statSync(a);
    assert.deepEqual(found.unchanged, new Map([[a, [stA.size, stA.mtimeMs, stA.ino]]]));
  });

  it('stores inputs by folder and gives back the same list, in order (absent ones too)', () => {
    const inputs: SnapshotInput[] = [
      ['/w/.flow/tasks/a.json', 10, 1.5, 2.25, 7],
      ['/w/.flow/tasks/b.json', 0, 3, 4, 8],
      ['/w/PROMPT.md'],
      ['/w/.flow/tasks/c.json', 1, 2, 3, 9],
      ['/top', 1, 1, 1, 1],
    ];
    const runs = packSnapshotInputs(inputs);
    assert.deepEqual(runs, [
      ['/w/.flow/tasks', 'a.json', 10, 1.5, 2.25, 7, 'b.json', 0, 3, 4, 8],
      ['/w', 'PROMPT.md', -1, 0, 0, 0],
      ['/w/.flow/tasks', 'c.json', 1, 2, 3, 9],
      ['', 'top', 1, 1, 1, 1],
    ]);
    assert.deepEqual(unpackSnapshotInputs(JSON.parse(JSON.stringify(runs))), inputs);
    for (const bad of [
      null,
      {},
      [5],
      [['/w', 'a', 1, 2, 3]],
      [['/w', 5, 1, 2, 3, 4]],
      [[5, 'a', 1, 2, 3, 4]],
      [['/w', 'a', 1, 2, 3, '4']],
    ]) {
      assert.equal(unpackSnapshotInputs(bad), undefined, JSON.stringify(bad));
    }
  });

  it('byFolder: groups inputs by folder, folders and paths in the order first seen', () => {
    const cases: [string[], string[]][] = [
      [[], []],
      [
        ['/w/t/a.json', '/w/s/a.state.json', '/w/t/b.json', '/w/s/b.state.json', '/w/t/c.json'],
        ['/w/t/a.json', '/w/t/b.json', '/w/t/c.json', '/w/s/a.state.json', '/w/s/b.state.json'],
      ],
      [
        ['/top', '/w/x', '/other', '/w/y'],
        ['/top', '/other', '/w/x', '/w/y'],
      ],
      [
        ['/w/b', '/w/a'],
        ['/w/b', '/w/a'],
      ],
    ];
    for (const [input, grouped] of cases) {
      assert.deepEqual(byFolder(new Set(input)), grouped, input.join(' '));
      assert.equal(
        packSnapshotInputs(byFolder(input).map((p) => [p] as SnapshotInput)).length,
        new Set(input.map((p) => path.dirname(p))).size,
      );
    }
  });

  it('ignores a corrupt entry, another key, an input that was created since', () => {
    const key: SnapshotKey = { folder: ws.dir, command: 'status', build: 'b1', env: '' };
    const file = snapshotFile(ws.dir, 'status', env);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const inputs: SnapshotInput[] = [[path.join(ws.dir, 'absent.md')]];
    const entry = {
      format: 'ralph-snapshot-cache',
      version: 2,
      ...key,
      inputsByFolder: packSnapshotInputs(inputs),
      outputs: { json: 'J' },
      exitCode: 0,
    };
    fs.writeFileSync(file, JSON.stringify(entry));
    fs.utimesSync(file, HOUR_AGO, HOUR_AGO);
    assert.deepEqual(readSnapshot(key, env), { answer: { outputs: { json: 'J' }, exitCode: 0 } });
    assert.deepEqual(readSnapshot({ ...key, build: 'b2' }, env), {});
    assert.deepEqual(readSnapshot({ ...key, env: 'FLOW_ACTOR=x' }, env), {});
    ws.write('absent.md', 'now here');
    const missed = readSnapshot(key, env);
    assert.deepEqual(
      { changed: missed.changed, unchanged: missed.unchanged },
      { changed: path.join(ws.dir, 'absent.md'), unchanged: new Map() },
    );
    for (const garbage of [
      '{',
      'null',
      '[]',
      JSON.stringify({ ...entry, inputsByFolder: [5] }),
      JSON.stringify({ ...entry, inputsByFolder: [[ws.dir, 'a.json', 1, 2]] }),
      JSON.stringify({ ...entry, version: 1, inputs: [[path.join(ws.dir, 'absent.md')]] }),
      JSON.stringify({ ...entry, exitCode: 'x' }),
    ]) {
      fs.writeFileSync(file, garbage);
      assert.equal(readSnapshot(key, env).answer, undefined);
    }
  });

  it("removeFolderCaches: removes the folder's answers and parse caches under every spelling (a forged entry for `-C link`); other folders' stay", () => {
    const link = path.join(home.dir, 'link');
    fs.symlinkSync(ws.dir, link);
    const other = path.join(home.dir, 'other');
    fs.mkdirSync(other);
    const dir = cacheDir(env);
    fs.mkdirSync(dir, { recursive: true });
    const head = (format: string, folder: string) => JSON.stringify({ format, version: 1, folder, entries: {} });
    const files: [name: string, text: string, removed: boolean][] = [
      [`${fnv1a(ws.dir)}-status.snapshot.json`, head('ralph-snapshot-cache', ws.dir), true],
      [`${fnv1a(ws.dir)}-quantum.json`, head('ralph-parse-cache', ws.dir), true],
      [`${fnv1a(ws.dir)}-status.basis.json`, head('ralph-status-basis', ws.dir), true], // an older build's side file
      // the spelling a bot used (`-C link`): the name hashes the link, the content names it
      [`${fnv1a(link)}-status.snapshot.json`, head('ralph-snapshot-cache', link), true],
      [`${fnv1a(link)}-flow.json`, head('ralph-parse-cache', link), true],
      // a file ralph never wrote in that order (a forgery for some spelling, or junk)
      [
        `${fnv1a(other)}-next-json.snapshot.json`,
        JSON.stringify({ version: 1, folder: link, format: 'ralph-snapshot-cache' }),
        true,
      ],
      [`${fnv1a(other)}-quantum.json`, 'not json', true],
      // another folder's real entries, and what is not a cache file of a folder
      [`${fnv1a(other)}-status.snapshot.json`, head('ralph-snapshot-cache', other), false],
      [`${fnv1a(other)}-flow.json`, head('ralph-parse-cache', other), false],
      ['compile-cache.bin', 'x', false],
      [`${fnv1a(ws.dir)}-status.snapshot.json.123.tmp`, 'x', false],
    ];
    for (const [name, text] of files) fs.writeFileSync(path.join(dir, name), text);
    assert.equal(removeFolderCaches(ws.dir, env), files.filter((f) => f[2]).length);
    for (const [name, , removed] of files) assert.equal(fs.existsSync(path.join(dir, name)), !removed, name);
    // the same through the link's spelling
    fs.writeFileSync(path.join(dir, files[0]![0]), files[0]![1]);
    assert.equal(removeFolderCaches(link, env), 1);
    assert.equal(
      removeFolderCaches(ws.dir, { XDG_CACHE_HOME: path.join(home.dir, 'none') }),
      0,
      'no cache folder: nothing to do',
    );
  });
});
