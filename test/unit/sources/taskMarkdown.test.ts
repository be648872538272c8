import * as assert from 'node:assert/strict';
import {
  appendBlockedToSummary,
  clearEvidence,
  EMPTY_EVIDENCE,
  replaceSection,
  sectionBody,
} from '../../../src/core/sources/flowNext/taskMarkdown';

const lf =
  '# fn-1.1 T\n\n## Description\nWork.\n\n## Done summary\nTBD\n\n## Evidence\n- Commits: abc\n- Tests: npm test\n- PRs:\n';

describe('sources: flow-next task markdown edits', () => {
  const cases: { name: string; md: string; edit: (md: string) => string; expected: string }[] = [
    {
      name: 'a CRLF file whose last line ends in a plain LF keeps its last character',
      md: '# fn-1.1 T\r\n\r\n## Evidence\r\n- Commits: abc\r\n\r\n## Notes\r\nfinal notes line\n',
      edit: (md) => replaceSection(md, 'Evidence', EMPTY_EVIDENCE),
      expected:
        '# fn-1.1 T\r\n\r\n## Evidence\r\n- Commits:\r\n- Tests:\r\n- PRs:\r\n\r\n## Notes\r\nfinal notes line\n',
    },
    {
      name: 'an LF file with one pasted CRLF line keeps that line and edits the section in place',
      md: lf.replace('Work.\n', 'Work.\r\n'),
      edit: (md) => replaceSection(md, 'Evidence', EMPTY_EVIDENCE),
      expected: lf
        .replace('Work.\n', 'Work.\r\n')
        .replace('- Commits: abc\n- Tests: npm test\n', '- Commits:\n- Tests:\n'),
    },
    {
      name: 'blocking an LF file with one pasted CRLF line replaces its placeholder summary instead of appending a second one',
      md: lf.replace('Work.\n', 'Work.\r\n'),
      edit: (md) => appendBlockedToSummary(md, 'no access'),
      expected: lf.replace('Work.\n', 'Work.\r\n').replace('TBD\n', 'Blocked:\nno access\n'),
    },
    {
      name: 'an unchanged line of a replaced body keeps its own line ending',
      md: lf.replace('- PRs:\n', '- PRs:\r\n'),
      edit: (md) => replaceSection(md, 'Evidence', EMPTY_EVIDENCE),
      expected: lf.replace('- Commits: abc\n- Tests: npm test\n- PRs:\n', '- Commits:\n- Tests:\n- PRs:\r\n'),
    },
    {
      name: 'a missing final newline stays missing after the last section is replaced',
      md: lf.slice(0, -1),
      edit: (md) => replaceSection(md, 'Evidence', ['- Commits: x']),
      expected: '# fn-1.1 T\n\n## Description\nWork.\n\n## Done summary\nTBD\n\n## Evidence\n- Commits: x',
    },
    {
      name: 'a missing section is appended with the dominant line ending',
      md: '# fn-1.1 T\r\n\r\n## Description\r\nWork.\n',
      edit: (md) => replaceSection(md, 'Evidence', EMPTY_EVIDENCE),
      expected: '# fn-1.1 T\r\n\r\n## Description\r\nWork.\n\r\n## Evidence\r\n- Commits:\r\n- Tests:\r\n- PRs:\r\n',
    },
    {
      name: 'a body that is already the same returns the text unchanged',
      md: lf.replace('Work.\n', 'Work.\r\n'),
      edit: (md) => replaceSection(md, 'Evidence', ['- Commits: abc', '- Tests: npm test', '- PRs:']),
      expected: lf.replace('Work.\n', 'Work.\r\n'),
    },
  ];
  for (const c of cases) it(c.name, () => assert.equal(c.edit(c.md), c.expected));

  it('section bodies read from a mixed-ending file hold no carriage returns', () => {
    assert.deepEqual(sectionBody('## Evidence\r\n- Commits: a\n- PRs:\r\n', 'Evidence'), ['- Commits: a', '- PRs:']);
  });
});

/** flowctl 4.4.0's clear_task_evidence, byte for byte (its regex, replayed on the shapes flowctl writes). */
describe('clearEvidence', () => {
  const table: { name: string; md: string; out: string }[] = [
    {
      name: 'the last section, without a final newline',
      md: '# t\n\n## Evidence\n- Commits: a\n- Tests: b\n- PRs:',
      out: '# t\n\n## Evidence\n- Commits:\n- Tests:\n- PRs:\n',
    },
    {
      name: 'the last section, with a final newline',
      md: '## Evidence\n- Commits: a\n- Tests: b\n- PRs:\n',
      out: '## Evidence\n- Commits:\n- Tests:\n- PRs:\n',
    },
    {
      name: 'followed by another section (a blank line stays)',
      md: '## Evidence\n- Commits: a\n\n## Notes\nx\n',
      out: '## Evidence\n- Commits:\n- Tests:\n- PRs:\n\n## Notes\nx\n',
    },
    {
      name: 'CRLF text',
      md: '## Evidence\r\n- Commits: a\r\n\r\n## Notes\r\n',
      out: '## Evidence\r\n- Commits:\n- Tests:\n- PRs:\n\r\n## Notes\r\n',
    },
    { name: 'no Evidence heading: unchanged', md: '# t\n\n## Done summary\nok\n', out: '# t\n\n## Done summary\nok\n' },
  ];
  for (const c of table) it(c.name, () => assert.equal(clearEvidence(c.md), c.out));
});
