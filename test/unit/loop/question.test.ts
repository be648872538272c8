import * as assert from 'node:assert/strict';
import { answerFilePath, findQuestion, questionAnswerSection } from '../../../src/core/loop/question';

describe('questions for a human: recognising a question', () => {
  const table: [string, string[], boolean, ReturnType<typeof findQuestion>][] = [
    ['a <question> tag', ['I need a decision.\n<question>Postgres or SQLite?</question>'], true, { text: 'Postgres or SQLite?', how: 'tag' }],
    ['the last of several tags', ['<question>A?</question>', 'more <question>\n B?\n</question>'], false, { text: 'B?', how: 'tag' }],
    ['an empty tag is none', ['<question> </question>'], true, null],
    ['a plain question ending the last paragraph, with no writes', ['Looked around.', 'I read the code.\n\nShould the API return 404 or 410 for deleted users?'], false, { text: 'Should the API return 404 or 410 for deleted users?', how: 'plain' }],
    ['a plain question after writing is not one', ['Shall I go on?'], true, null],
    ['a question mark earlier in the text is not one', ['Why? Because.\n\nDone.'], false, null],
    ['no text', [], false, null],
  ];
  for (const [name, texts, wrote, want] of table) it(name, () => assert.deepEqual(findQuestion(texts, wrote), want));

  it('hands the question and the answer to the next prompt verbatim', () => {
    const s = questionAnswerSection('Postgres\nor SQLite?', 'SQLite,\nfile in data/');
    assert.match(s, /You asked:\n\nPostgres\nor SQLite\?\n\nThe answer:\n\nSQLite,\nfile in data\/\n/);
  });

  it('keeps the answer in the run folder', () => assert.equal(answerFilePath('/ws', 'r1', 'q3'), '/ws/.ralph/runs/r1/answers/q3.md'));
});
