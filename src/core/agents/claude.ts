import { z } from 'zod';
import { type AgentEvent, type ModelUsage, type TokenCounts, type ToolKind, ev, rawTypeOf } from '../stream/events';
import {
  type AgentAdapter,
  type Invocation,
  type IterationSpec,
  type StreamMapper,
  contentText,
  mergeEnv,
} from './adapter';
import {
  arrayOrNull,
  contentOrNull,
  issueOf,
  numOrNull,
  optNum as n,
  optStr as s,
  recordOrNull,
  strOrNull,
} from './lineParts';

/**
 * The Claude Code CLI (`claude -p --output-format stream-json --verbose`), agent-streams.md §1–§2.
 * Wire schemas below validate only the fields we read. They are lenient: unknown fields are accepted and left
 * untouched on the decoded line (zod's default strip mode does not copy them, which keeps validation cheap on
 * 4 KB init and result lines: bench/stream.bench.ts), numbers are int or float (anything else reads as
 * absent), and a line of a known type that fails validation becomes an `unknown` event carrying the line and
 * the zod issue, never an exception.
 */

/** The token fields of a usage block (every field lenient: a non-number reads as absent). */
interface Usage {
  input_tokens: number | null;
  output_tokens: number | null;
  cache_creation_input_tokens: number | null;
  cache_read_input_tokens: number | null;
}

/** A usage block: an object's four token fields, or null when it is absent or not an object. */
function usageOf(v: unknown): Usage | null {
  const u = recordOrNull(v);
  return u
    ? {
        input_tokens: numOrNull(u.input_tokens),
        output_tokens: numOrNull(u.output_tokens),
        cache_creation_input_tokens: numOrNull(u.cache_creation_input_tokens),
        cache_read_input_tokens: numOrNull(u.cache_read_input_tokens),
      }
    : null;
}

/**
 * `modelUsage` of a result: each model's six fields, or null when it is not an object or any model's entry is not an
 * object.
 */
function modelUsageOf(v: unknown): Record<string, ModelUsage> | null {
  const r = recordOrNull(v);
  if (!r) return null;
  const out: Record<string, ModelUsage> = {};
  for (const [model, entry] of Object.entries(r)) {
    const mu = recordOrNull(entry);
    if (!mu) return null;
    out[model] = {
      tokens: {
        input: numOrNull(mu.inputTokens) ?? 0,
        output: numOrNull(mu.outputTokens) ?? 0,
        cacheRead: numOrNull(mu.cacheReadInputTokens) ?? 0,
        cacheCreation: numOrNull(mu.cacheCreationInputTokens) ?? 0,
      },
      costUsd: numOrNull(mu.costUSD) ?? 0,
      contextWindow: numOrNull(mu.contextWindow),
    };
  }
  return out;
}

const apiRetrySchema = z.object({ attempt: n, max_retries: n, retry_delay_ms: n, error_status: n, error: s });

const compactSchema = z.object({
  compact_metadata: z.object({ trigger: s, pre_tokens: n, post_tokens: n }).nullish().catch(null),
});

const rateLimitSchema = z.object({
  rate_limit_info: z.object({ status: z.string(), resetsAt: n, rateLimitType: s, utilization: n, overageStatus: s }),
});

export function claudeTokens(u: Usage | null | undefined): TokenCounts {
  return {
    input: u?.input_tokens ?? 0,
    output: u?.output_tokens ?? 0,
    cacheRead: u?.cache_read_input_tokens ?? 0,
    cacheCreation: u?.cache_creation_input_tokens ?? 0,
  };
}

/** Claude tool names → kinds (Bash is the shell; Edit-like tools write). */
export function claudeToolKind(name: string): ToolKind {
  switch (name) {
    case 'Bash':
      return 'shell';
    case 'Read':
      return 'read';
    case 'Write':
      return 'write';
    case 'Edit':
    case 'MultiEdit':
    case 'NotebookEdit':
      return 'edit';
    default:
      return 'other';
  }
}

const SYNTHETIC_MODEL = '<synthetic>';

function unknownEvent(line: Record<string, unknown>, issue?: string, subagent = false): AgentEvent {
  return ev({ type: 'unknown', rawType: rawTypeOf(line), raw: line, ...(issue ? { issue } : {}) }, { subagent });
}

/** Per-stream state: tool ids → names, so results name their tool. */
class ClaudeMapper implements StreamMapper {
  private readonly toolNames = new Map<string, string>();

  map(line: Record<string, unknown>): AgentEvent[] {
    const type = line.type;
    switch (type) {
      case 'assistant':
        return this.assistant(line);
      case 'user':
        return this.user(line);
      case 'result':
        return this.result(line);
      case 'rate_limit_event':
        return this.rateLimit(line);
      case 'system':
        return this.system(line);
      case undefined:
        // Trimmed result fragments (corpus 11) have no `type` but are plainly a result.
        if (typeof line.is_error === 'boolean' && ('result' in line || 'modelUsage' in line)) return this.result(line);
        return [unknownEvent(line)];
      default:
        return [unknownEvent(line, undefined, typeof line.parent_tool_use_id === 'string')];
    }
  }

  private assistant(line: Record<string, unknown>): AgentEvent[] {
    const msg = recordOrNull(line.message);
    if (!msg) return [unknownEvent(line, 'message: expected an object')];
    const content = contentOrNull(msg.content);
    if (content === null) return [unknownEvent(line, 'message.content: expected a string or an array of typed blocks')];
    const model = strOrNull(msg.model);
    const marks = { subagent: typeof line.parent_tool_use_id === 'string', synthetic: model === SYNTHETIC_MODEL };
    const messageId = strOrNull(msg.id);
    const out: AgentEvent[] = [];
    const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : content;
    for (const b of blocks) {
      const block = b as Record<string, unknown>;
      if (block.type === 'text' && typeof block.text === 'string') {
        out.push(ev({ type: 'text', text: block.text, messageId }, marks));
      } else if (block.type === 'thinking') {
        out.push(
          ev({ type: 'thinking', text: typeof block.thinking === 'string' ? block.thinking : '', messageId }, marks),
        );
      } else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
        this.toolNames.set(block.id, block.name);
        const input =
          block.input && typeof block.input === 'object' && !Array.isArray(block.input)
            ? (block.input as Record<string, unknown>)
            : {};
        out.push(
          ev(
            { type: 'toolUse', id: block.id, name: block.name, kind: claudeToolKind(block.name), input, messageId },
            marks,
          ),
        );
      } else {
        out.push(ev({ type: 'unknown', rawType: `assistant/${String(block.type)}`, raw: block }, marks));
      }
    }
    const error = strOrNull(line.error);
    if (error) {
      const text = contentText(content);
      out.push(
        ev({ type: 'error', message: text || error, code: error, status: numOrNull(line.api_error_status) }, marks),
      );
    }
    const usage = usageOf(msg.usage);
    if (usage && !marks.synthetic) {
      out.push(ev({ type: 'usage', source: 'message', messageId, model, tokens: claudeTokens(usage) }, marks));
    }
    return out;
  }

  private user(line: Record<string, unknown>): AgentEvent[] {
    const msg = recordOrNull(line.message);
    if (!msg) return [unknownEvent(line, 'message: expected an object')];
    const content = contentOrNull(msg.content);
    if (content === null) return [unknownEvent(line, 'message.content: expected a string or an array of typed blocks')];
    const marks = { subagent: typeof line.parent_tool_use_id === 'string', synthetic: line.isSynthetic === true };
    const out: AgentEvent[] = [];
    if (Array.isArray(content)) {
      for (const b of content) {
        const block = b as Record<string, unknown>;
        if (block.type === 'tool_result' && typeof block.tool_use_id === 'string') {
          const name = this.toolNames.get(block.tool_use_id) ?? null;
          out.push(
            ev(
              {
                type: 'toolResult',
                id: block.tool_use_id,
                name,
                kind: name ? claudeToolKind(name) : 'other',
                isError: block.is_error === true,
                output: contentText(block.content),
                exitCode: null,
              },
              marks,
            ),
          );
        }
      }
    }
    // Prompt echoes and other user text are not modelled: passed on as unknown, never dropped.
    return out.length ? out : [unknownEvent(line, undefined, marks.subagent)];
  }

  private result(line: Record<string, unknown>): AgentEvent[] {
    const errors = arrayOrNull(line.errors);
    const usage = usageOf(line.usage);
    return [
      ev({
        type: 'result',
        subtype: strOrNull(line.subtype) ?? 'success',
        isError: line.is_error === true,
        text: strOrNull(line.result),
        errors: (errors ?? []).map((e) => (typeof e === 'string' ? e : contentText(e))),
        numTurns: numOrNull(line.num_turns),
        durationMs: numOrNull(line.duration_ms),
        costUsd: numOrNull(line.total_cost_usd),
        usage: usage ? claudeTokens(usage) : null,
        modelUsage: modelUsageOf(line.modelUsage),
        apiErrorStatus: numOrNull(line.api_error_status),
        terminalReason: strOrNull(line.terminal_reason),
        stopReason: strOrNull(line.stop_reason),
        sessionId: strOrNull(line.session_id),
        permissionDenials: arrayOrNull(line.permission_denials)?.length ?? 0,
      }),
    ];
  }

  private rateLimit(line: Record<string, unknown>): AgentEvent[] {
    const p = rateLimitSchema.safeParse(line);
    if (!p.success) return [unknownEvent(line, issueOf(p.error))];
    const i = p.data.rate_limit_info;
    return [
      ev({
        type: 'rateLimit',
        status: i.status,
        resetsAt: i.resetsAt != null ? i.resetsAt * 1000 : null,
        limitType: i.rateLimitType ?? null,
        utilization: i.utilization ?? null,
        overageStatus: i.overageStatus ?? null,
      }),
    ];
  }

  private system(line: Record<string, unknown>): AgentEvent[] {
    switch (line.subtype) {
      case 'init':
        return [
          ev(
            {
              type: 'init',
              sessionId: strOrNull(line.session_id),
              model: strOrNull(line.model),
              cwd: strOrNull(line.cwd),
              tools: (arrayOrNull(line.tools) ?? []).filter((t): t is string => typeof t === 'string'),
              permissionMode: strOrNull(line.permissionMode),
              agentVersion: strOrNull(line.claude_code_version),
            },
            { subagent: typeof line.parent_tool_use_id === 'string' },
          ),
        ];
      case 'api_retry': {
        const p = apiRetrySchema.safeParse(line);
        if (!p.success) return [unknownEvent(line, issueOf(p.error))];
        const r = p.data;
        return [
          ev({
            type: 'apiRetry',
            attempt: r.attempt ?? 0,
            maxRetries: r.max_retries ?? 0,
            delayMs: r.retry_delay_ms ?? 0,
            status: r.error_status ?? null,
            error: r.error ?? null,
          }),
        ];
      }
      case 'compact_boundary': {
        const p = compactSchema.safeParse(line);
        if (!p.success) return [unknownEvent(line, issueOf(p.error))];
        const c = p.data.compact_metadata;
        return [
          ev({
            type: 'compactBoundary',
            trigger: c?.trigger ?? null,
            preTokens: c?.pre_tokens ?? null,
            postTokens: c?.post_tokens ?? null,
          }),
        ];
      }
      default:
        return [unknownEvent(line, undefined, typeof line.parent_tool_use_id === 'string')];
    }
  }
}

function claudeInvocation(spec: IterationSpec): Invocation {
  const args = ['-p', '--output-format', 'stream-json', '--verbose'];
  if (spec.model) args.push('--model', spec.model);
  if (spec.permissionMode) args.push('--permission-mode', spec.permissionMode);
  if (spec.appendSystemPrompt) args.push('--append-system-prompt', spec.appendSystemPrompt);
  if (spec.maxTurns !== undefined) args.push('--max-turns', String(spec.maxTurns));
  if (spec.resume) args.push('--resume', spec.resume);
  if (spec.settings) args.push('--settings', JSON.stringify(spec.settings));
  if (spec.projectSettings === 'ignore') args.push('--setting-sources', 'user', '--strict-mcp-config');
  args.push(...(spec.extraArgs ?? []));
  // `--` keeps a prompt that starts with "-" from being read as an option.
  args.push('--', spec.prompt);
  return { file: spec.binary || 'claude', args, env: mergeEnv(spec), cwd: spec.cwd };
}

function claudeRecognise(line: Record<string, unknown>): 0 | 1 | 2 {
  // Qwen Code writes Claude's shape: its init names its own version (qwen.ts).
  if ('qwen_code_version' in line) return 0;
  const t = line.type;
  if ('claude_code_version' in line || t === 'rate_limit_event' || t === 'stream_event' || 'parent_tool_use_id' in line)
    return 2;
  if (t === 'result' || (t === undefined && typeof line.is_error === 'boolean')) {
    return 'total_cost_usd' in line || 'num_turns' in line || 'modelUsage' in line
      ? 2
      : typeof line.is_error === 'boolean'
        ? 1
        : 0;
  }
  if (t === 'system') {
    const st = line.subtype;
    if (st === 'api_retry' || st === 'compact_boundary' || (typeof st === 'string' && st.startsWith('hook_'))) return 2;
    return st === 'init' && Array.isArray(line.tools) ? 2 : st === 'init' ? 1 : 0;
  }
  if (t === 'assistant' || t === 'user') {
    const m = line.message as { id?: unknown } | undefined;
    if (m && typeof m === 'object') return typeof m.id === 'string' || 'uuid' in line ? 2 : 1;
  }
  return 0;
}

/**
 * The warning for the Claude CLI's refusal to bypass permissions as root (stream/classify.ts `ROOT_REFUSAL_REASON`), for `ralph doctor`:
 * a sentence when `uid` is 0, the agent is claude, the permission mode is `bypassPermissions` and `IS_SANDBOX` is not
 * `1` (the CLI's own exemption); else null. Pure.
 */
export function claudeRootBypassWarning(
  uid: number | undefined,
  agent: string,
  permissionMode: string,
  isSandbox: string | undefined,
): string | null {
  if (uid !== 0 || agent !== 'claude' || permissionMode !== 'bypassPermissions' || isSandbox === '1') return null;
  return 'running as root: the Claude CLI refuses to skip permission prompts as root, so `ralph run` would fail at once. Run ralph as a normal (non-root) user, or, only on a disposable sandbox or container, set IS_SANDBOX=1';
}

/** The `claude` adapter (Claude Code CLI 2.x). */
export const claudeAdapter: AgentAdapter = {
  name: 'claude',
  defaultBinary: 'claude',
  configKey: 'claudePath',
  guardHook: true,
  estimatesContext: false,
  invocation: claudeInvocation,
  createMapper: () => new ClaudeMapper(),
  recognise: claudeRecognise,
};
