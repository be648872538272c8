import { type AgentEvent, type TokenCounts, type ToolKind, addTokens, ev, zeroTokens } from '../stream/events';
import { type AgentAdapter, type Invocation, type IterationSpec, type StreamMapper, mergeEnv } from './adapter';
import { limitRejected, limitResetOf } from './limitReset';
import { asRecord, numOrNull, recordOrNull, sessionInit, str, unknownEvent } from './lineParts';

/**
 * OpenAI's Codex CLI (`codex exec --json`, 0.171; agent-streams.md §6, more-agents.md). One `exec` is one turn:
 * `thread.started` (the resume id), `turn.started`, `item.started|updated|completed` (agent messages, reasoning,
 * command executions, file changes, MCP calls, item-level errors), then `turn.completed` with the turn's usage or
 * `turn.failed`. Top-level `error` lines are the CLI's own retries ("Reconnecting... 2/5 (…)").
 *
 * Usage: `turn.completed.usage` is the sum over the turn's API calls; `input_tokens` includes
 * `cached_input_tokens`; `cache_write_input_tokens` and `reasoning_output_tokens` (a part of `output_tokens`) are
 * newer keys. The stream has no per-call usage, so context is the byte estimate (`estimatesContext`). Several turns
 * in one process (not made by `exec`) are summed, and the result carries the running total: the ledger reads a
 * result's usage as cumulative for the process, so nothing is counted twice.
 */

/** `turn.completed.usage` as Codex writes it (token counts; a missing or non-numeric field reads as absent). */
export interface CodexUsage {
  input_tokens?: number | null;
  cached_input_tokens?: number | null;
  cache_write_input_tokens?: number | null;
  output_tokens?: number | null;
  reasoning_output_tokens?: number | null;
}

/** `turn.completed.usage` → tokens: input is the uncached part (`input_tokens − cached_input_tokens`). */
export function codexTokens(u: CodexUsage): TokenCounts {
  const input = numOrNull(u.input_tokens) ?? 0;
  const cached = Math.min(numOrNull(u.cached_input_tokens) ?? 0, input);
  return {
    input: input - cached,
    output: numOrNull(u.output_tokens) ?? 0,
    cacheRead: cached,
    cacheCreation: numOrNull(u.cache_write_input_tokens) ?? 0,
  };
}

/**
 * The HTTP status a Codex failure message names ("unexpected status 401 Unauthorized: …", "exceeded retry limit,
 * last status: 429 Too Many Requests", "http 500"), or null.
 */
export function codexStatus(message: string): number | null {
  const m = /\b(?:status:?|http)\s*(\d{3})\b/i.exec(message);
  return m ? Number(m[1]) : null;
}

/** "Reconnecting... 2/5 (reason)" → attempt 2 of 5; null for other error lines. */
export function codexReconnect(message: string): { attempt: number; maxRetries: number; reason: string } | null {
  const m = /^Reconnecting\.\.\.\s*(\d+)\/(\d+)\s*(?:\((.*)\))?/s.exec(message);
  return m ? { attempt: Number(m[1]), maxRetries: Number(m[2]), reason: (m[3] ?? '').trim() } : null;
}

/** Per-stream state: the session id, the running usage total, whether a tool item was already announced. */
class CodexMapper implements StreamMapper {
  private sessionId: string | null = null;
  private total: TokenCounts | null = null;
  private turns = 0;
  private readonly started = new Set<string>();
  private lastMessage: string | null = null;

  map(line: Record<string, unknown>): AgentEvent[] {
    switch (line.type) {
      case 'thread.started':
        this.sessionId = typeof line.thread_id === 'string' ? line.thread_id : null;
        return [sessionInit(this.sessionId)];
      case 'turn.started':
        this.lastMessage = null;
        return [];
      case 'item.started':
      case 'item.updated':
      case 'item.completed':
        return this.item(line);
      case 'turn.completed':
        return this.turnCompleted(line);
      case 'turn.failed':
        return this.turnFailed(line);
      case 'error': {
        const message = str(line.message);
        const r = codexReconnect(message);
        if (r)
          return [
            ev({
              type: 'apiRetry',
              attempt: r.attempt,
              maxRetries: r.maxRetries,
              delayMs: 0,
              status: codexStatus(r.reason),
              error: r.reason || null,
            }),
          ];
        return [ev({ type: 'error', message, code: null, status: codexStatus(message) })];
      }
      default:
        return [unknownEvent(line)];
    }
  }

  private item(line: Record<string, unknown>): AgentEvent[] {
    const item = recordOrNull(line.item);
    if (item === null) return [unknownEvent(line, 'item: not an object')];
    if (typeof item.type !== 'string') return [unknownEvent(line, 'item.type: not a string')];
    const id = typeof item.id === 'string' ? item.id : '';
    const done = line.type === 'item.completed';
    switch (item.type) {
      case 'agent_message':
        // Only the completed message is the agent's text (started / updated carry partial text).
        if (!done) return [];
        this.lastMessage = str(item.text);
        return this.lastMessage ? [ev({ type: 'text', text: this.lastMessage, messageId: id || null })] : [];
      case 'reasoning':
        return done ? [ev({ type: 'thinking', text: str(item.text), messageId: id || null })] : [];
      case 'command_execution':
        return this.tool(line, id, 'shell', 'shell', { command: str(item.command) }, () => {
          const exitCode = typeof item.exit_code === 'number' ? item.exit_code : null;
          const status = str(item.status);
          return {
            isError: status === 'failed' || status === 'declined' || (exitCode !== null && exitCode !== 0),
            output: str(item.aggregated_output),
            exitCode,
          };
        });
      case 'file_change': {
        const changes = Array.isArray(item.changes) ? item.changes.map(asRecord) : [];
        return this.tool(line, id, 'apply_patch', 'edit', { paths: changes.map((c) => str(c.path)), changes }, () => ({
          isError: str(item.status) === 'failed',
          output: changes.map((c) => `${str(c.kind)} ${str(c.path)}`).join('\n'),
          exitCode: null,
        }));
      }
      case 'mcp_tool_call': {
        const name = `${str(item.server)}.${str(item.tool)}`;
        return this.tool(line, id, name, 'other', asRecord(item.arguments), () => {
          const error = asRecord(item.error);
          return {
            isError: str(item.status) === 'failed' || typeof error.message === 'string',
            output: typeof error.message === 'string' ? error.message : JSON.stringify(item.result ?? ''),
            exitCode: null,
          };
        });
      }
      case 'web_search':
        return this.tool(line, id, 'web_search', 'other', { query: str(item.query) }, () => ({
          isError: false,
          output: '',
          exitCode: null,
        }));
      case 'error':
        // Item-level errors are notices the turn goes on after (unknown model metadata, hook trust warnings).
        return done ? [ev({ type: 'error', message: str(item.message), code: 'item_error', status: null })] : [];
      default:
        return done || line.type === 'item.started' ? [unknownEvent(line)] : [];
    }
  }

  /** A tool item: `toolUse` when first seen, `toolResult` when completed (a completed item seen first gives both). */
  private tool(
    line: Record<string, unknown>,
    id: string,
    name: string,
    kind: ToolKind,
    input: Record<string, unknown>,
    result: () => { isError: boolean; output: string; exitCode: number | null },
  ): AgentEvent[] {
    const out: AgentEvent[] = [];
    if (!this.started.has(id)) {
      this.started.add(id);
      out.push(ev({ type: 'toolUse', id, name, kind, input, messageId: null }));
    }
    if (line.type === 'item.completed') {
      this.started.delete(id);
      out.push(ev({ type: 'toolResult', id, name, kind, ...result() }));
    }
    return out;
  }

  private turnCompleted(line: Record<string, unknown>): AgentEvent[] {
    const usage = recordOrNull(line.usage);
    const tokens = usage ? codexTokens(usage) : zeroTokens();
    this.total = this.total ? addTokens(this.total, tokens) : tokens;
    this.turns++;
    return [
      ev({ type: 'usage', source: 'result', messageId: null, model: null, tokens }),
      this.resultEvent({ subtype: 'success', isError: false, text: this.lastMessage, errors: [], status: null }),
    ];
  }

  private turnFailed(line: Record<string, unknown>): AgentEvent[] {
    const message = str(asRecord(line.error).message) || 'the turn failed';
    this.turns++;
    const status = codexStatus(message);
    return [
      // A usage limit names its reset as a time of day ("try again at 10:16 AM"): the failover compares it.
      ...limitRejected(limitResetOf({ text: message, status, now: Date.now() })),
      this.resultEvent({
        subtype: 'error',
        isError: true,
        text: message,
        errors: [message],
        status,
      }),
    ];
  }

  private resultEvent(r: {
    subtype: string;
    isError: boolean;
    text: string | null;
    errors: string[];
    status: number | null;
  }): AgentEvent {
    return ev({
      type: 'result',
      subtype: r.subtype,
      isError: r.isError,
      text: r.text,
      errors: r.errors,
      numTurns: this.turns,
      durationMs: null,
      costUsd: null,
      usage: this.total ? { ...this.total } : null,
      modelUsage: null,
      apiErrorStatus: r.status,
      terminalReason: null,
      stopReason: null,
      sessionId: this.sessionId,
      permissionDenials: 0,
    });
  }
}

/** Arguments that choose Codex's sandbox themselves (then ralph adds no sandbox flag). */
const SANDBOX_ARGS =
  /^(?:-s|--sandbox(?:=.*)?|--full-auto|--dangerously-bypass-approvals-and-sandbox|--approve-for-me)$/;

/** A TOML basic string (JSON's escapes are TOML's for the characters a command holds). */
const tomlString = (v: string): string => JSON.stringify(v);

/**
 * The `-c hooks.PreToolUse=[…]` override that hands the run's PreToolUse hooks (`spec.settings.hooks.PreToolUse`,
 * Claude's shape: the command guard) to Codex, whose hooks take the same input and answers (tool `Bash`, `tool_input.command`,
 * `permissionDecision` deny, `updatedInput`): the matcher is Codex's shell tool only. Null without hooks.
 */
export function codexHookOverride(settings: Record<string, unknown> | undefined): string | null {
  const entries = (asRecord(settings).hooks as { PreToolUse?: unknown } | undefined)?.PreToolUse;
  if (!Array.isArray(entries) || !entries.length) return null;
  const groups = entries.flatMap((e) => {
    const hooks = Array.isArray(asRecord(e).hooks) ? (asRecord(e).hooks as unknown[]).map(asRecord) : [];
    const cmds = hooks.filter((h) => typeof h.command === 'string');
    if (!cmds.length) return [];
    const list = cmds
      .map(
        (h) =>
          `{type="command",command=${tomlString(str(h.command))}${typeof h.timeout === 'number' ? `,timeout=${h.timeout}` : ''}}`,
      )
      .join(',');
    return [`{matcher="Bash",hooks=[${list}]}`];
  });
  return groups.length ? `hooks.PreToolUse=[${groups.join(',')}]` : null;
}

function codexInvocation(spec: IterationSpec): Invocation {
  const extra = spec.extraArgs ?? [];
  const args = ['exec'];
  if (spec.resume) args.push('resume', spec.resume);
  args.push('--json', '--skip-git-repo-check');
  if (spec.model) args.push('-m', spec.model);
  // Unattended like Claude's bypassPermissions: `exec` never asks, and its sandbox would keep the gate runner's
  // state and the network away; the guard hook and the kernel's protected paths are the run's limits.
  if (!extra.some((a) => SANDBOX_ARGS.test(a))) args.push('--dangerously-bypass-approvals-and-sandbox');
  const hooks = codexHookOverride(spec.settings);
  // The run's hook is ralph's own, made for this run: it need not be reviewed in Codex's hook browser first.
  if (hooks) args.push('-c', hooks, '--dangerously-bypass-hook-trust');
  args.push(...extra);
  // `--` keeps a prompt that starts with "-" from being read as an option.
  args.push('--', spec.prompt);
  return { file: spec.binary || 'codex', args, env: mergeEnv(spec), cwd: spec.cwd };
}

function codexRecognise(line: Record<string, unknown>): 0 | 1 | 2 {
  const t = line.type;
  if (typeof t !== 'string') return 0;
  if (t === 'thread.started' || t === 'turn.started' || t === 'turn.completed' || t === 'turn.failed') return 2;
  if (t.startsWith('item.') && line.item && typeof line.item === 'object') return 2;
  return t === 'error' && typeof line.message === 'string' && Object.keys(line).length === 2 ? 1 : 0;
}

/** The `codex` adapter (OpenAI Codex CLI 0.171). */
export const codexAdapter: AgentAdapter = {
  name: 'codex',
  defaultBinary: 'codex',
  configKey: 'codexPath',
  guardHook: true,
  estimatesContext: true,
  invocation: codexInvocation,
  createMapper: () => new CodexMapper(),
  recognise: codexRecognise,
};
