import { rm, writeFile } from 'node:fs/promises';
import { getAdapter } from '../../agents/registry';
import { spawnIteration, type IterationExit } from '../../agents/spawn';
import type { updateRunRecord } from '../../control/runRecords';
import type { CommandPolicy } from '../../gates/commandPolicy';
import type { ResolvedGates } from '../../gates/gateConfig';
import { readHandoff, workingSet, workingSetChanged } from '../../gates/handoff';
import type { RalphConfig } from '../../model/config';
import { ralphFile, ralphRunDir } from '../../model/ralphPaths';
import { isoString } from '../../model/time';
import type { TokenCounts } from '../../stream/events';
import { iterationTotals } from '../../stream/ledger';
import { findSignals, type AgentSignal } from '../../stream/signals';
import { agentConfigEntries, changedClaudeProjectFiles } from '../../trust/agentConfig';
import type { TrustedEntry } from '../../trust/trustedContent';
import type { AttemptKind } from '../attempts';
import { writeAgentMirror } from '../baselineMirror';
import type { EngineEvent, IterationEnding, IterationPurpose } from '../events';
import { headSha } from '../../git/gitState';
import { loadTemplate, renderTemplate } from '../prompt';
import { findQuestion, type AgentQuestion } from '../question';
import { IterationStreamWriter } from '../runFiles';
import type { EngineTiming } from '../runOptions';
import type { TaskFileStash } from '../taskFileStash';
import type { WorkItem, WorkSource } from '../../sources/work/workSources';
import type { IterationAgent } from './agentRoster';
import { ref } from './itemRef';
import { DEFAULT_WATCHDOG, decideWatchdog } from './watchdog';

/** Fields of run.json written together with a child's start or end (claimBook.ts `childStarts` / `childEnded`). */
export type RunRecordPatch = Parameters<typeof updateRunRecord>[2];

/**
 * What one agent iteration needs of its lane: the folder and run, the agent's configuration, the run's gates (for the
 * prompt), the trusted agent settings, and the lane's effects it calls (events, the claim book's child marks, the
 * task file stash). Small on purpose: an iteration knows nothing of the lane's loop.
 */
export interface IterationContext {
  folder: string;
  runId: string;
  /** The folder of the run's shared files (the folder itself, or a parallel run's main folder). */
  stateRoot: string;
  config: RalphConfig;
  agentEnv?: Record<string, string | undefined>;
  signal?: AbortSignal;
  timing: EngineTiming;
  actor: string;
  /** The command guard's hook in Claude's `--settings` shape (when a guard server runs), or undefined. */
  guardSettings: Record<string, unknown> | undefined;
  /** `.ralph/command-policy` as loaded at the run's start (null without one): for agents with their own rules. */
  commandPolicy: CommandPolicy | null;
  gates: ResolvedGates | null;
  /** The agents' project configuration at the run's start, and the files already reported as changed. */
  agentConfigAtStart: TrustedEntry[];
  agentConfigWarned: Set<string>;
  stash: TaskFileStash | null;
  /** When the STOP now in force was first seen (ms since the epoch), for the watchdog's STOP grace. */
  stopRequestedAt(): number | null;
  onAgent?(pid: number | null, token: string | null): void;
  emitEvent(e: EngineEvent): void;
  warn(what: string): (err: unknown) => void;
  /** Writes fields of the run's record (run.json) through the lane's shell. */
  record(patch: RunRecordPatch): Promise<void>;
  markChildStart(also?: RunRecordPatch): Promise<Record<string, string> | null>;
  markChildEnd(before: Record<string, string> | null, who: string, when?: string, also?: RunRecordPatch): Promise<void>;
  restoreTaskFiles(n: number): void;
}

/** One agent iteration asked by a lane's action handler (the lane numbers it and picks its agent). */
export interface AgentAsk {
  item: WorkItem | null;
  purpose: IterationPurpose;
  attempt: number;
  attemptKind: AttemptKind;
  attemptsText: string;
  taskText?: string;
  maxAttempts?: number;
}

/** One iteration asked of {@link runAgentIteration}: its number, its agent (the lane's roster picks it: failover), its source and the run's cost before it (USD). */
export interface IterationRequest extends AgentAsk {
  n: number;
  agent: IterationAgent;
  source: WorkSource;
  costBefore: number;
}

/** How an iteration went: its ending, the agent's signals and last text, its cost (USD) and the run's after it. */
export interface IterationOutcome {
  ending: IterationEnding;
  detail: string;
  exit: IterationExit;
  signals: AgentSignal[];
  lastText: string;
  resetsAt: number | null;
  /** The iteration's cost, USD. */
  costUsd: number;
  iteration: number;
  /** The question the agent asked a human, if it did. */
  question: AgentQuestion | null;
  /** The run's cost after this iteration, USD. */
  runCostUsd: number;
  /** The iteration's tokens. */
  tokens: TokenCounts;
}

/**
 * One iteration: build the prompt, spawn the agent, stream its events through the ledger (warn, rotate, the
 * watchdog), record the agent in run.json and the state folder, and classify how it ended.
 */
export async function runAgentIteration(ctx: IterationContext, req: IterationRequest): Promise<IterationOutcome> {
  const { n, agent, source, item, purpose, attempt, attemptKind, attemptsText, taskText, maxAttempts } = req;
  await rm(ralphFile(ctx.folder, 'contextWarning'), { force: true });
  const handoff = await readHandoff(ctx.folder);
  const workingBefore = workingSet(handoff);
  const headAtStart = await headSha(ctx.folder);
  const progress = await source.progress();
  const gates = ctx.gates;
  const template = await loadTemplate(ctx.folder, purpose === 'review' ? 'reviewer' : 'iteration');
  const prompt = renderTemplate(template, {
    ITERATION: String(n),
    PROGRESS: `${progress.done}/${progress.total} done`,
    HANDOFF: handoff?.trim() || '(none yet)',
    COMPLETE_SIGNAL_RULE:
      source.kind === 'quantum'
        ? 'The story is implemented, committed and verified: print `<quantum>STORY_PASSED</quantum>` and stop.'
        : 'Every task is done and verified: print `<promise>ALL_TASKS_DONE</promise>` and stop.',
    GIT_NOTE:
      headAtStart === null ? 'This folder may not be a git repository: if `git` fails, just save the files.' : '',
    GATES: gates
      ? `Run \`${gates.commands.basic ?? gates.commands.full ?? gates.commands.final}\` after each task${gates.commands.full ? `, \`${gates.commands.full}\` after a [risky] task` : ''}${gates.commands.final ? ` and \`${gates.commands.final}\` at the end` : ''}. The harness runs them again to verify.`
      : 'No gates are configured for this run.',
    ATTEMPTS: attemptsText,
    TASK: taskText ?? item?.body ?? (await allTasksText(source)),
  });
  const adapter = getAdapter(agent.name);
  const agentEnv = { RALPH_RUN_ID: ctx.runId, RALPH_WORKSPACE: ctx.folder, FLOW_ACTOR: ctx.actor, ...ctx.agentEnv };
  // The guard in the agent's own terms (its settings file, config variable or arguments), made again for every start.
  const guard = adapter.prepareGuard
    ? await adapter.prepareGuard({
        settings: ctx.guardSettings,
        policy: ctx.commandPolicy,
        env: { ...process.env, ...agentEnv },
        dir: ralphRunDir(ctx.folder, ctx.runId),
      })
    : {};
  ctx.emitEvent({
    type: 'iterationStarted',
    iteration: n,
    item: item ? ref(item) : null,
    attempt,
    attemptKind,
    purpose,
    ...(maxAttempts ? { maxAttempts } : {}),
  });
  // The iteration's start and the person marks before the agent: one write of run.json (a lane wrote
  // its record 14 times per story); nothing happens between the two that recovery could see.
  const marksAtStart = await ctx.markChildStart({
    state: 'running',
    iteration: n,
    currentItem: item ? { source: item.source, id: item.id, title: item.title } : null,
  });

  const raw = new IterationStreamWriter(ctx.stateRoot, ctx.runId, n);
  ctx.stash?.capture();
  const iterationStartedAt = Date.now();
  let lastOutputAt = iterationStartedAt;
  let watchdogTimer: NodeJS.Timeout | undefined;
  let watchdogEnd: string | null = null;
  // Claude Code's project settings changed during the run (by the agent, say): they are no longer the content the
  // user trusted, so this start reads none of them; the next `ralph run` refuses with the diff (trust covers them).
  const changedSettings = changedClaudeProjectFiles(ctx.agentConfigAtStart, await agentConfigEntries(ctx.folder));
  for (const f of changedSettings.filter((f) => !ctx.agentConfigWarned.has(f))) {
    ctx.agentConfigWarned.add(f);
    ctx.emitEvent({
      type: 'warning',
      message: `${f} changed during the run: Claude Code starts without the project's settings and MCP servers (--setting-sources user --strict-mcp-config); the next run asks for trust again`,
    });
  }
  const handle = spawnIteration(
    adapter,
    {
      prompt,
      cwd: ctx.folder,
      binary: agent.binary,
      model: agent.model,
      guardArgs: guard.args,
      extraArgs: ctx.config.agentArgs,
      settings: ctx.guardSettings,
      projectSettings: changedSettings.length ? 'ignore' : 'load',
      permissionMode: ctx.config.permissionMode,
      env: { ...agentEnv, ...guard.env },
    },
    {
      maxLineBytes: ctx.config.maxLineBytes,
      contextWindowTokens: ctx.config.contextWindowTokens,
      thresholds: {
        warnThresholdTokens: ctx.config.warnThresholdTokens,
        rotateThresholdTokens: ctx.config.rotateThresholdTokens,
      },
      killGraceMs: ctx.timing.killGraceMs,
      containment: ctx.config.containment,
      protect: { workspace: ctx.folder },
      onStdout: (chunk) => {
        lastOutputAt = Date.now();
        raw.write(chunk);
      },
    },
  );
  // Subscribed before anything is awaited (spawn.ts: no event is kept for a later listener): the agent's output can
  // arrive while run.json and the agent mirror are written below, and a text lost there loses the iteration's
  // signals and question (a lane's question read as a natural end under load, the story run again).
  const signals: AgentSignal[] = [];
  let lastText = '';
  const texts: string[] = [];
  let wrote = false;
  let lastTokensAt = 0;
  const emitTokens = () => {
    const s = handle.ledgerSnapshot();
    ctx.emitEvent({
      type: 'tokens',
      iteration: n,
      contextTokens: s.contextTokens,
      contextWindow: s.contextWindow,
      rotateAt: s.thresholds.rotate,
      warnAt: s.thresholds.warn,
      totals: s.tokens,
      costUsd: s.costUsd,
    });
  };
  handle.onEvent((e) => {
    if (e.type === 'toolUse' && (e.kind === 'write' || e.kind === 'edit' || e.kind === 'shell')) wrote = true;
    if (e.type === 'text' && !e.subagent && !e.synthetic) {
      lastText = e.text;
      texts.push(e.text);
      for (const s of findSignals(e.text)) {
        signals.push(s);
        ctx.emitEvent({
          type: 'agentSignal',
          iteration: n,
          kind: s.kind,
          value: s.value,
          ...(s.reason ? { reason: s.reason } : {}),
        });
      }
    } else if (e.type === 'result' && !e.subagent && e.text && !e.isError) {
      // The result repeats the final text; signals there count once (deduplicated below).
      for (const s of findSignals(e.text))
        if (!signals.some((x) => x.kind === s.kind && x.value === s.value)) signals.push(s);
    }
    if ((e.type === 'usage' || e.type === 'result') && Date.now() - lastTokensAt > 500) {
      lastTokensAt = Date.now();
      emitTokens();
    }
  });
  let rotated = false;
  handle.onLedgerSignal((s) => {
    if (s.type === 'warn') {
      ctx.emitEvent({ type: 'warn', iteration: n, contextTokens: s.contextTokens, threshold: s.threshold });
      void writeFile(ralphFile(ctx.folder, 'contextWarning'), `${s.contextTokens}/${s.threshold}\n`).catch(
        ctx.warn('could not create .ralph/context-warning-active'),
      );
    } else if (!rotated) {
      rotated = true;
      ctx.emitEvent({ type: 'rotate', iteration: n, contextTokens: s.contextTokens, threshold: s.threshold });
      void handle.kill('rotate');
    }
  });
  // The watchdog: the shell observes time and output, decideWatchdog decides; a verdict ends the agent.
  const watch = () => {
    const v = decideWatchdog(
      { now: Date.now(), iterationStartedAt, lastOutputAt, stopRequestedAt: ctx.stopRequestedAt() },
      ctx.timing.watchdog ?? DEFAULT_WATCHDOG,
    );
    if (v.kind === 'end') {
      watchdogEnd = v.detail;
      ctx.emitEvent({ type: 'warning', message: `iteration ${n}: ${v.detail}: ending the agent` });
      void handle.kill(v.reason);
      return;
    }
    // Re-checked at least every second so a STOP requested meanwhile is seen.
    watchdogTimer = setTimeout(watch, Math.max(50, Math.min(1000, (v.checkAt ?? Date.now() + 1000) - Date.now())));
  };
  watchdogTimer = setTimeout(watch, 50);
  // Started from the helper process (a parallel run), the pid comes back a moment later; no output is delivered before.
  await handle.started;
  ctx.onAgent?.(handle.pid ?? null, handle.token);
  ctx.emitEvent({
    type: 'agentStarted',
    iteration: n,
    agent: adapter.name,
    pid: handle.pid ?? null,
    command: [handle.invocation.file, ...handle.invocation.args.slice(0, -1)].join(' '),
  });
  // Also outside the workspace: the next start ends an orphan group even if the agent deletes its run folder.
  if (handle.pid !== undefined)
    await writeAgentMirror(ctx.folder, ctx.runId, { pgid: handle.pid, token: handle.token }).catch(
      ctx.warn('could not record the agent in the state folder'),
    );
  await ctx
    .record({
      agentPgid: handle.pid ?? null,
      agentToken: handle.token,
      agentStartedAt: isoString(Date.now()),
    })
    .catch(async (err: unknown) => {
      // Not recorded (a full disk): the agent is not left running, nor its watchdog ticking.
      clearTimeout(watchdogTimer);
      watchdogEnd = 'run.json could not be written';
      await handle.kill('error');
      await raw.close().catch(ctx.warn(`raw stream of iteration ${n}`));
      throw err;
    });

  const onAbort = () => void handle.kill('cancel');
  ctx.signal?.addEventListener('abort', onAbort);
  if (ctx.signal?.aborted ?? false) onAbort();
  let exit: IterationExit;
  try {
    exit = await handle.done;
  } finally {
    clearTimeout(watchdogTimer);
    ctx.signal?.removeEventListener('abort', onAbort);
    await writeAgentMirror(ctx.folder, ctx.runId, null).catch(
      ctx.warn('could not remove the agent record in the state folder'),
    );
    await raw
      .close()
      .catch((err: Error) =>
        ctx.emitEvent({ type: 'warning', message: `raw stream of iteration ${n}: ${err.message}` }),
      );
  }
  emitTokens();
  const totals = iterationTotals(exit.ledger);
  // The run's cost is the decision state's (decide.ts adds it when the iteration's end is observed).
  const runCostUsd = req.costBefore + (totals.costUsd ?? 0);
  // The agent has ended (its group and marked processes too, spawn.ts): its end and the marks it changed, one write.
  await ctx.markChildEnd(marksAtStart, 'the agent', `iteration ${n}`, {
    agentPgid: null,
    agentToken: null,
    costUsd: runCostUsd,
  });
  ctx.restoreTaskFiles(n);
  if (exit.endedAfterTurn)
    ctx.emitEvent({
      type: 'warning',
      message: `iteration ${n}: ${adapter.name} was still running ${(adapter.afterTurn?.graceMs ?? 0) / 1000} s after its turn's final event: ended it (the turn counts as it ended)`,
    });
  if (exit.leftBehind.length)
    ctx.emitEvent({
      type: 'warning',
      message: `ended ${exit.leftBehind.length} process(es) the agent left running outside its process group (pids ${exit.leftBehind.join(', ')})`,
    });

  const workingAfter = workingSet(await readHandoff(ctx.folder));
  // Only work on an item can wait for an answer; the plain-question rule also needs no commit.
  const question =
    purpose === 'work' ? findQuestion(texts, wrote || headAtStart !== (await headSha(ctx.folder))) : null;
  // An iteration the watchdog ended is an error (not fatal): its claim is still verified, and no progress stalls.
  const outcome =
    watchdogEnd !== null
      ? { ending: 'error' as const, detail: watchdogEnd }
      : classifyEnding(exit, signals, workingSetChanged(workingBefore, workingAfter), question);
  ctx.emitEvent({
    type: 'iterationEnded',
    iteration: n,
    ending: outcome.ending,
    detail: outcome.detail,
    totals,
    exitCode: exit.exitCode,
  });
  return {
    ...outcome,
    exit,
    signals,
    lastText,
    resetsAt: exit.outcome.resetsAt ?? null,
    costUsd: totals.costUsd ?? 0,
    iteration: n,
    question: outcome.ending === 'question' ? question : null,
    runCostUsd,
    tokens: totals.tokens,
  };
}

async function allTasksText(source: WorkSource): Promise<string> {
  const p = await source.progress();
  return `All ${p.total} tasks of ${source.label} report done. Check the whole change against them.`;
}

/**
 * How an iteration ended (issue "One iteration" 4), from the process exit, the agent's own signals and the
 * handoff: rotation and cancel (we ended it), deferral (rate limit or transient API error), error (fatal, or no
 * result), stuck (GUTTER / quantum BLOCKED), complete (a completion signal), yield (the Working set section of
 * handoff.md changed: content, not mtime, fixing seed-systems.md §3.15-2), natural end. Pure.
 */
export function classifyEnding(
  exit: IterationExit,
  signals: readonly AgentSignal[],
  workingSetChangedThisIteration: boolean,
  question: AgentQuestion | null = null,
): { ending: IterationEnding; detail: string } {
  if (exit.killedBy === 'rotate')
    return {
      ending: 'rotation',
      detail: `context ${exit.ledger.contextTokens} ≥ rotate ${exit.ledger.thresholds.rotate} tokens`,
    };
  if (exit.killedBy === 'cancel') return { ending: 'cancelled', detail: 'cancelled' };
  if (exit.spawnError) return { ending: 'error', detail: `could not start the agent: ${exit.spawnError}` };
  const o = exit.outcome;
  if (o.kind === 'rateLimited' || o.kind === 'transient') return { ending: 'deferred', detail: o.reason };
  if (o.kind === 'fatal') return { ending: 'error', detail: o.reason };
  const stuck = signals.find((s) => s.kind === 'stuck');
  if (stuck) return { ending: 'stuck', detail: stuck.reason ?? stuck.value };
  // A `<question>` tag wins over a completion signal (an agent that asks has not finished); a plain question
  // (no writes, last paragraph ends with "?") only when nothing else was signalled.
  if (question?.how === 'tag') return { ending: 'question', detail: question.text.split('\n')[0]!.slice(0, 200) };
  if (signals.some((s) => s.kind === 'complete' || s.kind === 'storyPassed'))
    return { ending: 'complete', detail: signals.map((s) => s.value).join(', ') };
  if (workingSetChangedThisIteration)
    return { ending: 'yield', detail: 'the agent updated the handoff Working set and stopped' };
  if (o.kind === 'error' || o.kind === 'noResult') return { ending: 'error', detail: o.reason };
  if (question) return { ending: 'question', detail: question.text.split('\n')[0]!.slice(0, 200) };
  return { ending: 'natural', detail: 'the agent ended its turn' };
}
