import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EngineEvent } from '../../../src/core/loop/events';
import { RunRecorder } from '../../../src/core/loop/recorder';
import {
  AGENT_KEY_VARIABLES,
  REDACTED,
  environmentSecrets,
  redactArg,
  redactEvent,
  redactText,
} from '../../../src/core/trust/redact';
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

describe("redacting every agent's keys from run records", () => {
  // Per agent: a key variable of its own and the value the user exported.
  const table: [string, string, string][] = [
    ['claude', 'ANTHROPIC_API_KEY', 'sk-ant-api03-claudekey'],
    ['codex', 'OPENAI_API_KEY', 'sk-proj-codexkey'],
    ['gemini', 'GEMINI_API_KEY', 'AIzaSyGeminiKey'],
    ['opencode', 'OPENROUTER_API_KEY', 'sk-or-v1-opencode'],
    ['qwen', 'DASHSCOPE_API_KEY', 'sk-dashscope-qwen'],
    ['copilot', 'COPILOT_PROVIDER_API_KEY', 'byok-copilot-key'],
    ['copilot', 'GH_TOKEN', 'ghp_copilotToken'],
    ['cursor-agent', 'CURSOR_API_KEY', 'key_cursor_agent'],
    ['a custom provider (codex env_key)', 'SCRIPTED_API_KEY', 'custom-provider-key'],
  ];
  for (const [agent, name, value] of table) {
    it(`${agent}: ${name} is never written`, () => {
      const secrets = environmentSecrets({ PATH: '/usr/bin', HOME: '/home/u', [name]: value });
      assert.deepEqual(secrets, [value]);
      assert.equal(AGENT_KEY_VARIABLES[agent]?.includes(name) ?? /_KEY$|TOKEN$/.test(name), true);
      const e: EngineEvent = { type: 'warning', message: `the provider said: invalid key ${value} (401)` };
      assert.deepEqual(redactEvent(e, [], secrets), {
        type: 'warning',
        message: `the provider said: invalid key ${REDACTED} (401)`,
      });
    });
  }

  it('a key inside OPENCODE_CONFIG_CONTENT, not the whole config; short and unrelated values are left', () => {
    const config = JSON.stringify({
      provider: { x: { options: { baseURL: 'http://h/v1', apiKey: 'sk-inline-key' } } },
    });
    const secrets = environmentSecrets({
      OPENCODE_CONFIG_CONTENT: config,
      MY_TOKEN: 'abc',
      EDITOR: 'vim-with-a-long-name',
      TOKENIZERS_PARALLELISM: 'false-or-true',
    });
    assert.deepEqual(secrets, ['sk-inline-key']);
  });

  it("keeps the keys out of activity.log and events.jsonl through the run's recorder", async () => {
    const t = makeTempFolder('ralph-redact-env-');
    try {
      const secret = 'sk-proj-ENVIRONMENTSECRET';
      const rec = new RunRecorder(t.dir, 'r1', { secrets: environmentSecrets({ OPENAI_API_KEY: secret }) });
      rec.record({ type: 'warning', message: `codex: 401 Unauthorized for key ${secret}` });
      await rec.flush();
      const written = [
        fs.readFileSync(path.join(t.dir, '.ralph', 'activity.log'), 'utf8'),
        fs.readFileSync(path.join(t.dir, '.ralph', 'runs', 'r1', 'events.jsonl'), 'utf8'),
      ];
      for (const w of written) {
        assert.ok(!w.includes(secret), w);
        assert.ok(w.includes(REDACTED), w);
      }
    } finally {
      t.dispose();
    }
  });
});
