import * as assert from 'node:assert/strict';
import { appendBlockedToSummary, EMPTY_EVIDENCE, replaceSection, sectionBody } from '../../../src/core/sources/flowNext/taskMarkdown';

const lf = '# fn-1.1 T\n\n## Description\nWork.\n\n## Done summary\nTBD\n\n## Evidence\n- Commits: abc\n- Tests: npm test\n- PRs:\n';

describe('sources: flow-next task markdown edits', () => {
  const cases: { name: string; md: string; edit: (md: string) => string; expected: string }[] = [
    {
      name: 'a CRLF file whose last line ends in a plain LF keeps its last character',
      md: '# fn-1.1 T\r\n\r\n## Evidence\r\n- Commits: abc\r\n\r\n## Notes\r\nfinal notes line\n',
      edit: (md) => replaceSection(md, 'Evidence', EMPTY_EVIDENCE),
      expected: '# fn-1.1 T\r\n\r\n## Evidence\r\n- Commits:\r\n- Tests:\r\n- PRs:\r\n\r\n## Notes\r\nfinal notes line\n',
    },
    {
      name: 'an LF file with one pasted CRLF line keeps that line and edits the section in place',
      md: lf.replace('Work.\n', 'Work.\r\n'),
      edit: (md) => replaceSection(md, 'Evidence', EMPTY_EVIDENCE),
      expected: lf.replace('Work.\n', 'Work.\r\n').replace('- Commits: abc\n- Tests: npm test\n', '- Commits:\n- Tests:\n'),
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
