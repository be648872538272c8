/**
 * Failover on a usage limit: which agent runs the next iteration when the current one hit its limit. Pure.
 *
 * Rules (config `agents`, `failoverAfterMinutes`):
 * - The run's agents are tried in their configured order; an agent is *limited* from the moment it hit a usage limit
 *   until its reset (epoch ms; unknown = limited until another iteration of it shows otherwise).
 * - When the current agent hits a limit whose reset is at most `failoverAfterMs` away, the run waits for it as it
 *   always did (switching costs a cold start and a new context, and the limit is over soon).
 * - Otherwise the next agent after it in the order (wrapping round) that is not limited runs the next iteration, with
 *   the same prompt, attempt history and handoff (the work state does not change on a deferral).
 * - When every agent is limited, the run waits for the earliest known reset and runs that agent; with no reset known
 *   at all it waits on the current agent with the loop's own backoff.
 * - Before each iteration the first agent of the order that is not limited is preferred, so a run goes back to its
 *   first agent once that agent's limit has reset ({@link preferredAgent}).
 */

/** When an agent's usage limit resets, epoch ms; null when the agent did not say (still limited). */
export type AgentLimits = ReadonlyMap<string, number | null>;

/** What to do after the current agent hit a usage limit. */
export type FailoverDecision =
  /** Run `to` next, at once. */
  | { kind: 'switch'; from: string; to: string; resetsAt: number | null; reason: string }
  /** Wait (until `until`, epoch ms, or with the loop's backoff when null), then run `agent`. */
  | { kind: 'wait'; agent: string; until: number | null; reason: string };

/** The agents of a run in order: `agents` when set, else `[agent]`; `start` (`--agent`) first when given. */
export function agentOrder(agents: readonly string[], agent: string, start?: string): string[] {
  const base = agents.length ? [...new Set(agents)] : [agent];
  if (!start) return base;
  return [start, ...base.filter((a) => a !== start)];
}

/** True while `agent` is limited at `now`. */
export function isLimited(limits: AgentLimits, agent: string, now: number): boolean {
  if (!limits.has(agent)) return false;
  const until = limits.get(agent);
  return until === null || until === undefined || until > now;
}

/** The first agent of `order` that is not limited at `now`, or null when all are. */
export function preferredAgent(order: readonly string[], limits: AgentLimits, now: number): string | null {
  return order.find((a) => !isLimited(limits, a, now)) ?? null;
}

const minutes = (ms: number): string => `${Math.round(ms / 60_000)} min`;

/**
 * The decision after `current` hit a usage limit resetting at `resetsAt` (epoch ms, null unknown), given the limits
 * already known (`limits`, which need not hold `current` yet). Pure.
 */
export function decideFailover(o: {
  order: readonly string[];
  current: string;
  resetsAt: number | null;
  limits: AgentLimits;
  now: number;
  failoverAfterMs: number;
}): FailoverDecision {
  const { order, current, resetsAt, now } = o;
  const limits = new Map(o.limits);
  limits.set(current, resetsAt);
  const soon = resetsAt !== null && resetsAt - now <= o.failoverAfterMs;
  const when = resetsAt === null ? 'at an unknown time' : `in ${minutes(Math.max(0, resetsAt - now))}`;
  if (soon || order.length < 2)
    return {
      kind: 'wait',
      agent: current,
      until: resetsAt,
      reason: soon
        ? `${current}'s usage limit resets ${when}, within the failover threshold (${minutes(o.failoverAfterMs)})`
        : `${current} hit its usage limit (resets ${when}) and no other agent is configured`,
    };
  const at = Math.max(0, order.indexOf(current));
  for (let i = 1; i < order.length; i++) {
    const next = order[(at + i) % order.length]!;
    if (!isLimited(limits, next, now))
      return {
        kind: 'switch',
        from: current,
        to: next,
        resetsAt,
        reason: `${current} hit its usage limit (resets ${when}); the next iteration runs ${next}`,
      };
  }
  let earliest: { agent: string; until: number } | null = null;
  for (const a of order) {
    const u = limits.get(a);
    if (typeof u === 'number' && (!earliest || u < earliest.until)) earliest = { agent: a, until: u };
  }
  if (!earliest)
    return {
      kind: 'wait',
      agent: current,
      until: null,
      reason: `every agent (${order.join(', ')}) hit its usage limit and none said when it resets`,
    };
  return {
    kind: 'wait',
    agent: earliest.agent,
    until: earliest.until,
    reason: `every agent (${order.join(', ')}) hit its usage limit; ${earliest.agent}'s resets first, in ${minutes(Math.max(0, earliest.until - now))}`,
  };
}
