import { z } from 'zod';
import { type AgentEvent, type ToolKind, ev } from '../stream/events';
import type { CommandPolicy } from '../gates/commandPolicy';
import { type AgentAdapter, type Invocation, type IterationSpec, type StreamMapper, mergeEnv } from './adapter';
import { GUARD_SUPPORT } from './guardSupport';
import { limitRejected, limitResetOf } from './limitReset';
import { asRecord, issueOf, optNum as n, optStr as s, sessionInit, unknownEvent } from './lineParts';

/**
 * GitHub's Copilot CLI (`copilot --output-format json --allow-all-tools --prompt=<p>`), more-agents.md, as recorded
 * from 1.0.102 (test/fixtures/streams/copilot/recorded/). Every line is `{type, data, id, timestamp, parentId,
 * ephemeral?}`:
 *
 * - `user.message` echoes the prompt (never agent text); `assistant.message` carries a whole reply (`content`, the
 *   `toolRequests` it makes, `model`, `messageId`): its text is one text event (`assistant.message_delta` pieces repeat
 *   it and are skipped); `tool.execution_start` / `tool.execution_complete` correlate by `toolCallId`, the latter with
 *   `success`, `result.content` and, for shells, `shellExecution.exitCode`; `model.call_failure` is one failed API call
 *   the CLI retries by itself (an `apiRetry`; a 429 is not retried), `session.error` the failure it gave up on
 *   (`errorType` `rate_limit` or `query`, `statusCode`); `result` ends the run with the process's `exitCode` (1 after
 *   a `session.error`) and `sessionId`. SIGTERM ends it with `abort` and no result. A 429's `retry-after` is not
 *   in the stream; a reset the provider's message names ("will reset at <time>") is read from `session.error`.
 * - **No token counts**: `result.usage` has `premiumRequests` and durations only, so context is the byte estimate
 *   (`estimatesContext`, as for cursor-agent) and the ledger's totals stay zero.
 * - Without `--allow-all-tools` every tool call is denied headless ("no interactive user response") and the CLI still
 *   exits 0; `--allow-all-tools` is the approval mode a run needs. Its allow/deny tool rules are the guard's mechanism.
 */

const dataOf = (line: Record<string, unknown>): Record<string, unknown> => asRecord(line.data);

const assistantSchema = z.object({
  messageId: s,
  content: s,
  model: s,
  toolRequests: z.array(z.unknown()).nullish().catch(null),
});
const toolStartSchema = z.object({ toolCallId: z.string(), toolName: s, arguments: z.unknown().optional() });
const toolCompleteSchema = z.object({
  toolCallId: z.string(),
  success: z.boolean().nullish().catch(null),
  shellExecution: z.object({ exitCode: n }).nullish().catch(null),
  result: z.object({ content: s }).nullish().catch(null),
  error: z
    .union([z.string(), z.object({ message: s, code: s })])
    .nullish()
    .catch(null),
});
const resultSchema = z.object({
  sessionId: s,
  exitCode: n,
  usage: z.object({ premiumRequests: n, sessionDurationMs: n, totalApiDurationMs: n }).nullish().catch(null),
});
const sessionErrorSchema = z.object({ errorType: s, message: s, statusCode: n, status: n });
const callFailureSchema = z.object({ statusCode: n, retryAttempt: n, failureKind: s });

/** Copilot's tool names → kinds (its built-in tools as of 1.0). */
export function copilotToolKind(name: string): ToolKind {
  switch (name) {
    case 'bash':
    case 'write_bash':
    case 'read_bash':
    case 'powershell':
      return 'shell';
    case 'view':
      return 'read';
    case 'create':
      return 'write';
    case 'edit':
    case 'str_replace':
    case 'str_replace_editor':
      return 'edit';
    default:
      return 'other';
  }
}

/** The HTTP status a Copilot error message names ("429", "status 500", …), or null. */
export function copilotErrorStatus(text: string): number | null {
  const m = /\b([45]\d\d)\b/.exec(text);
  return m ? Number(m[1]) : null;
}

/** Events the mapper reads for their effect only (none of them is agent text, a tool call or a failure). */
const IGNORED = new Set([
  'user.message',
  'assistant.message_start',
  'assistant.message_delta',
  'assistant.tool_call_delta',
  'assistant.turn_start',
  'assistant.turn_end',
  'assistant.idle',
  'assistant.intent',
  'assistant.reasoning_delta',
  'model.call_start',
  'model.call_finished',
  'model.call_final_result',
  'tool.shell_output',
  'tool.execution_partial_result',
  'session.background_tasks_changed',
  'session.skills_loaded',
  'session.mcp_servers_loaded',
  'session.info',
  'assistant.turn_retry',
  'abort',
]);

class CopilotMapper implements StreamMapper {
  private readonly toolNames = new Map<string, string>();
  private initDone = false;
  private lastText: string | null = null;
  private lastError: { message: string; status: number | null } | null = null;

  map(line: Record<string, unknown>): AgentEvent[] {
    const type = typeof line.type === 'string' ? line.type : '';
    const data = dataOf(line);
    switch (type) {
      case 'session.tools_updated':
      case 'session.start': {
        if (this.initDone) return [];
        this.initDone = true;
        const model = typeof data.model === 'string' ? data.model : null;
        const sessionId = typeof data.sessionId === 'string' ? data.sessionId : null;
        return [sessionInit(sessionId, model)];
      }
      case 'assistant.message': {
        const p = assistantSchema.safeParse(data);
        if (!p.success) return [unknownEvent(line, issueOf(p.error))];
        const text = p.data.content ?? '';
        if (!text) return [];
        this.lastText = text;
        return [ev({ type: 'text', text, messageId: p.data.messageId ?? null })];
      }
      case 'assistant.reasoning': {
        const text = typeof data.content === 'string' ? data.content : '';
        return text ? [ev({ type: 'thinking', text, messageId: null })] : [];
      }
      case 'tool.execution_start': {
        const p = toolStartSchema.safeParse(data);
        if (!p.success) return [unknownEvent(line, issueOf(p.error))];
        const name = p.data.toolName ?? 'tool';
        this.toolNames.set(p.data.toolCallId, name);
        return [
          ev({
            type: 'toolUse',
            id: p.data.toolCallId,
            name,
            kind: copilotToolKind(name),
            input: asRecord(p.data.arguments),
            messageId: null,
          }),
        ];
      }
      case 'tool.execution_complete': {
        const p = toolCompleteSchema.safeParse(data);
        if (!p.success) return [unknownEvent(line, issueOf(p.error))];
        const c = p.data;
        const name = this.toolNames.get(c.toolCallId) ?? null;
        this.toolNames.delete(c.toolCallId);
        const exitCode = c.shellExecution?.exitCode ?? null;
        const errText = typeof c.error === 'string' ? c.error : (c.error?.message ?? '');
        return [
          ev({
            type: 'toolResult',
            id: c.toolCallId,
            name,
            kind: copilotToolKind(name ?? ''),
            isError: c.success === false || (exitCode !== null && exitCode !== 0),
            output: [c.result?.content ?? '', errText].filter(Boolean).join('\n'),
            exitCode,
          }),
        ];
      }
      case 'model.call_failure': {
        // One failed API call; the CLI retries by itself (a heartbeat, not a failure: session.error says when it gave up).
        const p = callFailureSchema.safeParse(data);
        if (!p.success) return [unknownEvent(line, issueOf(p.error))];
        return [
          ev({
            type: 'apiRetry',
            attempt: (p.data.retryAttempt ?? 0) + 1,
            maxRetries: 0,
            delayMs: 0,
            status: p.data.statusCode ?? null,
            error: p.data.statusCode === 429 ? 'rate_limit' : (p.data.failureKind ?? null),
          }),
        ];
      }
      case 'session.error': {
        const p = sessionErrorSchema.safeParse(data);
        if (!p.success) return [unknownEvent(line, issueOf(p.error))];
        const message = p.data.message ?? 'error';
        const status = p.data.statusCode ?? p.data.status ?? copilotErrorStatus(message);
        this.lastError = { message, status };
        // A quota's reset, when the provider's message names it ("… will reset at <time>"): Copilot reports no header.
        const at = typeof line.timestamp === 'string' ? Date.parse(line.timestamp) : NaN;
        const now = Number.isFinite(at) ? at : Date.now();
        return [
          ...limitRejected(limitResetOf({ text: message, status, now })),
          ev({ type: 'error', message, code: p.data.errorType ?? null, status }),
        ];
      }
      case 'result':
        return this.result(line);
      default:
        return IGNORED.has(type) ? [] : [unknownEvent(line)];
    }
  }

  private result(line: Record<string, unknown>): AgentEvent[] {
    const p = resultSchema.safeParse(line);
    if (!p.success) return [unknownEvent(line, issueOf(p.error))];
    const r = p.data;
    const isError = (r.exitCode ?? 0) !== 0 || this.lastError !== null;
    return [
      ev({
        type: 'result',
        subtype: isError ? 'error' : 'success',
        isError,
        text: isError ? (this.lastError?.message ?? null) : (this.lastText ?? ''),
        errors: this.lastError ? [this.lastError.message] : [],
        numTurns: null,
        durationMs: r.usage?.sessionDurationMs ?? null,
        costUsd: null,
        usage: null,
        modelUsage: null,
        apiErrorStatus: isError ? (this.lastError?.status ?? null) : null,
        terminalReason: null,
        stopReason: null,
        sessionId: r.sessionId ?? null,
        permissionDenials: 0,
      }),
    ];
  }
}

/**
 * The `--deny-tool` arguments of the run's `[deny]` rows that Copilot's shell rules can express (`shell(git push)`: a
 * command and at most one subcommand; `copilot help permissions`); a denial wins over `--allow-all-tools`. Pure.
 */
export function copilotDenyArgs(policy: CommandPolicy | null): string[] {
  const except = GUARD_SUPPORT.copilot.deny.except;
  return (policy?.deny ?? []).filter((r) => !except?.test(r.prefix)).map((r) => `--deny-tool=shell(${r.prefix})`);
}

function copilotInvocation(spec: IterationSpec): Invocation {
  // `--allow-all-tools`: headless, a tool call that needs approval is denied and the turn goes on without it.
  const args = ['--output-format', 'json', '--allow-all-tools'];
  if (spec.model) args.push('--model', spec.model);
  // `--resume[=<id>]` takes an optional value: the `=` form cannot swallow the prompt.
  if (spec.resume) args.push(`--resume=${spec.resume}`);
  args.push(...(spec.guardArgs ?? []), ...(spec.extraArgs ?? []));
  args.push(`--prompt=${spec.prompt}`);
  return { file: spec.binary || 'copilot', args, env: mergeEnv(spec), cwd: spec.cwd };
}

function copilotRecognise(line: Record<string, unknown>): 0 | 1 | 2 {
  const t = line.type;
  if (typeof t !== 'string') return 0;
  if (/^(?:assistant|tool|session|model|user)\.[a-z_]+$/.test(t) && 'data' in line) return 2;
  if (t === 'result' && 'exitCode' in line && 'sessionId' in line) return 2;
  return 0;
}

/** The Copilot CLI adapter. */
export const copilotAdapter: AgentAdapter = {
  name: 'copilot',
  defaultBinary: 'copilot',
  configKey: 'copilotPath',
  guardHook: false,
  prepareGuard: (g) => Promise.resolve({ args: copilotDenyArgs(g.policy) }),
  estimatesContext: true,
  invocation: copilotInvocation,
  createMapper: () => new CopilotMapper(),
  recognise: copilotRecognise,
};
