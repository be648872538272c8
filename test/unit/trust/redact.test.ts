import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EngineEvent } from '../../../src/core/loop/events';
import { RunRecorder } from '../../../src/core/loop/recorder';
import { REDACTED, redactArg, redactEvent, redactText } from '../../../src/core/trust/redact';
import { makeTempFolder } from '../../support/tempFolder';

describe('redacting agentArgs from run records', () => {
  const table: [string, string][] = [
    ['--verbose', '--verbose'],
    ['-v', '-v'],
    ['--max_turns', '--max_turns'],
    ['sk-ant-api03-SECRET', REDACTED],
    ['--api-key=sk-SECRET', `--api-key=${REDACTED}`],
    ['Authorization: Bearer xyz', REDACTED],
    ['5', REDACTED],
    ['-', REDACTED],
    ['', ''],
  ];
  for (const [arg, shown] of table) {
    it(`shows ${JSON.stringify(arg)} as ${JSON.stringify(shown)}`, () => assert.equal(redactArg(arg), shown));
  }

  it('redacts the arguments where they stand in the agent command line, whatever their length', () => {
    const args = ['--max-turns', '5', '--api-key', 'sk-SECRET-1'];
    const cmd = `/usr/bin/claude -p --output-format stream-json --verbose ${args.join(' ')}`;
    assert.equal(
      redactText(cmd, args),
      `/usr/bin/claude -p --output-format stream-json --verbose --max-turns ${REDACTED} --api-key ${REDACTED}`,
    );
  });

  it('redacts values of six or more characters anywhere else, and leaves short ones', () => {
    assert.equal(
      redactText('agent failed: bad key sk-SECRET-1 (turn 5)', ['--api-key', 'sk-SECRET-1', '--max-turns', '5']),
      `agent failed: bad key ${REDACTED} (turn 5)`,
    );
  });

  it('returns the event itself when there are no agentArgs, and a redacted copy otherwise', () => {
    const e: EngineEvent = { type: 'agentStarted', iteration: 1, pid: 42, command: 'claude -p --token=abcdefgh' };
    assert.equal(redactEvent(e, []), e);
    const r = redactEvent(e, ['--token=abcdefgh']);
    assert.deepEqual(r, { type: 'agentStarted', iteration: 1, pid: 42, command: `claude -p --token=${REDACTED}` });
    assert.equal(e.command, 'claude -p --token=abcdefgh', 'the original is not changed');
  });

  it('keeps every agentArgs value out of activity.log, events.jsonl and the lines passed on', async () => {
    const t = makeTempFolder('ralph-redact-');
    try {
      const secret = 'sk-ant-api03-VERYSECRET';
      const lines: string[] = [];
      const rec = new RunRecorder(t.dir, 'r1', { onLine: (l) => lines.push(l), agentArgs: ['--api-key', secret] });
      rec.record({
        type: 'agentStarted',
        iteration: 1,
        pid: 7,
        command: `claude -p --output-format stream-json --api-key ${secret}`,
      });
      rec.record({ type: 'warning', message: `the agent printed ${secret}` });
      await rec.flush();
      const activity = fs.readFileSync(path.join(t.dir, '.ralph', 'activity.log'), 'utf8');
      const events = fs.readFileSync(path.join(t.dir, '.ralph', 'runs', 'r1', 'events.jsonl'), 'utf8');
      for (const text of [activity, events, lines.join('\n')]) {
        assert.doesNotMatch(text, /VERYSECRET/);
        assert.match(text, /--api-key «redacted»/);
      }
    } finally {
      t.dispose();
    }
  });
});
