import * as path from 'node:path';
import { visibleText } from '../../protocol/visibleText';
import { workersText, type EngineEvent, type iterationEndingSchema } from '../model/runEvent';
import type { z } from 'zod';

type IterationEnding = z.infer<typeof iterationEndingSchema>;
import { isRootRefusal } from '../stream/classify';
import type { IterationTotals } from '../stream/ledger';
import { contextLine, contextText, emptyContextTrack, reduceContext, type ContextFigure } from './contextFigure';

/*
 * What the activity stream says of each engine event, in the seed's grammar and labels (seed-systems.md §3.1, §3.6,
 * §3.12): the lines `ralph run` prints and `.ralph/activity.log` keeps (loop/activityLog.ts writes them, loop/recorder.ts
 * feeds them). The short one-line forms of the dashboard and `ralph watch` are runView.ts `activityTextOf`.
 */
/**
 * Labels of loop lines (§3.6, §3.12). Lines are `[HH:MM:SS] <label>[ — detail]`. The seed's words without its emoji,
 * which a machine without an emoji font shows as empty boxes (docs/decisions/0019-plain-words-in-logs.md).
 */
export const ACTIVITY = {
  ROTATE: 'ROTATE',
  GRACEFUL_YIELD: 'GRACEFUL YIELD',
  NATURAL_END: 'NATURAL END',
  STALL: 'STALL',
  COMPLETE: 'COMPLETE',
  STOP_REQUESTED: 'STOP REQUESTED',
  TURN_END: 'TURN_END',
  GUTTER: 'GUTTER',
  UNSATISFIABLE: 'UNSATISFIABLE COMPLETION BAR',
  SIGNALED_COMPLETE_CRITERIA_REMAIN: 'AGENT SIGNALED COMPLETE (criteria remain)',
  AGENT_COMPLETE: 'Agent signaled COMPLETE',
  AGENT_GUTTER: 'Agent signaled GUTTER (stuck)',
  GATE: 'GATE',
  API_ERROR: 'API ERROR',
  TASKS: 'Tasks',
} as const;

/** Local `HH:MM:SS`. */
export function clockTime(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Local `YYYY-MM-DD HH:MM:SS` (progress.md entries). */
export function localDateTime(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${clockTime(d)}`;
}

/**
 * `[HH:MM:SS] <text>` for each line of `text` (a multi-line text becomes several stamped lines), with `\n`. What a
 * repository controls in it is shown as in src/protocol/visibleText.ts: the logs are read with `tail -f` and `cat`.
 */
export function formatActivityLines(text: string, d: Date): string {
  return text
    .split(/\r?\n/)
    .map((l) => `[${clockTime(d)}] ${visibleText(l)}\n`)
    .join('');
}

/** Loop number as the seed shows it: `n`, or `n.r` for the r-th rate-limit retry of loop n (§3.6). */
function loopNo(n: number, retry?: number): string {
  return retry ? `${n}.${retry}` : String(n);
}

/** `Tasks: d/t complete (r remaining)` (§3.6 step 1). */
export function tasksDetail(done: number, total: number): string {
  return `Tasks: ${done}/${total} complete (${Math.max(0, total - done)} remaining)`;
}

/** `LOOP <n[.r]> START — <detail>` (§3.12). */
export function loopStartText(n: number, detail: string, retry?: number): string {
  return `LOOP ${loopNo(n, retry)} START — ${detail}`;
}

/** `LOOP <n[.r]> END — <label>[ (detail)]`, label one of {@link ACTIVITY} (§3.12). */
export function loopEndText(n: number, label: string, detail?: string, retry?: number): string {
  return `LOOP ${loopNo(n, retry)} END — ${label}${detail ? ` (${detail})` : ''}`;
}

/** `RALPH STOP — <reason>`, e.g. `RALPH STOP — Max loops (25) reached` (§3.6). */
export function ralphStopText(reason: string): string {
  return `RALPH STOP — ${reason}`;
}

/** `Max loops (N) reached`: the stop reason when the iteration cap is hit (§3.6). */
export function maxLoopsReason(n: number): string {
  return `Max loops (${n}) reached`;
}

/** `<label> — <detail>`, or the bare label. */
export function labelled(label: string, detail?: string): string {
  return detail ? `${label} — ${detail}` : label;
}

/** Inputs of {@link tokensText}. Character counts are the byte estimate's inputs (§3.4). */
export interface TokensLineInput {
  /** The run's one context figure (control/contextFigure.ts). */
  figure: ContextFigure;
  estimate?: {
    bytesRead: number;
    bytesWritten: number;
    assistantChars: number;
    shellOutputChars: number;
    subagentChars: number;
  };
}

/**
 * `TOKENS: <figure> (warn <w> · rotate <r>)[ - approaching limit| - rotation imminent][ [read:…KB write:…KB
 * assist:…KB shell:…KB[ sub:…KB]]]`: the run's one context figure as every face shows it (`16k/200k 8%`: tokens of
 * the model's window), its marks, and the seed's notes (§3.4): "approaching limit" from 72 %, "rotation imminent"
 * from 90 % of the rotate mark. Plain text: the seed's coloured-circle emoji render as empty boxes where no emoji
 * font is installed (the level is in the words).
 */
export function tokensText(t: TokensLineInput): string {
  const f = t.figure;
  const ofRotate = f.rotateAt > 0 ? Math.floor((f.tokens * 100) / f.rotateAt) : 0;
  const note = ofRotate >= 90 ? ' - rotation imminent' : ofRotate >= 72 ? ' - approaching limit' : '';
  let text = `TOKENS: ${contextLine(f)}${note}`;
  const e = t.estimate;
  if (e) {
    const kb = (n: number) => `${Math.round(n / 1024)}KB`;
    text += ` [read:${kb(e.bytesRead)} write:${kb(e.bytesWritten)} assist:${kb(e.assistantChars)} shell:${kb(e.shellOutputChars)}${e.subagentChars > 0 ? ` sub:${kb(e.subagentChars)}` : ''}]`;
  }
  return text;
}

/** What an iteration works on, as the activity lines of every face name it: the item, the final fix or the review. */
export function iterationWhat(e: Extract<EngineEvent, { type: 'iterationStarted' }>): string {
  if (e.purpose === 'review') return 'final review';
  if (e.purpose === 'finalFix') return 'fix after final verification';
  return e.item ? `${e.item.id} ${e.item.title}` : '';
}

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
        const what = iterationWhat(e);
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
