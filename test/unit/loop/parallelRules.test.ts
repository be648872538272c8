import * as assert from 'node:assert/strict';
import { cleanCommitOf } from '../../../src/core/git/gitState';
import {
  greenTreeStandsForLeftovers,
  decideCoordinator,
  decideLaneEnd,
  decideMerge,
  decideBatchGate,
  decideMergeBatch,
  featureGateRepeats,
  type CoordinatorObservation,
  type LaneEndObservation,
  type LaneGreen,
} from '../../../src/core/loop/parallel/rules';
import { finalGateRepeats, type GreenGate } from '../../../src/core/loop/lane/decide';
import { filesOf, pickRound } from '../../../src/core/loop/parallel/rounds';
import { hasLaneEvidence, planRecovery, type BranchFacts } from '../../../src/core/loop/parallel/recovery';
import { treeStatePaths } from '../../../src/core/git/gitState';
import { quantumStorySchema, type QuantumStory } from '../../../src/core/model/quantum';

const story = (
  id: string,
  o: Partial<{ status: string; priority: number; deps: string[]; files: string[]; attempts: number }> = {},
): QuantumStory =>
  quantumStorySchema.parse({
    id,
    title: id,
    status: o.status ?? 'pending',
    priority: o.priority,
    dependsOn: o.deps ?? [],
    ...(o.files ? { filePaths: o.files } : {}),
    ...(o.attempts !== undefined ? { retries: { attempts: o.attempts, maxAttempts: 3, failureLog: [] } } : {}),
  });

describe('parallel rounds (issue 19, rounds.ts pickRound)', () => {
  const cases: [string, QuantumStory[], string[], number, string[]][] = [
    [
      'independent stories by priority, up to the free lanes',
      [story('c', { priority: 3 }), story('a', { priority: 1 }), story('b', { priority: 2 })],
      [],
      2,
      ['a', 'b'],
    ],
    [
      'a story sharing a file with a higher-priority one of the round waits',
      [
        story('a', { priority: 1, files: ['src/x.ts'] }),
        story('b', { priority: 2, files: ['./src/x.ts'] }),
        story('c', { priority: 3, files: ['src/y.ts'] }),
      ],
      [],
      4,
      ['a', 'c'],
    ],
    [
      'a story sharing a file with a running story waits',
      [story('a', { status: 'in_progress', files: ['f'] }), story('b', { files: ['f'] }), story('c')],
      ['a'],
      3,
      ['c'],
    ],
    [
      'dependents wait until their dependency passed (merged)',
      [story('a', { status: 'in_progress' }), story('b', { deps: ['a'] })],
      ['a'],
      3,
      [],
    ],
    [
      'a passed dependency frees its dependent',
      [story('a', { status: 'passed' }), story('b', { deps: ['a'] })],
      [],
      3,
      ['b'],
    ],
    [
      'a failed story with attempts left is eligible again',
      [story('a', { status: 'failed', attempts: 1 })],
      [],
      1,
      ['a'],
    ],
    ['a failed story out of attempts is not', [story('a', { status: 'failed', attempts: 3 })], [], 1, []],
    ['no free lane, no story', [story('a')], [], 0, []],
    ['a missing priority sorts last', [story('z'), story('a', { priority: 5 })], [], 1, ['a']],
  ];
  for (const [name, stories, running, free, want] of cases) {
    it(name, () => assert.deepEqual(pickRound(stories, running, free), want));
  }

  it("reads a story's files from its own filePaths and its tasks'", () => {
    const s = quantumStorySchema.parse({
      id: 'a',
      filePaths: ['./a/', 'b'],
      tasks: [{ id: 't', filePaths: ['c', 'b'] }],
    });
    assert.deepEqual(filesOf(s), ['a', 'b', 'c']);
  });
});

describe('parallel crash recovery decisions (issue 19, recovery.ts planRecovery)', () => {
  const facts = (o: Record<string, BranchFacts>) => new Map(Object.entries(o));
  const cases: [string, QuantumStory[], Record<string, BranchFacts>, { id: string; to: string }[]][] = [
    [
      'an in-progress story whose branch is merged passed',
      [story('a', { status: 'in_progress' })],
      { a: { exists: true, merged: true } },
      [{ id: 'a', to: 'passed' }],
    ],
    [
      'an in-progress story whose branch is not merged goes back to pending (branch kept)',
      [story('a', { status: 'in_progress' })],
      { a: { exists: true, merged: false } },
      [{ id: 'a', to: 'pending' }],
    ],
    [
      'an in-progress story of a lane without a branch goes back to pending',
      [quantumStorySchema.parse({ id: 'a', status: 'in_progress', worktree: '.ql-wt/a' })],
      {},
      [{ id: 'a', to: 'pending' }],
    ],
    [
      'an in-progress story of a sequential run (no branch, no worktree) is left to the usual crash rule',
      [story('a', { status: 'in_progress' })],
      {},
      [],
    ],
    [
      'other statuses are left alone',
      [story('a', { status: 'passed' }), story('b', { status: 'failed' }), story('c')],
      { a: { exists: true, merged: true }, b: { exists: true, merged: false } },
      [],
    ],
  ];
  for (const [name, stories, f, want] of cases) {
    it(name, () =>
      assert.deepEqual(
        planRecovery(stories, facts(f)).map(({ id, to }) => ({ id, to })),
        want,
      ),
    );
  }
});

describe('parallel recovery runs only where a lane was (issue 19, recovery.ts hasLaneEvidence)', () => {
  const cases: [string, Parameters<typeof hasLaneEvidence>[0], boolean, boolean][] = [
    [
      'a sequential repository: nothing to recover',
      { stories: [{ status: 'in_progress' }, { status: 'passed' }] },
      false,
      false,
    ],
    ['a leftover .ql-wt/ folder', { stories: [] }, true, true],
    ['recorded activeWorktrees', { stories: [], execution: { activeWorktrees: ['.ql-wt/US-1'] } }, false, true],
    [
      'an in-progress story with its worktree',
      { stories: [{ status: 'in_progress', worktree: '.ql-wt/US-1' }] },
      false,
      true,
    ],
    [
      'a pending story that kept its worktree field is not in progress',
      { stories: [{ status: 'pending', worktree: '.ql-wt/US-1' }] },
      false,
      false,
    ],
    ['empty activeWorktrees', { stories: [], execution: { activeWorktrees: [] } }, false, false],
  ];
  for (const [name, doc, dir, want] of cases) it(name, () => assert.equal(hasLaneEvidence(doc, dir), want));
});

describe('lane rules (issue 19, decide.ts decideCoordinator / decideLaneEnd / decideMerge)', () => {
  const rules = { maxIterations: 10, maxCostUsd: 1, maxWallMs: 0 };
  const obs = (o: Partial<CoordinatorObservation> = {}): CoordinatorObservation => ({
    cancelled: false,
    stop: null,
    pause: false,
    costUsd: 0,
    iterations: 0,
    elapsedMs: 0,
    running: 0,
    ready: 0,
    allPassed: false,
    stories: 3,
    ...o,
  });
  const coordinatorCases: [string, Partial<CoordinatorObservation>, string, string?][] = [
    ['ready stories start lanes', { ready: 2 }, 'dispatch'],
    ['running lanes are waited for', { running: 2 }, 'wait'],
    ['PAUSE starts no lane', { pause: true, ready: 2 }, 'wait'],
    ['STOP lets running lanes finish, then stops', { stop: 'STOP', running: 2 }, 'drain', 'stopped'],
    ['STOP with no lane ends now', { stop: 'STOP' }, 'end', 'stopped'],
    ['cancel ends every lane', { cancelled: true, running: 1 }, 'drain', 'cancelled'],
    ['the cost cap counts every lane', { costUsd: 1.2, running: 2, ready: 1 }, 'drain', 'capReached'],
    ['the iteration cap counts every lane', { iterations: 10, ready: 1 }, 'end', 'capReached'],
    ['every story passed: completed', { allPassed: true }, 'end', 'completed'],
    ['nothing ready, nothing running, not all passed: blocked', {}, 'end', 'blocked'],
    ['no stories: completed, no work', { stories: 0 }, 'end', 'completed'],
    [
      'a lane that could not write ends the run failed once the others finish',
      { storageFailure: 'could not write (ENOSPC)', running: 2, ready: 1 },
      'drain',
      'failed',
    ],
    [
      'a storage failure with no lane running ends now',
      { storageFailure: 'could not write (ENOSPC)', ready: 1 },
      'end',
      'failed',
    ],
    ['cancel wins over a storage failure', { cancelled: true, storageFailure: 'x' }, 'end', 'cancelled'],
  ];
  for (const [name, o, kind, state] of coordinatorCases) {
    it(`coordinator: ${name}`, () => {
      const d = decideCoordinator(rules, obs(o));
      assert.equal(d.kind, kind);
      if (state) assert.equal((d as { end: { state: string } }).end.state, state);
    });
  }

  const end = (o: Partial<LaneEndObservation>): LaneEndObservation => ({
    end: 'completed',
    reason: 'r',
    storyVerified: false,
    blocked: null,
    timedOut: false,
    runEnding: false,
    ...o,
  });
  const laneCases: [string, Partial<LaneEndObservation>, string, string?][] = [
    ['a verified, completed lane is merged', { storyVerified: true }, 'merge'],
    ['a lane out of time fails its story', { end: 'cancelled', timedOut: true }, 'fail', 'story_timeout'],
    ['a lane stopped with the run gives its story back', { end: 'stopped', runEnding: true }, 'release'],
    ['a lane cancelled with the run gives its story back', { end: 'cancelled', runEnding: true }, 'release'],
    [
      "a blocked lane fails its story with the lane's reason",
      { end: 'blocked', blocked: 'gate red 3 times' },
      'fail',
      'blocked',
    ],
    ['a stalled lane fails its story', { end: 'stalled' }, 'fail', 'lane_failed'],
    [
      "a lane that could not write gives its story back (not the story's fault)",
      { end: 'failed', storageFailure: 'could not write (ENOSPC)' },
      'release',
    ],
    [
      'a verified lane whose end could not be written is still merged',
      { storyVerified: true, storageFailure: 'could not write (ENOSPC)' },
      'merge',
    ],
  ];
  for (const [name, o, kind, phase] of laneCases) {
    it(`lane end: ${name}`, () => {
      const d = decideLaneEnd(end(o));
      assert.equal(d.kind, kind);
      if (phase) assert.equal((d as { phase: string }).phase, phase);
    });
  }

  it('merge: a conflict fails the story naming the files, nothing to undo', () => {
    assert.deepEqual(decideMerge({ merge: { kind: 'conflict', files: ['a.txt'], detail: '' }, gate: null }), {
      kind: 'fail',
      phase: 'merge_conflict',
      reason: 'merge conflict in a.txt',
      files: ['a.txt'],
      undo: false,
    });
  });
  it('merge: a red feature-branch gate undoes the merge and fails the story', () => {
    const d = decideMerge({ merge: { kind: 'merged' }, gate: { passed: false, reason: 'exit 1' } });
    assert.equal(d.kind, 'fail');
    assert.equal((d as { phase: string }).phase, 'merge_regression');
    assert.equal((d as { undo: boolean }).undo, true);
  });
  it('merge: merged with a green gate (or none) passed', () => {
    assert.deepEqual(decideMerge({ merge: { kind: 'merged' }, gate: { passed: true, reason: '' } }), {
      kind: 'passed',
    });
    assert.deepEqual(decideMerge({ merge: { kind: 'merged' }, gate: null }), { kind: 'passed' });
  });
});

describe("a lane's final gate that would repeat a green gate (issue 19, decide.ts finalGateRepeats)", () => {
  const green = (o: Partial<GreenGate> = {}): GreenGate => ({
    command: 'npm test',
    treeBefore: 'T',
    treeAfter: 'T',
    ...o,
  });
  const cases: [
    string,
    { lane: boolean; finalCommand: string | null; lastGreen: GreenGate | null; treeNow: string | null },
    boolean,
  ][] = [
    [
      'a lane, the same command just passed on the same tree: not run again',
      { lane: true, finalCommand: 'npm test', lastGreen: green(), treeNow: 'T' },
      true,
    ],
    [
      'a sequential run always runs its final gate (as before)',
      { lane: false, finalCommand: 'npm test', lastGreen: green(), treeNow: 'T' },
      false,
    ],
    [
      'another final command runs',
      { lane: true, finalCommand: 'npm run test:all', lastGreen: green(), treeNow: 'T' },
      false,
    ],
    [
      'no green gate since the last iteration',
      { lane: true, finalCommand: 'npm test', lastGreen: null, treeNow: 'T' },
      false,
    ],
    ['no final gate configured', { lane: true, finalCommand: null, lastGreen: green(), treeNow: 'T' }, false],
    [
      'the tree changed since the gate ended',
      { lane: true, finalCommand: 'npm test', lastGreen: green(), treeNow: 'U' },
      false,
    ],
    [
      'the gate changed the tree while it ran (it verified the state it started on)',
      { lane: true, finalCommand: 'npm test', lastGreen: green({ treeAfter: 'U' }), treeNow: 'U' },
      false,
    ],
    ['an unknown tree state now', { lane: true, finalCommand: 'npm test', lastGreen: green(), treeNow: null }, false],
    [
      'an unknown tree state at the gate',
      { lane: true, finalCommand: 'npm test', lastGreen: green({ treeBefore: null, treeAfter: null }), treeNow: null },
      false,
    ],
  ];
  for (const [name, o, want] of cases) it(name, () => assert.equal(finalGateRepeats(o), want));
});

describe("the feature branch's gate that would repeat a lane's green gate (issue 19, decide.ts featureGateRepeats)", () => {
  const sha = 'a'.repeat(40);
  // git status --porcelain=v2 -z --branch --untracked-files=all, then "\n" and the listed paths' stats (git.ts treeState).
  const clean = `# branch.oid ${sha}\0# branch.head ql-wt/A\0\n`;
  const dirty = `# branch.oid ${sha}\0# branch.head ql-wt/A\0? new.txt\0\n12:1:1:7`;
  it('reads the commit of a clean tree, and nothing of a dirty, unknown or unborn one', () => {
    assert.equal(cleanCommitOf(clean), sha);
    assert.equal(cleanCommitOf(dirty), null);
    assert.equal(
      cleanCommitOf(
        `# branch.oid ${sha}\0# branch.head x\x001 .M N... 100644 100644 100644 ${sha} ${sha} a.txt\0\n1:1:1:1`,
      ),
      null,
    );
    assert.equal(cleanCommitOf(null), null);
    assert.equal(cleanCommitOf('# branch.oid (initial)\0# branch.head main\0\n'), null);
  });
  const green = (o: Partial<LaneGreen> = {}): LaneGreen => ({ command: 'npm test', state: clean, ...o });
  const cases: [
    string,
    { featureCommand: string | null; laneGreen: LaneGreen | null; mergedTree: string | null; greenTree: string | null },
    boolean,
  ][] = [
    [
      "the merge made exactly the tree the lane's same gate passed on: not run again",
      { featureCommand: 'npm test', laneGreen: green(), mergedTree: 'T', greenTree: 'T' },
      true,
    ],
    [
      'the feature branch moved (another lane merged first): the merged tree differs, it runs',
      { featureCommand: 'npm test', laneGreen: green(), mergedTree: 'M', greenTree: 'T' },
      false,
    ],
    [
      'another feature command runs',
      { featureCommand: 'npm run test:all', laneGreen: green(), mergedTree: 'T', greenTree: 'T' },
      false,
    ],
    [
      'no green gate noted in the lane (its final gate ran, or none passed)',
      { featureCommand: 'npm test', laneGreen: null, mergedTree: 'T', greenTree: 'T' },
      false,
    ],
    [
      "the lane's gate ran on a dirty tree",
      { featureCommand: 'npm test', laneGreen: green({ state: dirty }), mergedTree: 'T', greenTree: 'T' },
      false,
    ],
    [
      'no feature gate configured',
      { featureCommand: null, laneGreen: green(), mergedTree: 'T', greenTree: 'T' },
      false,
    ],
    ['unknown trees', { featureCommand: 'npm test', laneGreen: green(), mergedTree: null, greenTree: null }, false],
  ];
  for (const [name, o, want] of cases) it(name, () => assert.equal(featureGateRepeats(o), want));
});

describe("the feature branch's gate over a batch of merges (issue 19 bench, decide.ts decideMergeBatch)", () => {
  const cases: [string, Parameters<typeof decideMergeBatch>[0], ReturnType<typeof decideMergeBatch>['kind']][] = [
    ['no merge went in (all conflicts): the usual path', { merged: 0, gate: null }, 'single'],
    [
      'one merge went in: the usual path (its gate may be skipped as a repeat)',
      { merged: 1, gate: { passed: true } },
      'single',
    ],
    [
      'one merge, red: still the usual path (that story fails merge_regression)',
      { merged: 1, gate: { passed: false } },
      'single',
    ],
    ['two merges, green: both passed with one gate', { merged: 2, gate: { passed: true } }, 'allPassed'],
    ['four merges, no gates in the run: all passed', { merged: 4, gate: null }, 'allPassed'],
    [
      'two merges, red: undone, then one at a time to find the culprit',
      { merged: 2, gate: { passed: false } },
      'oneByOne',
    ],
    ['three merges, red: one at a time', { merged: 3, gate: { passed: false } }, 'oneByOne'],
  ];
  for (const [name, o, want] of cases) it(name, () => assert.equal(decideMergeBatch(o).kind, want));
});

describe("which of a batch's merges need the feature gate (mergeSlot.ts mergeBatch, rules decideBatchGate)", () => {
  const cases: [string, boolean[], { passAlone: number; gated: number }][] = [
    ['nothing merged: nothing to gate', [], { passAlone: 0, gated: 0 }],
    ['a lone merge whose gate would repeat: passes alone', [true], { passAlone: 1, gated: 0 }],
    ['a lone merge whose gate would not repeat: its own gate', [false], { passAlone: 0, gated: 1 }],
    ["two repeats in a row (each tree its own lane's): both pass alone", [true, true], { passAlone: 2, gated: 0 }],
    [
      'a repeat, then two merges that need it: one passes, one gate over two',
      [true, false, false],
      { passAlone: 1, gated: 2 },
    ],
    ['a repeat after a merge that needs the gate does not count', [false, true], { passAlone: 0, gated: 2 }],
    ['three that need it: one gate over three', [false, false, false], { passAlone: 0, gated: 3 }],
  ];
  for (const [name, repeats, want] of cases) it(name, () => assert.deepEqual(decideBatchGate({ repeats }), want));
});

describe("the paths of a tree state (issue 19, git.ts treeStatePaths: a lane's leftovers without another git status)", () => {
  const head = '# branch.oid 0123456789abcdef0123456789abcdef01234567\0# branch.head ql-wt/A\0';
  const cases: [string, string, string[]][] = [
    ['a clean tree: none', `${head}\n`, []],
    [
      'changed, staged and untracked files, the stat lines after them ignored',
      `${head}1 .M N... 100644 100644 100644 aaa aaa a.txt\0? dir with space/n.txt\0\n12:1:1:7\n3:1:1:8`,
      ['a.txt', 'dir with space/n.txt'],
    ],
    [
      'a rename: the new path, not the original',
      `${head}2 R. N... 100644 100644 100644 aaa aaa R100 new name.txt\0old.txt\0\n5:1:1:9`,
      ['new name.txt'],
    ],
    ['an unmerged path', `${head}u UU N... 100644 100644 100644 100644 aaa bbb ccc both.txt\0\n1:1:1:1`, ['both.txt']],
    ['a path with a newline in it', `${head}? line\nbreak.txt\0\n1:1:1:1`, ['line\nbreak.txt']],
    ['no status records at all', '', []],
  ];
  for (const [name, state, want] of cases) it(name, () => assert.deepEqual(treeStatePaths(state), want));
});

describe('leftovers from the green tree state (issue 19, decide.ts greenTreeStandsForLeftovers; breaker 11)', () => {
  const cases: [string, 'pid-namespace' | 'marker', boolean, boolean][] = [
    ['a PID namespace and a green state: no git status needed', 'pid-namespace', true, true],
    ['the marker sweep: a process that escaped it may still write, so git is asked', 'marker', true, false],
    ['no green state (the final gate ran, or an agent started after it)', 'pid-namespace', false, false],
    ['neither', 'marker', false, false],
  ];
  for (const [name, c, green, want] of cases) it(name, () => assert.equal(greenTreeStandsForLeftovers(c, green), want));
});
