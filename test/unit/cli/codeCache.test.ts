import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { CODE_CACHE_RACY_MS, loadWithCodeCache, writeCodeCaches } from '../../../src/cli/codeCache';

/** The V8 code cache beside a bundle: used when it matches, ignored (and replaced) when not, never trusted blindly. */
describe('loadWithCodeCache', () => {
  let dir: string;
  let bundle: string;
  const later = () => Date.now() + 2 * CODE_CACHE_RACY_MS;
  const program = (answer: number) =>
    [
      "const path = require('node:path');",
      'let calls = 0;',
      `exports.answer = () => { calls++; return ${answer}; };`,
      'exports.where = () => [path.basename(__filename), path.basename(__dirname), module.exports === exports];',
      "exports.local = () => require('./local.js').name;",
      'exports.calls = () => calls;',
    ].join('\n');
  const cacheFile = () => `${bundle}.${process.version}-${process.arch}.v8cache`;
  type Loaded = { answer: () => number; where: () => unknown[]; local: () => string; calls: () => number };

  // V8 keeps each script it compiled in an in-memory cache and would answer a second load of the same source from
  // it, never looking at the data given: off for these tests, each load is then what a new process sees.
  before(() => setFlagsFromString('--no-compilation-cache'));
  after(() => setFlagsFromString('--compilation-cache'));

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-code-cache-'));
    bundle = path.join(dir, 'bundle.js');
    fs.writeFileSync(bundle, program(42));
    fs.writeFileSync(path.join(dir, 'local.js'), "exports.name = 'beside';");
  });
  afterEach(() => {
    writeCodeCaches(); // nothing left for the process's exit
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('loads a bundle as require does: its own __filename, __dirname, module and relative require', () => {
    const { exports } = loadWithCodeCache(bundle, later);
    const m = exports as Loaded;
    assert.equal(m.answer(), 42);
    assert.deepEqual(m.where(), ['bundle.js', path.basename(dir), true]);
    assert.equal(m.local(), 'beside');
  });

  it('makes the cache at exit, then uses it; each load is a fresh module', () => {
    assert.equal(loadWithCodeCache(bundle, later).cache, 'absent');
    assert.equal(fs.existsSync(cacheFile()), false);
    writeCodeCaches();
    assert.match(fs.readFileSync(cacheFile(), 'latin1').split('\n')[0]!, /^ralph-v8-cache-1 \d+ [\d.]+ [\d.]+ \d+$/);
    const second = loadWithCodeCache(bundle, later);
    assert.equal(second.cache, 'accepted');
    assert.equal((second.exports as Loaded).answer(), 42);
    assert.equal((second.exports as Loaded).calls(), 1);
  });

  it('data V8 rejects is ignored and replaced', () => {
    loadWithCodeCache(bundle, later);
    writeCodeCaches();
    const text = fs.readFileSync(cacheFile());
    const cut = text.indexOf(10) + 1;
    fs.writeFileSync(cacheFile(), Buffer.concat([text.subarray(0, cut), Buffer.alloc(text.length - cut, 7)]));
    const rejected = loadWithCodeCache(bundle, later);
    assert.equal(rejected.cache, 'rejected');
    assert.equal((rejected.exports as Loaded).answer(), 42);
    writeCodeCaches();
    assert.equal(loadWithCodeCache(bundle, later).cache, 'accepted');
  });

  it('a cache of another build of the bundle (same length) is not used', () => {
    loadWithCodeCache(bundle, later);
    writeCodeCaches();
    fs.writeFileSync(bundle, program(43)); // same length, new ctime
    const next = loadWithCodeCache(bundle, later);
    assert.equal(next.cache, 'absent');
    assert.equal((next.exports as Loaded).answer(), 43);
  });

  it('no cache is made of a bundle written within the racy tick', () => {
    const fresh = loadWithCodeCache(bundle);
    assert.equal(fresh.cache, 'racy');
    assert.equal((fresh.exports as Loaded).answer(), 42);
    writeCodeCaches();
    assert.equal(fs.existsSync(cacheFile()), false);
  });

  it('a folder it cannot write goes without, and the bundle still loads', function () {
    if (process.getuid?.() === 0) {
      // root writes anywhere: a cache path that is a folder cannot be replaced by a file either
      fs.mkdirSync(cacheFile());
    } else fs.chmodSync(dir, 0o555);
    const m = loadWithCodeCache(bundle, later);
    assert.equal((m.exports as Loaded).answer(), 42);
    writeCodeCaches();
    assert.equal(fs.statSync(cacheFile(), { throwIfNoEntry: false })?.isFile() ?? false, false);
    fs.chmodSync(dir, 0o755);
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')),
      [],
    );
  });
});
