import { type AgentEvent, type ModelUsage, type TokenCounts, type ToolKind, ev } from '../stream/events';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import type { CommandPolicy } from '../gates/commandPolicy';
import { writeTextAtomic } from '../store/atomicWrite';
import {
  type AgentAdapter,
  type GuardAdditions,
  type GuardPreparation,
  type Invocation,
  type IterationSpec,
  type StreamMapper,
  mergeEnv,
} from './adapter';
import { asRecord, numOrNull, recordOrNull, strOrNull, textOf, unknownEvent } from './lineParts';

/**
 * Google's Gemini CLI (`gemini --prompt=<p> --output-format stream-json --skip-trust --approval-mode yolo`),
 * more-agents.md and agent-streams.md §6, as recorded from 0.61 (test/fixtures/streams/gemini/recorded/).
 *
 * - Lines: `init` (session id, model: `auto` when the model router picks it), `message` (`role: user` echoes the
 *   prompt and is never agent text; `role: assistant` arrives as `delta: true` pieces), `tool_use` / `tool_result`
 *   correlated by `tool_id`, `error` (`severity` warning or error: loop detected, turn limit, blocked, invalid stream),
 *   and one `result` (`status: success | error`, `error.{type,message}` on error, `stats`).
 * - Text: the assistant's pieces are joined into one text event per segment (a segment ends at a tool call, an error
 *   or the result), so a completion tag split across pieces is seen whole, and the final segment is the result's text
 *   (the agent's own final message: never the prompt echo, a tool result or a thought).
 * - Usage: only in `result.stats`, summed over every API call of the turn, the model router's call included (its own
 *   entry in `stats.models`): spend, never context. `input_tokens` includes `cached`; `input` = input − cached;
 *   `total_tokens` also counts thinking tokens, billed as output. There is no per-call usage in the stream, so the
 *   context is the byte estimate during the turn (`estimatesContext`), like cursor-agent's.
 * - Window: 1 048 576 tokens for every `gemini-*` model (Google's model cards for 2.x and 3.x).
 * - Failure: the CLI throws on an API error after its own retries and writes a `result` with `status: error` whose
 *   `error.message` is `[API Error: <message>]` (`error.type` is mostly `unknown`); the exit code is the HTTP status
 *   & 255 (429 → 173, 500 → 244) or its own (1, 41 auth, 42 input, 52 config, 53 turn limit, 130 cancelled). SIGTERM
 *   ends it with exit 0 and no result. A quota error (429) becomes a rejected rate limit whose reset is the result's
 *   timestamp plus the retry delay the message gives ("Suggested retry after 3600s.", "Please retry in 41.2s"), or the
 *   next midnight Pacific for a daily quota ({@link geminiQuotaResetsAt}).
 * - A shell's exit code is not in the stream (the tool result shows its output only).
 */

/** The token fields of a `stats` block or of one of its models (each lenient: a non-number reads as null). */
interface GeminiTokenFields {
  total_tokens: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cached: number | null;
  input: number | null;
}

/** A token block's fields, or null when it is not an object. */
function tokenFieldsOf(v: unknown): GeminiTokenFields | null {
  const t = recordOrNull(v);
  return t
    ? {
        total_tokens: numOrNull(t.total_tokens),
        input_tokens: numOrNull(t.input_tokens),
        output_tokens: numOrNull(t.output_tokens),
        cached: numOrNull(t.cached),
        input: numOrNull(t.input),
      }
    : null;
}

/** An `error` object's type and message, or null when it is not an object. */
function errorOf(v: unknown): { type: string | null; message: string | null } | null {
  const e = recordOrNull(v);
  return e ? { type: strOrNull(e.type), message: strOrNull(e.message) } : null;
}

/** Context window of a Gemini model, tokens: 1 048 576 for `gemini-*` (2.x, 3.x), null when the name says nothing. */
export function geminiContextWindow(model: string | null | undefined): number | null {
  return model && /^gemini-/i.test(model) ? 1_048_576 : null;
}

/** The Gemini CLI's tool names → kinds (its built-in tools as of 0.61). */
export function geminiToolKind(name: string): ToolKind {
  switch (name) {
    case 'run_shell_command':
      return 'shell';
    case 'read_file':
    case 'read_many_files':
      return 'read';
    case 'write_file':
      return 'write';
    case 'replace':
    case 'edit':
      return 'edit';
    default:
      return 'other';
  }
}

/** Token counts of a `stats` block (or one of its models): uncached input, cache read, output with thinking. */
export function geminiTokens(t: GeminiTokenFields): TokenCounts {
  const prompt = t.input_tokens ?? 0;
  const cached = t.cached ?? 0;
  const input = t.input ?? Math.max(0, prompt - cached);
  const output = Math.max(t.output_tokens ?? 0, (t.total_tokens ?? 0) - prompt);
  return { input, output, cacheRead: cached, cacheCreation: 0 };
}

/** Seconds of a retry delay in a Gemini error text ("Suggested retry after 3600s.", "Please retry in 41.2s"), or null. */
export function geminiRetryDelaySeconds(text: string): number | null {
  const m = /(?:retry after|retry in)\s+([0-9.]+)\s*(ms|s)\b/i.exec(text);
  if (!m) return null;
  const v = Number(m[1]);
  if (!Number.isFinite(v)) return null;
  return m[2] === 'ms' ? v / 1000 : v;
}

/**
 * The HTTP status behind a Gemini CLI error text, or null: the `"code":500` of a Google error body the CLI quotes, a
 * quota text (its own "You have exhausted your daily quota", the API's "Resource has been exhausted", the advice it
 * appends to every 429) or a status name.
 */
export function geminiErrorStatus(message: string): number | null {
  const code = /"code"\s*:\s*([45]\d\d)\b/.exec(message);
  if (code) return Number(code[1]);
  if (
    /exhausted your (?:daily )?quota|resource has been exhausted|RESOURCE_EXHAUSTED|request a quota increase/i.test(
      message,
    )
  )
    return 429;
  if (/UNAUTHENTICATED|API key not valid/i.test(message)) return 401;
  if (/PERMISSION_DENIED/.test(message)) return 403;
  if (/\bUNAVAILABLE\b/.test(message)) return 503;
  if (/\bINTERNAL\b/.test(message)) return 500;
  return null;
}

/** Built once: constructing a DateTimeFormat costs far more than formatting with it. */
let pacificClock: Intl.DateTimeFormat | undefined;
/**
 * The last Pacific day looked up, [from, to) in epoch ms: `formatToParts` costs ~20 µs, and a run asks about one day.
 * Its first answer holds for the whole day; on a daylight-saving day a later time would have given an hour more or
 * less, which the rule above already allows.
 */
let pacificDay: { from: number; to: number } | undefined;

/**
 * When a Gemini quota error resets, epoch ms: `at` plus the retry delay the text gives; for a daily quota without one,
 * the next midnight in America/Los_Angeles (Google: "requests per day quotas reset at midnight Pacific time"; a
 * daylight-saving change that day moves it by an hour); otherwise null.
 */
export function geminiQuotaResetsAt(text: string, at: number): number | null {
  if (!Number.isFinite(at)) return null;
  const delay = geminiRetryDelaySeconds(text);
  if (delay !== null) return Math.round(at + delay * 1000);
  if (!/daily quota|per ?day/i.test(text)) return null;
  if (pacificDay && at >= pacificDay.from && at < pacificDay.to) return pacificDay.to;
  pacificClock ??= new Intl.DateTimeFormat('en-US', {
    timeZone: 'America/Los_Angeles',
    hourCycle: 'h23',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const parts = pacificClock.formatToParts(new Date(at));
  const part = (t: string): number => Number(parts.find((p) => p.type === t)?.value ?? 0);
  const sinceMidnight = ((part('hour') * 60 + part('minute')) * 60 + part('second')) * 1000 + (at % 1000);
  pacificDay = { from: at - sinceMidnight, to: at - sinceMidnight + 86_400_000 };
  return pacificDay.to;
}

class GeminiMapper implements StreamMapper {
  private readonly toolNames = new Map<string, string>();
  private sessionId: string | null = null;
  private model: string | null = null;
  /** Assistant pieces of the current segment. */
  private pieces: string[] = [];
  /** The last segment's text: the final message once the result arrives. */
  private lastSegment: string | null = null;

  map(line: Record<string, unknown>): AgentEvent[] {
    switch (line.type) {
      case 'init': {
        this.sessionId = strOrNull(line.session_id);
        this.model = strOrNull(line.model);
        const init = ev({
          type: 'init',
          sessionId: this.sessionId,
          model: this.model,
          cwd: null,
          tools: [],
          permissionMode: null,
          agentVersion: null,
        });
        return [init];
      }
      case 'message': {
        // The prompt echo (role user) is not the agent's text: it must never carry a completion tag.
        if (line.role !== 'assistant') return [];
        this.pieces.push(textOf(line.content));
        return line.delta === false ? this.flush() : [];
      }
      case 'tool_use': {
        const id = line.tool_id;
        const name = line.tool_name;
        if (typeof name !== 'string') return [unknownEvent(line, 'tool_name: expected a string')];
        if (typeof id !== 'string') return [unknownEvent(line, 'tool_id: expected a string')];
        this.toolNames.set(id, name);
        return [
          ...this.flush(),
          ev({
            type: 'toolUse',
            id,
            name,
            kind: geminiToolKind(name),
            input: asRecord(line.parameters),
            messageId: null,
          }),
        ];
      }
      case 'tool_result': {
        const id = line.tool_id;
        if (typeof id !== 'string') return [unknownEvent(line, 'tool_id: expected a string')];
        const name = this.toolNames.get(id) ?? null;
        this.toolNames.delete(id);
        const isError = line.status === 'error';
        const output = [textOf(line.output), isError ? (errorOf(line.error)?.message ?? '') : '']
          .filter(Boolean)
          .join('\n');
        return [
          ev({
            type: 'toolResult',
            id,
            name,
            kind: geminiToolKind(name ?? ''),
            isError,
            output,
            exitCode: null,
          }),
        ];
      }
      case 'error':
        return [
          ...this.flush(),
          ev({ type: 'error', message: strOrNull(line.message) ?? '', code: strOrNull(line.severity), status: null }),
        ];
      case 'result':
        return this.result(line);
      default:
        return [unknownEvent(line)];
    }
  }

  /** The stream ended without a result (killed, crashed): the text seen so far is still the agent's. */
  end(): AgentEvent[] {
    return this.flush();
  }

  private flush(): AgentEvent[] {
    if (!this.pieces.length) return [];
    const text = this.pieces.join('');
    this.pieces = [];
    if (!text) return [];
    this.lastSegment = text;
    return [ev({ type: 'text', text, messageId: null })];
  }

  private result(line: Record<string, unknown>): AgentEvent[] {
    const out = this.flush();
    const isError = line.status === 'error';
    const error = errorOf(line.error);
    const errorText = error?.message ?? '';
    const stats = recordOrNull(line.stats);
    const statTokens = tokenFieldsOf(stats);
    const usage = statTokens ? geminiTokens(statTokens) : null;
    const models = recordOrNull(stats?.models);
    let modelUsage: Record<string, ModelUsage> | null = null;
    if (models) {
      modelUsage = {};
      for (const [name, entry] of Object.entries(models)) {
        const t = tokenFieldsOf(entry);
        if (t) modelUsage[name] = { tokens: geminiTokens(t), costUsd: 0, contextWindow: geminiContextWindow(name) };
      }
    }
    if (usage && (usage.input || usage.output || usage.cacheRead))
      out.push(ev({ type: 'usage', source: 'result', messageId: null, model: this.model, tokens: usage }));
    const timestamp = strOrNull(line.timestamp);
    const status = isError ? geminiErrorStatus(errorText) : null;
    if (isError && status === 429) {
      out.push(
        ev({
          type: 'rateLimit',
          status: 'rejected',
          resetsAt: geminiQuotaResetsAt(errorText, timestamp ? Date.parse(timestamp) : NaN),
          limitType: /daily/i.test(errorText) ? 'daily' : 'quota',
          utilization: null,
          overageStatus: null,
        }),
      );
    }
    out.push(
      ev({
        type: 'result',
        subtype: isError ? 'error' : 'success',
        isError,
        text: isError ? errorText || null : (this.lastSegment ?? ''),
        errors: isError && errorText ? [errorText] : [],
        numTurns: null,
        durationMs: numOrNull(stats?.duration_ms),
        costUsd: null,
        usage,
        modelUsage,
        apiErrorStatus: status,
        terminalReason: isError ? (error?.type ?? null) : null,
        stopReason: null,
        sessionId: this.sessionId,
        permissionDenials: 0,
      }),
    );
    return out;
  }
}

/**
 * The `--policy` file of the run's `[deny]` rows: one policy-engine rule each (bundled docs,
 * reference/policy-engine.md): `run_shell_command` with the row's `commandPrefix`, decision `deny` at the top priority
 * of the user tier (above the yolo mode's allow-all of the default tier; checked for each command of a chained
 * call), and the row's reason as the message the model gets. Empty without rows. Pure.
 */
export function geminiGuardPolicy(policy: CommandPolicy | null): string {
  return (policy?.deny ?? [])
    .map((r) =>
      [
        '[[rule]]',
        'toolName = "run_shell_command"',
        `commandPrefix = ${JSON.stringify(r.prefix)}`,
        'decision = "deny"',
        'priority = 999',
        `denyMessage = ${JSON.stringify(`Ralph guard: ${r.reason || 'denied'} (.ralph/command-policy line ${r.line}: ${r.prefix})`)}`,
        '',
      ].join('\n'),
    )
    .join('\n');
}

/**
 * Writes the policy file of the run's `[deny]` rows into `dir` and returns the `--policy` argument that loads it beside
 * the user's own policies (none without rows). Gemini CLI reads hooks only from settings files, and of those only the
 * system layer could be pointed elsewhere, which it ignores unless root owns the file and every folder above it.
 */
async function geminiPrepareGuard(g: GuardPreparation): Promise<GuardAdditions> {
  const text = geminiGuardPolicy(g.policy);
  if (!text) return {};
  const file = path.join(g.dir, 'gemini-policy.toml');
  await mkdir(g.dir, { recursive: true });
  await writeTextAtomic(file, text, { mode: 0o600 });
  return { args: [`--policy=${file}`] };
}

function geminiInvocation(spec: IterationSpec): Invocation {
  // `--prompt=<p>`: the `=` form keeps a prompt that starts with "-" from being read as an option.
  // `--skip-trust`: without it an untrusted folder downgrades yolo; `--approval-mode yolo`: headless, the shell and
  // write tools are offered to the model only when every call is approved (more-agents.md).
  const args = ['--output-format', 'stream-json', '--skip-trust', '--approval-mode', 'yolo'];
  if (spec.model) args.push('--model', spec.model);
  if (spec.resume) args.push('--resume', spec.resume);
  args.push(...(spec.guardArgs ?? []), ...(spec.extraArgs ?? []));
  args.push(`--prompt=${spec.prompt}`);
  return { file: spec.binary || 'gemini', args, env: mergeEnv(spec), cwd: spec.cwd };
}

function geminiRecognise(line: Record<string, unknown>): 0 | 1 | 2 {
  const t = line.type;
  if (t === 'tool_use' && 'tool_id' in line) return 2;
  if (t === 'tool_result' && 'tool_id' in line) return 2;
  if (t === 'message' && typeof line.role === 'string' && 'timestamp' in line) return 2;
  if (t === 'result' && typeof line.status === 'string' && ('stats' in line || 'error' in line)) return 2;
  if (t === 'init' && 'session_id' in line && 'timestamp' in line) return 1;
  return 0;
}

/** The Gemini CLI adapter. */
export const geminiAdapter: AgentAdapter = {
  name: 'gemini',
  defaultBinary: 'gemini',
  configKey: 'geminiPath',
  guardHook: false,
  prepareGuard: geminiPrepareGuard,
  estimatesContext: true,
  invocation: geminiInvocation,
  createMapper: () => new GeminiMapper(),
  recognise: geminiRecognise,
};
