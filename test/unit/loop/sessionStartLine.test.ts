import * as assert from 'node:assert/strict';
import { ActivityFormatter, shortSettings } from '../../../src/core/control/activityText';

/** New-user try (session 3): SESSION START printed the whole --settings JSON of the guard hook. */
describe('SESSION START line: --settings in short form', () => {
  const guard = JSON.stringify({
    hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: 'node "/x/ralph" guard {a}' }] }] },
  });
  const cases: [string, string, string][] = [
    [
      'the guard hook',
      `claude -p --settings ${guard} --append-system-prompt «redacted»`,
      'claude -p --settings «guard: on (PreToolUse hook)» --append-system-prompt «redacted»',
    ],
    ['other settings', 'claude -p --settings {"model":"x"} --verbose', 'claude -p --settings «settings» --verbose'],
    ['no settings', 'claude -p --verbose', 'claude -p --verbose'],
    ['not JSON: left as is', 'claude --settings {oops --verbose', 'claude --settings {oops --verbose'],
  ];
  for (const [name, command, want] of cases) it(name, () => assert.equal(shortSettings(command), want));

  it('the formatter prints the short form', () => {
    const lines = new ActivityFormatter().format({
      type: 'agentStarted',
      iteration: 1,
      pid: 7,
      command: `claude -p --settings ${guard}`,
    } as never);
    assert.deepEqual(lines, ['SESSION START: pid=7 claude -p --settings «guard: on (PreToolUse hook)»']);
  });
});
