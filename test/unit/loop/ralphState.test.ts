import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { appendAttempt, readAttempts } from '../../../src/core/loop/attemptStore';
import { completionReasonOf } from '../../../src/core/loop/runFiles';
import { RALPH_FILES, ralphFile, ralphRunDir, ralphRunFile, RUN_FILES } from '../../../src/core/model/ralphPaths';
import { blockedFileSchema } from '../../../src/core/model/ralphState';
import { isCrashedRun } from '../../../src/core/model/runRecord';
import { FileProblemError } from '../../../src/core/store/parseError';
import { parseJsonWithSchema } from '../../../src/core/store/readJsonFile';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const ITEM = { source: 'quantum' as const, id: 'US-001', title: 'Parser' };

describe('.ralph/ paths: one module names them', () => {
  it('puts every named file directly under .ralph/ and every run file under .ralph/runs/<id>/', () => {
    for (const name of Object.keys(RALPH_FILES) as (keyof typeof RALPH_FILES)[])
      assert.equal(path.dirname(ralphFile('/ws', name)), path.join('/ws', '.ralph'), name);
    for (const name of Object.keys(RUN_FILES) as (keyof typeof RUN_FILES)[])
      assert.equal(path.dirname(ralphRunFile('/ws', 'r1', name)), ralphRunDir('/ws', 'r1'), name);
    assert.equal(ralphRunDir('/ws', 'r1'), path.join('/ws', '.ralph', 'runs', 'r1'));
  });
});

describe('.ralph/attempts.json and .ralph/blocked.json: schemas', () => {
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-state-', { ralphDir: true });
  });
  afterEach(() => ws.dispose());

  it("an attempt whose number is not a number is a problem naming the file, the line and the value's path", async () => {
    ws.write(
      '.ralph/attempts.json',
      '{\n  "quantum:US-001": [\n    { "number": "one", "approach": "a", "reason": "r", "at": "2026-01-01T00:00:00Z" }\n  ]\n}\n',
    );
    await assert.rejects(
      readAttempts(ws.dir, ITEM),
      (e: Error) =>
        e instanceof FileProblemError && e.problem.line === 3 && /quantum:US-001\.0\.number/.test(e.message),
    );
  });

  it('keeps the unknown keys of a recorded attempt when another is appended', async () => {
    ws.write(
      '.ralph/attempts.json',
      JSON.stringify({
        'quantum:US-001': [{ number: 1, approach: 'a', reason: 'r', at: '2026-01-01T00:00:00Z', gate: 'basic' }],
      }),
    );
    await appendAttempt(ws.dir, ITEM, { number: 2, approach: 'b', reason: 'r2', at: '2026-01-02T00:00:00Z' });
    const all = await readAttempts(ws.dir, ITEM);
    assert.deepEqual(
      all.map((a) => [a.number, (a as { gate?: string }).gate]),
      [
        [1, 'basic'],
        [2, undefined],
      ],
    );
  });

  it('a blocked.json whose reason is not text is refused with its position', () => {
    assert.throws(
      () => parseJsonWithSchema('.ralph/blocked.json', '{\n  "RALPH_TASK.md:Add tests #1": 3\n}\n', blockedFileSchema),
      /blocked\.json:2:\d+: RALPH_TASK\.md:Add tests #1/,
    );
  });
});

describe('the crash rule (model/runRecord.ts isCrashedRun)', () => {
  const dead = () => false;
  const alive = () => true;
  const table: {
    name: string;
    state: 'running' | 'completed' | 'starting';
    host: string;
    isAlive: (pid: number) => boolean;
    crashed: boolean;
  }[] = [
    { name: 'unfinished, this host, engine dead', state: 'running', host: 'here', isAlive: dead, crashed: true },
    { name: 'still starting, this host, engine dead', state: 'starting', host: 'here', isAlive: dead, crashed: true },
    { name: 'unfinished, engine alive', state: 'running', host: 'here', isAlive: alive, crashed: false },
    { name: 'finished runs never crash', state: 'completed', host: 'here', isAlive: dead, crashed: false },
    { name: 'another host is never judged', state: 'running', host: 'elsewhere', isAlive: dead, crashed: false },
  ];
  for (const c of table)
    it(c.name, () =>
      assert.equal(isCrashedRun({ state: c.state, host: c.host, pid: 123 }, ['here'], c.isAlive), c.crashed),
    );
});

describe('progress.txt: the completion marker is read by the one parser', () => {
  it('finds the marker, and ignores one quoted in a last_output tail', () => {
    assert.equal(completionReasonOf('# Ralph Progress Log\n---\n\ncompletion_reason=DONE\npromise=COMPLETE\n'), 'DONE');
    assert.equal(
      completionReasonOf('status=work\nlast_output:\ncompletion_reason=DONE\npromise=COMPLETE\n---\n'),
      undefined,
    );
  });
});
