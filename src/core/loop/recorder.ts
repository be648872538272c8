import { visibleText } from '../../protocol/visibleText';
import * as path from 'node:path';
import type { IterationTotals } from '../stream/ledger';
import { isRootRefusal } from '../stream/classify';
import { contextText, emptyContextTrack, reduceContext } from '../control/contextFigure';
import { redactEvent } from '../trust/redact';
import {
  ACTIVITY,
  ActivityLog,
  labelled,
  loopEndText,
  loopStartText,
  ralphStopText,
  tasksDetail,
  tokensText,
} from './activityLog';
import { EXIT_CODES, type EngineEvent, type IterationEnding } from './events';
import { workersText } from '../model/runEvent';
import { EventsWriter, ProgressTxtWriter, type CompletionReason } from './runFiles';

/** The activity-log label of each iteration ending (seed-systems.md §3.6, §3.12). */
const ENDING_LABEL: Record<IterationEnding, string> = {
  complete: ACTIVITY.AGENT_COMPLETE,
  stuck: ACTIVITY.GUTTER,
  yield: ACTIVITY.GRACEFUL_YIELD,
  natural: ACTIVITY.NATURAL_END,
  rotation: ACTIVITY.ROTATE,
  deferred: 'DEFER',
  error: ACTIVITY.API_ERROR,
  cancelled: ACTIVITY.STOP_REQUESTED,
  question: 'QUESTION',
};

/**
 * The agent command line for the SESSION START line: the `--settings <JSON>` value (the guard's hook settings, a few
 * hundred bytes) shown as `--settings «guard: on (PreToolUse hook)»` (or `«settings»` when it holds no PreToolUse
 * hook). The `agentStarted` event keeps the whole command. Pure; a value that is not one JSON object is left as is.
 */
export function shortSettings(command: string): string {
  const at = command.indexOf('--settings {');
  if (at < 0) return command;
  const start = at + '--settings '.length;
  let depth = 0;
  let inString = false;
  for (let i = start; i < command.length; i++) {
    const c = command[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) {
      const json = command.slice(start, i + 1);
      let label = '«settings»';
      try {
        const v = JSON.parse(json) as { hooks?: { PreToolUse?: unknown } };
        if (v.hooks?.PreToolUse) label = '«guard: on (PreToolUse hook)»';
      } catch {
        return command;
      }
      return command.slice(0, start) + label + command.slice(i + 1);
    }
  }
  return command;
}

const secs = (ms: number) => `${Math.round(ms / 100) / 10}s`;

/**
 * Turns engine events into the activity stream's texts (without the `[HH:MM:SS]` stamp): what `ralph run` prints
 * and what `.ralph/activity.log` keeps, in the seed's grammar and labels. Keeps a little state (the task count,
 * when the last TOKENS line was written). Token events give a line at most every `tokensEveryMs` (seed: 30 s).
 */
export class ActivityFormatter {
  private progress = { done: 0, total: 0 };
  private lastTokensLine = 0;
  /** The iteration reported a context figure (so its end prints the figure it ended on). */
  private sawTokens = false;
  private printedTokens = '';
  /** The run's one context figure, reduced from the same events as every other face's (control/contextFigure.ts). */
  private context = emptyContextTrack();

  constructor(
    private readonly tokensEveryMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The activity lines of `e`, with what a repository controls in them (titles, reasons, an agent's words) shown as
   * in src/protocol/visibleText.ts: these lines reach the terminal (`ralph run`, `ralph watch`) and activity.log.
   */
  format(e: EngineEvent): string[] {
    this.context = reduceContext(this.context, e);
    const lines = this.linesOf(e);
    for (let i = 0; i < lines.length; i++) lines[i] = visibleText(lines[i]!);
    return lines;
  }

  private linesOf(e: EngineEvent): string[] {
    switch (e.type) {
      case 'runStarted':
        return [
          `═══ RALPH START — run ${e.runId} · source ${e.source} · agent ${e.agent} · max ${e.maxIterations} iterations`,
          `gates: ${
            Object.entries(e.gates)
              .map(([t, c]) => `${t}=${c}`)
              .join(', ') || 'none (--no-gates)'
          }`,
        ];
      case 'iterationStarted': {
        const what =
          e.purpose === 'review'
            ? 'final review'
            : e.purpose === 'finalFix'
              ? 'fix after final verification'
              : e.item
                ? `${e.item.id} ${e.item.title}`
                : '';
        const attempt =
          e.attempt > 1 ? ` · attempt ${e.attempt}${e.attemptKind === 'debug' ? ' (debugging)' : ''}` : '';
        const where = e.worker ? ` · on ${e.worker}` : '';
        return [
          loopStartText(
            e.iteration,
            `${tasksDetail(this.progress.done, this.progress.total)} · ${what}${attempt}${where}`,
          ),
        ];
      }
      case 'agentStarted':
        return [`SESSION START: pid=${e.pid ?? '?'} ${shortSettings(e.command)}`];
      case 'tokens':
        if (e.contextTokens === 0 || !this.context.figure) return [];
        this.sawTokens = true;
        if (this.now() - this.lastTokensLine < this.tokensEveryMs) return [];
        this.lastTokensLine = this.now();
        this.printedTokens = contextText(this.context.figure);
        return [tokensText({ figure: this.context.figure })];
      case 'warn':
        return [
          `WARN: context ${e.contextTokens} ≥ ${e.threshold} tokens: the agent was asked to write its handoff and yield`,
        ];
      case 'rotate':
        return [
          `ROTATE: context ${e.contextTokens} ≥ ${e.threshold} tokens: ending the agent, a new iteration carries the handoff`,
        ];
      case 'agentSignal':
        if (e.kind === 'complete' || e.kind === 'storyPassed') return [`${ACTIVITY.AGENT_COMPLETE} (${e.value})`];
        if (e.kind === 'stuck') return [labelled(ACTIVITY.AGENT_GUTTER, e.reason)];
        if (e.kind === 'verdict') return [`verdict ${e.value}`];
        return [`signal ${e.value}`];
      case 'iterationEnded': {
        const lines: string[] = [];
        const f = this.context.figure;
        // The context the iteration ended on (its highest), unless that very figure was just printed.
        if (this.sawTokens && f && contextText(f) !== this.printedTokens) lines.push(tokensText({ figure: f }));
        this.printedTokens = '';
        // The CLI's refusal to run as root is no API error: say what it is (the detail names the cause and the fix).
        const label =
          e.ending === 'error' && isRootRefusal(e.detail) ? 'AGENT REFUSED TO START' : ENDING_LABEL[e.ending];
        lines.push(loopEndText(e.iteration, label, `${e.detail}; ${totalsText(e.totals)}`));
        this.sawTokens = false;
        return lines;
      }
      case 'gateStarted':
        return [`${ACTIVITY.GATE} start label=${e.tier} cmd=${e.command}`];
      case 'gateResult':
        return [
          `${ACTIVITY.GATE} end label=${e.tier} exit=${e.exitCode} duration=${secs(e.durationMs)} log=${e.logPath}`,
          ...(e.passed ? [] : e.failingLines.slice(0, 5).map((l) => `  ${l}`)),
        ];
      case 'verified':
        return [
          `${e.tier ? 'VERIFIED' : 'DONE'} ${e.item.id} — ${e.item.title} (${e.tier ? `${e.tier} gate green` : 'no gate configured'})`,
        ];
      case 'attemptFailed':
        return [`ATTEMPT ${e.attempt} FAILED ${e.item.id} — ${e.reason}`];
      case 'laneMerge':
        return [
          `LANE ${e.outcome.toUpperCase()} ${e.item.id} (${e.branch}): ${e.reason}${e.files?.length ? ` [${e.files.join(', ')}]` : ''}`,
        ];
      case 'itemBlocked':
        return [`BLOCKED ${e.item.id} — ${e.reason}`];
      case 'claimPutBack':
        return [
          ...e.items.map((i) => `PUT BACK ${i.id} — ${i.title}: the agent claimed it done; ${e.reason}`),
          ...(e.how ?? []).map((h) => `   put back anyway: ${h}`),
        ];
      case 'fileRestored':
        return [
          `RESTORED ${e.file} — ${e.problem}; its content at the iteration's start is back, the agent's bytes are in ${e.aside}`,
        ];
      case 'itemsVanished':
        return [
          `VANISHED from ${e.source}: ${e.items.join(', ')} — deleted during the run; not counted as progress, the run will not complete`,
        ];
      case 'progress':
        this.progress = { done: e.done, total: e.total };
        return [`${ACTIVITY.TASKS}: ${e.done}/${e.total} complete (${Math.max(0, e.total - e.done)} remaining)`];
      case 'pauseRequested':
        return [`PAUSE requested (${path.basename(e.file)}): the iteration finishes, then the run waits`];
      case 'paused':
        return ['PAUSED — remove the PAUSE file or run `ralph resume` to go on'];
      case 'resumed':
        return ['RESUMED'];
      case 'stopRequested':
        return [
          `${ACTIVITY.STOP_REQUESTED} (${path.basename(e.file)})${e.graceful ? ': the agent yields at its next commit' : ': the run ends after this iteration'}`,
        ];
      case 'deferred':
        return [
          `DEFER — ${e.reason}; waiting ${secs(e.waitMs)}${e.resetsAt ? ` (limit resets ${new Date(e.resetsAt).toISOString()})` : ''} · deferral ${e.inARow} in a row`,
        ];
      case 'failover':
        return [`FAILOVER — ${e.reason}`];
      case 'reviewVerdict':
        return [`REVIEW verdict: ${e.verdict}`];
      case 'question':
        return [
          `QUESTION${e.item ? ` ${e.item.id}` : ''} — ${e.text.split('\n')[0]}`,
          `  answer with \`ralph answer${e.item ? ` --item ${e.item.id}` : ''} <text>\` or write ${e.answerFile}`,
        ];
      case 'answered':
        return [`ANSWERED${e.item ? ` ${e.item.id}` : ''} — ${e.text.split('\n')[0]}`];
      case 'questionTimedOut':
        return [`QUESTION TIMED OUT${e.item ? ` ${e.item.id}` : ''} after ${secs(e.waitedMs)}`];
      case 'notified':
        return e.ok ? [] : [`WARNING: notify (${e.about}) failed: ${e.detail ?? ''}`];
      case 'output':
        return [e.text];
      case 'warning':
        return [`WARNING: ${e.message}`];
      case 'guard':
        return [e.text];
      case 'workers':
        return [workersText(e.alive)];
      case 'runEnded': {
        const label =
          e.state === 'completed'
            ? ACTIVITY.COMPLETE
            : e.state === 'stalled'
              ? ACTIVITY.STALL
              : e.state === 'stopped'
                ? ACTIVITY.STOP_REQUESTED
                : e.state.toUpperCase();
        return [
          ralphStopText(`${label} — ${e.reason}`),
          `═══ ${e.state === 'completed' ? 'complete' : e.state}: ${e.done}/${e.total} done · ${e.iterations} iterations · $${e.costUsd.toFixed(4)} · exit ${e.exitCode}`,
        ];
      }
    }
  }
}

function totalsText(t: IterationTotals): string {
  const cost = t.costUsd === null || t.costUsd === undefined ? '' : ` · $${t.costUsd.toFixed(4)}`;
  return `in ${t.tokens.input} out ${t.tokens.output} cache r/w ${t.tokens.cacheRead}/${t.tokens.cacheCreation} tokens${cost}`;
}

/**
 * Writes a run's records from its events (issue "Records"): every event to `events.jsonl`, the activity stream to
 * `.ralph/activity.log`, verified items and failures to `.ralph/progress.md`, flow-next-compatible iteration blocks
 * and the completion marker to the run's `progress.txt`. `onLine` receives each activity text as well (the CLI
 * prints them). Write errors are reported through `onError`, never thrown into the engine.
 */
export class RunRecorder {
  private readonly events: EventsWriter<EngineEvent>;
  private readonly progressTxt: ProgressTxtWriter;
  private readonly activity: ActivityLog;
  private readonly formatter: ActivityFormatter;
  private current: { item?: string; status: string; verdict?: string; promise?: string } = { status: 'work' };
  private ended = false;
  private iterations = 0;
  private costUsd = 0;
  private done = { done: 0, total: 0 };

  /**
   * `agentArgs`: the run's configured agent arguments, redacted from every line written or passed on (they
   * may hold secrets; core/trust/redact.ts).
   */
  constructor(
    readonly folder: string,
    readonly runId: string,
    private readonly opts: {
      onLine?: (text: string) => void;
      onError?: (err: Error) => void;
      tokensEveryMs?: number;
      agentArgs?: readonly string[];
      /** Values never written (the agents' keys in the environment: trust/redact.ts `environmentSecrets`). */
      secrets?: readonly string[];
    } = {},
  ) {
    this.events = new EventsWriter<EngineEvent>(folder, runId);
    this.progressTxt = new ProgressTxtWriter(folder, runId);
    this.activity = new ActivityLog(folder);
    this.formatter = new ActivityFormatter(opts.tokensEveryMs);
  }

  /** Records one event of `lane` (default 0, the sequential run): the engine's `event` listener. */
  record(event: EngineEvent, lane = 0): void {
    const e = redactEvent(event, this.opts.agentArgs ?? [], this.opts.secrets ?? []);
    const fail = (err: unknown) => this.opts.onError?.(err instanceof Error ? err : new Error(String(err)));
    if (e.type === 'runEnded') this.ended = true;
    else if (e.type === 'iterationEnded') {
      this.iterations = Math.max(this.iterations, e.iteration);
      this.costUsd += e.totals.costUsd;
    } else if (e.type === 'progress') this.done = { done: e.done, total: e.total };
    this.events.append(e, lane).catch(fail);
    for (const line of this.formatter.format(e)) {
      this.opts.onLine?.(line);
      this.activity.append(line).catch(fail);
    }
    try {
      this.files(e, fail);
    } catch (err) {
      fail(err);
    }
  }

  private files(e: EngineEvent, fail: (err: unknown) => void): void {
    switch (e.type) {
      case 'runStarted':
        this.progressTxt.start();
        break;
      case 'iterationStarted':
        this.current = { item: e.item?.id, status: e.purpose === 'work' ? 'work' : e.purpose };
        break;
      case 'agentSignal':
        if (e.kind === 'verdict') this.current.verdict = e.value;
        else if (e.kind === 'complete') this.current.promise = e.value;
        break;
      case 'iterationEnded':
        this.progressTxt.appendIteration({
          iteration: e.iteration,
          status: this.current.status,
          task: this.current.item,
          reason: e.ending,
          agentRc: e.exitCode,
          verdict: this.current.verdict,
          promise: this.current.promise,
          iterLog: `.ralph/runs/${this.runId}/iter-${String(e.iteration).padStart(3, '0')}.jsonl`,
          extra: { ending: e.ending, cost_usd: e.totals.costUsd ?? null },
          lastOutput: [e.detail],
        });
        break;
      case 'verified':
        this.activity
          .progress(
            `${e.tier ? 'Verified' : 'Done'} ${e.item.id}: ${e.item.title} (${e.tier ? `${e.tier} gate green` : 'no gate configured'})`,
          )
          .catch(fail);
        break;
      case 'attemptFailed':
        this.activity.progress(`Attempt ${e.attempt} at ${e.item.id} failed verification: ${e.reason}`).catch(fail);
        this.activity.error(`attempt ${e.attempt} at ${e.item.id} failed: ${e.reason}`).catch(fail);
        break;
      case 'itemBlocked':
        this.activity.progress(`Blocked ${e.item.id}: ${e.reason}`).catch(fail);
        break;
      case 'claimPutBack':
        for (const i of e.items)
          this.activity
            .progress(
              `Put back ${i.id} (${i.title}): the agent claimed it done; ${e.reason}${e.how?.length ? ` (${e.how.join('; ')})` : ''}`,
            )
            .catch(fail);
        break;
      case 'fileRestored':
        this.activity
          .progress(
            `Restored ${e.file} (${e.problem}): its content at the iteration's start is back; the agent's bytes are in ${e.aside}`,
          )
          .catch(fail);
        break;
      case 'itemsVanished':
        this.activity
          .progress(
            `Vanished from ${e.source}: ${e.items.join(', ')} (deleted during the run; the run will not complete)`,
          )
          .catch(fail);
        break;
      case 'runEnded':
        this.progressTxt.complete(e.completionReason as CompletionReason);
        this.activity
          .progress(`Run ${this.runId} ended: ${e.state} — ${e.reason} (${e.done}/${e.total} done)`)
          .catch(fail);
        break;
      default:
        break;
    }
  }

  /**
   * For an exit the engine does not reach (a second Ctrl-C): appends a `runEnded` event (state `cancelled`, exit
   * 130) synchronously unless one was recorded, so a follower of the log sees the end, and writes the completion
   * marker. Events still queued are lost (their `seq` shows the gap). Never throws.
   */
  endInterruptedSync(reason: string): void {
    try {
      if (!this.ended) {
        this.ended = true;
        this.events.appendSync({
          type: 'runEnded',
          state: 'cancelled',
          reason,
          completionReason: 'INTERRUPTED',
          exitCode: EXIT_CODES.cancelled,
          iterations: this.iterations,
          costUsd: this.costUsd,
          ...this.done,
        });
      }
      this.progressTxt.complete('INTERRUPTED');
    } catch (err) {
      this.opts.onError?.(err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** Writes the completion marker if no event did (an exit path the engine did not reach, e.g. a signal). */
  completeIfOpen(reason: CompletionReason): void {
    this.progressTxt.complete(reason);
  }

  async flush(): Promise<void> {
    await this.events.flush();
    await this.activity.flush();
  }
}
