import { z } from 'zod';
import { type AgentEvent, type ToolKind, ev } from '../stream/events';
import {
  type AgentAdapter,
  type Invocation,
  type IterationSpec,
  type StreamMapper,
  contentText,
  mergeEnv,
} from './adapter';
import { ralphFile } from '../model/ralphPaths';
import { asRecord, issueOf, optNum as n, optStr as s, unknownEvent } from './lineParts';

/**
 * Cursor's `cursor-agent -p --output-format stream-json` (also installed as `agent`), agent-streams.md §4.
 * Tool activity is a separate `tool_call` event, `started`/`completed`, correlated by `call_id` (opaque, may
 * contain `\n`). Results nest under `result.success | failure | rejected`. There is no error result: failure
 * is a non-zero exit plus stderr, so the outcome is decided by `classifyOutcome` from exit code and stderr.
 * There is no live usage; newer builds add camelCase `result.usage`.
 */

const initSchema = z.object({ session_id: s, model: s, cwd: s, permissionMode: s });
const messageSchema = z.object({
  message: z.object({ content: z.union([z.string(), z.array(z.unknown())]) }),
  model_call_id: s,
  timestamp_ms: n,
});
const thinkingSchema = z.object({ text: s });
const toolCallSchema = z.object({
  call_id: z.string(),
  tool_call: z.record(z.string(), z.unknown()),
});
const resultSchema = z.object({
  subtype: s,
  is_error: z.boolean().nullish().catch(null),
  result: s,
  duration_ms: n,
  session_id: s,
  usage: z.object({ inputTokens: n, outputTokens: n, cacheReadTokens: n, cacheWriteTokens: n }).nullish().catch(null),
});

/** `shellToolCall` → `shell`; `function` calls use their own name. */
export function cursorToolName(key: string): string {
  return key.endsWith('ToolCall') ? key.slice(0, -'ToolCall'.length) : key;
}

export function cursorToolKind(name: string): ToolKind {
  switch (name) {
    case 'shell':
      return 'shell';
    case 'read':
      return 'read';
    case 'write':
      return 'write';
    case 'edit':
    case 'delete':
      return 'edit';
    default:
      return 'other';
  }
}

/** Splits `tool_call` into name, args and result, for both the keyed form and the `function` form. */
function describeToolCall(toolCall: Record<string, unknown>): {
  name: string;
  args: Record<string, unknown>;
  result: Record<string, unknown> | null;
} {
  const key = Object.keys(toolCall)[0] ?? 'unknown';
  const body = asRecord(toolCall[key]);
  if (key === 'function') {
    let args: Record<string, unknown> = {};
    if (typeof body.arguments === 'string') {
      try {
        args = asRecord(JSON.parse(body.arguments));
      } catch {
        args = { arguments: body.arguments };
      }
    }
    return {
      name: typeof body.name === 'string' ? body.name : 'function',
      args,
      result: body.result ? asRecord(body.result) : null,
    };
  }
  return { name: cursorToolName(key), args: asRecord(body.args), result: body.result ? asRecord(body.result) : null };
}

/** Output text and error state of a completed call (`success` / `failure` / `rejected`). */
function describeResult(
  kind: ToolKind,
  result: Record<string, unknown> | null,
): { isError: boolean; output: string; exitCode: number | null } {
  if (!result) return { isError: false, output: '', exitCode: null };
  if (result.success !== undefined) {
    const ok = asRecord(result.success);
    if (kind === 'shell') {
      const exitCode = typeof ok.exitCode === 'number' ? ok.exitCode : null;
      const out =
        typeof ok.interleavedOutput === 'string' && ok.interleavedOutput
          ? ok.interleavedOutput
          : [ok.stdout, ok.stderr].filter((x) => typeof x === 'string' && x).join('');
      return { isError: exitCode !== null && exitCode !== 0, output: out, exitCode };
    }
    if (typeof ok.content === 'string') return { isError: false, output: ok.content, exitCode: null };
    return { isError: false, output: contentText(ok), exitCode: null };
  }
  if (result.failure !== undefined) {
    const f = asRecord(result.failure);
    const exitCode = typeof f.exitCode === 'number' ? f.exitCode : null;
    const out = [f.stdout, f.stderr, f.message, f.error].filter((x) => typeof x === 'string' && x).join('\n');
    return { isError: true, output: out || contentText(result.failure), exitCode };
  }
  if (result.rejected !== undefined) {
    const r = asRecord(result.rejected);
    return { isError: true, output: typeof r.reason === 'string' ? r.reason : contentText(r), exitCode: null };
  }
  return { isError: false, output: contentText(result), exitCode: null };
}

class CursorMapper implements StreamMapper {
  private readonly toolNames = new Map<string, string>();
  /** Set once a `--stream-partial-output` delta is seen: then both flush kinds are duplicates (§4.3). */
  private partial = false;

  map(line: Record<string, unknown>): AgentEvent[] {
    switch (line.type) {
      case 'system':
        if (line.subtype === 'init') {
          const p = initSchema.safeParse(line);
          if (!p.success) return [unknownEvent(line, issueOf(p.error))];
          const i = p.data;
          return [
            ev({
              type: 'init',
              sessionId: i.session_id ?? null,
              model: i.model ?? null,
              cwd: i.cwd ?? null,
              tools: [],
              permissionMode: i.permissionMode ?? null,
              agentVersion: null,
            }),
          ];
        }
        return [unknownEvent(line)];
      case 'assistant':
        return this.assistant(line);
      case 'thinking': {
        if (line.subtype !== 'delta') return [unknownEvent(line)];
        const p = thinkingSchema.safeParse(line);
        if (!p.success) return [unknownEvent(line, issueOf(p.error))];
        return [ev({ type: 'thinking', text: p.data.text ?? '', messageId: null })];
      }
      case 'tool_call':
        return this.toolCall(line);
      case 'result':
        return this.result(line);
      default:
        return [unknownEvent(line)];
    }
  }

  mapText(text: string): AgentEvent[] {
    // A bare-text line on stdout is how cursor reports e.g. a model not allowed on the plan (§4.3).
    return [ev({ type: 'error', message: text, code: null, status: null })];
  }

  private assistant(line: Record<string, unknown>): AgentEvent[] {
    const p = messageSchema.safeParse(line);
    if (!p.success) return [unknownEvent(line, issueOf(p.error))];
    const a = p.data;
    const hasCall = typeof a.model_call_id === 'string';
    const hasTs = a.timestamp_ms != null;
    if (hasTs && !hasCall) this.partial = true;
    // With partial output, a line with both markers is the flush before a tool call and one with neither is
    // the final flush: both repeat text already sent as deltas.
    else if (this.partial) return [];
    const text = contentText(a.message.content);
    return text ? [ev({ type: 'text', text, messageId: a.model_call_id ?? null })] : [];
  }

  private toolCall(line: Record<string, unknown>): AgentEvent[] {
    const p = toolCallSchema.safeParse(line);
    if (!p.success) return [unknownEvent(line, issueOf(p.error))];
    const { call_id: id, tool_call } = p.data;
    const { name, args, result } = describeToolCall(tool_call);
    const kind = cursorToolKind(name);
    if (line.subtype === 'started') {
      this.toolNames.set(id, name);
      return [
        ev({
          type: 'toolUse',
          id,
          name,
          kind,
          input: args,
          messageId: typeof line.model_call_id === 'string' ? line.model_call_id : null,
        }),
      ];
    }
    if (line.subtype === 'completed') {
      const known = this.toolNames.get(id);
      this.toolNames.delete(id);
      return [ev({ type: 'toolResult', id, name: known ?? name, kind, ...describeResult(kind, result) })];
    }
    return [unknownEvent(line)];
  }

  private result(line: Record<string, unknown>): AgentEvent[] {
    const p = resultSchema.safeParse(line);
    if (!p.success) return [unknownEvent(line, issueOf(p.error))];
    const r = p.data;
    const out: AgentEvent[] = [];
    const tokens = r.usage
      ? {
          input: r.usage.inputTokens ?? 0,
          output: r.usage.outputTokens ?? 0,
          cacheRead: r.usage.cacheReadTokens ?? 0,
          cacheCreation: r.usage.cacheWriteTokens ?? 0,
        }
      : null;
    if (tokens) out.push(ev({ type: 'usage', source: 'result', messageId: null, model: null, tokens }));
    out.push(
      ev({
        type: 'result',
        subtype: r.subtype ?? 'success',
        isError: r.is_error === true,
        text: r.result ?? null,
        errors: [],
        numTurns: null,
        durationMs: r.duration_ms ?? null,
        costUsd: null,
        usage: tokens,
        modelUsage: null,
        apiErrorStatus: null,
        terminalReason: null,
        stopReason: null,
        sessionId: r.session_id ?? null,
        permissionDenials: 0,
      }),
    );
    return out;
  }
}

function cursorInvocation(spec: IterationSpec): Invocation {
  const args = ['-p', '--force', '--trust', '--output-format', 'stream-json'];
  if (spec.model) args.push('--model', spec.model);
  // `--resume [chatId]` takes an optional value: the `=` form cannot swallow the prompt (seed-systems.md §3.3).
  if (spec.resume) args.push(`--resume=${spec.resume}`);
  args.push(...(spec.extraArgs ?? []));
  args.push(spec.prompt);
  const configDir = spec.cursorConfigDir ?? ralphFile(spec.cwd, 'cursorConfig');
  return {
    file: spec.binary || 'cursor-agent',
    args,
    env: mergeEnv(spec, { CURSOR_CONFIG_DIR: configDir }),
    cwd: spec.cwd,
  };
}

function cursorRecognise(line: Record<string, unknown>): 0 | 1 | 2 {
  const t = line.type;
  if (t === 'tool_call' || 'model_call_id' in line || (t === 'thinking' && typeof line.subtype === 'string')) return 2;
  if (t === 'system' && line.subtype === 'init') {
    return ['login', 'env', 'flag'].includes(String(line.apiKeySource)) && !('tools' in line) ? 2 : 1;
  }
  if (t === 'result')
    return 'request_id' in line && !('total_cost_usd' in line) ? 2 : typeof line.is_error === 'boolean' ? 1 : 0;
  if (t === 'assistant' || t === 'user') {
    const m = line.message as { id?: unknown } | undefined;
    return m && typeof m === 'object' && !('id' in m) && !('parent_tool_use_id' in line) ? 1 : 0;
  }
  return 0;
}

/** The `cursor-agent` adapter. */
export const cursorAgentAdapter: AgentAdapter = {
  name: 'cursor-agent',
  defaultBinary: 'cursor-agent',
  configKey: 'cursorAgentPath',
  guardHook: false,
  estimatesContext: true,
  invocation: cursorInvocation,
  createMapper: () => new CursorMapper(),
  recognise: cursorRecognise,
};
