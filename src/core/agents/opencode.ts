import { z } from 'zod';
import { type AgentEvent, type TokenCounts, type ToolKind, addTokens, ev, zeroTokens } from '../stream/events';
import type { CommandPolicy } from '../gates/commandPolicy';
import { type AgentAdapter, type Invocation, type IterationSpec, type StreamMapper, mergeEnv } from './adapter';
import { GUARD_SUPPORT } from './guardSupport';
import { limitRejected, limitResetOf } from './limitReset';
import { asRecord, issueOf, optNum as n, optStr as s, sessionInit, textOf, unknownEvent } from './lineParts';

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

const tokensSchema = z.object({
  input: n,
  output: n,
  reasoning: n,
  total: n,
  cache: z.object({ read: n, write: n }).nullish().catch(null),
});
const stepFinishSchema = z.object({
  part: z.object({ messageID: s, reason: s, tokens: tokensSchema.nullish().catch(null), cost: n }),
});
const textSchema = z.object({ part: z.object({ messageID: s, text: z.string() }) });
const toolSchema = z.object({
  part: z.object({
    tool: z.string(),
    callID: z.string(),
    messageID: s,
    state: z.looseObject({ status: s, input: z.unknown().optional(), output: z.unknown().optional(), error: s }),
  }),
});
const errorSchema = z.object({
  error: z
    .object({
      name: s,
      data: z
        .looseObject({ message: s, statusCode: n, isRetryable: z.boolean().nullish().catch(null) })
        .nullish()
        .catch(null),
    })
    .nullish()
    .catch(null),
});

/** A step's `tokens` → counts: `input` is already the uncached part; reasoning is a part of output. */
export function opencodeTokens(t: z.infer<typeof tokensSchema>): TokenCounts {
  return {
    input: t.input ?? 0,
    output: t.output ?? 0,
    cacheRead: t.cache?.read ?? 0,
    cacheCreation: t.cache?.write ?? 0,
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
        const p = textSchema.safeParse(line);
        if (!p.success) return [...out, unknownEvent(line, issueOf(p.error))];
        if (!p.data.part.text) return out;
        this.lastText = p.data.part.text;
        out.push(ev({ type: 'text', text: p.data.part.text, messageId: p.data.part.messageID ?? null }));
        return out;
      }
      case 'reasoning': {
        const text = textOf(asRecord(line.part).text);
        if (text) out.push(ev({ type: 'thinking', text, messageId: null }));
        return out;
      }
      case 'tool_use': {
        const p = toolSchema.safeParse(line);
        if (!p.success) return [...out, unknownEvent(line, issueOf(p.error))];
        const { tool: name, callID: id, state } = p.data.part;
        const kind = opencodeToolKind(name);
        const exit = asRecord(state.metadata).exit;
        const exitCode = typeof exit === 'number' ? exit : null;
        const isError = state.status === 'error' || (exitCode !== null && exitCode !== 0);
        out.push(
          ev({
            type: 'toolUse',
            id,
            name,
            kind,
            input: asRecord(state.input),
            messageId: p.data.part.messageID ?? null,
          }),
          ev({
            type: 'toolResult',
            id,
            name,
            kind,
            isError,
            output: [textOf(state.output), state.status === 'error' ? (state.error ?? '') : '']
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
        const p = errorSchema.safeParse(line);
        if (!p.success) return [...out, unknownEvent(line, issueOf(p.error))];
        const e = p.data.error;
        const message = e?.data?.message ?? e?.name ?? 'error';
        const status = e?.data?.statusCode ?? opencodeErrorStatus(message);
        // A usage limit's reset: in its message or the provider's response headers, which opencode passes on.
        const headers = asRecord(asRecord(asRecord(line.error).data).responseHeaders);
        const now = typeof line.timestamp === 'number' ? line.timestamp : Date.now();
        out.push(...limitRejected(limitResetOf({ text: message, status, now, headers })));
        out.push(ev({ type: 'error', message, code: e?.name ?? null, status }));
        return out;
      }
      default:
        return [...out, unknownEvent(line)];
    }
  }

  private stepFinish(line: Record<string, unknown>): AgentEvent[] {
    const p = stepFinishSchema.safeParse(line);
    if (!p.success) return [unknownEvent(line, issueOf(p.error))];
    const part = p.data.part;
    const out: AgentEvent[] = [];
    this.steps++;
    if (part.tokens) {
      const tokens = opencodeTokens(part.tokens);
      this.total = addTokens(this.total, tokens);
      out.push(ev({ type: 'usage', source: 'message', messageId: part.messageID ?? null, model: null, tokens }));
    }
    if (part.reason === 'tool-calls') return out;
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
        stopReason: part.reason ?? null,
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
