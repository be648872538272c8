import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { VersionCache, type VersionAnswer } from '../../../src/core/agents/discover';
import { makeTempDir } from '../../support/tempFolder';

/** A cache and a `--version` stand-in that counts its runs and answers what `answers` holds next. */
function counted(answers: VersionAnswer[]) {
  const cache = new VersionCache();
  let runs = 0;
  const ask = (file: string) =>
    cache.version(file, async () => {
      runs++;
      return answers[Math.min(runs, answers.length) - 1]!;
    });
  return { ask, runs: () => runs };
}

describe("agent versions kept per binary while its file is unchanged (Start's agent pick)", () => {
  const bin = (files: Record<string, string>) => makeTempDir('ralph-versions-', files);

  it('runs --version once for an unchanged file and gives the kept answer after', async () => {
    const dir = bin({ gemini: '#!/bin/sh\necho 0.61.0\n' });
    const c = counted([{ version: '0.61.0' }]);
    for (let i = 0; i < 3; i++) assert.deepEqual(await c.ask(path.join(dir, 'gemini')), { version: '0.61.0' });
    assert.equal(c.runs(), 1);
  });

  it('runs it again once the file changes: its content and size, or only its mtime', async () => {
    const dir = bin({ codex: '#!/bin/sh\necho 0.171.0\n' });
    const file = path.join(dir, 'codex');
    const c = counted([{ version: '0.171.0' }, { version: '0.172.0' }, { version: '0.172.1' }]);
    assert.equal((await c.ask(file)).version, '0.171.0');
    fs.writeFileSync(file, '#!/bin/sh\necho 0.172.0 # updated\n');
    assert.equal((await c.ask(file)).version, '0.172.0');
    assert.equal((await c.ask(file)).version, '0.172.0', 'kept again for the new file');
    const { mtime } = fs.statSync(file);
    fs.utimesSync(file, mtime, new Date(mtime.getTime() + 60_000));
    assert.equal((await c.ask(file)).version, '0.172.1');
    assert.equal(c.runs(), 3);
  });

  it('runs it again when the link on PATH points at another file of the same size and mtime', async () => {
    const dir = bin({ 'v1/qwen.js': 'echo 1\n', 'v2/qwen.js': 'echo 2\n' });
    const when = new Date('2026-12-01T00:00:00Z');
    for (const v of ['v1', 'v2']) fs.utimesSync(path.join(dir, v, 'qwen.js'), when, when);
    const link = path.join(dir, 'qwen');
    fs.symlinkSync(path.join(dir, 'v1', 'qwen.js'), link);
    const c = counted([{ version: '1.0.0' }, { version: '2.0.0' }]);
    assert.equal((await c.ask(link)).version, '1.0.0');
    fs.unlinkSync(link);
    fs.symlinkSync(path.join(dir, 'v2', 'qwen.js'), link);
    assert.equal((await c.ask(link)).version, '2.0.0');
    assert.equal(c.runs(), 2);
  });

  it('keeps no failure: a --version that failed or timed out is asked again', async () => {
    const dir = bin({ opencode: '#!/bin/sh\n' });
    const c = counted([{ version: null, note: 'timed out on --version' }, { version: '1.18.33' }]);
    assert.deepEqual(await c.ask(path.join(dir, 'opencode')), { version: null, note: 'timed out on --version' });
    assert.equal((await c.ask(path.join(dir, 'opencode'))).version, '1.18.33');
    assert.equal((await c.ask(path.join(dir, 'opencode'))).version, '1.18.33');
    assert.equal(c.runs(), 2);
  });

  it('keeps each binary apart, and keeps nothing for a file it cannot read', async () => {
    const dir = bin({ a: 'x\n', b: 'y\n' });
    const c = counted([{ version: '1.0.0' }, { version: '2.0.0' }, { version: '3.0.0' }]);
    assert.equal((await c.ask(path.join(dir, 'a'))).version, '1.0.0');
    assert.equal((await c.ask(path.join(dir, 'b'))).version, '2.0.0');
    assert.equal((await c.ask(path.join(dir, 'a'))).version, '1.0.0');
    assert.equal((await c.ask(path.join(dir, 'gone'))).version, '3.0.0');
    assert.equal((await c.ask(path.join(dir, 'gone'))).version, '3.0.0');
    assert.equal(c.runs(), 4, 'the missing file asked each time');
  });
});
