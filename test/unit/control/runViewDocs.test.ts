import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runViewOf, withFollowEnd } from '../../../src/core/control/runView';
import type { EngineEvent, RunLogEntry } from '../../../src/core/model/runEvent';
import { repoRoot } from '../../support/repoRoot';

/** Every key a RunView has is named in the `runs[].view` table of docs/cli.md, so the reference stays complete. */
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const ITEM = { source: 'flow-next' as const, id: 'fn-1.2', title: 'Add login' };
const TOKENS = { input: 1, output: 2, cacheRead: 3, cacheCreation: 4 };

function entries(events: EngineEvent[]): RunLogEntry[] {
  return events.map(
    (e, i) => ({ ...e, seq: i + 1, at: new Date(T0 + i * 1000).toISOString(), lane: 0 }) as RunLogEntry,
  );
}

/** Views that between them fill every field: mid-run (agent, gauge, open question, gate) and ended. */
function views() {
  const mid: EngineEvent[] = [
    {
      type: 'runStarted',
      runId: 'r1',
      folder: '/ws',
      source: 'flow-next',
      agent: 'claude',
      maxIterations: 25,
      gates: { basic: 'npm test' },
      maxCostUsd: 5,
      pid: 4242,
    },
    { type: 'progress', done: 1, total: 3, text: '1/3 done' },
    {
      type: 'iterationStarted',
      iteration: 1,
      item: ITEM,
      attempt: 1,
      attemptKind: 'first',
      purpose: 'work',
      maxAttempts: 5,
    },
    {
      type: 'iterationEnded',
      iteration: 1,
      ending: 'question',
      detail: 'd',
      totals: { tokens: TOKENS, costUsd: 0.5 },
      exitCode: 0,
    },
    {
      type: 'question',
      id: 'q1',
      iteration: 1,
      item: ITEM,
      text: 'Postgres or SQLite?',
      answerFile: '/ws/.ralph/runs/r1/answers/q1.md',
    },
    {
      type: 'gateResult',
      tier: 'basic',
      command: 'npm test',
      exitCode: 1,
      durationMs: 1200,
      passed: false,
      logPath: '.ralph/gates/basic.log',
      failingLines: ['FAIL a'],
    },
    { type: 'warning', message: 'w' },
    {
      type: 'iterationStarted',
      iteration: 2,
      item: ITEM,
      attempt: 2,
      attemptKind: 'fix',
      purpose: 'work',
      maxAttempts: 5,
    },
    { type: 'agentStarted', iteration: 2, pid: 99, command: 'claude' },
    {
      type: 'tokens',
      iteration: 2,
      contextTokens: 50_000,
      contextWindow: 200_000,
      warnAt: 140_000,
      rotateAt: 160_000,
      totals: TOKENS,
      costUsd: 0.01,
    },
  ];
  const ended: EngineEvent = {
    type: 'runEnded',
    state: 'capReached',
    reason: 'max iterations (2) reached',
    completionReason: 'MAX_ITERATIONS',
    exitCode: 2,
    iterations: 2,
    costUsd: 0.51,
    done: 1,
    total: 3,
  };
  return [
    runViewOf('r1', entries(mid)),
    runViewOf('r1', entries([...mid, ended])),
    withFollowEnd(runViewOf('r1', entries(mid)), {
      kind: 'crashed',
      reason: 'engine pid 4242 is gone',
      at: null,
      exitCode: 1,
    }),
  ];
}

/** Dotted paths of every key under `v` (array elements under `[]`; the per-tier map `gateCommands` by itself). */
function keysOf(v: unknown, at = ''): string[] {
  if (Array.isArray(v)) return v.flatMap((x) => keysOf(x, `${at}[]`));
  if (v === null || typeof v !== 'object') return [];
  return Object.entries(v).flatMap(([k, x]) => [
    `${at}${at ? '.' : ''}${k}`,
    ...(k === 'gateCommands' ? [] : keysOf(x, `${at}${at ? '.' : ''}${k}`)),
  ]);
}

describe('docs/cli.md documents every runs[].view key', () => {
  it('names each key of a RunView, nested ones included, in backticks in the runs[].view table', () => {
    const doc = fs.readFileSync(path.join(repoRoot, 'docs', 'cli.md'), 'utf8');
    const head = doc.indexOf('`ralph status --json` carries the same view of each run under `runs[].view`');
    assert.ok(head >= 0, 'the runs[].view table is in docs/cli.md');
    const start = doc.indexOf('\n\n', head) + 2;
    const paragraph = doc.slice(start, doc.indexOf('\n\n', start));
    const named = new Set([...paragraph.matchAll(/`([^`]+)`/g)].flatMap((m) => m[1]!.match(/[A-Za-z]+/g) ?? []));
    const keys = [...new Set(views().flatMap((v) => keysOf(v)))];
    assert.ok(keys.length > 60, `the sample views fill the nested fields (${keys.length} keys)`);
    const missing = keys.filter((k) => !named.has(k.split('.').at(-1)!.replace(/\[\]$/, '')));
    assert.deepEqual(missing, []);
  });
});
