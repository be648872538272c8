import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  checkpointDoneSource,
  isUseful,
  isValidId,
  parseCheckpoint,
  parseReportStatus,
  subIdOfEventsFile,
  subIdOfFile,
} from '../../../src/core/waves/checkpoint';
import { ijfwFixtures } from '../../support/waveFixture';

const shape = (name: string) => fs.readFileSync(path.join(ijfwFixtures, 'shapes', `${name}.checkpoint.json`), 'utf8');
const read = (text: string) => {
  const r = parseCheckpoint(text);
  assert.ok(r.ok, 'expected a readable checkpoint');
  return r.checkpoint;
};

describe('IJFW checkpoints (seed-systems.md §1.4)', () => {
  it('reads the v1 envelope: time from ts, the resume fields, no DONE', () => {
    const cp = read(shape('v1'));
    assert.equal(cp.shape, 'v1');
    assert.equal(cp.timeField, 'ts');
    assert.equal(cp.timeMs, Date.parse('2026-05-18T14:50:00Z'));
    assert.equal(cp.nextStep, 'add the error path for empty input');
    assert.equal(cp.lastAction, 'wrote the parser and 4 tests');
    assert.deepEqual(cp.filesCreated, ['src/parser.ts']);
    assert.deepEqual(cp.filesModified, ['src/index.ts']);
    assert.deepEqual(cp.commits, ['abc1234']);
    assert.equal(cp.toolUseCount, 7);
    assert.equal(checkpointDoneSource(cp), undefined);
    assert.ok(isUseful(cp));
  });

  it("reads the checkpoint's time from `timestamp` (the seed's name) as from `ts`", () => {
    const cp = read('{"sub_id":"W1-S1","timestamp":"2026-05-18T14:40:00Z","next_step":"x"}');
    assert.equal(cp.timeField, 'timestamp');
    assert.equal(cp.timeMs, Date.parse('2026-05-18T14:40:00Z'));
    assert.equal(cp.unknownTimeKey, undefined);
  });

  it('names a time-like key it does not read (the age then comes from the mtime), and only when no known key has a time', () => {
    const table: [string, string | undefined][] = [
      ['{"time":"2026-05-18T14:40:00Z"}', 'time'],
      ['{"created_at":"2026-05-18T14:40:00Z","next_step":"x"}', 'created_at'],
      ['{"savedAt":"2026-05-18T14:40:00Z"}', 'savedAt'],
      ['{"waveId":"W1","checkpoint":{"writtenAt":"2026-05-18T14:40:00Z"}}', 'checkpoint.writtenAt'],
      ['{"time":"not a time"}', undefined],
      ['{"next_step":"x"}', undefined],
      ['{"ts":"2026-05-18T14:40:00Z","created_at":"2026-05-18T14:00:00Z"}', undefined],
    ];
    for (const [text, key] of table) {
      const cp = read(text);
      assert.equal(cp.unknownTimeKey, key, text);
      if (key) assert.equal(cp.timeMs, undefined, text);
    }
  });

  it('unwraps the state-SDK shape to its checkpoint and takes updated_at first', () => {
    const cp = read(shape('sdk'));
    assert.equal(cp.shape, 'sdk');
    assert.equal(cp.timeField, 'updated_at');
    assert.equal(cp.timeMs, Date.parse('2026-05-18T14:51:00Z'));
    assert.equal(cp.nextStep, 'run the migration tests');
    assert.equal(cp.claimedSubId, 'W9-B');
  });

  it('falls back to checkpoint.ts when the state-SDK envelope has no updated_at', () => {
    const cp = read(
      JSON.stringify({ waveId: 'W', subagentId: 'S', checkpoint: { ts: '2026-05-18T14:00:00Z', status: 'DONE' } }),
    );
    assert.equal(cp.timeField, 'checkpoint.ts');
    assert.equal(checkpointDoneSource(cp), 'checkpoint-status');
  });

  it('reads the retroactive shape: recorded_at, status DONE, commits and files_changed', () => {
    const cp = read(shape('retro'));
    assert.equal(cp.shape, 'retro');
    assert.equal(cp.timeField, 'recorded_at');
    assert.equal(checkpointDoneSource(cp), 'checkpoint-status');
    assert.deepEqual(cp.commits, ['1111111', '2222222']);
    assert.deepEqual(cp.filesModified, ['docs/guide.md']);
    assert.equal(cp.branch, 'wave/W9/C-docs');
  });

  it('has no time when no known field parses (the reader then uses the mtime)', () => {
    const cp = read('{"ts":"yesterday","timestamp":"","next_step":"x"}');
    assert.equal(cp.timeMs, undefined);
    assert.equal(cp.unknownTimeKey, undefined);
  });

  it('treats DONE and DONE_WITH_CONCERNS as done, other statuses not', () => {
    for (const [status, done] of [
      ['DONE', true],
      ['DONE_WITH_CONCERNS', true],
      ['BLOCKED', false],
      ['NEEDS_CONTEXT', false],
      ['done', false],
    ] as const) {
      assert.equal(
        checkpointDoneSource(read(JSON.stringify({ ts: '2026-05-18T14:00:00Z', status }))) !== undefined,
        done,
        status,
      );
    }
  });

  it('finds DONE in a stored report by its last Status: line (§1.5-2)', () => {
    assert.deepEqual(parseReportStatus('x\nStatus: BLOCKED\nStatus: DONE\nCommit: abc\n'), {
      status: 'DONE',
      commit: 'abc',
    });
    assert.deepEqual(parseReportStatus('Status: DONE please'), { status: undefined, commit: undefined });
    const cp = read(JSON.stringify({ ts: '2026-05-18T14:00:00Z', report: 'Summary\nStatus: DONE\nCommit: 9f8e7d6' }));
    assert.equal(checkpointDoneSource(cp), 'report');
    assert.equal(cp.reportCommit, '9f8e7d6');
  });

  it('calls a checkpoint without next_step and last_action not useful (§1.10-3)', () => {
    assert.equal(isUseful(read('{"schema_version":1,"ts":"2026-05-18T14:00:00Z","tool_use_count":3}')), false);
    assert.equal(isUseful(read('{"ts":"2026-05-18T14:00:00Z","last_action":"a"}')), true);
  });

  it('reports text that is not a JSON object as unreadable', () => {
    for (const text of ['{"ts":', '[]', 'null', '42', ''])
      assert.equal(parseCheckpoint(text).ok, false, JSON.stringify(text));
  });

  it('takes the subagent id from the file name only, and only a valid one', () => {
    assert.equal(subIdOfFile('subagent-W12-A0-S01.checkpoint.json'), 'W12-A0-S01');
    for (const bad of [
      'subagent-..bad.checkpoint.json',
      'subagent-a/b.checkpoint.json',
      `subagent-${'x'.repeat(65)}.checkpoint.json`,
      'subagent-.checkpoint.json',
      'sub-W1.checkpoint.json',
    ]) {
      assert.equal(subIdOfFile(bad), undefined, bad);
    }
    assert.equal(subIdOfEventsFile('events-W1-S11.jsonl'), 'W1-S11');
    assert.equal(subIdOfEventsFile('events-../x.jsonl'), undefined);
  });

  it('keeps a hostile sub_id as a claim, never as the identity', () => {
    const cp = read('{"schema_version":1,"sub_id":"../../etc/passwd","ts":"2026-05-18T14:00:00Z"}');
    assert.equal(cp.claimedSubId, '../../etc/passwd');
    assert.equal(isValidId(cp.claimedSubId), false);
  });

  it('checks ids against ^[A-Za-z0-9_-]{1,64}$', () => {
    for (const [id, ok] of [
      ['W12-A0', true],
      ['a_b', true],
      ['x'.repeat(64), true],
      ['x'.repeat(65), false],
      ['', false],
      ['a.b', false],
      ['../a', false],
      ['a b', false],
      [42, false],
    ] as const) {
      assert.equal(isValidId(id), ok, String(id));
    }
  });
});
