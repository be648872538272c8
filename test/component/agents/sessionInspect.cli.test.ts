import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { streamFixture } from '../../support/fixtures';
import { cliPath, runCliInProcess } from '../../support/cli';
import { makeTempDir } from '../../support/tempFolder';

/** `ralph session inspect` as users run it (dist/cli.js). */
describe('cli: ralph session inspect', () => {
  const rec = (name: string): string => streamFixture('claude', 'recorded', name);
  let ws: string;
  beforeEach(() => {
    ws = makeTempDir('ralph-inspect-');
  });
  afterEach(() => fs.rmSync(ws, { recursive: true, force: true }));

  it('--json on tool-use-bash-success gives Bash 1, context 2000, cost 0.0124, 2 turns', async () => {
    const r = await runCliInProcess(ws, ['session', 'inspect', '--json', rec('tool-use-bash-success.jsonl')]);
    assert.equal(r.code, 0, r.stderr);
    const s = r.json();
    assert.deepEqual(
      [s.agent, s.toolUses, s.contextLast, s.costUsd, s.turns],
      ['claude', { Bash: 1 }, 2000, 0.0124, 2],
    );
    for (const key of [
      'events',
      'tokens',
      'contextPeak',
      'contextWindow',
      'signals',
      'rateLimits',
      'errors',
      'nonJsonLines',
    ])
      assert.ok(key in s, key);
    assert.deepEqual(Object.keys(s.tokens as object).sort(), ['cacheCreation', 'cacheRead', 'input', 'output']);
  });

  for (const name of ['http-429-max-retries-1.jsonl', 'http-429-retry-series-killed.jsonl']) {
    it(`reports the rate limit of ${name}, exits 0 and prints no stack trace`, async () => {
      const r = await runCliInProcess(ws, ['session', 'inspect', '--json', rec(name)]);
      assert.equal(r.code, 0);
      assert.equal(r.stderr, '');
      const s = r.json() as { rateLimits: { status: unknown }[] };
      assert.ok(s.rateLimits.some((x) => x.status === 429));
      const human = await runCliInProcess(ws, ['session', 'inspect', rec(name)]);
      assert.equal(human.code, 0);
      assert.match(human.stdout, /limit +api_retry 429/);
      assert.doesNotMatch(human.stdout + human.stderr, /\n\s+at /);
    });
  }

  it('reads a stream from stdin with -', async () => {
    const r = spawnSync(process.execPath, [cliPath, '-C', ws, 'session', 'inspect', '--json', '-'], {
      input: fs.readFileSync(rec('tool-use-bash-success.jsonl')),
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { contextLast: number }).contextLast, 2000);
  });

  it('--agent forces the adapter', async () => {
    const r = await runCliInProcess(ws, [
      'session',
      'inspect',
      '--json',
      '--agent',
      'cursor-agent',
      streamFixture('cursor-agent', 'read-write.jsonl'),
    ]);
    assert.equal((r.json() as { agent: string }).agent, 'cursor-agent');
  });

  it('an unknown --agent is a usage error naming the known agents', async () => {
    const r = await runCliInProcess(ws, ['session', 'inspect', '--agent', 'gpt', rec('tool-use-bash-success.jsonl')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /known: claude, codex, gemini, opencode, qwen, copilot, cursor-agent\)/);
  });

  it('a missing file is reported as file: message, without a stack trace', async () => {
    const missing = path.join(ws, 'nope.jsonl');
    const r = await runCliInProcess(ws, ['session', 'inspect', missing]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `ralph: ${missing}: cannot read: no such file\n`);
  });

  it('a stream of an unknown kind is summarised as unknown, not an error', async () => {
    const r = await runCliInProcess(ws, [
      'session',
      'inspect',
      '--json',
      streamFixture('other', 'unknown-agent.jsonl'),
    ]);
    assert.equal(r.code, 0);
    assert.equal((r.json() as { agent: string }).agent, 'unknown');
  });

  it('uses the thresholds of .ralph/config.json', async () => {
    fs.mkdirSync(path.join(ws, '.ralph'));
    fs.writeFileSync(path.join(ws, '.ralph', 'config.json'), JSON.stringify({ rotateThresholdTokens: 1500 }));
    const s = (
      await runCliInProcess(ws, ['session', 'inspect', '--json', rec('tool-use-bash-success.jsonl')])
    ).json() as {
      thresholds: { warn: number; rotate: number };
      rotated: boolean;
    };
    assert.deepEqual([s.thresholds.rotate, s.thresholds.warn, s.rotated], [1500, 1312, true]);
  });
});
