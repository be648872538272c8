import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { statusDrift } from '../../../src/core/loop/parallel/quantumRuntime';
import { shouldRestore, TaskFileStash, taskFileProblem } from '../../../src/core/loop/taskFileStash';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

describe('a task file the agent left unreadable is restored (issue 11, breaker-s5 row 14; taskFileStash.ts)', () => {
  const cases: [string, { readableAtStart: boolean; changed: boolean; problemNow: string | null }, boolean][] = [
    [
      'readable at the start, changed, unreadable now: restored',
      { readableAtStart: true, changed: true, problemNow: 'duplicate key' },
      true,
    ],
    [
      'changed and still readable: the claims in it are judged as usual',
      { readableAtStart: true, changed: true, problemNow: null },
      false,
    ],
    [
      "already unreadable at the start: not this agent's doing, the readers report it",
      { readableAtStart: false, changed: true, problemNow: 'x' },
      false,
    ],
    ['unchanged: nothing to do', { readableAtStart: true, changed: false, problemNow: 'x' }, false],
  ];
  for (const [name, facts, want] of cases) it(name, () => assert.equal(shouldRestore(facts), want));

  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-stash-', { ralphDir: true });
  });
  afterEach(() => t.dispose());

  it('a repeated key, a JSON syntax error and a NUL byte in a checklist are problems; text not UTF-8 is not', () => {
    assert.match(taskFileProblem(t.write('quantum.json', '{"a": 1, "a": 2}'))!, /duplicate key "a"/);
    assert.match(taskFileProblem(t.write('x.json', '{"a": '))!, /^1:\d+: /);
    assert.match(taskFileProblem(t.write('RALPH_TASK.md', '- [ ] a\0\n'))!, /NUL byte/);
    const md = t.file('PROMPT.md');
    fs.writeFileSync(md, Buffer.from('- [ ] \xff\n', 'latin1'));
    assert.equal(taskFileProblem(md), null);
  });

  it("moves the agent's file aside and writes back its content at the capture", () => {
    const q = '{"stories": [{"id": "US-1", "status": "pending"}]}\n';
    t.write('quantum.json', q);
    const stash = new TaskFileStash(t.dir);
    stash.capture();
    const bad = '{"stories": [{"id": "US-1", "status": "pending", "status": "passed"}]}\n';
    t.write('quantum.json', bad);
    const restored = stash.restoreUnreadable(t.file('.ralph/runs/r/rejected/iter-001'));
    assert.equal(restored.length, 1);
    assert.equal(restored[0]!.file, 'quantum.json');
    assert.equal(restored[0]!.aside, '.ralph/runs/r/rejected/iter-001/quantum.json');
    assert.match(restored[0]!.problem, /duplicate key "status"/);
    assert.equal(t.read('quantum.json'), q);
    assert.equal(t.read('.ralph/runs/r/rejected/iter-001/quantum.json'), bad);
    assert.deepEqual(stash.restoreUnreadable(t.file('.ralph/runs/r/rejected/iter-002')), [], 'restored once');
  });
});

describe('parallel run: statuses in the main quantum.json the coordinator did not write (issue 11, breaker-s5 row 36)', () => {
  const cases: [
    string,
    [string, string][],
    { id: string; status: string }[],
    { id: string; expected: string; found: string }[],
  ][] = [
    [
      'nothing changed',
      [
        ['US-1', 'in_progress'],
        ['US-2', 'pending'],
      ],
      [
        { id: 'US-1', status: 'in_progress' },
        { id: 'US-2', status: 'pending' },
      ],
      [],
    ],
    [
      'a lane agent set another story passed',
      [
        ['US-1', 'in_progress'],
        ['US-2', 'pending'],
      ],
      [
        { id: 'US-1', status: 'in_progress' },
        { id: 'US-2', status: 'passed' },
      ],
      [{ id: 'US-2', expected: 'pending', found: 'passed' }],
    ],
    [
      'and its own story',
      [['US-1', 'in_progress']],
      [{ id: 'US-1', status: 'passed' }],
      [{ id: 'US-1', expected: 'in_progress', found: 'passed' }],
    ],
    [
      "a failed story set pending again (not done, but not the coordinator's write either)",
      [['US-1', 'failed']],
      [{ id: 'US-1', status: 'pending' }],
      [{ id: 'US-1', expected: 'failed', found: 'pending' }],
    ],
    [
      'a story added meanwhile is not judged here',
      [['US-1', 'pending']],
      [
        { id: 'US-1', status: 'pending' },
        { id: 'US-9', status: 'passed' },
      ],
      [],
    ],
  ];
  for (const [name, expected, found, want] of cases)
    it(name, () => assert.deepEqual(statusDrift(new Map(expected), found), want));
});
