import { storyRetries } from '../../model/quantum';
import { blockItem, completeItem, releaseItem, startItem } from '../../sources/operations';
import { quantumNext } from '../../sources/quantum/quantumOps';
import type { ClaimBaseline } from '../../model/claimBaseline';
import type { AgentSignal } from '../../stream/signals';
import type { WorkItemRef } from '../../model/runEvent';
import { OtherChecklists } from './checklistSource';
import { OtherKinds, putBackStories, quantumDoc } from './otherKinds';
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

/** quantum-loop `quantum.json` in sequential mode (seed-systems.md §4.5), with the engine owning statuses. */
export class QuantumSource implements WorkSource {
  readonly kind = 'quantum' as const;
  readonly label = 'quantum.json';
  /** The folder's other checklist files and other kinds, claimed and put back with this source's own items. */
  private readonly others: OtherChecklists;
  private readonly kinds: OtherKinds;
  constructor(private readonly o: WorkSourceOptions) {
    this.others = new OtherChecklists(o, null);
    this.kinds = new OtherKinds(o, this.kind);
  }

  private doc() {
    return quantumDoc(this.o.folder);
  }
  private story(id: string) {
    return this.doc().stories.find((s) => s.id === id);
  }

  async next(opts: NextOptions = {}): Promise<NextResult> {
    const stories = this.doc().stories;
    if (!stories.length) return { kind: 'empty' };
    const skip = new Set(opts.skip ?? []);
    const taken =
      opts.take === undefined
        ? undefined
        : stories.find((s) => s.id === opts.take && s.status !== 'passed' && s.status !== 'blocked');
    // A story left in_progress (by this run's last iteration, or failed back by crash recovery) is resumed first:
    // quantum-loop's query skips in_progress stories, so an agent that ended without a signal left the run
    // BLOCKED forever (seed-systems.md §4.8-4). Crash recovery has already failed the stories of dead runs.
    const resumed = stories.find((s) => s.status === 'in_progress' && !skip.has(s.id));
    const r = quantumNext(stories);
    const eligible = r.stories.find((id) => !skip.has(id));
    const s = taken ?? resumed ?? (eligible === undefined ? undefined : this.story(eligible));
    if (!s && r.status === 'complete') return { kind: 'complete' };
    if (!s)
      return {
        kind: 'blocked',
        reason: skip.size
          ? `no story is eligible but ${[...skip].join(', ')}, which wait for an answer`
          : 'no story is eligible: the rest are blocked, failed out or waiting on them',
      };
    const lines = [`Story ${s.id}: ${s.title}`];
    if (typeof s.description === 'string' && s.description) lines.push('', s.description);
    const criteria = (s as { acceptanceCriteria?: unknown }).acceptanceCriteria;
    if (Array.isArray(criteria) && criteria.length)
      lines.push('', 'Acceptance criteria:', ...criteria.map((c) => `- ${String(c)}`));
    lines.push(
      '',
      'When the story is implemented, committed and its checks pass, print `<quantum>STORY_PASSED</quantum>`;',
      'if you cannot make it pass, print `<quantum>STORY_FAILED</quantum>`. Do not edit quantum.json: the harness owns it.',
    );
    return {
      kind: 'work',
      item: { source: 'quantum', id: s.id, title: s.title, body: lines.join('\n'), risky: false },
    };
  }
  async start(item: WorkItem) {
    if (this.story(item.id)?.status !== 'in_progress')
      await startItem(item.id, { folder: this.o.folder, actor: this.o.actor, env: this.o.env });
  }
  async snapshot(): Promise<ClaimBaseline> {
    const stories = this.doc().stories;
    return {
      at: new Date().toISOString(),
      source: this.kind,
      label: this.label,
      done: stories.filter((s) => s.status === 'passed').map((s) => s.id),
      items: stories.map((s) => s.id),
      checklists: this.others.snapshot(),
      sources: this.kinds.snapshot(),
    };
  }
  async claimsSince(baseline: ClaimBaseline): Promise<Claim[]> {
    const was = new Set(baseline.done);
    const own = this.doc()
      .stories.filter((s) => s.status === 'passed' && !was.has(s.id))
      .map((s): Claim => ({ source: this.kind, id: s.id, title: s.title, slot: 'done', key: s.id }));
    return [...own, ...(await this.others.claimsSince(baseline)), ...this.kinds.claimsSince(baseline)];
  }
  async putBack(items: readonly WorkItemRef[], how?: string[]) {
    await putBackStories(this.o, items, how);
    await this.others.putBack(items, how);
    await this.kinds.putBack(items, how);
  }
  async claim(item: WorkItem, signals: readonly AgentSignal[]): Promise<DoneClaim> {
    const passed = signals.some((s) => s.kind === 'storyPassed') || this.story(item.id)?.status === 'passed';
    const failed = signals.some((s) => s.kind === 'storyFailed');
    return { done: passed && !failed, alsoDone: [] };
  }
  async accept(item: WorkItem) {
    if (this.story(item.id)?.status !== 'passed')
      await completeItem(item.id, { folder: this.o.folder, actor: this.o.actor, env: this.o.env, force: true });
  }
  async reject(item: WorkItem, _also: readonly WorkItemRef[], reason: string) {
    // A story set to passed (by the agent, or a person) under a red gate: back first, block refuses `passed`.
    if (this.story(item.id)?.status === 'passed')
      await releaseItem(item.id, { folder: this.o.folder, env: this.o.env, alsoPassed: true, commit: putBackWrites() });
    await blockItem(item.id, { folder: this.o.folder, env: this.o.env, reason, phase: 'verification' });
  }
  async block(item: WorkItem, reason: string) {
    // blockItem already counted the last attempt; a story failed with attempts ≥ maxAttempts is blocked (§4.2).
    const s = this.story(item.id);
    if (s && s.status !== 'failed' && s.status !== 'blocked')
      await blockItem(item.id, { folder: this.o.folder, env: this.o.env, reason, phase: 'blocked' });
  }
  async failedAttempts(item: WorkItem) {
    const s = this.story(item.id);
    return s ? storyRetries(s).attempts : null;
  }
  async attemptLimit(item: WorkItem) {
    const s = this.story(item.id);
    return s ? storyRetries(s).maxAttempts : null;
  }
  async progress() {
    const stories = this.doc().stories;
    return { done: stories.filter((s) => s.status === 'passed').length, total: stories.length };
  }
  async fingerprint() {
    return fingerprintOf(JSON.stringify(this.doc().stories.map((s) => [s.id, s.status])));
  }
  async inProgress() {
    return this.doc()
      .stories.filter((s) => s.status === 'in_progress')
      .map((s) => ({ source: 'quantum' as const, id: s.id, title: s.title }));
  }
  async recoverCrashed(item: WorkItemRef, _baseline: unknown, reason: string) {
    const status = this.story(item.id)?.status;
    if (status !== 'in_progress' && status !== 'passed') return;
    // A story the crashed run saw as passed was never verified: back to pending first (block refuses passed).
    await releaseItem(item.id, { folder: this.o.folder, env: this.o.env, alsoPassed: true });
    await blockItem(item.id, { folder: this.o.folder, env: this.o.env, reason, phase: 'crash' });
  }
  async release(item: WorkItem) {
    await releaseItem(item.id, { folder: this.o.folder, env: this.o.env, alsoPassed: true, commit: putBackWrites() });
  }
}
