import * as assert from 'node:assert/strict';
import {
  engineLockStep,
  heldHere,
  holderIsRunner,
  UNREADABLE_LOCK_GRACE_MS,
  type EngineLockStep,
  type LockHolderFacts,
} from '../../../src/core/gates/gateLock';

/** The engine's rule for a gate lock it did not take (breaker-s6 rows 31/32): never join, wait only for a real runner. */
describe('engineLockStep: the engine never joins a gate lock (breaker-s6 31/32)', () => {
  const base: LockHolderFacts = { readable: true, alive: true, runner: true, waitedMs: 0, budgetMs: 60_000 };
  const rows: [string, Partial<LockHolderFacts>, EngineLockStep][] = [
    [
      'unreadable, just made (being written)',
      { readable: false, alive: false, runner: undefined, waitedMs: 0 },
      'wait',
    ],
    [
      'unreadable past the grace',
      { readable: false, alive: false, runner: undefined, waitedMs: UNREADABLE_LOCK_GRACE_MS },
      'steal',
    ],
    ['holder dead', { alive: false, runner: false }, 'steal'],
    ['holder alive, not a runner (pid 1 in a forged lock)', { runner: false }, 'steal'],
    ['holder alive, not a runner, long waited', { runner: false, waitedMs: 90_000 }, 'steal'],
    ['a live gate runner, within the budget', {}, 'wait'],
    ['a live gate runner, budget spent', { waitedMs: 60_000 }, 'runUnlocked'],
    ['alive, command line unknown (no /proc), within the budget', { runner: undefined }, 'wait'],
    ['alive, command line unknown, budget spent', { runner: undefined, waitedMs: 61_000 }, 'runUnlocked'],
  ];
  for (const [name, facts, step] of rows)
    it(`${name} → ${step}`, () => assert.equal(engineLockStep({ ...base, ...facts }), step));
});

describe('holderIsRunner: who may hold a gate lock the engine waits for', () => {
  it('pid 1 is not the runner of a lock', () =>
    assert.equal(holderIsRunner({ pid: 1, runId: 'forged-basic-1' }), false));
  it('this process is the runner only of the runIds it holds in memory', () => {
    assert.equal(holderIsRunner({ pid: process.pid, runId: 'x-1' }), false);
    heldHere.add('x-1');
    try {
      assert.equal(holderIsRunner({ pid: process.pid, runId: 'x-1' }), true);
    } finally {
      heldHere.delete('x-1');
    }
  });
});
