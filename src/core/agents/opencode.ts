import { type AgentEvent, type TokenCounts, type ToolKind, addTokens, ev, zeroTokens } from '../stream/events';
import type { CommandPolicy } from '../gates/commandPolicy';
import { type AgentAdapter, type Invocation, type IterationSpec, type StreamMapper, mergeEnv } from './adapter';
import { GUARD_SUPPORT } from './guardSupport';
import { limitRejected, limitResetOf } from './limitReset';
import { asRecord, numOrNull, recordOrNull, sessionInit, strOrNull, textOf, unknownEvent } from './lineParts';

/**
 * opencode (`opencode run --format json --auto -- <prompt>`), agent-streams.md §6 and more-agents.md, as recorded from
 * 1.18.33 (test/fixtures/streams/opencode/recorded/). Every line is `{type, timestamp (ms), sessionID, part}`:
 *
 * - `step_start` opens one step (one API call); `text` is one finished text part of the agent's reply (`part.text`);
 *   `reasoning` a thought; `tool_use` one finished tool call (`part.tool`, `part.callID`, `part.state.{status, input,
 *   output, error, metadata.exit}`), mapped to a tool use and its result at once; `step_finish` closes the step with
 *   `part.reason` (`tool-calls` when the model called tools, `stop` at the end of the turn) and its usage; `error`
 *   the failure the CLI gave up on (`error.data.statusCode`, `error.data.message`) after its own retries.
 * - Usage: per step in `step_finish.part.tokens`: `input` is the uncached input, `cache.read` / `cache.write` the
 *   cached parts, `output` includes `reasoning`. Each step is one API call, so its input is the context of that call
 *   (live, not estimated); the title request opencode makes with its small model is not a step and never appears.
 *   The turn's total is the sum of the steps (there is no whole-turn total), carried by the result this mapper makes.
 * - End: there is no result line. A `step_finish` whose reason is not `tool-calls` ends the turn: the mapper emits
 *   the result there (success; the text of the last text part is the final message). An `error` line has no result
 *   after it (exit 1): its HTTP status classifies the iteration. The stream is known to drop lines in some headless
 *   versions, so the exit code still decides when no result came (spawn.ts).
 * - Session id: `sessionID` (`--session <id>` resumes it).
 */

/** A step's `part.tokens` as opencode writes it (a missing or non-numeric count reads as absent). */
export interface OpencodeTokens {
  input?: unknown;
  output?: unknown;
  reasoning?: unknown;
  total?: unknown;
  cache?: unknown;
}

/** A step's `tokens` → counts: `input` is already the uncached part; reasoning is a part of output. */
export function opencodeTokens(t: OpencodeTokens): TokenCounts {
  const cache = recordOrNull(t.cache);
  return {
    input: numOrNull(t.input) ?? 0,
    output: numOrNull(t.output) ?? 0,
    cacheRead: numOrNull(cache?.read) ?? 0,
    cacheCreation: numOrNull(cache?.write) ?? 0,
  };
}

/** opencode's built-in tool names → kinds (1.18). */
export function opencodeToolKind(name: string): ToolKind {
  switch (name) {
    case 'bash':
      return 'shell';
    case 'read':
      return 'read';
    case 'write':
      return 'write';
    case 'edit':
    case 'patch':
    case 'multiedit':
      return 'edit';
    default:
      return 'other';
  }
}

/** The HTTP status an opencode error message names ("… status code 500 …", "429 Too Many Requests"), or null. */
export function opencodeErrorStatus(message: string): number | null {
  const m = /\b([45]\d\d)\b/.exec(message);
  return m ? Number(m[1]) : null;
}

class OpencodeMapper implements StreamMapper {
  private sessionId: string | null = null;
  private initDone = false;
  private total: TokenCounts = zeroTokens();
  private steps = 0;
  private lastText: string | null = null;
  /** The first line's `timestamp`, ms: the turn's duration runs from it to the finishing step. */
  private startedAt: number | null = null;

  map(line: Record<string, unknown>): AgentEvent[] {
    const out: AgentEvent[] = [];
    if (this.startedAt === null && typeof line.timestamp === 'number') this.startedAt = line.timestamp;
    if (!this.initDone && typeof line.sessionID === 'string') {
      this.initDone = true;
      this.sessionId = line.sessionID;
      out.push(sessionInit(this.sessionId));
    }
    switch (line.type) {
      case 'step_start':
        return out;
      case 'text': {
        const part = recordOrNull(line.part);
        if (!part) return [...out, unknownEvent(line, 'part: expected an object')];
        const text = part.text;
        if (typeof text !== 'string') return [...out, unknownEvent(line, 'part.text: expected a string')];
        if (!text) return out;
        this.lastText = text;
        out.push(ev({ type: 'text', text, messageId: strOrNull(part.messageID) }));
        return out;
      }
      case 'reasoning': {
        const text = textOf(asRecord(line.part).text);
        if (text) out.push(ev({ type: 'thinking', text, messageId: null }));
        return out;
      }
      case 'tool_use': {
        const part = recordOrNull(line.part);
        if (!part) return [...out, unknownEvent(line, 'part: expected an object')];
        const name = part.tool;
        const id = part.callID;
        const state = recordOrNull(part.state);
        if (typeof name !== 'string') return [...out, unknownEvent(line, 'part.tool: expected a string')];
        if (typeof id !== 'string') return [...out, unknownEvent(line, 'part.callID: expected a string')];
        if (!state) return [...out, unknownEvent(line, 'part.state: expected an object')];
        const kind = opencodeToolKind(name);
        const exit = asRecord(state.metadata).exit;
        const exitCode = typeof exit === 'number' ? exit : null;
        const status = strOrNull(state.status);
        const isError = status === 'error' || (exitCode !== null && exitCode !== 0);
        out.push(
          ev({
            type: 'toolUse',
            id,
            name,
            kind,
            input: asRecord(state.input),
            messageId: strOrNull(part.messageID),
          }),
          ev({
            type: 'toolResult',
            id,
            name,
            kind,
            isError,
            output: [textOf(state.output), status === 'error' ? (strOrNull(state.error) ?? '') : '']
              .filter(Boolean)
              .join('\n'),
            exitCode,
          }),
        );
        return out;
      }
      case 'step_finish':
        return [...out, ...this.stepFinish(line)];
      case 'error': {
        const error = recordOrNull(line.error);
        const data = recordOrNull(error?.data);
        const name = strOrNull(error?.name);
        const message = strOrNull(data?.message) ?? name ?? 'error';
        const status = numOrNull(data?.statusCode) ?? opencodeErrorStatus(message);
        // A usage limit's reset: in its message or the provider's response headers, which opencode passes on.
        const headers = asRecord(data?.responseHeaders);
        const now = typeof line.timestamp === 'number' ? line.timestamp : Date.now();
        out.push(...limitRejected(limitResetOf({ text: message, status, now, headers })));
        out.push(ev({ type: 'error', message, code: name, status }));
        return out;
      }
      default:
        return [...out, unknownEvent(line)];
    }
  }

  private stepFinish(line: Record<string, unknown>): AgentEvent[] {
    const part = recordOrNull(line.part);
    if (!part) return [unknownEvent(line, 'part: expected an object')];
    const out: AgentEvent[] = [];
    this.steps++;
    const stepTokens = recordOrNull(part.tokens);
    if (stepTokens) {
      const tokens = opencodeTokens(stepTokens);
      this.total = addTokens(this.total, tokens);
      out.push(ev({ type: 'usage', source: 'message', messageId: strOrNull(part.messageID), model: null, tokens }));
    }
    const reason = strOrNull(part.reason);
    if (reason === 'tool-calls') return out;
    out.push(
      ev({
        type: 'result',
        subtype: 'success',
        isError: false,
        text: this.lastText ?? '',
        errors: [],
        numTurns: this.steps,
        durationMs:
          this.startedAt !== null && typeof line.timestamp === 'number' ? line.timestamp - this.startedAt : null,
        costUsd: null,
        usage: { ...this.total },
        modelUsage: null,
        apiErrorStatus: null,
        terminalReason: null,
        stopReason: reason,
        sessionId: this.sessionId,
        permissionDenials: 0,
      }),
    );
    return out;
  }
}

/**
 * The `permission.bash` patterns of the run's `[deny]` rows that opencode can express: the command alone and with
 * arguments (`git push`, `git push *`); a prefix holding `*` or `?` is left out (guardSupport.ts lists it). Pure.
 */
export function opencodeDenyPatterns(policy: CommandPolicy | null): string[] {
  const except = GUARD_SUPPORT.opencode.deny.except;
  return (policy?.deny ?? []).filter((r) => !except?.test(r.prefix)).flatMap((r) => [r.prefix, `${r.prefix} *`]);
}

/**
 * `OPENCODE_CONFIG_CONTENT` (the config layer opencode reads from the environment, merged over its config files) with
 * `patterns` denied in `permission.bash`, after the user's own rules in that variable (opencode: the last matching
 * rule wins; a `permission` or `permission.bash` given as one word becomes the `*` rule). Throws when the user's value
 * is not a JSON object. Pure.
 */
export function opencodeGuardConfig(userContent: string | undefined, patterns: readonly string[]): string {
  let user: Record<string, unknown> = {};
  if (userContent?.trim()) {
    let v: unknown;
    try {
      v = JSON.parse(userContent);
    } catch (err) {
      throw new Error(`OPENCODE_CONFIG_CONTENT is not JSON (${(err as Error).message}): cannot add the command guard`);
    }
    if (!v || typeof v !== 'object' || Array.isArray(v))
      throw new Error('OPENCODE_CONFIG_CONTENT is not a JSON object: cannot add the command guard');
    user = v as Record<string, unknown>;
  }
  const rules = (v: unknown): Record<string, unknown> => (typeof v === 'string' ? { '*': v } : { ...asRecord(v) });
  const permission = rules(user.permission);
  const bash = rules(permission.bash);
  for (const p of patterns) {
    delete bash[p];
    bash[p] = 'deny';
  }
  return JSON.stringify({ ...user, permission: { ...permission, bash } });
}

function opencodeInvocation(spec: IterationSpec): Invocation {
  // `--auto`: headless, a permission that would ask is approved; a rule the user's config sets to "deny" still denies.
  const args = ['run', '--format', 'json', '--auto'];
  if (spec.model) args.push('--model', spec.model);
  if (spec.resume) args.push('--session', spec.resume);
  args.push(...(spec.extraArgs ?? []));
  // `--` keeps a prompt that starts with "-" from being read as an option.
  args.push('--', spec.prompt);
  return { file: spec.binary || 'opencode', args, env: mergeEnv(spec), cwd: spec.cwd };
}

function opencodeRecognise(line: Record<string, unknown>): 0 | 1 | 2 {
  if (typeof line.sessionID !== 'string' || typeof line.part !== 'object' || line.part === null) return 0;
  const t = line.type;
  return t === 'step_start' || t === 'step_finish' || t === 'tool_use' || t === 'text' ? 2 : 1;
}

/**
 * How long opencode may run after the final `step_finish` (reason `stop`) before ralph ends it, ms. By then the turn,
 * its messages and usage are in opencode's session store; what it still does is the session's diff summary (git diffs
 * of its snapshot repository) and the disposal of its instance, about 1–2 s here at a load of 9–15 on 2 cores, and
 * some versions and plugins keep it alive for good after that event (upstream "emits terminal step_finish but never
 * exits"). Long enough for its own exit in the common case, short beside a turn.
 */
export const OPENCODE_EXIT_GRACE_MS = 3000;

/** The opencode adapter. */
export const opencodeAdapter: AgentAdapter = {
  name: 'opencode',
  defaultBinary: 'opencode',
  configKey: 'opencodePath',
  guardHook: false,
  prepareGuard: (g) => {
    const patterns = opencodeDenyPatterns(g.policy);
    return Promise.resolve(
      patterns.length
        ? { env: { OPENCODE_CONFIG_CONTENT: opencodeGuardConfig(g.env.OPENCODE_CONFIG_CONTENT, patterns) } }
        : {},
    );
  },
  estimatesContext: false,
  afterTurn: {
    graceMs: OPENCODE_EXIT_GRACE_MS,
    // `tool-calls` goes on with the tools' results, `unknown` with another step (opencode's own loop); `stop` is the end.
    isFinal: (r) => r.stopReason === 'stop',
  },
  invocation: opencodeInvocation,
  createMapper: () => new OpencodeMapper(),
  recognise: opencodeRecognise,
};
