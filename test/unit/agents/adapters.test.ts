import * as assert from 'node:assert/strict';
import { claudeAdapter } from '../../../src/core/agents/claude';
import { cursorAgentAdapter } from '../../../src/core/agents/cursorAgent';
import {
  agentAdapters,
  agentBinary,
  configuredAgentBinaries,
  detectAgent,
  findAdapter,
  getAdapter,
  type AgentBinary,
} from '../../../src/core/agents/registry';
import { ralphConfigSchema } from '../../../src/core/model/config';
import type { AgentEvent } from '../../../src/core/stream/events';

const mapAll = (adapter: typeof claudeAdapter, lines: Record<string, unknown>[]): AgentEvent[] => {
  const m = adapter.createMapper();
  return lines.flatMap((l) => m.map(l));
};
/** The first event; fails the test when there is none. */
function first(events: AgentEvent[]): AgentEvent {
  assert.ok(events[0], 'an event was mapped');
  return events[0];
}
const spec = {
  prompt: 'do the task',
  cwd: '/work/ws',
  baseEnv: { PATH: '/usr/bin', ANTHROPIC_BASE_URL: 'http://proxy', HOME: '/home/u' },
};

describe('claude adapter', () => {
  it('invokes claude -p with stream-json, --verbose and the prompt last after --', () => {
    const inv = claudeAdapter.invocation(spec);
    assert.equal(inv.file, 'claude');
    assert.deepEqual(inv.args, ['-p', '--output-format', 'stream-json', '--verbose', '--', 'do the task']);
    assert.equal(inv.cwd, '/work/ws');
  });

  it('passes model, permission mode, appended system prompt, max turns, resume and extra arguments', () => {
    const inv = claudeAdapter.invocation({
      ...spec,
      binary: '/opt/claude',
      model: 'opus[1m]',
      permissionMode: 'bypassPermissions',
      appendSystemPrompt: 'be brief',
      maxTurns: 30,
      resume: 'sess-1',
      extraArgs: ['--effort', 'high'],
    });
    assert.equal(inv.file, '/opt/claude');
    assert.deepEqual(inv.args.slice(4), [
      '--model',
      'opus[1m]',
      '--permission-mode',
      'bypassPermissions',
      '--append-system-prompt',
      'be brief',
      '--max-turns',
      '30',
      '--resume',
      'sess-1',
      '--effort',
      'high',
      '--',
      'do the task',
    ]);
  });

  it('passes hooks inline with --settings JSON, never through settings files', () => {
    const hooks = { hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: '/abs/guard' }] }] } };
    const inv = claudeAdapter.invocation({ ...spec, settings: hooks });
    const i = inv.args.indexOf('--settings');
    assert.deepEqual(JSON.parse(inv.args[i + 1]!), hooks);
  });

  it('projectSettings ignore adds --setting-sources user --strict-mcp-config; load (or unset) adds nothing (breaker-s6 05)', () => {
    const args = (projectSettings?: 'load' | 'ignore') => claudeAdapter.invocation({ ...spec, projectSettings }).args;
    assert.deepEqual(args('ignore').slice(4, 7), ['--setting-sources', 'user', '--strict-mcp-config']);
    assert.equal(args('load').includes('--setting-sources'), false);
    assert.equal(args().includes('--strict-mcp-config'), false);
  });

  it('passes the environment through (ANTHROPIC_* and proxies), with overrides and removals', () => {
    const inv = claudeAdapter.invocation({ ...spec, env: { CLAUDE_CODE_MAX_RETRIES: '1', HOME: undefined } });
    assert.equal(inv.env.ANTHROPIC_BASE_URL, 'http://proxy');
    assert.equal(inv.env.CLAUDE_CODE_MAX_RETRIES, '1');
    assert.equal('HOME' in inv.env, false);
  });

  it('maps each content block of an assistant line to its own event, plus one usage event', () => {
    const events = mapAll(claudeAdapter, [
      {
        type: 'assistant',
        parent_tool_use_id: null,
        message: {
          id: 'msg_1',
          model: 'claude-opus-4-6',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'x' },
            { type: 'text', text: 'hi' },
            { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
          ],
          usage: { input_tokens: 5, output_tokens: 1, cache_creation_input_tokens: 10, cache_read_input_tokens: 20 },
        },
      },
    ]);
    assert.deepEqual(
      events.map((e) => e.type),
      ['thinking', 'text', 'toolUse', 'usage'],
    );
    const u = events[3];
    assert.deepEqual(u?.type === 'usage' && u.tokens, { input: 5, output: 1, cacheCreation: 10, cacheRead: 20 });
    const t = events[2];
    assert.equal(t?.type === 'toolUse' && t.kind, 'shell');
  });

  it('names a tool result after its tool_use', () => {
    const events = mapAll(claudeAdapter, [
      {
        type: 'assistant',
        message: {
          id: 'm',
          model: 'x',
          content: [{ type: 'tool_use', id: 'toolu_9', name: 'Read', input: { file_path: '/a' } }],
        },
      },
      {
        type: 'user',
        message: {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_9',
              content: [{ type: 'text', text: 'file body' }],
              is_error: false,
            },
          ],
        },
      },
    ]);
    const r = events.find((e) => e.type === 'toolResult');
    assert.deepEqual(r && r.type === 'toolResult' && [r.name, r.kind, r.output, r.isError], [
      'Read',
      'read',
      'file body',
      false,
    ]);
  });

  it('marks lines with parent_tool_use_id as subagent', () => {
    const e = first(
      mapAll(claudeAdapter, [
        {
          type: 'assistant',
          parent_tool_use_id: 'toolu_1',
          message: { id: 'm2', model: 'x', content: [{ type: 'text', text: 'sub' }] },
        },
      ]),
    );
    assert.equal(e.subagent, true);
  });

  it('marks "<synthetic>" lines as synthetic, emits their error, and no usage', () => {
    const events = mapAll(claudeAdapter, [
      {
        type: 'assistant',
        parent_tool_use_id: null,
        error: 'rate_limit',
        api_error_status: 429,
        message: {
          id: 'x',
          model: '<synthetic>',
          content: [{ type: 'text', text: 'API Error: Request rejected (429)' }],
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      },
    ]);
    assert.deepEqual(
      events.map((e) => [e.type, e.synthetic]),
      [
        ['text', true],
        ['error', true],
      ],
    );
    const err = events[1];
    assert.deepEqual(err?.type === 'error' && [err.code, err.status], ['rate_limit', 429]);
  });

  it('reads rate_limit_event resetsAt (epoch seconds) as epoch milliseconds', () => {
    const e = first(
      mapAll(claudeAdapter, [
        {
          type: 'rate_limit_event',
          rate_limit_info: { status: 'rejected', resetsAt: 1778565600, rateLimitType: 'five_hour', utilization: 1 },
        },
      ]),
    );
    assert.deepEqual(e.type === 'rateLimit' && [e.status, e.resetsAt, e.utilization], ['rejected', 1778565600000, 1]);
  });

  it('decodes fractional numbers leniently (retry_delay_ms 520.9)', () => {
    const e = first(
      mapAll(claudeAdapter, [
        {
          type: 'system',
          subtype: 'api_retry',
          attempt: 1,
          max_retries: 10,
          retry_delay_ms: 520.9,
          error_status: null,
          error: 'unknown',
        },
      ]),
    );
    assert.deepEqual(e.type === 'apiRetry' && [e.delayMs, e.status], [520.9, null]);
  });

  it('maps compact_boundary with its token figures', () => {
    const e = first(
      mapAll(claudeAdapter, [
        {
          type: 'system',
          subtype: 'compact_boundary',
          compact_metadata: { trigger: 'auto', pre_tokens: 190000, post_tokens: 21000 },
        },
      ]),
    );
    assert.deepEqual(e.type === 'compactBoundary' && [e.preTokens, e.postTokens], [190000, 21000]);
  });

  it('passes unknown types and subtypes on as unknown events', () => {
    const events = mapAll(claudeAdapter, [
      { type: 'system', subtype: 'hook_started', hook_id: 'h' },
      { type: 'brand_new_kind', x: 1 },
    ]);
    assert.deepEqual(
      events.map((e) => e.type === 'unknown' && e.rawType),
      ['system/hook_started', 'brand_new_kind'],
    );
  });

  it('turns a known type that fails validation into an unknown event with the issue', () => {
    const e = first(mapAll(claudeAdapter, [{ type: 'assistant', message: 'not an object' }]));
    assert.equal(e.type, 'unknown');
    assert.ok(e.type === 'unknown' && e.issue?.includes('message'));
  });

  it('keeps is_error apart from subtype: a success subtype can be an error', () => {
    const e = first(
      mapAll(claudeAdapter, [
        { type: 'result', subtype: 'success', is_error: true, api_error_status: 401, result: 'Failed to authenticate' },
      ]),
    );
    assert.deepEqual(e.type === 'result' && [e.subtype, e.isError, e.apiErrorStatus], ['success', true, 401]);
  });
});

describe('cursor-agent adapter', () => {
  it('invokes cursor-agent -p --force --trust with stream-json, the model, resume, and the prompt last', () => {
    const inv = cursorAgentAdapter.invocation({ ...spec, model: 'composer-2', resume: 'chat-1' });
    assert.deepEqual(inv.args, [
      '-p',
      '--force',
      '--trust',
      '--output-format',
      'stream-json',
      '--model',
      'composer-2',
      '--resume=chat-1',
      'do the task',
    ]);
  });

  it('isolates CURSOR_CONFIG_DIR under the workspace unless one is given', () => {
    assert.equal(cursorAgentAdapter.invocation(spec).env.CURSOR_CONFIG_DIR, '/work/ws/.ralph/cursor-config');
    assert.equal(
      cursorAgentAdapter.invocation({ ...spec, cursorConfigDir: '/tmp/cc' }).env.CURSOR_CONFIG_DIR,
      '/tmp/cc',
    );
  });

  it('correlates tool_call started and completed by call_id, even one containing a newline', () => {
    const id = 'call_A\nfc_B';
    const events = mapAll(cursorAgentAdapter, [
      {
        type: 'tool_call',
        subtype: 'started',
        call_id: id,
        tool_call: { shellToolCall: { args: { command: 'false' } } },
      },
      {
        type: 'tool_call',
        subtype: 'completed',
        call_id: id,
        tool_call: {
          shellToolCall: {
            args: { command: 'false' },
            result: { success: { exitCode: 1, stdout: 'out', stderr: 'err' } },
          },
        },
      },
    ]);
    assert.deepEqual(
      events.map((e) => e.type),
      ['toolUse', 'toolResult'],
    );
    const r = events[1];
    assert.deepEqual(r?.type === 'toolResult' && [r.id, r.name, r.kind, r.exitCode, r.isError, r.output], [
      id,
      'shell',
      'shell',
      1,
      true,
      'outerr',
    ]);
  });

  it('reads results nested under success, failure and rejected', () => {
    const done = (result: unknown): AgentEvent =>
      mapAll(cursorAgentAdapter, [
        {
          type: 'tool_call',
          subtype: 'completed',
          call_id: 'c',
          tool_call: { readToolCall: { args: { path: 'a' }, result } },
        },
      ])[0]!;
    const ok = done({ success: { content: 'body' } });
    const failed = done({ failure: { message: 'no such file' } });
    const rejected = done({ rejected: { reason: 'not allowed' } });
    assert.deepEqual(
      [ok, failed, rejected].map((e) => e.type === 'toolResult' && [e.isError, e.output]),
      [
        [false, 'body'],
        [true, 'no such file'],
        [true, 'not allowed'],
      ],
    );
  });

  it('maps thinking deltas to thinking events', () => {
    const e = first(
      mapAll(cursorAgentAdapter, [
        { type: 'thinking', subtype: 'delta', text: 'plan', session_id: 's', timestamp_ms: 1 },
      ]),
    );
    assert.deepEqual(e.type === 'thinking' && e.text, 'plan');
  });

  it('skips both flush kinds once partial-output deltas are seen', () => {
    const msg = (text: string, extra: Record<string, unknown>) => ({
      type: 'assistant',
      message: { role: 'assistant', content: [{ type: 'text', text }] },
      ...extra,
    });
    const events = mapAll(cursorAgentAdapter, [
      msg('He', { timestamp_ms: 1 }),
      msg('llo', { timestamp_ms: 2 }),
      msg('Hello', { timestamp_ms: 3, model_call_id: 'm' }),
      msg('Hello', {}),
    ]);
    assert.deepEqual(
      events.map((e) => e.type === 'text' && e.text),
      ['He', 'llo'],
    );
  });

  it('emits the camelCase result usage when present', () => {
    const events = mapAll(cursorAgentAdapter, [
      {
        type: 'result',
        subtype: 'success',
        is_error: false,
        result: 'x',
        usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 4 },
      },
    ]);
    assert.deepEqual(
      events.map((e) => e.type),
      ['usage', 'result'],
    );
  });

  it('reports a bare text line on stdout as an error event', () => {
    const m = cursorAgentAdapter.createMapper();
    const e = first(m.mapText!('Cannot use this model: gpt-9. Available models: auto'));
    assert.equal(e.type, 'error');
  });
});

describe('adapter registry', () => {
  it('keys every adapter by its name', () => {
    for (const [k, a] of Object.entries(agentAdapters)) assert.equal(a.name, k);
  });

  it('knows cursor-agent by its other binary name, agent', () => {
    assert.equal(findAdapter('agent'), cursorAgentAdapter);
  });

  it('names the known agents when asked for an unknown one', () => {
    assert.throws(() => getAdapter('gpt-cli'), /known: claude, codex, gemini, opencode, qwen, copilot, cursor-agent/);
  });

  it('detects claude from an init line with tools and a version', () => {
    assert.equal(
      detectAgent([{ type: 'system', subtype: 'init', tools: ['Bash'], claude_code_version: '2.1.328' }]),
      claudeAdapter,
    );
  });

  it('detects cursor-agent from a tool_call line', () => {
    assert.equal(
      detectAgent([{ type: 'tool_call', subtype: 'started', call_id: 'c', tool_call: {} }]),
      cursorAgentAdapter,
    );
  });

  it('detects nothing in a codex stream', () => {
    assert.equal(
      detectAgent([
        { type: 'thread.started', thread_id: 'x' },
        { type: 'turn.completed', usage: {} },
      ]),
      null,
    );
  });
});

describe('agent registry: which binary each agent runs (each adapter owns its config key)', () => {
  const config = ralphConfigSchema.parse({ claudePath: 'bin/claude', cursorAgentPath: 'cursor-agent' });

  it("reads the adapter's own key, resolving a configured path against the workspace folder", () => {
    assert.deepEqual(pick(agentBinary(claudeAdapter, config, '/ws')), ['claudePath', 'bin/claude', '/ws/bin/claude']);
    assert.deepEqual(pick(agentBinary(cursorAgentAdapter, config, '/ws')), [
      'cursorAgentPath',
      'cursor-agent',
      'cursor-agent',
    ]);
  });

  it("lists every adapter's binary in registry order", () => {
    assert.deepEqual(
      configuredAgentBinaries(config, '/ws').map((b) => [b.adapter.name, b.binary]),
      [
        ['claude', '/ws/bin/claude'],
        ['codex', 'codex'],
        ['gemini', 'gemini'],
        ['opencode', 'opencode'],
        ['qwen', 'qwen'],
        ['copilot', 'copilot'],
        ['cursor-agent', 'cursor-agent'],
      ],
    );
  });

  it('every adapter names a string key of the configuration schema', () => {
    for (const a of Object.values(agentAdapters))
      assert.equal(typeof (ralphConfigSchema.parse({}) as Record<string, unknown>)[a.configKey], 'string', a.name);
  });
});

function pick(b: AgentBinary): [string, string, string] {
  return [b.key, b.configured, b.binary];
}
