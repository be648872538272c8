import { readFile, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { gateCommandFor } from '../../gates/gateConfig';
import { runGateExclusive } from '../../gates/gateCall';
import type { GateResult } from '../../gates/gateRunner';
import { writeAutoEnriched, writeLastGateState } from '../../gates/handoff';
import { gateFilesChangedReason } from '../../trust/gateFileContent';
import type { EngineEvent, GateTier, IterationPurpose } from '../events';
import { lastCommitLine } from '../../git/gitState';
import { runNotify } from '../notify';
import { answerFilePath } from '../question';
import type { RalphConfig } from '../../model/config';
import type { EngineTiming } from '../runOptions';
import type { IterationOutcome } from './agentIteration';
import type { LaneContext } from './laneContext';
import type { Observation } from './phases';

/*
 * The lane's effects that several actions share: progress reports, the handoff's enriched section, a gate run of a
 * tier, `notify`, reading an answer. Functions over the lane's context (lane/laneContext.ts).
 */

/** Emits `progress` ("k/N done") when it changed since the last report, or always with `force`. */
export async function reportProgress(cx: LaneContext, force = true): Promise<void> {
  const p = await cx.source.progress();
  const text = `${p.done}/${p.total} done`;
  if (!force && text === cx.facts.lastProgress) return;
  cx.facts.lastProgress = text;
  cx.emit({ type: 'progress', done: p.done, total: p.total, text });
}

/** The `iterationEnded` observation of an iteration's outcome. */
export function endedObservation(purpose: IterationPurpose, out: IterationOutcome): Observation {
  return {
    kind: 'iterationEnded',
    purpose,
    iteration: out.iteration,
    ending: out.ending,
    detail: out.detail,
    fatal: out.exit.outcome.kind === 'fatal' || !!out.exit.spawnError,
    resetsAt: out.resetsAt,
    costUsd: out.costUsd,
    now: Date.now(),
    question: out.question?.text ?? null,
  };
}

/** Updates the handoff's auto-enriched section: the last commit, the last verified item, the next one. */
export async function enrichHandoff(cx: LaneContext): Promise<void> {
  const skip = cx.runState().asked.flatMap((q) => (q.item ? [q.item.id] : []));
  const next = await cx.source.next(skip.length ? { skip } : {}).catch((err: unknown) => {
    cx.warn('could not ask the source for the next item (handoff)')(err);
    return null;
  });
  await writeAutoEnriched(cx.folder, {
    lastCommit: await lastCommitLine(cx.folder),
    lastDone: cx.facts.lastDone,
    nextItem: next?.kind === 'work' ? next.item.title : null,
  }).catch(cx.warn('could not update the handoff'));
}

/**
 * Runs one gate for the engine (runGateExclusive: the lock of its label, never a joined verdict) between its
 * `gateStarted` and `gateResult` events; a stale gate lock it breaks is a warning. Used by a lane's tiers and by the
 * feature branch's gate after a merge.
 */
export async function runEngineGate(
  o: {
    folder: string;
    tier: GateTier;
    command: string;
    timing: Pick<EngineTiming, 'gateTimeoutMs' | 'killGraceMs'>;
    config: Pick<RalphConfig, 'containment'>;
    signal?: AbortSignal;
  },
  emit: (e: EngineEvent) => void,
): Promise<GateResult> {
  emit({ type: 'gateStarted', tier: o.tier, command: o.command });
  const r = await runGateExclusive(
    {
      folder: o.folder,
      label: o.tier,
      command: o.command,
      timeoutMs: o.timing.gateTimeoutMs,
      signal: o.signal,
      killGraceMs: o.timing.killGraceMs,
      containment: o.config.containment,
    },
    (message) => emit({ type: 'warning', message }),
  );
  const { exitCode, durationMs, failingLines } = r;
  emit({
    type: 'gateResult',
    tier: o.tier,
    command: o.command,
    exitCode,
    durationMs,
    passed: exitCode === 0,
    logPath: r.logRelPath,
    failingLines,
  });
  return r;
}

/**
 * Runs the gate of a tier (with the fallback of gateCommandFor); null when the run has no gates. A gate whose
 * files changed during the run (the agent weakened scripts/check.sh) is not run: `filesChanged` is returned,
 * and decide() ends the run (the `gateFilesChanged` observation).
 */
export async function runTier(
  cx: LaneContext,
  tier: GateTier,
): Promise<GateResult | null | { filesChanged: Extract<Observation, { kind: 'gateFilesChanged' }> }> {
  if (!cx.gates) return null;
  const g = gateCommandFor(cx.gates, tier);
  if (!g) return null;
  const changed = (await cx.gateFiles?.changed()) ?? [];
  if (changed.length)
    return {
      filesChanged: {
        kind: 'gateFilesChanged',
        tier: g.tier,
        changed,
        reason: gateFilesChangedReason(g.tier, changed),
      },
    };
  // Cancel ends the gate's process group too (an already-aborted signal means the gate never starts).
  const r = await cx.book.aroundChild(`the ${g.tier} gate`, () =>
    runEngineGate({ folder: cx.folder, ...g, timing: cx.timing, config: cx.config, signal: cx.signal }, cx.emit),
  );
  await writeLastGateState(cx.folder, {
    label: r.label,
    exitCode: r.exitCode,
    summary: r.summary,
    command: r.command,
    durationMs: r.durationMs,
    logRelPath: r.logRelPath,
    failingLines: r.failingLines,
  });
  return r;
}

/**
 * Runs the `notify` command (if configured) for an event, as a child of the run (its code may load files the agent
 * wrote: marks made while it runs are claims, not a person's); its failure is a warning, never a failed run.
 */
export async function notify(
  cx: Pick<LaneContext, 'config' | 'runId' | 'folder' | 'book' | 'emit'>,
  event: EngineEvent,
  text: string,
): Promise<void> {
  const command = cx.config.notify.trim();
  if (!command) return;
  const r = await cx.book
    .aroundChild(`notify (${event.type})`, () =>
      runNotify(command, { runId: cx.runId, folder: cx.folder, event }, text, {
        cwd: cx.folder,
        timeoutMs: cx.config.notifyTimeoutMs,
      }),
    )
    // Its marks could not be written (claimBook.ts markChildStart): not run, which a failed notification reports.
    .catch((err: Error) => ({ ok: false as const, detail: `not run: ${err.message}` }));
  cx.emit({ type: 'notified', about: event.type, ok: r.ok, ...(r.ok ? {} : { detail: r.detail }) });
}

/**
 * The answer written for question `id` in the state root's run folder (trimmed), or null while there is none;
 * `ralph answer` (control/runControl.ts `answerQuestion`) writes it there. Read errors are warnings.
 */
export async function readAnswer(cx: LaneContext, id: string): Promise<string | null> {
  const file = answerFilePath(cx.stateRoot, cx.runId, id);
  try {
    const st = await stat(file);
    // An answer is a few lines; a huge file is not read whole (never an unbounded read).
    const text = st.size > 1024 * 1024 ? null : (await readFile(file, 'utf8')).trim();
    if (text === null)
      cx.emit({
        type: 'warning',
        message: `${path.relative(cx.stateRoot, file)} is larger than 1 MiB: not read as an answer`,
      });
    return text ? text : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      cx.warn(`could not read ${path.relative(cx.stateRoot, file)}`)(err);
    return null;
  }
}
