import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { listDirSync, withListings } from '../../../src/core/store/readJsonFile';
import {
  expandInputs,
  readSnapshot,
  removeFolderCaches,
  snapshotEnvKey,
  snapshotFile,
  writeSnapshot,
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

  it('writes no entry while an input changed within the racy tick (its ctime is now)', () => {
    ws.write('a.json', '{"x":1}');
    fs.utimesSync(path.join(ws.dir, 'a.json'), HOUR_AGO, HOUR_AGO);
    const key: SnapshotKey = { folder: ws.dir, command: 'status', build: 'b1', env: snapshotEnvKey(env) };
    const inputs = [{ path: path.join(ws.dir, 'a.json') }, { path: path.join(ws.dir, 'absent.md') }];
    // a.json's ctime is now: within the racy tick, nothing is written.
    assert.equal(writeSnapshot(key, inputs, { outputs: { json: 'J' }, exitCode: 0 }, Date.now(), env), false);
    assert.equal(fs.existsSync(snapshotFile(ws.dir, 'status', env)), false);
    // Changed since the computation began (an hour ago, less the tick): not written either.
    fs.utimesSync(path.join(ws.dir, 'a.json'), HOUR_AGO, HOUR_AGO);
    assert.equal(
      writeSnapshot(key, [{ path: ws.dir }], { outputs: {}, exitCode: 0 }, Date.now() - 7_200_000, env),
      false,
    );
  });

  it('expands a named folder to its entries, to the depth named; a named path that does not exist stands for itself', () => {
    ws.write('t/a.json', '{}');
    ws.write('t/sub/b.md', '');
    ws.write('t/sub/deeper/c.md', '');
    const at = (p: string) => path.join(ws.dir, p);
    const sorted = (xs: string[]) => [...xs].sort();
    assert.deepEqual(expandInputs([{ path: at('t') }, { path: at('none'), depth: 2 }]), [at('t'), at('none')]);
    assert.deepEqual(
      sorted(expandInputs([{ path: at('t'), depth: 1 }])),
      sorted([at('t'), at('t/a.json'), at('t/sub')]),
    );
    assert.deepEqual(
      sorted(expandInputs([{ path: at('t'), depth: 2 }])),
      sorted([at('t'), at('t/a.json'), at('t/sub'), at('t/sub/b.md'), at('t/sub/deeper')]),
    );
  });

  it('ignores a corrupt entry, another key, an input that was created since', () => {
    const key: SnapshotKey = { folder: ws.dir, command: 'status', build: 'b1', env: '' };
    const file = snapshotFile(ws.dir, 'status', env);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const entry = {
      format: 'ralph-snapshot-cache',
      version: 4,
      ...key,
      inputsByFolder: [[ws.dir, 'absent.md', -1, 0, 0, 0]],
      spanMs: 0,
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
    assert.deepEqual(missed, { changed: path.join(ws.dir, 'absent.md') });
    for (const garbage of [
      '{',
      'null',
      '[]',
      JSON.stringify({ ...entry, inputsByFolder: [5] }),
      JSON.stringify({ ...entry, inputsByFolder: [[ws.dir, 'a.json', 1, 2]] }),
      JSON.stringify({ ...entry, inputsByFolder: [[ws.dir, 'a.json', 5]] }),
      JSON.stringify({ ...entry, version: 3, inputsByFolder: [[ws.dir, 'absent.md', -2, 0, 0, 0]] }),
      JSON.stringify({ ...entry, version: 1, inputs: [[path.join(ws.dir, 'absent.md')]] }),
      JSON.stringify({ ...entry, exitCode: 'x' }),
      JSON.stringify({ ...entry, spanMs: -1 }),
      JSON.stringify({ ...entry, spanMs: undefined }),
    ]) {
      fs.writeFileSync(file, garbage);
      assert.equal(readSnapshot(key, env).answer, undefined);
    }
  });

  // A folder's entries are stored by name and served by age: older than the computation's start less the tick. A
  // test cannot set a ctime back, so the entry's own mtime is moved two hours ahead instead (its write is the clock).
  const listedCases: [what: string, spanMs: number, change: (at: (p: string) => string) => void, served: boolean][] = [
    ['nothing changed', 0, () => {}, true],
    ['a listed file removed', 0, (at) => fs.rmSync(at('t/b.json')), false],
    [
      'a listed file with a newer mtime',
      0,
      (at) => fs.utimesSync(at('t/b.json'), HOUR_AGO, HOUR_AGO + 4 * 3600),
      false,
    ],
    // the computation began three hours before the write: the files (ctime now) changed after it began
    ['a file changed after the computation began', 3 * 3_600_000, () => {}, false],
  ];
  for (const [what, spanMs, change, served] of listedCases)
    it(`serves a folder's entries stored by name by their age: ${what}`, () => {
      ws.write('t/a.json', '{}');
      ws.write('t/b.json', '{}');
      const at = (p: string) => path.join(ws.dir, p);
      const key: SnapshotKey = { folder: ws.dir, command: 'status', build: 'b1', env: '' };
      const file = snapshotFile(ws.dir, 'status', env);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const entry = {
        format: 'ralph-snapshot-cache',
        version: 4,
        ...key,
        inputsByFolder: [[at('t'), 'a.json', 'b.json']],
        spanMs,
        outputs: { json: 'J' },
        exitCode: 0,
      };
      fs.writeFileSync(file, JSON.stringify(entry));
      fs.utimesSync(file, HOUR_AGO + 3 * 3600, HOUR_AGO + 3 * 3600);
      change(at);
      const found = readSnapshot(key, env);
      assert.equal(found.answer !== undefined, served, JSON.stringify(found));
      if (!served) assert.match(found.changed ?? '', /b\.json$|a\.json$/);
    });

  it('withListings: a folder is listed once inside (the answer cache names what the readers listed), afresh outside', () => {
    ws.write('t/a.json', '{}');
    const dir = path.join(ws.dir, 't');
    const names = () => listDirSync(dir).map((e) => e.name);
    withListings(() => {
      assert.deepEqual(names(), ['a.json']);
      ws.write('t/b.json', '{}');
      assert.deepEqual(names(), ['a.json']);
      assert.deepEqual(expandInputs([{ path: dir, depth: 1 }]), [dir, path.join(dir, 'a.json')]);
    });
    assert.deepEqual(names(), ['a.json', 'b.json']);
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
