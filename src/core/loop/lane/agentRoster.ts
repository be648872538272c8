import { which } from '../../agents/discover';
import { agentOrder, decideFailover, type FailoverDecision, preferredAgent } from '../../agents/failover';
import { agentBinary, getAdapter } from '../../agents/registry';
import type { IterationExit } from '../../agents/spawn';
import type { RalphConfig } from '../../model/config';
import type { EngineEvent } from '../events';

/** The agent an iteration runs: its name, its binary (absolute path), and the model to ask for (undefined: its own). */
export interface IterationAgent {
  name: string;
  binary: string;
  model: string | undefined;
}

/**
 * A lane's agents in failover order (config `agents`, `failoverAfterMinutes`) and the usage limits they hit: which
 * agent runs the next iteration, and what a usage limit changes. The decisions are core/agents/failover.ts's; this
 * holds their state across iterations and says each switch in the run log (a `failover` event).
 */
export class AgentRoster {
  private order: string[] = [];
  private readonly binaries = new Map<string, string>();
  private current = '';
  /** When each limited agent's usage limit resets, epoch ms (null: unknown). */
  private readonly limits = new Map<string, number | null>();
  /** The usage limit that ended the last iteration, until the deferral decides on it. */
  private lastLimit: { agent: string; resetsAt: number | null } | null = null;

  constructor(
    private readonly config: RalphConfig,
    private readonly folder: string,
    private readonly emitEvent: (e: EngineEvent) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The run's agents in order, those found on this machine (the first always, resolved by the caller). */
  get agents(): readonly string[] {
    return this.order;
  }

  /**
   * Finds the binaries of the order's other agents (`first` is the run's agent, found at `firstBinary`): one not found
   * is left out with a warning, so the run starts as long as its first agent is there.
   */
  async resolve(first: string, firstBinary: string, pathEnv: string): Promise<void> {
    const order = agentOrder(this.config.agents, this.config.agent, first);
    this.binaries.set(first, firstBinary);
    for (const name of order.slice(1)) {
      const b = agentBinary(getAdapter(name), this.config, this.folder);
      const found = await which(b.binary, pathEnv);
      if (found) this.binaries.set(name, found);
      else
        this.emitEvent({
          type: 'warning',
          message: `failover: the ${name} CLI was not found (${b.configured}); the run fails over without it`,
        });
    }
    this.order = order.filter((a) => this.binaries.has(a));
    this.current = first;
  }

  /**
   * The agent of the next iteration: the first of the order whose usage limit is over, else the current one. The
   * configured model names a model of the run's first agent, not of the agents it fails over to.
   */
  next(): IterationAgent {
    this.current = preferredAgent(this.order, this.limits, this.now()) ?? this.current;
    return {
      name: this.current,
      binary: this.binaries.get(this.current)!,
      model: this.current === this.order[0] ? this.config.model || undefined : undefined,
    };
  }

  /** Notes how an iteration of `agent` ended: a usage limit is kept for the deferral, a success clears its limit. */
  noteExit(agent: string, outcome: IterationExit['outcome']): void {
    if (outcome.kind === 'rateLimited') this.lastLimit = { agent, resetsAt: outcome.resetsAt ?? null };
    else if (outcome.kind === 'success') this.limits.delete(agent);
  }

  /**
   * On a deferral: the failover decision on the usage limit that ended the last iteration, applied (the current
   * agent switched, the limit recorded), with the agent that hit it (`from`). Null when the deferral was not a usage
   * limit or the run has one agent.
   */
  onDefer(): { decision: FailoverDecision; from: string } | null {
    const limit = this.lastLimit;
    this.lastLimit = null;
    if (!limit || this.order.length < 2) return null;
    const now = this.now();
    const failoverAfterMs = this.config.failoverAfterMinutes * 60_000;
    const d = decideFailover({
      order: this.order,
      current: limit.agent,
      resetsAt: limit.resetsAt,
      limits: this.limits,
      now,
      failoverAfterMs,
    });
    this.limits.set(limit.agent, limit.resetsAt);
    // A limit about to reset is waited out on the same agent: it is not marked, so the next pick keeps it.
    if (d.kind === 'wait' && d.agent === limit.agent && d.until !== null && d.until - now <= failoverAfterMs)
      this.limits.delete(limit.agent);
    const to = d.kind === 'switch' ? d.to : d.agent;
    if (to !== limit.agent) {
      this.limits.delete(to);
      this.current = to;
      this.emitEvent({ type: 'failover', from: limit.agent, to, reason: d.reason, resetsAt: limit.resetsAt });
    }
    return { decision: d, from: limit.agent };
  }
}
