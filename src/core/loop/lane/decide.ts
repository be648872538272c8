import { decideDeferral } from '../backoff';
import { nextAttempt } from '../attempts';
import type { RunEndState, WorkItemRef } from '../events';
import { settleSetAside, type WaitingQuestion } from '../question';
import { itemKey, type Action, type Decision, type LaneState, type Observation, type RunState } from './phases';

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

/**
 * The loop's decision at one point. Pure: the same inputs give the same actions. Rules and their sources:
 * - sentinels (seed-systems.md §2.7, §3.15): cancel ends the run `cancelled`; STOP ends it `stopped` (honoured
 *   first); PAUSE waits;
 * - caps ("Caps"): iterations, cost (USD), wall time → `capReached`, unless the source is complete and
 *   the final gate green then (completion wins over the cap);
 * - a pending final fix runs before new work;
 * - next: no tasks → completed NO_WORK; nothing ready → blocked; everything done → final verification;
 * - attempts (attempts.ts, agmo §5.4): out of attempts → block the item;
 * - iteration endings (classifyEnding): cancelled → end; stuck → failed; deferred → decideDeferral (backoff.ts),
 *   not counted against the iteration cap; fatal error → failed; rotation → next iteration; else verify;
 * - verification: a claimed item goes through its gate (`full` for risky items); red → a failed attempt, the
 *   item blocked on its last; the agent's own STORY_FAILED is a failed attempt;
 * - every item: other items that turned done since the baseline count only with the item's green gate
 *   (one green gate verifies every item the iteration finished); otherwise they are put back;
 * - attempts: the run's own count per item wins when larger than the source's; an item this run
 *   blocked and is offered again ends the run blocked;
 * - stalls (seed §3.6): `stallLimit` iterations in a row without progress → stalled;
 * - a gate whose files changed during the run is not run: the run ends failed (not a failed attempt);
 * - final verification: red final gate → a fix iteration; reviewer (flow-next §2.9) SHIP → done, else a fix;
 * - questions: an item whose agent asked waits; with `continueOnBlocked` it is set aside
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
 * What a gate verified (B1v/B2): `atStart` are the other claims checked before the gate started (the
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

/** The run state after a failed attempt `attempt` of `item`: the run's own count never goes down. */
function failedOnce(run: RunState, item: WorkItemRef, attempt: number): RunState {
  const key = itemKey(item);
  return { ...run, failedAttempts: { ...run.failedAttempts, [key]: Math.max(run.failedAttempts[key] ?? 0, attempt) } };
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
 * Would a lane's final gate repeat a gate that just passed (bench: a one-story lane ran its basic gate, then
 * the same command again as its final gate)? Yes only when all of these hold, else the final gate runs:
 * - the engine is a lane of a parallel run (`lane`): a sequential run always runs its final gate, as before;
 * - the final gate's command (`finalCommand`, after the tier fallback) is the command of the last gate that passed
 *   (`lastGreen`, null when none passed since the last agent iteration);
 * - the tree state was the same when that gate started, when it ended and now (`treeNow`): a gate verifies only the
 *   state it started on (B1v/B2), so a gate that changed the tree, or anything changed since, runs it again.
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
