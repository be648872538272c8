import { honourStop, ralphRunDir } from '../../control/sentinels';
import { writePauseSentinel } from '../../control/runControl';
import { gateCommandFor } from '../../gates/gateConfig';
import { isoString } from '../../model/time';
import { appendAttempt, clearAttempts, readAttempts } from '../attemptStore';
import { formatAttemptHistory, oneLine } from '../attempts';
import type { EngineEvent, GateTier } from '../events';
import { headSha, lastCommitSubject, treeState } from '../../git/gitState';
import { answerFilePath, questionAnswerSection } from '../question';
import type { WorkItem } from '../../sources/work/workSources';
import { finalGateRepeats, sameItem } from './decide';
import { ref } from './itemRef';
import type { LaneContext } from './laneContext';
import { endedObservation, enrichHandoff, notify, reportProgress, runTier } from './laneIO';
import type { Action, RunEnd } from './phases';

/*
 * One handler per action of the phase table (lane/phases.ts `Action`): each performs its action over the lane's
 * context and either goes on (null), ends the run (a `RunEnd`), or observes what followed (`cx.then`, whose arrow
 * the table's `FOLLOWS` names). The compiler holds the table complete: a new action type without a handler fails the
 * build.
 */

type ActionOf<K extends Action['type']> = Extract<Action, { type: K }>;
type Handler<K extends Action['type']> = (cx: LaneContext, a: ActionOf<K>) => Promise<RunEnd | null>;

/** The run's record stays as it was when a state write fails: a warning, never a failed run. */
function markState(cx: LaneContext, state: 'paused' | 'running' | 'waiting'): Promise<void> {
  return cx.record({ state }).catch(cx.warn(`could not mark run.json ${state}`));
}

const end: Handler<'end'> = async (_cx, a) => a.end;

const honour: Handler<'honourStop'> = async (cx) => {
  await honourStop(cx.sentinels());
  return null;
};

const pause: Handler<'pause'> = async (cx) => {
  cx.emit({ type: 'paused' });
  await markState(cx, 'paused');
  let c = cx.sentinels();
  while (c.pause.length && !c.stop.length && !cx.cancelled()) {
    await cx.waitForSentinelChange(1000);
    c = cx.sentinels();
  }
  const ended = await cx.then({ kind: 'pauseEnded', cancelled: cx.cancelled(), stop: cx.stopName(c) });
  if (ended) return ended;
  await markState(cx, 'running');
  cx.emit({ type: 'resumed' });
  return null;
};

const runFix: Handler<'runFix'> = async (cx, a) => {
  const out = await cx.runAgent({
    item: null,
    purpose: a.purpose,
    attempt: 1,
    attemptKind: 'fix',
    attemptsText: '',
    taskText: a.text,
  });
  return cx.then(endedObservation(a.purpose, out));
};

const pickNext: Handler<'pickNext'> = async (cx, a) => {
  const source = cx.source;
  const first = cx.facts.firstItem;
  cx.facts.firstItem = undefined;
  // `ralph run --item` (the first pick) and an answered item are both "take this one": the source returns it while open.
  const take = a.take ?? first;
  const next = await source.next({ ...(a.skip ? { skip: a.skip } : {}), ...(take ? { take } : {}) });
  const truth = await cx.book.truthNow(source);
  const seen = {
    vanished: truth.vanished,
    ...(next.kind === 'complete' ? { unverified: truth.unverified.map((i) => ref(i)) } : {}),
  };
  if (next.kind !== 'work') return cx.then({ kind: 'next', next, sourceLabel: source.label, ...seen });
  const item = next.item;
  const records = await readAttempts(cx.folder, item);
  cx.facts.work = { item, records, headBefore: null, fpBefore: null, out: null, claim: null };
  const failed = Math.max(records.length, (await source.failedAttempts(item)) ?? 0);
  return cx.then({
    kind: 'next',
    next: {
      kind: 'work',
      item: ref(item, item.risky),
      failedAttempts: failed,
      attemptLimit: await source.attemptLimit(item),
      lastFailure: records.at(-1)?.reason ?? null,
    },
    sourceLabel: source.label,
    ...seen,
  });
};

const runWork: Handler<'runWork'> = async (cx, a) => {
  const w = cx.facts.work!;
  const item = w.item;
  // The count can change between verifications (the agent ticked another box, a person edited the file).
  await reportProgress(cx, false);
  // Current before the start is written: whatever ends the run from here gives the item back.
  cx.facts.current = item;
  // Named in run.json before its source says in_progress (with what the lane deferred): a crash from here on makes
  // recovery fail this item, never the one the last verdict carried (whose end may still be deferred).
  await cx.record({ currentItem: { source: item.source, id: item.id, title: item.title } });
  await cx.source.start(item);
  cx.facts.setAside.delete(item.id);
  await cx.book.startItem(cx.source, item);
  w.headBefore = await headSha(cx.folder);
  w.fpBefore = await cx.source.fingerprint();
  const history = formatAttemptHistory(w.records, a.attempt.kind);
  const qa = a.answered ? questionAnswerSection(a.answered.question, a.answered.answer) : '';
  w.out = await cx.runAgent({
    item,
    purpose: 'work',
    attempt: a.attempt.number,
    attemptKind: a.attempt.kind,
    attemptsText: [qa, history].filter(Boolean).join('\n'),
    maxAttempts: a.attempt.max,
  });
  return cx.then(endedObservation('work', w.out));
};

const block: Handler<'block'> = async (cx, a) => {
  const work = cx.facts.work;
  const item = work?.item.id === a.item.id ? work.item : a.item;
  await cx.source.block(item as WorkItem, a.reason);
  if (cx.facts.current?.id === a.item.id) cx.facts.current = null;
  cx.emit({ type: 'itemBlocked', item: ref(a.item), reason: a.reason });
  // Pause the run: a person looks at the blocked item, then resumes (or stops).
  if (a.pauseRun) await writePauseSentinel(ralphRunDir(cx.folder, cx.runId), `blocked: ${a.item.id}: ${a.reason}\n`);
  return null;
};

const defer: Handler<'defer'> = async (cx, a) => {
  // A usage limit may fail over to the next agent at once, or wait for another agent's earlier reset.
  const failover = cx.roster.onDefer();
  const d = failover?.decision;
  if (d?.kind === 'switch') return null;
  // Waiting on another agent's reset: until that reset (with the loop's margin), not the limited agent's.
  const waitMs =
    d?.until != null && d.agent !== failover!.from
      ? Math.max(0, d.until - Date.now()) + cx.timing.backoff.resetMarginMs
      : a.waitMs;
  cx.emit({ type: 'deferred', reason: a.reason, waitMs, resetsAt: d?.until ?? a.resetsAt, inARow: a.inARow });
  await cx.sleep(waitMs);
  return null;
};

const checkClaim: Handler<'checkClaim'> = async (cx) => {
  const w = cx.facts.work!;
  const signals = w.out?.signals ?? [];
  w.claim = await cx.source.claim(w.item, signals);
  const others = (await cx.book.unverified(cx.source))
    .filter((i) => i.id !== w.item.id)
    .map((i) => ({ ...ref(i), ...(i.risky ? { risky: true } : {}) }));
  return cx.then({
    kind: 'claimed',
    done: w.claim.done,
    completeSignal: signals.some((s) => s.kind === 'complete'),
    storyFailed: signals.some((s) => s.kind === 'storyFailed'),
    lastText: oneLine(w.out?.lastText ?? ''),
    sourceLabel: cx.source.label,
    others,
  });
};

const runGate: Handler<'runGate'> = async (cx, a) => {
  const w = cx.facts.work!;
  // A lane notes the tree around a green gate, so that its final gate does not repeat it (finalGateRepeats).
  cx.facts.lastGreen = null;
  const treeBefore = cx.lane ? await treeState(cx.folder) : null;
  const gate = await runTier(cx, a.tier);
  if (gate && 'filesChanged' in gate) return cx.then(gate.filesChanged);
  if (cx.cancelled()) return cx.then({ kind: 'cancelledDuringGate' });
  if (!gate) return cx.then({ kind: 'verified', gate: null, approach: '' });
  if (cx.lane && gate.exitCode === 0)
    cx.facts.lastGreen = { command: gate.command, treeBefore, treeAfter: await treeState(cx.folder) };
  // What is claimed now; decide() keeps only what was claimed before the gate started.
  const claimsAfter = cx.book.baseline ? (await cx.book.unverified(cx.source)).map((i) => ref(i)) : undefined;
  const approach =
    (w.headBefore !== (await headSha(cx.folder)) ? await lastCommitSubject(cx.folder) : null) ??
    oneLine(w.out?.lastText ?? '');
  const reason = `${gate.label} gate exit ${gate.exitCode}${gate.timedOut ? ' (timed out)' : ''}: ${gate.failingLines.slice(0, 5).join(' | ') || gate.tail.slice(-3).join(' | ') || 'no output'}`;
  w.verifiedBy = gate.label as GateTier;
  return cx.then({
    kind: 'verified',
    gate: { tier: gate.label as GateTier, passed: gate.exitCode === 0, reason },
    approach,
    ...(claimsAfter ? { claimsAfter } : {}),
  });
};

const accept: Handler<'accept'> = async (cx, a) => {
  const w = cx.facts.work!;
  const alsoDone = a.also;
  await cx.source.accept(w.item, alsoDone);
  cx.facts.current = null;
  // The verified items join the carried baseline; nothing else does.
  const claims = await cx.book.unverified(cx.source);
  // The carried baseline and the item's end, one write of run.json.
  await cx.book.carry(
    cx.source,
    claims.filter((c) => sameItem(c, w.item) || alsoDone.some((x) => sameItem(x, c))),
    { currentItem: null },
  );
  // The item's end is written at once (the mirror's baseline may wait): until it is, run.json names the verified item
  // as current, and crash recovery fails it (a crash charged, the story blocked at its last attempt).
  await cx.record({});
  await clearAttempts(cx.folder, w.item);
  cx.facts.lastDone = w.item.title;
  const tier = w.verifiedBy ?? null;
  cx.emit({ type: 'verified', item: ref(w.item), tier });
  for (const also of alsoDone) cx.emit({ type: 'verified', item: also, tier });
  await reportProgress(cx);
  return null;
};

const attemptFailed: Handler<'attemptFailed'> = async (cx, a) => {
  const w = cx.facts.work!;
  // The run's own attempt counts (decide.ts `failedAttempts`) persist in run.json `attempts`.
  await cx.record({ attempts: cx.runState().failedAttempts ?? {} });
  await appendAttempt(cx.folder, w.item, {
    number: a.attempt,
    approach: a.approach,
    reason: a.reason,
    at: isoString(Date.now()),
    runId: cx.runId,
  });
  // The other claims went back with `putBack`; the item itself goes back here (its status, its box).
  await cx.source.reject(w.item, [], a.reason);
  cx.emit({ type: 'attemptFailed', item: ref(a.item), attempt: a.attempt, approach: a.approach, reason: a.reason });
  await cx.book.carry(cx.source);
  await reportProgress(cx, false);
  return null;
};

const putBack: Handler<'putBack'> = async (cx, a) => {
  await cx.book.putBack(cx.source, a.reason, a.items);
  return null;
};

const checkProgress: Handler<'checkProgress'> = async (cx) => {
  const w = cx.facts.work!;
  const progressed = w.headBefore !== (await headSha(cx.folder)) || w.fpBefore !== (await cx.source.fingerprint());
  // Nothing was claimed done that is still open (other claims went back with `putBack`).
  await cx.book.carry(cx.source);
  return cx.then({ kind: 'progressChecked', progressed });
};

const enrich: Handler<'enrichHandoff'> = async (cx) => {
  await enrichHandoff(cx);
  return null;
};

const runFinalGate: Handler<'runFinalGate'> = async (cx) => {
  // A lane whose last green gate ran this same command on this same tree does not run it again; no gate event: none
  // ran (the run log shows the green gate it repeats).
  const finalCommand = cx.gates ? (gateCommandFor(cx.gates, 'final')?.command ?? null) : null;
  const last = cx.facts.lastGreen;
  cx.facts.lastGreen = null;
  const treeNow = last && cx.lane ? await treeState(cx.folder) : null;
  if (last && finalGateRepeats({ lane: !!cx.lane, finalCommand, lastGreen: last, treeNow })) {
    if (treeNow !== null) cx.lane?.onGreenTree?.({ command: last.command, state: treeNow });
    return cx.then({
      kind: 'finalGate',
      hasGates: true,
      claimsAfter: (await cx.book.truthNow(cx.source)).unverified.map((i) => ref(i)),
      gate: { passed: true, command: last.command, exitCode: 0, summary: 'passed on this same tree just before' },
    });
  }
  const gate = await runTier(cx, 'final');
  if (gate && 'filesChanged' in gate) return cx.then(gate.filesChanged);
  if (cx.cancelled()) return cx.then({ kind: 'cancelledDuringGate' });
  // The final gate started with nothing unverified (decide() put it back first); what is claimed now became done
  // while it ran.
  const claimsAfter = gate ? (await cx.book.truthNow(cx.source)).unverified.map((i) => ref(i)) : [];
  return cx.then({
    kind: 'finalGate',
    hasGates: cx.gates !== null,
    claimsAfter,
    gate: gate
      ? {
          passed: gate.exitCode === 0,
          command: gate.command,
          exitCode: gate.exitCode,
          summary: gate.summary ?? gate.failingLines.join('\n'),
        }
      : null,
  });
};

const runReview: Handler<'runReview'> = async (cx) => {
  cx.facts.review = await cx.runAgent({
    item: null,
    purpose: 'review',
    attempt: 1,
    attemptKind: 'first',
    attemptsText: '',
  });
  return cx.then(endedObservation('review', cx.facts.review));
};

const checkVerdict: Handler<'checkVerdict'> = async (cx) => {
  const out = cx.facts.review;
  const verdict =
    [...(out?.signals ?? [])]
      .reverse()
      .find((s) => s.kind === 'verdict')
      ?.value.toUpperCase() ?? 'NONE';
  cx.emit({ type: 'reviewVerdict', verdict });
  return cx.then({ kind: 'reviewed', verdict, text: out?.lastText ?? '' });
};

const ask: Handler<'ask'> = async (cx, a) => {
  const event: EngineEvent = {
    type: 'question',
    id: a.id,
    iteration: a.iteration,
    item: a.item,
    text: a.text,
    answerFile: answerFilePath(cx.stateRoot, cx.runId, a.id),
  };
  cx.emit(event);
  // continueOnBlocked: decide() set the item aside; it stays started (in progress, claimed) while other work goes on.
  const current = cx.facts.current;
  if (current && cx.runState().asked.some((q) => q.id === a.id)) {
    cx.facts.setAside.set(current.id, current);
    cx.facts.current = null;
  }
  await markState(cx, 'waiting');
  await notify(cx, event, `Ralph run ${cx.runId}: question${a.item ? ` on ${a.item.id}` : ''}: ${a.text}`);
  return null;
};

const waitForAnswer: Handler<'waitForAnswer'> = async (cx) => {
  // Woken early by a sentinel change or cancel; the answer file is looked at again before the next decision.
  await cx.waitForSentinelChange(1000);
  return null;
};

const answered: Handler<'answered'> = async (cx, a) => {
  cx.emit({ type: 'answered', id: a.id, item: a.item, text: a.text });
  await markState(cx, 'running');
  return null;
};

const questionTimedOut: Handler<'questionTimedOut'> = async (cx, a) => {
  cx.emit({ type: 'questionTimedOut', id: a.id, item: a.item, waitedMs: a.waitedMs });
  return null;
};

const warning: Handler<'warning'> = async (cx, a) => {
  cx.emit({ type: 'warning', message: a.message });
  return null;
};

const itemsVanished: Handler<'itemsVanished'> = async (cx, a) => {
  cx.emit({ type: 'itemsVanished', source: a.source, items: a.items });
  return null;
};

/** The handler of every action type: the compiler fails the build when one is missing. */
export const ACTIONS: { readonly [K in Action['type']]: Handler<K> } = {
  end,
  honourStop: honour,
  pause,
  runFix,
  pickNext,
  runWork,
  block,
  defer,
  checkClaim,
  runGate,
  accept,
  attemptFailed,
  putBack,
  checkProgress,
  enrichHandoff: enrich,
  runFinalGate,
  runReview,
  checkVerdict,
  ask,
  waitForAnswer,
  answered,
  questionTimedOut,
  warning,
  itemsVanished,
  continue: async () => null,
};

/** Performs one action with its handler. */
export function act(cx: LaneContext, a: Action): Promise<RunEnd | null> {
  return (ACTIONS[a.type] as Handler<Action['type']>)(cx, a as never);
}
