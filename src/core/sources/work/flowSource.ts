import * as path from 'node:path';
import type { ClaimBaseline } from '../../model/claimBaseline';
import { flowItemProblems } from '../../sources/flowNext/readFlow';
import { blockItem, completeItem, nextWork, releaseItem, resetItem, startItem } from '../../sources/operations';
import { readTextIfExists } from '../../store/atomicWrite';
import type { AgentSignal } from '../../stream/signals';
import type { WorkItemRef } from '../../model/runEvent';
import { OtherChecklists } from './checklistSource';
import { flowWorkspace, OtherKinds, putBackFlow } from './otherKinds';
import {
  fingerprintOf,
  putBackWrites,
  type Claim,
  type DoneClaim,
  type NextOptions,
  type NextResult,
  type WorkItem,
  type WorkSource,
  type WorkSourceOptions,
} from './types';

/** flow-next `.flow/` tasks (seed-systems.md §2.5, §2.9): the agent finishes a task through its status or a signal. */
export class FlowSource implements WorkSource {
  readonly kind = 'flow-next' as const;
  readonly label = '.flow';
  /** The folder's other checklist files and other kinds, claimed and put back with this source's own items. */
  private readonly others: OtherChecklists;
  private readonly kinds: OtherKinds;
  constructor(private readonly o: WorkSourceOptions) {
    this.others = new OtherChecklists(o, null);
    this.kinds = new OtherKinds(o, this.kind);
  }

  private ws() {
    return flowWorkspace(this.o);
  }
  private task(id: string) {
    return this.ws().tasks.find((t) => t.id === id);
  }

  unreadable(): string[] {
    return flowItemProblems(this.ws()).map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`);
  }

  async next(opts: NextOptions = {}): Promise<NextResult> {
    const ws = this.ws();
    // A task or epic file that does not parse is an item we cannot see: never "complete", never "nothing to do".
    const bad = this.unreadable();
    if (bad.length)
      return {
        kind: 'blocked',
        reason: `${this.label} has a file that cannot be read: ${bad[0]}${bad.length > 1 ? ` (and ${bad.length - 1} more)` : ''}`,
      };
    if (!ws.tasks.length) return { kind: 'empty' };
    const taken =
      opts.take === undefined
        ? undefined
        : ws.tasks.find((t) => t.id === opts.take && (t.merged.status === 'in_progress' || t.merged.status === 'todo'));
    // flowctl's selection order (resume the actor's in-progress task, else the first ready one), without the tasks
    // that wait for an answer: they stay in_progress and claimed by this actor.
    const ans = taken
      ? null
      : nextWork({
          folder: this.o.folder,
          env: this.o.env,
          actor: this.o.actor,
          ...(opts.skip?.length ? { skip: opts.skip } : {}),
        });
    const pick = taken?.id ?? (ans?.flow?.status === 'work' ? ans.flow.task : undefined);
    if (pick !== undefined) {
      const t = this.task(pick)!;
      const md = (await readTextIfExists(t.file.replace(/\.json$/, '.md'))) ?? '';
      const body = [
        `Task ${t.id}: ${t.merged.title}`,
        '',
        md.trim(),
        '',
        `When the task is done and verified, mark it done with \`flowctl done ${t.id}\` (or \`ralph task done ${t.id}\`), or print \`<promise>COMPLETE</promise>\` if neither is available.`,
      ].join('\n');
      return { kind: 'work', item: { source: 'flow-next', id: t.id, title: t.merged.title, body, risky: false } };
    }
    if (ws.tasks.every((t) => t.merged.status === 'done')) return { kind: 'complete' };
    if (opts.skip?.length)
      return { kind: 'blocked', reason: `no task is ready but ${opts.skip.join(', ')}, which wait for an answer` };
    return {
      kind: 'blocked',
      reason: `no task is ready (${ans?.flow?.status ?? 'none'}): the rest are blocked or wait on blocked tasks`,
    };
  }
  async start(item: WorkItem) {
    if (this.task(item.id)?.merged.status !== 'in_progress')
      await startItem(item.id, { folder: this.o.folder, actor: this.o.actor, env: this.o.env, force: true });
  }
  async snapshot(): Promise<ClaimBaseline> {
    const ws = this.ws();
    return {
      at: new Date().toISOString(),
      source: this.kind,
      label: this.label,
      done: ws.tasks.filter((t) => t.merged.status === 'done').map((t) => t.id),
      epics: ws.epics.filter((e) => e.epic.status === 'done').map((e) => e.id),
      items: ws.tasks.map((t) => t.id),
      checklists: this.others.snapshot(),
      sources: this.kinds.snapshot(),
    };
  }
  async claimsSince(baseline: ClaimBaseline): Promise<Claim[]> {
    const was = new Set(baseline.done);
    const ws = this.ws();
    const own = ws.tasks
      .filter((t) => t.merged.status === 'done' && !was.has(t.id))
      .map((t): Claim => ({ source: this.kind, id: t.id, title: t.merged.title, slot: 'done', key: t.id }));
    // An epic closed (or added closed) since the baseline is a claim too (F3/F4); a baseline without epics predates the rule.
    const epicsWere = baseline.epics ? new Set(baseline.epics) : null;
    const epics = epicsWere
      ? ws.epics
          .filter((e) => e.epic.status === 'done' && !epicsWere.has(e.id))
          .map((e): Claim => ({ source: this.kind, id: e.id, title: e.epic.title, slot: 'epics', key: e.id }))
      : [];
    return [...epics, ...own, ...(await this.others.claimsSince(baseline)), ...this.kinds.claimsSince(baseline)];
  }
  async putBack(items: readonly WorkItemRef[], how?: string[]) {
    await putBackFlow(this.o, items, how);
    await this.others.putBack(items, how);
    await this.kinds.putBack(items, how);
  }
  async claim(item: WorkItem, signals: readonly AgentSignal[]): Promise<DoneClaim> {
    const status = this.task(item.id)?.merged.status;
    return { done: status === 'done' || signals.some((s) => s.kind === 'complete'), alsoDone: [] };
  }
  async accept(item: WorkItem) {
    if (this.task(item.id)?.merged.status !== 'done')
      await completeItem(item.id, { folder: this.o.folder, actor: this.o.actor, env: this.o.env, force: true });
  }
  async reject(item: WorkItem) {
    // The agent marked it done but verification failed: back to todo so it is picked again (flowctl reset, §2.5).
    if (this.task(item.id)?.merged.status === 'done')
      await resetItem(item.id, { folder: this.o.folder, env: this.o.env, commit: putBackWrites() });
  }
  async block(item: WorkItem, reason: string) {
    await blockItem(item.id, { folder: this.o.folder, env: this.o.env, reason });
  }
  async failedAttempts() {
    return null;
  }
  async attemptLimit() {
    // flow-next's MAX_ATTEMPTS_PER_TASK (scripts/ralph/config.env, default 5, §2.9).
    const env = (await readTextIfExists(path.join(this.o.folder, 'scripts', 'ralph', 'config.env'))) ?? '';
    const m = /^\s*MAX_ATTEMPTS_PER_TASK\s*=\s*"?(\d+)"?/m.exec(env);
    return m ? Number(m[1]) : null;
  }
  async progress() {
    const tasks = this.ws().tasks;
    return { done: tasks.filter((t) => t.merged.status === 'done').length, total: tasks.length };
  }
  async fingerprint() {
    return fingerprintOf(JSON.stringify(this.ws().tasks.map((t) => [t.id, t.merged.status])));
  }
  async inProgress() {
    return this.ws()
      .tasks.filter((t) => t.merged.status === 'in_progress')
      .map((t) => ({ source: 'flow-next' as const, id: t.id, title: t.merged.title }));
  }
  async recoverCrashed(item: WorkItemRef, _baseline: unknown, reason: string) {
    const status = this.task(item.id)?.merged.status;
    if (status === 'done') await resetItem(item.id, { folder: this.o.folder, env: this.o.env });
    if (status === 'done' || status === 'in_progress')
      await blockItem(item.id, { folder: this.o.folder, env: this.o.env, reason });
  }
  async release(item: WorkItem) {
    // An unverified `done` goes back to todo (flowctl reset); an in_progress task of this run's actor goes back to
    // todo without its claim: a run that has ended holds nothing (the next run picks the task as ready work).
    const status = this.task(item.id)?.merged.status;
    if (status === 'done')
      await resetItem(item.id, { folder: this.o.folder, env: this.o.env, commit: putBackWrites() });
    else if (status === 'in_progress')
      await releaseItem(item.id, { folder: this.o.folder, env: this.o.env, actor: this.o.actor });
  }
}
