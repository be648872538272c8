import { ActivityFormatter } from '../control/activityText';
import { redactEvent } from '../trust/redact';
import { ActivityLog } from './activityLog';
import { EXIT_CODES, type EngineEvent } from './events';
import { EventsWriter, ProgressTxtWriter, type CompletionReason } from './runFiles';

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
