import * as assert from 'node:assert/strict';
import {
  answerFilePath,
  findQuestion,
  questionAnswerSection,
  settleSetAside,
  type WaitingQuestion,
} from '../../../src/core/loop/question';

describe('questions for a human: recognising a question', () => {
  const table: [string, string[], boolean, ReturnType<typeof findQuestion>][] = [
    [
      'a <question> tag',
      ['I need a decision.\n<question>Postgres or SQLite?</question>'],
      true,
      { text: 'Postgres or SQLite?', how: 'tag' },
    ],
    [
      'the last of several tags',
      ['<question>A?</question>', 'more <question>\n B?\n</question>'],
      false,
      { text: 'B?', how: 'tag' },
    ],
    ['an empty tag is none', ['<question> </question>'], true, null],
    [
      'a plain question ending the last paragraph, with no writes',
      ['Looked around.', 'I read the code.\n\nShould the API return 404 or 410 for deleted users?'],
      false,
      { text: 'Should the API return 404 or 410 for deleted users?', how: 'plain' },
    ],
    ['a plain question after writing is not one', ['Shall I go on?'], true, null],
    ['a question mark earlier in the text is not one', ['Why? Because.\n\nDone.'], false, null],
    ['no text', [], false, null],
  ];
  for (const [name, texts, wrote, want] of table) it(name, () => assert.deepEqual(findQuestion(texts, wrote), want));

  it('hands the question and the answer to the next prompt verbatim', () => {
    const s = questionAnswerSection('Postgres\nor SQLite?', 'SQLite,\nfile in data/');
    assert.match(s, /You asked:\n\nPostgres\nor SQLite\?\n\nThe answer:\n\nSQLite,\nfile in data\/\n/);
  });

  it('keeps the answer in the run folder', () =>
    assert.equal(answerFilePath('/ws', 'r1', 'q3'), '/ws/.ralph/runs/r1/answers/q3.md'));
});

describe('questions set aside while other work goes on (settleSetAside)', () => {
  const q = (id: string, askedAtMs: number): WaitingQuestion => ({
    id,
    text: `${id}?`,
    item: { source: 'checklist', id: `T.md:${id}`, title: id },
    askedAtMs,
  });
  const a = q('q1', 0);
  const b = q('q2', 1000);
  const table: [
    string,
    WaitingQuestion[],
    Record<string, string>,
    number,
    number,
    { timedOut: string | null; answered: string | null; rest: string[] },
  ][] = [
    ['no answers: all still wait', [a, b], {}, 5000, 0, { timedOut: null, answered: null, rest: ['q1', 'q2'] }],
    [
      'an answer takes its question out',
      [a, b],
      { q2: 'yes' },
      5000,
      0,
      { timedOut: null, answered: 'q2:yes', rest: ['q1'] },
    ],
    [
      'several answers: the first asked',
      [a, b],
      { q2: 'y', q1: 'x' },
      5000,
      0,
      { timedOut: null, answered: 'q1:x', rest: ['q2'] },
    ],
    ['timeout 0 waits for ever', [a], {}, 1e12, 0, { timedOut: null, answered: null, rest: ['q1'] }],
    [
      'the first unanswered one past the timeout',
      [a, b],
      {},
      10_000,
      10_000,
      { timedOut: 'q1', answered: null, rest: ['q2'] },
    ],
    [
      'an answered one never times out',
      [a, b],
      { q1: 'x' },
      10_500,
      10_000,
      { timedOut: null, answered: 'q1:x', rest: ['q2'] },
    ],
  ];
  for (const [name, asked, answers, now, timeoutMs, want] of table) {
    it(name, () => {
      const s = settleSetAside(asked, answers, now, timeoutMs);
      assert.deepEqual(
        {
          timedOut: s.timedOut?.question.id ?? null,
          answered: s.answered ? `${s.answered.question.id}:${s.answered.answer}` : null,
          rest: s.rest.map((x) => x.id),
        },
        want,
      );
    });
  }
});
