import * as assert from 'node:assert/strict';
import { findSignals } from '../../../src/core/stream/signals';

describe('completion and stuck signals in agent text', () => {
  const table: [string, string, string, string][] = [
    ['<promise>COMPLETE</promise>', 'complete', 'promise', 'COMPLETE'],
    ['<promise>ALL_TASKS_DONE</promise>', 'complete', 'promise', 'ALL_TASKS_DONE'],
    ['<promise>FAIL</promise>', 'fail', 'promise', 'FAIL'],
    ['<promise>RETRY</promise>', 'retry', 'promise', 'RETRY'],
    ['<ralph>COMPLETE</ralph>', 'complete', 'ralph', 'COMPLETE'],
    ['<ralph>GUTTER</ralph>', 'stuck', 'ralph', 'GUTTER'],
    ['<quantum>COMPLETE</quantum>', 'complete', 'quantum', 'COMPLETE'],
    ['<quantum>BLOCKED</quantum>', 'stuck', 'quantum', 'BLOCKED'],
    ['<quantum>STORY_PASSED</quantum>', 'storyPassed', 'quantum', 'STORY_PASSED'],
    ['<quantum>STORY_FAILED</quantum>', 'storyFailed', 'quantum', 'STORY_FAILED'],
    ['<verdict>SHIP</verdict>', 'verdict', 'verdict', 'SHIP'],
  ];
  for (const [text, kind, system, value] of table) {
    it(`reads ${text} as ${kind}`, () => {
      assert.deepEqual(
        findSignals(`All done.\n${text}\n`).map((s) => [s.kind, s.system, s.value]),
        [[kind, system, value]],
      );
    });
  }

  it('keeps the reason of a GUTTER signal', () => {
    assert.equal(findSignals('<ralph>GUTTER reason=tests-keep-failing</ralph>')[0]!.reason, 'tests-keep-failing');
    assert.equal(
      findSignals('<ralph>GUTTER: cannot reach the database</ralph>')[0]!.reason,
      'cannot reach the database',
    );
  });

  it('finds nothing in ordinary text', () => {
    assert.deepEqual(findSignals('I completed the task. <b>bold</b>'), []);
  });

  it('ignores unknown values inside known tags', () => {
    assert.deepEqual(findSignals('<promise>MAYBE</promise>'), []);
  });

  it('returns several signals in order of appearance', () => {
    assert.deepEqual(
      findSignals('<quantum>STORY_PASSED</quantum> then <promise>COMPLETE</promise>').map((s) => s.kind),
      ['storyPassed', 'complete'],
    );
  });
});
