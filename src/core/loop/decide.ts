import { decideDeferral, type BackoffPolicy, type DeferralState } from './backoff';
import { nextAttempt, type AttemptKind } from './attempts';
import type { GateTier, IterationEnding, IterationPurpose, RunEndState, WorkItemRef } from './events';
import { settleSetAside, type WaitingQuestion } from './question';
import type { ClaimBaseline } from '../model/claimBaseline';

/**
 * The loop's decisions as one pure function (ARCHITECTURE.md "decide(state, observation) → actions"): caps,
 * sentinels, verdicts, stalls, attempts, deferrals, final verification and review. The engine (engine.ts) is
 * the shell: it observes (files, processes, gates), calls {@link decide}, performs the actions in order and keeps
 * `next`. A terminal outcome is an `end` action, a value: nothing is thrown to end a run.
 *
 * State is split as lanes need it: {@link RunState} (caps, cost, iteration counts, deferral, the pending final
 * fix) is shared by the run; {@link LaneState} (the item, its attempt, stall count) is per lane. One lane runs today.
 */

/** Caps and rules of a run, fixed at its start. Money in USD, times in ms; 0 = no cap. */
export interface RunRules {
  maxIterations: number;
  maxCostUsd: number;
  maxWallMs: number;
  /** Iterations in a row without progress that stop the run as stalled (seed §3.6: 3). */
  stallLimit: number;
  backoff: BackoffPolicy;
  /** Run the reviewer after a green final gate. */
  reviewer: boolean;
  /** Go on with other ready work after blocking an item, instead of pausing. */
  continueOnBlocked: boolean;
  /** How long an item waits for the answer to a question before the run stops as stalled, ms; 0 = for ever. */
  questionTimeoutMs: number;
}

/** Run-level state. */
export interface RunState {
  rules: RunRules;
  /** ms since the epoch the run started (wall-time cap). */
  startedAtMs: number;
  /** Iterations that count against `maxIterations` (deferred ones do not). */
  workIterations: number;
  /** Agents' cost so far, USD. */
  costUsd: number;
  deferral: DeferralState;
  /** An iteration owed after a red final gate or a reviewer that did not ship. */
  pendingFix: { purpose: IterationPurpose; text: string } | null;
  /**
   * Items set aside while they wait for an answer and other ready work goes on (`continueOnBlocked`), in asking
   * order; the sources skip them in `next` until their answer comes.
   */
  asked: WaitingQuestion[];
  /**
   * A cap was reached (issue 11 "completion wins over the cap"): the run asks the source once more and ends with
   * this unless everything is done and the final gate is green. null while no cap is reached.
   */
  capEnd: RunEnd | null;
  /**
   * Failed attempts this run counted per item ({@link itemKey}); the engine keeps them in run.json `attempts`.
   * The larger of this and the source's / `.ralph/attempts.json` count wins (issue 11: deleting attempts.json
   * must not reset the count).
   */
  failedAttempts: Record<string, number>;
  /** Items this run blocked ({@link itemKey}): offered again, the run ends blocked instead of looping. */
  blocked: string[];
  /**
   * Items of the run's source that vanished since the run saw them (issue 11 A6/C3: an agent deleting a story, task
   * or box makes the total smaller and progress look done), as labels. While any is gone the run never completes.
   */
  vanished?: string[];
}

/**
 * The key an item's attempts are counted under: `<source>:<id>`, or `<source>:<box text>` for a checklist box
 * (its line moves as the file is edited). The same key as `.ralph/attempts.json` (attemptStore.ts `attemptKey`).
 */
export function itemKey(item: WorkItemRef): string {
  return `${item.source}:${item.source === 'checklist' ? item.title : item.id}`;
}

/** Per-lane state. */
export interface LaneState {
  lane: number;
  /** The item the lane works on and has not finished. */
  item: (WorkItemRef & { risky: boolean }) | null;
  attempt: { number: number; kind: AttemptKind; max: number } | null;
  /** Iterations in a row that ended without progress. */
  stall: number;
  /**
   * Other items that turned done since the item's claim baseline (issue 11 "every item"): verified by the item's
   * green gate with it, put back otherwise. Set by `claimed`, cleared when settled.
   */
  claims: WorkItemRef[];
  /** The question the lane's item waits on (`askedAtMs` ms since the epoch). */
  waiting: WaitingQuestion | null;
  /** A question and its answer, owed to the next prompt of `itemId`. */
  answered: { itemId: string | null; question: string; answer: string } | null;
}

/** A terminal outcome: the run's end state, a one-line reason and the progress.txt completion reason. */
export interface RunEnd {
  state: RunEndState;
  reason: string;
  completionReason: string;
}

/** What the shell observed, at each point the loop decides. */
export type Observation =
  /**
   * Before an iteration: cancel, sentinels, the clock. `stop` names the STOP file, if any. `answer`: the answer
   * to the lane's waiting question when one was written (null: none yet, or nothing waits). `answers`: the answers
   * written to the run's set-aside questions ({@link RunState.asked}), by question id.
   */
  | {
      kind: 'beforeIteration';
      cancelled: boolean;
      stop: string | null;
      pause: boolean;
      now: number;
      answer: string | null;
      answers?: Readonly<Record<string, string>>;
    }
  /** A pause ended (PAUSE removed, or STOP/cancel while paused). */
  | { kind: 'pauseEnded'; cancelled: boolean; stop: string | null }
  /**
   * The source's answer to "what next", with the item's failed attempts and the source's attempt limit.
   * `unverified`: items done now that no gate verified since the carried baseline (issue 11 R1: made done between
   * iterations, by a process the agent left behind); `vanished`: items of the run's source gone since the run saw
   * them (issue 11 A6/C3), as `<id> (<title>)` labels.
   */
  | {
      kind: 'next';
      next:
        | { kind: 'empty' }
        | { kind: 'complete' }
        | { kind: 'blocked'; reason: string }
        | {
            kind: 'work';
            item: WorkItemRef & { risky: boolean };
            failedAttempts: number;
            attemptLimit: number | null;
            lastFailure: string | null;
          };
      sourceLabel: string;
      unverified?: WorkItemRef[];
      vanished?: string[];
    }
  /** An iteration ended. `fatal`: the agent cannot go on (bad key, could not start). `resetsAt` ms since the epoch. */
  | {
      kind: 'iterationEnded';
      purpose: IterationPurpose;
      iteration: number;
      ending: IterationEnding;
      detail: string;
      fatal: boolean;
      resetsAt: number | null;
      costUsd: number;
      now: number;
      question: string | null;
    }
  /**
   * After a work iteration: does the source say the item is done, which signals the agent gave, and `others`: the
   * other items that turned done since the claim baseline (a person's own `ralph task done` excluded).
   */
  | {
      kind: 'claimed';
      done: boolean;
      completeSignal: boolean;
      storyFailed: boolean;
      lastText: string;
      sourceLabel: string;
      others?: (WorkItemRef & { risky?: boolean })[];
    }
  /**
   * The item's gate ran (`gate` null: the run has no gates). `claimsAfter`: every unverified claim since the carried
   * baseline when the gate ended (issue 11 B1v/B2: what became done while the gate ran is not verified by it).
   */
  | {
      kind: 'verified';
      gate: { tier: GateTier; passed: boolean; reason: string } | null;
      approach: string;
      claimsAfter?: WorkItemRef[];
    }
  /** After an iteration that claimed nothing: did anything change (status, checkbox, commit)? */
  | { kind: 'progressChecked'; progressed: boolean }
  /**
   * The final gate ran (`null`: none configured). `claimsAfter`: unverified claims when it ended (made done while it
   * ran: not verified by it, issue 11 B1v/B2).
   */
  | {
      kind: 'finalGate';
      gate: { passed: boolean; command: string; exitCode: number; summary: string } | null;
      hasGates: boolean;
      claimsAfter?: WorkItemRef[];
    }
  /** The reviewer iteration gave its verdict (`NONE` when it gave none) and its final text. */
  | { kind: 'reviewed'; verdict: string; text: string }
  /** A gate was cut short by cancel. */
  | { kind: 'cancelledDuringGate' }
  /**
   * A gate was not run because a file it runs changed during the run (issue 11: the agent weakened
   * scripts/check.sh). `changed`: the diff lines; `reason`: why the run ends, naming the files.
   */
  | { kind: 'gateFilesChanged'; tier: string; changed: string[]; reason: string };

/** What the shell does, in order. */
export type Action =
  | { type: 'end'; end: RunEnd }
  /** Honour the STOP sentinel (global STOP files are removed once honoured), before ending. */
  | { type: 'honourStop' }
  /** Wait while PAUSE exists (re-checking STOP and cancel), then observe `pauseEnded`. */
  | { type: 'pause' }
  /** Run the owed fix (or review) iteration, then observe `iterationEnded`. */
  | { type: 'runFix'; purpose: IterationPurpose; text: string }
  /**
   * Ask the source what is next, then observe `next`. `skip`: ids of items that wait for an answer (never
   * picked); `take`: the item whose answer just came, picked first while it is still open.
   */
  | { type: 'pickNext'; skip?: string[]; take?: string }
  /**
   * Start the item and run a work iteration at this attempt, then observe `iterationEnded`. `answered`: a question
   * of the item and its answer, for the prompt verbatim.
   */
  | {
      type: 'runWork';
      item: WorkItemRef & { risky: boolean };
      attempt: { number: number; kind: AttemptKind; max: number };
      answered: { question: string; answer: string } | null;
    }
  /** The agent asked a human: report the question (and notify); the item waits. */
  | { type: 'ask'; id: string; iteration: number; item: WorkItemRef | null; text: string }
  /** Wait a little for the answer (woken by a sentinel or cancel), then observe `beforeIteration` again. */
  | { type: 'waitForAnswer'; id: string }
  /** The answer came: report it. */
  | { type: 'answered'; id: string; item: WorkItemRef | null; text: string }
  /** The question waited too long: report it (the run then ends stalled). */
  | { type: 'questionTimedOut'; id: string; item: WorkItemRef | null; waitedMs: number }
  /** Block the item; pause the run unless `continueOnBlocked`. */
  | { type: 'block'; item: WorkItemRef; reason: string; pauseRun: boolean }
  /** Wait, ms (woken early by STOP or cancel), emitting the deferral first. */
  | { type: 'defer'; reason: string; waitMs: number; resetsAt: number | null; inARow: number }
  /** Ask the source whether the item is done, then observe `claimed`. */
  | { type: 'checkClaim' }
  /** Run the item's gate (`tier`), then observe `verified`. */
  | { type: 'runGate'; tier: GateTier }
  /** The gate confirmed the item: accept it and `also` (the other items the iteration finished), clear its attempts. */
  | { type: 'accept'; item: WorkItemRef; also: WorkItemRef[] }
  /**
   * Claims no green gate confirmed (issue 11): put every item back to its state at the claim baseline, and report
   * what the agent claimed.
   */
  | { type: 'putBack'; items: WorkItemRef[]; reason: string }
  /** Record a failed attempt and give the item back. */
  | { type: 'attemptFailed'; item: WorkItemRef; attempt: number; approach: string; reason: string }
  /** Compare status, checkboxes and HEAD with before the iteration, then observe `progressChecked`. */
  | { type: 'checkProgress' }
  /** Update the handoff's auto-enriched section. */
  | { type: 'enrichHandoff' }
  /** Run the final gate, then observe `finalGate`. */
  | { type: 'runFinalGate' }
  /** Run the reviewer iteration, then observe `iterationEnded` (purpose review) and `reviewed`. */
  | { type: 'runReview' }
  /** Read the reviewer's verdict from its iteration, then observe `reviewed`. */
  | { type: 'checkVerdict' }
  /** Report something that does not end the run. */
  | { type: 'warning'; message: string }
  /** Items of the run's source vanished (issue 11 A6/C3): report them (event + activity line); the run cannot complete. */
  | { type: 'itemsVanished'; items: string[]; source: string }
  /** Nothing more at this point: go on to the next iteration. */
  | { type: 'continue' };

/** What {@link decide} returns: the actions to perform, in order, and the states after them. */
export interface Decision {
  actions: Action[];
  next: { run: RunState; lane: LaneState };
}

const end = (state: RunEndState, reason: string, completionReason: string): Action => ({
  type: 'end',
  end: { state, reason, completionReason },
});

/** A question waited `questionTimeoutMs` without an answer: report it, then end the run stalled. */
const questionTimedOut = (q: WaitingQuestion, waitedMs: number, timeoutMs: number): Action[] => [
  { type: 'questionTimedOut', id: q.id, item: q.item, waitedMs },
  end(
    'stalled',
    `stalled: the question${q.item ? ` of ${q.item.id}` : ''} got no answer in ${Math.round(timeoutMs / 60000)} min`,
    'STALLED',
  ),
];

/** The first state of a run. */
export function initialRunState(rules: RunRules, startedAtMs: number): RunState {
  return {
    rules,
    startedAtMs,
    workIterations: 0,
    costUsd: 0,
    deferral: { inARow: 0, quotaWaits: 0 },
    pendingFix: null,
    capEnd: null,
    failedAttempts: {},
    blocked: [],
    asked: [],
  };
}

/** The first state of a lane. */
export function initialLaneState(lane = 0): LaneState {
  return { lane, item: null, attempt: null, stall: 0, claims: [], waiting: null, answered: null };
}

/**
 * The loop's decision at one point. Pure: the same inputs give the same actions. Rules and their sources:
 * - sentinels (seed-systems.md §2.7, §3.15): cancel ends the run `cancelled`; STOP ends it `stopped` (honoured
 *   first); PAUSE waits;
 * - caps (issue 5 "Caps"): iterations, cost (USD), wall time → `capReached`, unless the source is complete and
 *   the final gate green then (issue 11: completion wins over the cap);
 * - a pending final fix runs before new work;
 * - next (issue 5): no tasks → completed NO_WORK; nothing ready → blocked; everything done → final verification;
 * - attempts (attempts.ts, agmo §5.4): out of attempts → block the item;
 * - iteration endings (classifyEnding): cancelled → end; stuck → failed; deferred → decideDeferral (backoff.ts),
 *   not counted against the iteration cap; fatal error → failed; rotation → next iteration; else verify;
 * - verification: a claimed item goes through its gate (`full` for risky items); red → a failed attempt, the
 *   item blocked on its last; the agent's own STORY_FAILED is a failed attempt;
 * - every item (issue 11): other items that turned done since the baseline count only with the item's green gate
 *   (one green gate verifies every item the iteration finished); otherwise they are put back;
 * - attempts (issue 11): the run's own count per item wins when larger than the source's; an item this run
 *   blocked and is offered again ends the run blocked;
 * - stalls (seed §3.6): `stallLimit` iterations in a row without progress → stalled;
 * - a gate whose files changed during the run is not run: the run ends failed (issue 11; not a failed attempt);
 * - final verification: red final gate → a fix iteration; reviewer (flow-next §2.9) SHIP → done, else a fix;
 * - questions (issue 9): an item whose agent asked waits; with `continueOnBlocked` it is set aside
 *   ({@link RunState.asked}) and other ready work goes on, its answer takes it up again before new work, and the
 *   run waits only when nothing else is ready; without, the run waits. `questionTimeoutMs` ends a wait stalled.
 */
export function decide(run: RunState, lane: LaneState, obs: Observation): Decision {
  const out = (actions: Action[], r: RunState = run, l: LaneState = lane): Decision => ({
    actions,
    next: { run: r, lane: l },
  });
  switch (obs.kind) {
    case 'beforeIteration': {
      if (obs.cancelled) return out([end('cancelled', 'cancelled', 'INTERRUPTED')]);
      if (obs.stop) return out([{ type: 'honourStop' }, end('stopped', `stopped by ${obs.stop}`, 'STOPPED')]);
      if (obs.pause) return out([{ type: 'pause' }]);
      const r = run.rules;
      // A question waits without spending iterations; the answer lets the item go on, with the answer in its prompt.
      const pre: Action[] = [];
      let l = lane;
      if (lane.waiting) {
        const q = lane.waiting;
        if (obs.answer === null) {
          const waitedMs = obs.now - q.askedAtMs;
          if (r.questionTimeoutMs > 0 && waitedMs >= r.questionTimeoutMs) {
            return out(questionTimedOut(q, waitedMs, r.questionTimeoutMs), run, { ...lane, waiting: null });
          }
          return out([{ type: 'waitForAnswer', id: q.id }]);
        }
        pre.push({ type: 'answered', id: q.id, item: q.item, text: obs.answer });
        l = { ...lane, waiting: null, answered: { itemId: q.item?.id ?? null, question: q.text, answer: obs.answer } };
      }
      // Set-aside questions (continueOnBlocked): a timeout ends the run; an answer takes its item up before new work.
      let rn = run;
      let take: string | undefined;
      if (run.asked.length) {
        const s = settleSetAside(run.asked, obs.answers ?? {}, obs.now, r.questionTimeoutMs);
        if (s.timedOut)
          return out(
            [...pre, ...questionTimedOut(s.timedOut.question, s.timedOut.waitedMs, r.questionTimeoutMs)],
            { ...run, asked: s.rest },
            l,
          );
        if (s.answered) {
          const q = s.answered.question;
          pre.push({ type: 'answered', id: q.id, item: q.item, text: s.answered.answer });
          l = { ...l, answered: { itemId: q.item?.id ?? null, question: q.text, answer: s.answered.answer } };
          take = q.item?.id;
        }
        rn = { ...run, asked: s.rest };
      }
      const outL = (actions: Action[], rs: RunState = rn) => out([...pre, ...actions], rs, l);
      // A cap ends the run, unless everything is done: the source is asked once more (completion wins over the cap).
      const cap = (reason: string, completionReason: string) =>
        outL([{ type: 'pickNext' }], {
          ...rn,
          pendingFix: null,
          capEnd: { state: 'capReached', reason, completionReason },
        });
      if (run.capEnd) return outL([end(run.capEnd.state, run.capEnd.reason, run.capEnd.completionReason)]);
      if (run.workIterations >= r.maxIterations)
        return cap(`max iterations (${r.maxIterations}) reached`, 'MAX_ITERATIONS');
      if (r.maxCostUsd > 0 && run.costUsd >= r.maxCostUsd)
        return cap(`max cost reached: $${run.costUsd.toFixed(4)} ≥ $${r.maxCostUsd}`, 'MAX_COST');
      if (r.maxWallMs > 0 && obs.now - run.startedAtMs >= r.maxWallMs)
        return cap(`max wall time reached (${Math.round(r.maxWallMs / 60000)} min)`, 'MAX_WALL_TIME');
      if (run.pendingFix) return outL([{ type: 'runFix', ...run.pendingFix }], { ...rn, pendingFix: null });
      const skip = rn.asked.flatMap((q) => (q.item ? [q.item.id] : []));
      return outL([{ type: 'pickNext', ...(skip.length ? { skip } : {}), ...(take ? { take } : {}) }]);
    }
    case 'pauseEnded':
      if (obs.cancelled) return out([end('cancelled', 'cancelled', 'INTERRUPTED')]);
      if (obs.stop)
        return out([{ type: 'honourStop' }, end('stopped', `stopped by ${obs.stop} while paused`, 'STOPPED')]);
      return out([{ type: 'continue' }]);
    case 'next': {
      const n = obs.next;
      const capEnd = run.capEnd;
      // Items gone from the source since the run saw them (A6/C3): reported once each, and the run never completes.
      const pre: Action[] = [];
      let rn = run;
      if (obs.vanished) {
        const fresh = obs.vanished.filter((v) => !(run.vanished ?? []).includes(v));
        if (fresh.length) pre.push({ type: 'itemsVanished', items: fresh, source: obs.sourceLabel });
        rn = { ...run, vanished: obs.vanished };
      }
      const vanished = rn.vanished ?? [];
      const o = (actions: Action[], r: RunState = rn, l: LaneState = lane) => out([...pre, ...actions], r, l);
      // Everything reads done, but some of it no gate verified (R1: made done between iterations): back, then on.
      if (n.kind === 'complete' && obs.unverified?.length) {
        pre.push({
          type: 'putBack',
          items: obs.unverified,
          reason:
            'done without a gate that verified it (made done between iterations, or by a process the agent left behind)',
        });
        return o([capEnd ? end(capEnd.state, capEnd.reason, capEnd.completionReason) : { type: 'continue' }]);
      }
      if (capEnd && n.kind !== 'complete') return o([end(capEnd.state, capEnd.reason, capEnd.completionReason)]);
      // Nothing is ready but the items that wait for an answer: the run waits for one (as without continueOnBlocked).
      if (n.kind !== 'work' && run.asked.length) return o([{ type: 'waitForAnswer', id: run.asked[0]!.id }]);
      if ((n.kind === 'empty' || n.kind === 'complete') && vanished.length) {
        return o([
          end(
            'blocked',
            `${vanished.length} item${vanished.length > 1 ? 's' : ''} vanished from ${obs.sourceLabel} during the run (${vanished.join(', ')}): not complete. Restore ${vanished.length > 1 ? 'them' : 'it'}, or start a new run if a person removed ${vanished.length > 1 ? 'them' : 'it'}`,
            'BLOCKED',
          ),
        ]);
      }
      if (n.kind === 'empty') return o([end('completed', `nothing to do: ${obs.sourceLabel} has no tasks`, 'NO_WORK')]);
      if (n.kind === 'blocked') return o([end('blocked', n.reason, 'BLOCKED')]);
      if (n.kind === 'complete') return o([{ type: 'runFinalGate' }]);
      const key = itemKey(n.item);
      if (run.blocked.includes(key))
        return o([
          end(
            'blocked',
            `${n.item.id} was blocked by this run but ${obs.sourceLabel} offers it again (was its block record removed?)`,
            'BLOCKED',
          ),
        ]);
      const attempt = nextAttempt(Math.max(n.failedAttempts, run.failedAttempts[key] ?? 0), n.attemptLimit);
      if (attempt === 'exhausted')
        return o(
          [
            {
              type: 'block',
              item: n.item,
              reason: n.lastFailure ?? 'out of attempts',
              pauseRun: !run.rules.continueOnBlocked,
            },
          ],
          { ...rn, blocked: [...rn.blocked, key] },
          { ...lane, item: null, attempt: null },
        );
      const owed =
        lane.answered && (lane.answered.itemId === null || lane.answered.itemId === n.item.id)
          ? { question: lane.answered.question, answer: lane.answered.answer }
          : null;
      return o(
        [{ type: 'runWork', item: n.item, attempt, answered: owed }],
        { ...rn, workIterations: rn.workIterations + 1 },
        { ...lane, item: n.item, attempt, answered: owed ? null : lane.answered },
      );
    }
    case 'iterationEnded': {
      const r: RunState = {
        ...run,
        costUsd: run.costUsd + obs.costUsd,
        ...(obs.purpose === 'work' ? {} : { workIterations: run.workIterations + 1 }),
      };
      switch (obs.ending) {
        case 'cancelled':
          return out([end('cancelled', 'cancelled: the agent was ended', 'INTERRUPTED')], r);
        case 'stuck':
          return out([end('failed', `agent is stuck (GUTTER)${obs.detail ? `: ${obs.detail}` : ''}`, 'FAILED')], r);
        case 'rotation':
          return out([{ type: 'continue' }], { ...r, deferral: { ...r.deferral, inARow: 0 } });
        case 'deferred': {
          // A deferred iteration does not use up the iteration budget (seed §3.6 "n.r").
          const back: RunState = { ...r, workIterations: r.workIterations - 1 };
          const d = decideDeferral(run.deferral, obs.resetsAt, obs.now, run.rules.backoff);
          if (d.action === 'stall') return out([end('stalled', d.reason, 'STALLED')], { ...back, deferral: d.next });
          return out(
            [
              {
                type: 'defer',
                reason: obs.detail,
                waitMs: d.waitMs,
                resetsAt: d.action === 'waitUntilReset' ? d.resetsAt : null,
                inARow: d.next.inARow,
              },
            ],
            { ...back, deferral: d.next },
          );
        }
        case 'error':
          if (obs.fatal) return out([end('failed', `agent error: ${obs.detail}`, 'FAILED')], r);
          break;
        case 'question': {
          // Not a failed attempt and no claim to verify: the item waits for a human.
          const text = obs.question ?? obs.detail;
          const item = obs.purpose === 'work' ? lane.item : null;
          const id = `q${obs.iteration}`;
          const ref = item ? { source: item.source, id: item.id, title: item.title } : null;
          const q: WaitingQuestion = { id, text, item: ref, askedAtMs: obs.now };
          const ask: Action = { type: 'ask', id, iteration: obs.iteration, item: ref, text };
          const settled: RunState = { ...r, deferral: { ...r.deferral, inARow: 0 } };
          // continueOnBlocked: the item is set aside and the lane is free for other ready work; else the run waits.
          if (run.rules.continueOnBlocked && ref)
            return out([ask], { ...settled, asked: [...r.asked, q] }, { ...lane, item: null, attempt: null });
          return out([ask], settled, { ...lane, waiting: q });
        }
        default:
          break;
      }
      const settled: RunState = { ...r, deferral: { ...r.deferral, inARow: 0 } };
      if (obs.purpose === 'work') return out([{ type: 'checkClaim' }], settled);
      if (obs.purpose === 'review') return out([{ type: 'checkVerdict' }], settled);
      return out([{ type: 'continue' }], settled);
    }
    case 'claimed': {
      const item = lane.item;
      if (!item || !lane.attempt)
        return out([{ type: 'warning', message: 'a claim was checked with no item open' }, { type: 'continue' }]);
      const others = (obs.others ?? []).map((o) => ({ source: o.source, id: o.id, title: o.title }));
      // The gate verifies every item it accepts: a risky one among them asks for the `full` tier.
      const risky = item.risky || (obs.others ?? []).some((o) => o.risky);
      if (obs.done) return out([{ type: 'runGate', tier: risky ? 'full' : 'basic' }], run, { ...lane, claims: others });
      // Other items claimed in an iteration that did not finish its own: no gate verifies them, they go back.
      const actions: Action[] = others.length
        ? [
            {
              type: 'putBack',
              items: others,
              reason: `claimed done in an iteration that did not finish ${item.id}; no gate verified it`,
            },
          ]
        : [];
      if (obs.completeSignal)
        actions.push({
          type: 'warning',
          message: `agent signaled complete but ${obs.sourceLabel} says "${item.title}" is not done`,
        });
      if (obs.storyFailed) {
        const approach = obs.lastText;
        actions.push({
          type: 'attemptFailed',
          item,
          attempt: lane.attempt.number,
          approach,
          reason: `agent reported STORY_FAILED: ${approach}`,
        });
        return out(actions, failedOnce(run, item, lane.attempt.number), {
          ...lane,
          item: null,
          attempt: null,
          claims: [],
        });
      }
      actions.push({ type: 'checkProgress' });
      return out(actions);
    }
    case 'verified': {
      const item = lane.item;
      if (!item || !lane.attempt)
        return out([{ type: 'warning', message: 'a gate result came with no item open' }, { type: 'continue' }]);
      const cleared: LaneState = { ...lane, item: null, attempt: null, claims: [] };
      // B1v/B2: the gate verified the state it started on. Claims still done are verified with the item; what became
      // done while it ran (its own command, a process left behind) is not, and goes back.
      const { also, late } = verifiedAfterGate(item, lane.claims, obs.claimsAfter);
      const tier = obs.gate?.tier ?? 'no';
      const lateBack: Action[] = late.length
        ? [
            {
              type: 'putBack',
              items: late,
              reason: `became done while the ${tier} gate of ${item.id} ran; a gate verifies only the state it started on`,
            },
          ]
        : [];
      if (!obs.gate || obs.gate.passed)
        return out([...lateBack, { type: 'accept', item, also }, { type: 'enrichHandoff' }], run, {
          ...cleared,
          stall: 0,
        });
      const a = lane.attempt;
      const actions: Action[] = lane.claims.length
        ? [
            {
              type: 'putBack',
              items: lane.claims,
              reason: `claimed done with ${item.id}; the ${obs.gate.tier} gate is red`,
            },
          ]
        : [];
      actions.push(...lateBack);
      actions.push({ type: 'attemptFailed', item, attempt: a.number, approach: obs.approach, reason: obs.gate.reason });
      let r = failedOnce(run, item, a.number);
      if (a.number >= a.max) {
        actions.push({
          type: 'block',
          item,
          reason: `verification failed ${a.number} times; last: ${obs.gate.reason}`,
          pauseRun: !run.rules.continueOnBlocked,
        });
        r = { ...r, blocked: [...r.blocked, itemKey(item)] };
      }
      actions.push({ type: 'enrichHandoff' });
      return out(actions, r, cleared);
    }
    case 'progressChecked': {
      const stall = obs.progressed ? 0 : lane.stall + 1;
      if (stall >= run.rules.stallLimit)
        return out(
          [
            end(
              'stalled',
              `stalled: ${stall} iterations in a row ended without progress (no status or checkbox change, no commit)`,
              'STALLED',
            ),
          ],
          run,
          { ...lane, stall },
        );
      return out([{ type: 'enrichHandoff' }], run, { ...lane, stall });
    }
    case 'finalGate': {
      const g = obs.gate;
      const capEnd = run.capEnd;
      // B1v/B2: items made done while the final gate ran are not verified by it: back, and no completion on them.
      const late = obs.claimsAfter ?? [];
      if (late.length) {
        const back: Action = {
          type: 'putBack',
          items: late,
          reason: 'became done while the final gate ran; a gate verifies only the state it started on',
        };
        return out([back, capEnd ? end(capEnd.state, capEnd.reason, capEnd.completionReason) : { type: 'continue' }]);
      }
      // At a cap, only a green final gate (and no review still owed) completes the run.
      if (capEnd && ((g && !g.passed) || run.rules.reviewer))
        return out([end(capEnd.state, capEnd.reason, capEnd.completionReason)]);
      if (g && !g.passed) {
        return out([{ type: 'continue' }], {
          ...run,
          pendingFix: {
            purpose: 'finalFix',
            text: `Every task reports done, but the final gate fails (\`${g.command}\`, exit ${g.exitCode}). Make it pass without undoing finished work.\n\n${g.summary}`,
          },
        });
      }
      if (run.rules.reviewer) return out([{ type: 'runReview' }]);
      return out([
        end(
          'completed',
          obs.hasGates
            ? 'complete: every task verified, final gate green'
            : 'complete: every task done (no gates configured)',
          'DONE',
        ),
      ]);
    }
    case 'reviewed':
      if (obs.verdict === 'SHIP')
        return out([end('completed', 'complete: every task verified, final gate green', 'DONE')]);
      return out([{ type: 'continue' }], {
        ...run,
        pendingFix: {
          purpose: 'finalFix',
          text: `The reviewer did not ship the change (verdict ${obs.verdict}). Address every point below, commit, then stop.\n\n${obs.text.slice(0, 4000)}`,
        },
      });
    case 'cancelledDuringGate':
      return out([end('cancelled', 'cancelled during a gate', 'INTERRUPTED')]);
    case 'gateFilesChanged':
      // Not a failed attempt (the agent's work was never judged): the run ends failed; its claims go back at the end.
      return out([
        {
          type: 'warning',
          message: `gate files changed during the run:\n${obs.changed.map((l) => `  ${l}`).join('\n')}`,
        },
        end('failed', obs.reason, 'FAILED'),
      ]);
  }
}

/**
 * Two references name the same item: the same source and id; a checklist box by its file and text (its line moves
 * when boxes are added or removed above it).
 */
export function sameItem(a: WorkItemRef, b: WorkItemRef): boolean {
  if (a.source !== b.source) return false;
  if (a.source !== 'checklist') return a.id === b.id;
  const file = (id: string) => id.slice(0, Math.max(0, id.lastIndexOf(':')));
  return a.id === b.id || (file(a.id) === file(b.id) && a.title === b.title);
}

/**
 * What a gate verified (issue 11 B1v/B2): `atStart` are the other claims checked before the gate started (the
 * lane's claims), `after` every unverified claim when it ended (undefined: not observed, all of `atStart` count).
 * `also`: the claims of `atStart` still done after it (verified with `item`); `late`: claims that appeared while it
 * ran (not verified by it: the gate's own command or a process left behind made them done). Pure.
 */
export function verifiedAfterGate(
  item: WorkItemRef,
  atStart: readonly WorkItemRef[],
  after: readonly WorkItemRef[] | undefined,
): { also: WorkItemRef[]; late: WorkItemRef[] } {
  if (!after) return { also: [...atStart], late: [] };
  const also = atStart.filter((c) => after.some((a) => sameItem(a, c)));
  const late = after
    .filter((a) => !sameItem(a, item) && !atStart.some((c) => sameItem(c, a)))
    .map((a) => ({ source: a.source, id: a.id, title: a.title }));
  return { also, late };
}

/** A place in a {@link ClaimBaseline}: the source's own items (`done`), flow-next epics, or another checklist file. */
export type BaselineSlot =
  'done' | 'epics' | `checklist:${string}` | 'source:quantum' | 'source:flow' | 'source:flowEpics';

/**
 * The claim baseline carried to the next point of the run (issue 11 R1): the last VERIFIED state, never a fresh
 * read. `prev` null (the run's start): `now`, the state the run found. Else, per slot: what was done at `prev` and
 * is still done `now` (an item undone since, by a put-back or a person's reset, is a claim again when redone), plus
 * what a green gate `verified` (`{slot, key}`) and is done `now`. What became done otherwise (between iterations,
 * during a gate, after the check) stays out: it is a claim, verified by a later green gate or put back. `at` is
 * kept from `prev` (a person's `ralph task done` since the run began is theirs); `items` (every item key the run has
 * seen, for vanished items) is the union. Pure.
 */
export function carriedBaseline(
  prev: ClaimBaseline | null,
  now: ClaimBaseline,
  verified: readonly { slot: BaselineSlot; key: string }[] = [],
): ClaimBaseline {
  if (!prev) return now;
  const keep = (
    was: readonly string[] | undefined,
    is: readonly string[] | undefined,
    slot: BaselineSlot,
  ): string[] => {
    const nowSet = new Set(is ?? []);
    const wasSet = new Set(was ?? []);
    const ok = new Set(verified.filter((v) => v.slot === slot).map((v) => v.key));
    return (is ?? []).filter((k) => nowSet.has(k) && (wasSet.has(k) || ok.has(k)));
  };
  const out: ClaimBaseline = {
    at: prev.at,
    source: now.source,
    label: now.label,
    done: keep(prev.done, now.done, 'done'),
  };
  if (now.epics || prev.epics) out.epics = keep(prev.epics, now.epics, 'epics');
  if (now.checklists || prev.checklists) {
    const labels = new Set([...Object.keys(prev.checklists ?? {}), ...Object.keys(now.checklists ?? {})]);
    out.checklists = Object.fromEntries(
      [...labels].map((l) => [l, keep(prev.checklists?.[l], now.checklists?.[l], `checklist:${l}`)]),
    );
  }
  if (now.items || prev.items) out.items = [...new Set([...(prev.items ?? []), ...(now.items ?? [])])];
  if (now.sources || prev.sources) {
    const kinds = ['quantum', 'flow', 'flowEpics'] as const;
    out.sources = Object.fromEntries(
      kinds
        .filter((k) => (now.sources?.[k] ?? prev.sources?.[k]) !== undefined)
        .map((k) => [k, keep(prev.sources?.[k], now.sources?.[k], `source:${k}`)]),
    );
  }
  // What the engine learned about the person marks is the run's, not the source's: carried as is.
  if (prev.agentMarks?.length) out.agentMarks = [...prev.agentMarks];
  if (prev.marksAtAgentStart) out.marksAtAgentStart = { ...prev.marksAtAgentStart };
  return out;
}

/** The run state after a failed attempt `attempt` of `item`: the run's own count (issue 11) never goes down. */
function failedOnce(run: RunState, item: WorkItemRef, attempt: number): RunState {
  const key = itemKey(item);
  return { ...run, failedAttempts: { ...run.failedAttempts, [key]: Math.max(run.failedAttempts[key] ?? 0, attempt) } };
}

/**
 * The iteration watchdog's limits, ms (issue 12, `.ralph/config.json` `timing`): `silenceTimeoutMs` (default
 * 20 minutes, longer than a tool call may run without output) ends a silent agent's iteration as stalled;
 * `iterationTimeoutMs` (default 0 = none) ends any iteration that long; once STOP is requested, an agent silent for
 * `stopGraceMs` (default 60000) is ended, one still printing finishes its iteration.
 */
export interface WatchdogRules {
  silenceTimeoutMs: number;
  iterationTimeoutMs: number;
  stopGraceMs: number;
}

/** Defaults of {@link WatchdogRules}. */
export const DEFAULT_WATCHDOG: Readonly<WatchdogRules> = Object.freeze({
  silenceTimeoutMs: 20 * 60_000,
  iterationTimeoutMs: 0,
  stopGraceMs: 60_000,
});

/** What the shell observed about a running iteration: times in ms since the epoch. */
export interface WatchdogObservation {
  now: number;
  iterationStartedAt: number;
  /** Last byte the agent printed (stdout), or the iteration's start. */
  lastOutputAt: number;
  /** When a graceful STOP was requested during this iteration, else null. */
  stopRequestedAt: number | null;
}

/** The watchdog's verdict: keep waiting (and look again at `checkAt`), or end the iteration for `reason`. */
export type WatchdogVerdict =
  | { kind: 'wait'; checkAt: number | null }
  | { kind: 'end'; reason: 'silence' | 'iterationTimeout' | 'stopGrace'; detail: string };

/**
 * Decides whether a running iteration is ended now (pure; the shell only observes time and output). Order: the
 * iteration timeout, then STOP with a silent agent (silent for `stopGraceMs` since the later of the request and its
 * last output), then silence. `checkAt` is the earliest time the verdict can change (null: never, all limits off).
 */
export function decideWatchdog(o: WatchdogObservation, rules: WatchdogRules = DEFAULT_WATCHDOG): WatchdogVerdict {
  const silentFor = o.now - o.lastOutputAt;
  if (rules.iterationTimeoutMs > 0 && o.now - o.iterationStartedAt >= rules.iterationTimeoutMs) {
    return {
      kind: 'end',
      reason: 'iterationTimeout',
      detail: `the iteration ran ${Math.round((o.now - o.iterationStartedAt) / 1000)} s, the limit is ${Math.round(rules.iterationTimeoutMs / 1000)} s (timing.iterationTimeoutMs)`,
    };
  }
  if (o.stopRequestedAt !== null && o.now - Math.max(o.stopRequestedAt, o.lastOutputAt) >= rules.stopGraceMs) {
    return {
      kind: 'end',
      reason: 'stopGrace',
      detail: `STOP was requested and the agent printed nothing for ${Math.round(Math.min(silentFor, o.now - o.stopRequestedAt) / 1000)} s (timing.stopGraceMs)`,
    };
  }
  if (rules.silenceTimeoutMs > 0 && silentFor >= rules.silenceTimeoutMs) {
    return {
      kind: 'end',
      reason: 'silence',
      detail: `the agent printed nothing for ${Math.round(silentFor / 1000)} s (timing.silenceTimeoutMs): stalled`,
    };
  }
  const at = [
    rules.iterationTimeoutMs > 0 ? o.iterationStartedAt + rules.iterationTimeoutMs : Infinity,
    o.stopRequestedAt !== null ? Math.max(o.stopRequestedAt, o.lastOutputAt) + rules.stopGraceMs : Infinity,
    rules.silenceTimeoutMs > 0 ? o.lastOutputAt + rules.silenceTimeoutMs : Infinity,
  ].reduce((a, b) => Math.min(a, b));
  return { kind: 'wait', checkAt: Number.isFinite(at) ? at : null };
}

// ---------------------------------------------------------------------------------------------------------------
// Lanes of a parallel run (issue 19). Each lane runs the rules above for its one story (its own RunState and
// LaneState); these are the coordinator's rules around them: when to start lanes, what a lane's end means for its
// story, and what a merge means. loop/parallel/coordinator.ts is their shell.

/** What the coordinator observed before starting lanes: sentinels, cancel, spend (USD), iterations, time (ms), lanes. */
export interface CoordinatorObservation {
  cancelled: boolean;
  /** The STOP file in force (state root), or null. */
  stop: string | null;
  pause: boolean;
  /** Every lane's cost so far, USD. */
  costUsd: number;
  /** Iterations started over every lane. */
  iterations: number;
  elapsedMs: number;
  /** Lanes running now. */
  running: number;
  /** Stories that could start now (rounds.ts `pickRound` with every lane free). */
  ready: number;
  /** Every story of quantum.json passed; `stories`: how many there are. */
  allPassed: boolean;
  stories: number;
  /** A lane or the coordinator could not write (a full disk, a read-only `.ralph/`): the cause, else null. */
  storageFailure?: string | null;
}

/**
 * The coordinator's decision: start lanes (`dispatch`), wait for running lanes (`wait`, also while paused), let the
 * running lanes finish and then end (`drain`: STOP, cancel and caps act on every lane: the shell passes STOP on to
 * them), or end now. Rules: cancel → cancelled; a storage failure → failed (issue 12: no new lane on a full disk);
 * STOP → stopped; the caps count every lane (iterations, cost USD,
 * wall time) → capReached; PAUSE → no new lane; nothing running and nothing ready → completed when every story
 * passed (NO_WORK without stories), else blocked. Pure.
 */
export function decideCoordinator(
  rules: Pick<RunRules, 'maxIterations' | 'maxCostUsd' | 'maxWallMs'>,
  o: CoordinatorObservation,
): { kind: 'dispatch' } | { kind: 'wait' } | { kind: 'drain'; end: RunEnd } | { kind: 'end'; end: RunEnd } {
  const drainOrEnd = (e: RunEnd) =>
    o.running > 0 ? { kind: 'drain' as const, end: e } : { kind: 'end' as const, end: e };
  if (o.cancelled) return drainOrEnd({ state: 'cancelled', reason: 'cancelled', completionReason: 'INTERRUPTED' });
  if (o.storageFailure)
    return drainOrEnd({ state: 'failed', reason: `storage error: ${o.storageFailure}`, completionReason: 'FAILED' });
  if (o.stop) return drainOrEnd({ state: 'stopped', reason: `stopped by ${o.stop}`, completionReason: 'STOPPED' });
  if (o.stories === 0)
    return {
      kind: 'end',
      end: { state: 'completed', reason: 'nothing to do: quantum.json has no stories', completionReason: 'NO_WORK' },
    };
  if (o.running === 0 && o.allPassed)
    return {
      kind: 'end',
      end: {
        state: 'completed',
        reason: 'complete: every story merged, the feature branch green',
        completionReason: 'DONE',
      },
    };
  if (o.iterations >= rules.maxIterations)
    return drainOrEnd({
      state: 'capReached',
      reason: `max iterations (${rules.maxIterations}) reached over every lane`,
      completionReason: 'MAX_ITERATIONS',
    });
  if (rules.maxCostUsd > 0 && o.costUsd >= rules.maxCostUsd)
    return drainOrEnd({
      state: 'capReached',
      reason: `max cost reached over every lane: $${o.costUsd.toFixed(4)} ≥ $${rules.maxCostUsd}`,
      completionReason: 'MAX_COST',
    });
  if (rules.maxWallMs > 0 && o.elapsedMs >= rules.maxWallMs)
    return drainOrEnd({
      state: 'capReached',
      reason: `max wall time reached (${Math.round(rules.maxWallMs / 60000)} min)`,
      completionReason: 'MAX_WALL_TIME',
    });
  if (o.pause) return { kind: 'wait' };
  if (o.ready > 0) return { kind: 'dispatch' };
  if (o.running > 0) return { kind: 'wait' };
  return {
    kind: 'end',
    end: {
      state: 'blocked',
      reason: 'no story is eligible: the rest are failed out, blocked or waiting on them',
      completionReason: 'BLOCKED',
    },
  };
}

/** How a lane's run ended, for {@link decideLaneEnd}. */
export interface LaneEndObservation {
  /** The lane engine's end state. */
  end: RunEndState;
  reason: string;
  /** The lane's story was verified (its gate green) in the lane. */
  storyVerified: boolean;
  /** The lane blocked its story (out of attempts, STORY_FAILED on the last attempt): the lane's reason. */
  blocked: string | null;
  /** The story's time (`storyTimeoutMs`) ran out and the lane was ended. */
  timedOut: boolean;
  /** The run is stopping or cancelled (STOP, cancel, a cap): the lane was asked to end. */
  runEnding: boolean;
  /** The lane ended on a storage error (a full disk, a read-only `.ralph/`: engine.ts `storageFailure`), or null. */
  storageFailure?: string | null;
}

/**
 * What a lane's end means for its story (issue 19 "Behaviour"): verified and completed → merge; the story's time ran
 * out → failed `story_timeout`; stopped or cancelled while the run ends, or the lane could not write (a full disk:
 * not the story's fault, issue 12 gives the item back) → back to pending, its branch kept (`release`); blocked →
 * failed with the lane's reason; any other end (stalled, failed, a lane cap, a crash of the lane) → failed
 * `lane_failed`. Pure.
 */
export function decideLaneEnd(
  o: LaneEndObservation,
): { kind: 'merge' } | { kind: 'release'; reason: string } | { kind: 'fail'; phase: string; reason: string } {
  if (o.storyVerified && o.end === 'completed') return { kind: 'merge' };
  if (o.storageFailure) return { kind: 'release', reason: `the lane could not write its files: ${o.storageFailure}` };
  if (o.timedOut)
    return { kind: 'fail', phase: 'story_timeout', reason: `the story ran out of time (storyTimeoutMs): ${o.reason}` };
  if (o.runEnding && (o.end === 'stopped' || o.end === 'cancelled' || o.end === 'capReached'))
    return { kind: 'release', reason: `the run ended ${o.end}: ${o.reason}` };
  if (o.blocked !== null) return { kind: 'fail', phase: 'blocked', reason: o.blocked };
  return { kind: 'fail', phase: 'lane_failed', reason: `the lane ended ${o.end}: ${o.reason}` };
}

/**
 * Does the tree state a lane saw at its repeated final gate (engine.ts `onGreenTree`, taken after its last agent)
 * stand for its tree when its leftovers are saved, so that no `git status` is needed then (coordinator.ts)? Only in
 * a PID namespace (process/containment.ts), where nothing the agent started outlives it; with the marker sweep a
 * process that escaped it could write into the tree after that state was taken, and its work would be lost with the
 * tree (breaker 11). No green state (a final gate that ran, an agent after it): no. Pure.
 */
export function greenTreeStandsForLeftovers(containment: 'pid-namespace' | 'marker', hasGreen: boolean): boolean {
  return hasGreen && containment === 'pid-namespace';
}

/**
 * What a merge of a lane's branch means (issue 19): a conflict fails the story `merge_conflict` naming the files
 * (the branch is kept for a person); a red feature-branch gate after the merge undoes the merge and fails the story
 * `merge_regression`; else the story passed. `gate` null: the run has no gates. Pure.
 */
export function decideMerge(o: {
  merge: { kind: 'merged' } | { kind: 'conflict'; files: readonly string[]; detail: string };
  gate: { passed: boolean; reason: string } | null;
}):
  | { kind: 'passed' }
  | { kind: 'fail'; phase: 'merge_conflict' | 'merge_regression'; reason: string; files?: string[]; undo: boolean } {
  if (o.merge.kind === 'conflict')
    return {
      kind: 'fail',
      phase: 'merge_conflict',
      reason: `merge conflict in ${o.merge.files.join(', ') || '(unknown files)'}${o.merge.detail ? `: ${o.merge.detail}` : ''}`,
      files: [...o.merge.files],
      undo: false,
    };
  if (o.gate && !o.gate.passed)
    return {
      kind: 'fail',
      phase: 'merge_regression',
      reason: `the feature branch's gate is red after the merge: ${o.gate.reason}`,
      undo: true,
    };
  return { kind: 'passed' };
}

/**
 * The feature branch's gate over a batch (issue 19 bench, branch m19): lanes that waited for the merge slot at the
 * same time are merged one after another (a conflict fails its own story at once, its merge aborted), then the gate
 * runs once on the result. `merged`: how many of the batch's merges went in; `gate`: that one gate's result, null when
 * the run has no gates. Pure.
 * - fewer than two merges: nothing to share (`single`: the usual one-story path, its gate skipped when it would repeat
 *   the lane's green gate, decide.ts `featureGateRepeats`);
 * - no gate, or green: every merged story passed (`allPassed`);
 * - red: the batch's merges are undone (the feature branch back to its head before them) and its stories are merged
 *   and gated again one at a time (`oneByOne`, the usual path), so that the story that broke the gate fails
 *   `merge_regression`, the others pass, and the feature branch ends green.
 */
export function decideMergeBatch(o: {
  merged: number;
  gate: { passed: boolean } | null;
}): { kind: 'single' } | { kind: 'allPassed' } | { kind: 'oneByOne' } {
  if (o.merged < 2) return { kind: 'single' };
  if (!o.gate || o.gate.passed) return { kind: 'allPassed' };
  return { kind: 'oneByOne' };
}

/**
 * A gate that passed in a lane, and the working tree's state (git.ts `treeState`) when it started and when it ended.
 * `command`: the command that ran (after the tier fallback of gates/gateConfig.ts `gateCommandFor`).
 */
export interface GreenGate {
  command: string;
  treeBefore: string | null;
  treeAfter: string | null;
}

/**
 * Would a lane's final gate repeat a gate that just passed (issue 19 bench: a one-story lane ran its basic gate, then
 * the same command again as its final gate)? Yes only when all of these hold, else the final gate runs:
 * - the engine is a lane of a parallel run (`lane`): a sequential run always runs its final gate, as before;
 * - the final gate's command (`finalCommand`, after the tier fallback) is the command of the last gate that passed
 *   (`lastGreen`, null when none passed since the last agent iteration);
 * - the tree state was the same when that gate started, when it ended and now (`treeNow`): a gate verifies only the
 *   state it started on (issue 11 B1v/B2), so a gate that changed the tree, or anything changed since, runs it again.
 *   An unknown state (null) is never the same.
 * The feature branch's own gate after the merge (coordinator.ts) is not affected. Pure.
 */
export function finalGateRepeats(o: {
  lane: boolean;
  finalCommand: string | null;
  lastGreen: GreenGate | null;
  treeNow: string | null;
}): boolean {
  const g = o.lastGreen;
  if (!o.lane || !g || o.finalCommand === null || g.command !== o.finalCommand) return false;
  return o.treeNow !== null && g.treeBefore === o.treeNow && g.treeAfter === o.treeNow;
}

/**
 * The commit a gate ran on when the tree was clean: `state` is git.ts `treeState` (`git status --porcelain=v2 -z
 * --branch --untracked-files=all`, then the listed paths' stats). Clean = no entry but the `# branch.*` headers (no
 * change to a tracked file, no untracked file; ignored files such as `.ralph/` are never listed); the commit is the
 * `# branch.oid` header. Null when the state is unknown, not clean, or names no commit (`(initial)`). Pure.
 */
export function cleanCommitOf(state: string | null): string | null {
  if (state === null) return null;
  const [status = ''] = state.split('\n', 1);
  let oid: string | null = null;
  for (const rec of status.split('\0')) {
    if (!rec) continue;
    if (!rec.startsWith('# ')) return null;
    const m = /^# branch\.oid ([0-9a-f]{40,64})$/.exec(rec);
    if (m) oid = m[1]!;
  }
  return oid;
}

/** A lane's last green gate on a clean tree (engine.ts tells the coordinator): its command and the tree it ran on. */
export interface LaneGreen {
  command: string;
  /** git.ts `treeState` when it started, ended, and when the lane's final gate was decided (all equal). */
  state: string;
}

/**
 * May the coordinator skip the feature branch's gate after merging a lane (issue 19 bench; same reasoning as
 * {@link finalGateRepeats})? Yes only when all of these hold, else the gate runs:
 * - the feature gate's command (`featureCommand`, the final tier after the fallback) is the command of the lane's
 *   last green gate (`laneGreen`), which ran on a clean tree (`cleanCommitOf(laneGreen.state)`);
 * - the tree the merge made (`mergedTree`: `HEAD^{tree}` in the folder after the merge) is the tree of that commit
 *   (`greenTree`): the feature branch had not moved since the lane began (or moved to the same content), and nothing
 *   was committed in the lane after its gate (leftovers). The gate would run the same command on the same files.
 * Unknown values (null) never match. Pure.
 */
export function featureGateRepeats(o: {
  featureCommand: string | null;
  laneGreen: LaneGreen | null;
  mergedTree: string | null;
  greenTree: string | null;
}): boolean {
  if (o.featureCommand === null || !o.laneGreen || o.laneGreen.command !== o.featureCommand) return false;
  if (cleanCommitOf(o.laneGreen.state) === null) return false;
  return o.mergedTree !== null && o.greenTree !== null && o.mergedTree === o.greenTree;
}
