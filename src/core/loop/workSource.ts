import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { FLOW_TASK_ID } from '../model/flowNext';
import { storyRetries } from '../model/quantum';
import { parseCheckboxes, readChecklists, type CheckboxItem, type ChecklistFile } from '../sources/checklist/checklist';
import { readTextSync } from '../store/readJsonFile';
import { setCheckboxes } from '../sources/checklist/checklistWrite';
import { flowItemProblems, readFlowWorkspace } from '../sources/flowNext/readFlow';
import { blockItem, completeItem, nextWork, releaseItem, resetItem, startItem } from '../sources/operations';
import { quantumNext } from '../sources/quantum/quantumOps';
import { readQuantum } from '../sources/quantum/readQuantum';
import { readTextIfExists, writeTextAtomic } from '../store/atomicWrite';
import type { AgentSignal } from '../stream/signals';
import type { WorkItemRef } from './events';
import { ralphFile } from '../model/ralphPaths';
import { readFile } from 'node:fs/promises';
import { applyJsonChanges, refuseDuplicateKeys } from '../store/jsonEdit';
import { commitPlan, type CommitOptions } from '../store/writePlan';
import { flowLockTarget } from '../sources/operations';
import { type BaselineSlot } from '../model/claimBaseline';
import { boxKeys, type ClaimBaseline } from '../model/claimBaseline';
import { blockedFileSchema, type BlockedFile } from '../model/ralphState';
import { parseJsonWithSchema } from '../store/readJsonFile';

/** An item the engine works on, with what the prompt needs. */
export interface WorkItem extends WorkItemRef {
  /** The task text for the prompt (flow task md, story description + acceptance criteria, the box line). */
  body: string;
  /** Needs the `full` gate instead of `basic` (checklist `[risky]`, seed-systems.md §3.13). */
  risky: boolean;
}

export { isClaimBaseline, type ClaimBaseline } from '../model/claimBaseline';
import { isClaimBaseline } from '../model/claimBaseline';

/**
 * An item done now that was not done at a baseline: a claim to verify or put back. `slot` and `key` say where it
 * goes in a carried baseline once verified (decide.ts `carriedBaseline`).
 */
export type Claim = WorkItemRef & { risky?: boolean; slot: BaselineSlot; key: string };

/**
 * The other checklist files of the folder than `except` (the run's own source), kept as {@link ChecklistSource}s so
 * their boxes are snapshotted, claimed and put back like the run's own (A3/A3b).
 */
class OtherChecklists {
  private readonly files = new Map<string, ChecklistSource>();
  constructor(
    private readonly o: WorkSourceOptions,
    private readonly except: string | null,
  ) {}
  private sources(): ChecklistSource[] {
    return readChecklists(this.o.folder)
      .filter((c) => c.path !== this.except)
      .map((c) => {
        let s = this.files.get(c.path);
        if (!s) this.files.set(c.path, (s = new ChecklistSource(this.o, c.path, false)));
        return s;
      });
  }
  snapshot(): Record<string, string[]> {
    return Object.fromEntries(this.sources().map((s) => [s.label, s.doneKeys()]));
  }
  async claimsSince(b: ClaimBaseline): Promise<Claim[]> {
    if (!b.checklists) return [];
    const out: Claim[] = [];
    for (const s of this.sources()) {
      const claims = await s.claimsSince({
        ...b,
        source: 'checklist',
        label: s.label,
        done: b.checklists[s.label] ?? [],
        checklists: undefined,
      });
      out.push(...claims.map((c) => ({ ...c, slot: `checklist:${s.label}` as const })));
    }
    return out;
  }
  async putBack(items: readonly WorkItemRef[], how?: string[]): Promise<void> {
    for (const s of this.files.values()) {
      const mine = items.filter((i) => i.source === 'checklist' && i.id.slice(0, i.id.lastIndexOf(':')) === s.label);
      if (mine.length) await s.putBack(mine, how);
    }
  }
}

/**
 * The folder's quantum.json and `.flow` when they are not the run's own source :
 * `ralph status` counts their items, so one the agent made done is a claim like the run's own, snapshotted in
 * `ClaimBaseline.sources`, verified by a green gate or put back. A source that cannot be read counts as absent here
 * (no claims from it; the run's own source reports its problems).
 */
class OtherKinds {
  constructor(
    private readonly o: WorkSourceOptions,
    private readonly except: WorkItemRef['source'],
  ) {}
  /** quantum.json's stories, or null when it is the run's own source, absent or unreadable. */
  private stories() {
    if (this.except === 'quantum') return null;
    try {
      const q = readQuantum(this.o.folder);
      return q?.doc && !q.problem ? q.doc.data.stories : q ? null : [];
    } catch {
      return null;
    }
  }
  /** `.flow`'s tasks and epics, or null when it is the run's own source or unreadable; empty when absent. */
  private flow() {
    if (this.except === 'flow-next') return null;
    try {
      const ws = readFlowWorkspace(this.o.folder, this.o.env);
      return ws ? { tasks: ws.tasks, epics: ws.epics } : { tasks: [], epics: [] };
    } catch {
      return null;
    }
  }
  snapshot(): NonNullable<ClaimBaseline['sources']> {
    const out: NonNullable<ClaimBaseline['sources']> = {};
    if (this.except !== 'quantum')
      out.quantum = (this.stories() ?? []).filter((s) => s.status === 'passed').map((s) => s.id);
    if (this.except !== 'flow-next') {
      const f = this.flow();
      out.flow = (f?.tasks ?? []).filter((t) => t.merged.status === 'done').map((t) => t.id);
      out.flowEpics = (f?.epics ?? []).filter((e) => e.epic.status === 'done').map((e) => e.id);
    }
    return out;
  }
  claimsSince(b: ClaimBaseline): Claim[] {
    const src = b.sources;
    if (!src) return [];
    const out: Claim[] = [];
    if (src.quantum) {
      const was = new Set(src.quantum);
      for (const s of this.stories() ?? [])
        if (s.status === 'passed' && !was.has(s.id))
          out.push({ source: 'quantum', id: s.id, title: s.title, slot: 'source:quantum', key: s.id });
    }
    const f = src.flow ? this.flow() : null;
    if (f && src.flow) {
      const epicsWere = new Set(src.flowEpics ?? []);
      for (const e of f.epics)
        if (e.epic.status === 'done' && !epicsWere.has(e.id))
          out.push({ source: 'flow-next', id: e.id, title: e.epic.title, slot: 'source:flowEpics', key: e.id });
      const was = new Set(src.flow);
      for (const t of f.tasks)
        if (t.merged.status === 'done' && !was.has(t.id))
          out.push({ source: 'flow-next', id: t.id, title: t.merged.title, slot: 'source:flow', key: t.id });
    }
    return out;
  }
  async putBack(items: readonly WorkItemRef[], how?: string[]): Promise<void> {
    const qs = items.filter((i) => i.source === 'quantum');
    if (this.except !== 'quantum' && qs.length) await new QuantumSource(this.o).putBack(qs, how);
    const fs = items.filter((i) => i.source === 'flow-next');
    if (this.except !== 'flow-next' && fs.length) await new FlowSource(this.o).putBack(fs, how);
  }
}

/**
 * What {@link WorkSource.next} leaves out or prefers (`continueOnBlocked`): `skip` = ids of items that wait
 * for a human answer (left as they are: in progress and claimed), never returned; `take` = the item whose answer
 * came (or the item `ralph run --item` names), returned first while it is still open.
 */
export interface NextOptions {
  skip?: readonly string[];
  take?: string;
}

export type NextResult =
  { kind: 'work'; item: WorkItem } | { kind: 'complete' } | { kind: 'blocked'; reason: string } | { kind: 'empty' };

/** What the source said about one item after an iteration. */
export interface DoneClaim {
  /** The source says the item is done (status, checkbox, STORY_PASSED). */
  done: boolean;
  /** Other items that turned done during the iteration (checkboxes ticked beyond the current one). */
  alsoDone: WorkItemRef[];
}

/**
 * The engine's view of one task source (issue "Verified, not claimed"): pick the next item, mark it started,
 * decide whether the source says it is done, and record the engine's verdicts through the control plane's
 * operations. Only the engine writes status and attempt fields.
 */
export interface WorkSource {
  readonly kind: WorkItemRef['source'];
  /** What a person calls it: `quantum.json`, `.flow`, `RALPH_TASK.md`. */
  readonly label: string;
  /**
   * The next ready item (see {@link NextOptions}); `blocked` when nothing but skipped or blocked items is open.
   * `take` also serves `ralph run --item` (the engine checked the item is ready with `startOfferOf`).
   */
  next(opts?: NextOptions): Promise<NextResult>;
  start(item: WorkItem): Promise<void>;
  /**
   * Remembers the state before an iteration, for {@link claim}; returns it in a form the engine keeps in run.json so
   * crash recovery can undo what a crashed iteration claimed (checklist: the keys of the boxes already done).
   */
  snapshot(): Promise<ClaimBaseline>;
  /**
   * Every item done now that was not done at `baseline` (the claims since then, the current item included), with
   * flow-next epics and the boxes of the folder's other checklist files; `risky`: the item needs the `full` gate.
   */
  claimsSince(baseline: ClaimBaseline): Promise<Claim[]>;
  /**
   * Puts claimed items back to not done (quantum `pending`, flow-next `todo`, an epic `open`, a box unticked, in
   * the run's source or another checklist file); attempts kept. A file the agent made hard to edit is still
   * written ({@link putBackWrites}); `how` receives a line for each file written that way.
   */
  putBack(items: readonly WorkItemRef[], how?: string[]): Promise<void>;
  claim(item: WorkItem, signals: readonly AgentSignal[]): Promise<DoneClaim>;
  /** Verified: the engine records the item as done. */
  accept(item: WorkItem, also: readonly WorkItemRef[]): Promise<void>;
  /** Verification failed: the item is not done; record the failed attempt in the source where it has a place. */
  reject(item: WorkItem, also: readonly WorkItemRef[], reason: string): Promise<void>;
  /** Out of attempts: block the item with a reason. */
  block(item: WorkItem, reason: string): Promise<void>;
  /** Failed attempts the source itself counts (quantum `attempts`), or null. */
  failedAttempts(item: WorkItem): Promise<number | null>;
  /** The source's own attempt limit (quantum `maxAttempts`, flow-next `MAX_ATTEMPTS_PER_TASK`), or null. */
  attemptLimit(item: WorkItem): Promise<number | null>;
  progress(): Promise<{ done: number; total: number }>;
  /** Changes whenever any status or checkbox changes (stall detection). */
  fingerprint(): Promise<string>;
  /**
   * Item files of this source that cannot be read (`file:line:column: message`): a source with an item it
   * cannot read is never complete. Absent: the source has no per-item files (quantum.json throws as a whole).
   */
  unreadable?(): string[];
  /** Items of this source that an earlier run left in progress (crash recovery when run.json names none). */
  inProgress(): Promise<WorkItemRef[]>;
  /**
   * Crash recovery for the item a crashed run was working on (never verified): undo what it claimed since
   * `baseline` (from {@link snapshot}) and fail it with a `crash` entry, however recent.
   */
  recoverCrashed(item: WorkItemRef, baseline: unknown, reason: string): Promise<void>;
  /**
   * The run ends (stopped, cancelled, a cap, an error) without having verified `item`: undo the agent's unverified
   * claims of this iteration (a ticked box, a story marked passed, a task marked done) and give the item back
   * (quantum: `pending`, attempts kept). Nothing is counted as an attempt.
   */
  release(item: WorkItem): Promise<void>;
}

export interface WorkSourceOptions {
  folder: string;
  actor: string;
  env?: NodeJS.ProcessEnv;
}

const hash = (s: string) => createHash('sha1').update(s).digest('hex').slice(0, 16);

/**
 * The write mode of every put-back of an unverified claim (writePlan.ts `decideWrite` with `putBack`): a file the
 * agent made read-only, not UTF-8, or a link out of the workspace is still put back; `how` collects one line per
 * file written that way, for the `claimPutBack` event.
 */
export function putBackWrites(how?: string[]): CommitOptions {
  return { putBack: { note: (text) => how?.push(text) } };
}

/** quantum-loop `quantum.json` in sequential mode (seed-systems.md §4.5), with the engine owning statuses. */
export class QuantumSource implements WorkSource {
  readonly kind = 'quantum' as const;
  readonly label = 'quantum.json';
  constructor(private readonly o: WorkSourceOptions) {}

  private doc() {
    const q = readQuantum(this.o.folder);
    if (!q) throw new Error(`${path.join(this.o.folder, 'quantum.json')}: not found`);
    if (q.problem) throw new Error(`${q.problem.file}:${q.problem.line}:${q.problem.column}: ${q.problem.message}`);
    return q.doc!.data;
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
  private othersOf: OtherChecklists | undefined;
  private get others(): OtherChecklists {
    return (this.othersOf ??= new OtherChecklists(this.o, null));
  }
  private kindsOf: OtherKinds | undefined;
  private get kinds(): OtherKinds {
    return (this.kindsOf ??= new OtherKinds(this.o, this.kind));
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
    for (const i of items)
      if (i.source === this.kind && this.story(i.id)?.status === 'passed')
        await releaseItem(i.id, {
          folder: this.o.folder,
          env: this.o.env,
          alsoPassed: true,
          commit: putBackWrites(how),
        });
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
    return hash(JSON.stringify(this.doc().stories.map((s) => [s.id, s.status])));
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

/** flow-next `.flow/` tasks (seed-systems.md §2.5, §2.9): the agent finishes a task through its status or a signal. */
export class FlowSource implements WorkSource {
  readonly kind = 'flow-next' as const;
  readonly label = '.flow';
  constructor(private readonly o: WorkSourceOptions) {}

  private ws() {
    const ws = readFlowWorkspace(this.o.folder, this.o.env);
    if (!ws) throw new Error(`${path.join(this.o.folder, '.flow')}: not found`);
    return ws;
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
  private othersOf: OtherChecklists | undefined;
  private get others(): OtherChecklists {
    return (this.othersOf ??= new OtherChecklists(this.o, null));
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
  private kindsOf: OtherKinds | undefined;
  private get kinds(): OtherKinds {
    return (this.kindsOf ??= new OtherKinds(this.o, this.kind));
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
    // Epics first: flowctl refuses to reset a task of a closed epic.
    for (const i of items) {
      const e = i.source === this.kind ? this.ws().epics.find((x) => x.id === i.id) : undefined;
      if (e && e.epic.status === 'done') await reopenEpic(this.o.folder, e.file, putBackWrites(how));
    }
    for (const i of items)
      if (i.source === this.kind && this.task(i.id)?.merged.status === 'done')
        await resetItem(i.id, { folder: this.o.folder, env: this.o.env, commit: putBackWrites(how) });
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
    return hash(JSON.stringify(this.ws().tasks.map((t) => [t.id, t.merged.status])));
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

/**
 * A checkbox file (`RALPH_TASK.md`, `PROMPT.md`, `specs/<name>/tasks.md`; seed-systems.md §3.7): the agent ticks
 * boxes; the engine verifies every box ticked in an iteration and unticks them when the gate is red. Blocked boxes
 * are recorded in `.ralph/blocked.json` (the file format has no place for them) and skipped by `next`.
 */
export class ChecklistSource implements WorkSource {
  readonly kind = 'checklist' as const;
  private before: CheckboxItem[] = [];
  /** Item id (`<path>:<line>` when picked) → box key, for the boxes this run picked or saw ticked. */
  private readonly keys = new Map<string, string>();
  private readonly others: OtherChecklists | null;
  /** The folder's quantum.json and `.flow`; null for another file's own source, as `others`. */
  private readonly kinds: OtherKinds | null;
  /** `withOthers`: also snapshot, claim and put back the folder's other checklist files (false for those themselves). */
  constructor(
    private readonly o: WorkSourceOptions,
    readonly label: string,
    withOthers = true,
  ) {
    this.others = withOthers ? new OtherChecklists(o, label) : null;
    this.kinds = withOthers ? new OtherKinds(o, 'checklist') : null;
  }

  /** The keys of the boxes done now (`<text> #<n>`). */
  doneKeys(): string[] {
    return this.keyed(this.list().items)
      .filter((k) => k.box.done)
      .map((k) => k.key);
  }

  private list(): ChecklistFile {
    const l =
      readChecklists(this.o.folder).find((c) => c.path === this.label) ?? readChecklistAt(this.o.folder, this.label);
    if (!l) throw new Error(`${path.join(this.o.folder, this.label)}: not found`);
    return l;
  }
  private blockedFile() {
    return ralphFile(this.o.folder, 'blocked');
  }
  /** `.ralph/blocked.json` (model/ralphState.ts); a file that does not parse or validate throws with file:line:column. */
  private async blocked(): Promise<BlockedFile> {
    const text = await readTextIfExists(this.blockedFile());
    return text ? parseJsonWithSchema(this.blockedFile(), text, blockedFileSchema) : {};
  }
  private idOf(b: CheckboxItem) {
    return `${this.label}:${b.line}`;
  }
  /**
   * A box's identity that survives edits elsewhere in the file: its text and which occurrence of that text it is
   * (two sections may both say "Add tests"), e.g. `Add tests #2`.
   */
  private keyed(boxes: readonly CheckboxItem[]): { box: CheckboxItem; key: string }[] {
    return boxKeys(boxes);
  }
  /**
   * The box an item names now. By key; when the key is gone (the agent reworded the box) only the box at the same
   * line, and only while no box was added or removed (otherwise lines moved, and guessing would touch another
   * box). `undefined` when it cannot be told: then it counts as not done and is never unticked.
   */
  private find(item: WorkItemRef, boxes: CheckboxItem[]): CheckboxItem | undefined {
    const key = this.keys.get(item.id);
    const byKey = key === undefined ? undefined : this.keyed(boxes).find((k) => k.key === key)?.box;
    if (byKey) return byKey;
    if (boxes.length !== this.before.length) return undefined;
    return boxes.find((b) => this.idOf(b) === item.id);
  }
  private blockedKey(key: string) {
    return `${this.label}: ${key}`;
  }

  async next(opts: NextOptions = {}): Promise<NextResult> {
    const boxes = this.list().items;
    if (!boxes.length) return { kind: 'empty' };
    const blocked = await this.blocked();
    const open = this.keyed(boxes).filter((k) => !k.box.done);
    if (!open.length) return { kind: 'complete' };
    const ready = open.filter((k) => !blocked[this.blockedKey(k.key)]);
    // A box that waits for an answer is known by its key (lines move when boxes are added above it).
    const skipKeys = new Set((opts.skip ?? []).map((id) => this.keys.get(id)));
    // `take` names a box this run picked before (by its key) or, from `ralph run --item`, by its id (`<file>:<line>`).
    const takeKey =
      opts.take === undefined
        ? undefined
        : (this.keys.get(opts.take) ?? open.find((k) => this.idOf(k.box) === opts.take)?.key);
    const taken = takeKey === undefined ? undefined : open.find((k) => k.key === takeKey);
    const pick = taken ?? ready.find((k) => !skipKeys.has(k.key));
    if (!pick)
      return {
        kind: 'blocked',
        reason: ready.length
          ? `every open box of ${this.label} but the ones that wait for an answer is blocked`
          : `every open box of ${this.label} is blocked (see .ralph/blocked.json)`,
      };
    const b = pick.box;
    // The taken box keeps its id, so its answer reaches its prompt.
    const id = taken ? opts.take! : this.idOf(b);
    this.keys.set(id, pick.key);
    const body = [
      `${this.label}, line ${b.line}: ${b.text}${b.risky ? ' [risky]' : ''}`,
      '',
      `When this criterion is met and committed, tick its box (\`- [x]\`) in ${this.label}. Tick only boxes you finished.`,
    ].join('\n');
    return { kind: 'work', item: { source: 'checklist', id, title: b.text, body, risky: b.risky } };
  }
  async start() {}
  async snapshot(): Promise<ClaimBaseline> {
    this.before = this.list().items;
    const keyed = this.keyed(this.before);
    return {
      at: new Date().toISOString(),
      source: this.kind,
      label: this.label,
      done: keyed.filter((k) => k.box.done).map((k) => k.key),
      items: keyed.map((k) => k.key),
      ...(this.others ? { checklists: this.others.snapshot(), sources: this.kinds!.snapshot() } : {}),
    };
  }
  async claimsSince(baseline: ClaimBaseline): Promise<Claim[]> {
    const was = new Set(baseline.done);
    const newly = this.keyed(this.list().items).filter((k) => k.box.done && !was.has(k.key));
    for (const k of newly) this.keys.set(this.idOf(k.box), k.key);
    const own = newly.map((k): Claim => ({
      source: this.kind,
      id: this.idOf(k.box),
      title: k.box.text,
      ...(k.box.risky ? { risky: true } : {}),
      slot: 'done',
      key: k.key,
    }));
    return [
      ...own,
      ...(this.others ? await this.others.claimsSince(baseline) : []),
      ...(this.kinds ? this.kinds.claimsSince(baseline) : []),
    ];
  }
  async putBack(items: readonly WorkItemRef[], how?: string[]) {
    const boxes = this.list().items;
    const mine = items.filter((i) => i.source === this.kind && i.id.slice(0, i.id.lastIndexOf(':')) === this.label);
    const lines = mine
      .map((i) => this.find(i, boxes))
      .filter((b): b is CheckboxItem => !!b && b.done)
      .map((b) => b.line);
    if (lines.length) await setCheckboxes(this.list().file, lines, false, putBackWrites(how));
    await this.others?.putBack(items, how);
    await this.kinds?.putBack(items, how);
  }
  async claim(item: WorkItem): Promise<DoneClaim> {
    const after = this.list().items;
    const wasDone = new Set(
      this.keyed(this.before)
        .filter((k) => k.box.done)
        .map((k) => k.key),
    );
    const newly = this.keyed(after).filter((k) => k.box.done && !wasDone.has(k.key));
    const current = this.find(item, after);
    const also = newly.filter((k) => k.box !== current);
    for (const k of also) this.keys.set(this.idOf(k.box), k.key);
    return {
      done: !!current?.done,
      alsoDone: also.map((k) => ({ source: 'checklist' as const, id: this.idOf(k.box), title: k.box.text })),
    };
  }
  async accept() {}
  async reject(item: WorkItem, also: readonly WorkItemRef[]) {
    const boxes = this.list().items;
    const lines = [item, ...also]
      .map((i) => this.find(i, boxes))
      .filter((b): b is CheckboxItem => !!b && b.done)
      .map((b) => b.line);
    if (lines.length) await setCheckboxes(this.list().file, lines, false, putBackWrites());
  }
  async block(item: WorkItem, reason: string) {
    const key = this.keys.get(item.id);
    if (!key) return;
    const blocked = await this.blocked();
    blocked[this.blockedKey(key)] = reason;
    await writeTextAtomic(this.blockedFile(), JSON.stringify(blocked, null, 2) + '\n');
  }
  async failedAttempts() {
    return null;
  }
  async attemptLimit() {
    return null;
  }
  async progress() {
    const boxes = this.list().items;
    return { done: boxes.filter((b) => b.done).length, total: boxes.length };
  }
  async fingerprint() {
    return hash(JSON.stringify(this.list().items.map((b) => [b.text, b.done])));
  }
  async inProgress() {
    return [];
  }
  /** Unticks every box ticked since `baseline` (the keys done when the crashed iteration began). */
  async recoverCrashed(_item: WorkItemRef, baseline: unknown) {
    const keys = isClaimBaseline(baseline) ? baseline.done : Array.isArray(baseline) ? baseline : null;
    if (!keys) return;
    const wasDone = new Set(keys.map(String));
    const lines = this.keyed(this.list().items)
      .filter((k) => k.box.done && !wasDone.has(k.key))
      .map((k) => k.box.line);
    if (lines.length) await setCheckboxes(this.list().file, lines, false, putBackWrites());
  }
  async release(item: WorkItem) {
    const c = await this.claim(item);
    await this.reject(item, c.alsoDone);
  }
}

/** Sets a closed epic's (spec's) `status` back to `open` in place, under flowctl's lock (put-back). */
async function reopenEpic(folder: string, file: string, commit: CommitOptions): Promise<void> {
  await commitPlan(
    flowLockTarget(folder),
    async () => {
      const before = await readFile(file, 'utf8');
      refuseDuplicateKeys(file, before);
      return {
        writes: [{ file, before, after: applyJsonChanges(before, [{ op: 'set', path: ['status'], value: 'open' }]) }],
        result: undefined,
      };
    },
    commit,
  );
}

/** A checkbox file at `rel` (relative to the folder, or absolute), read with the one checkbox grammar; `undefined` when absent. */
function readChecklistAt(folder: string, rel: string): ChecklistFile | undefined {
  const file = path.resolve(folder, rel);
  const text = readTextSync(file);
  return text === undefined ? undefined : { path: rel, file, ...parseCheckboxes(text) };
}

/**
 * `ralph run --source <path>` for a markdown task file outside the usual names, e.g. a resume brief written by
 * `ralph waves check` (`.planning/<phase>/resume-<subId>.md`, whose last checkbox is the task): a
 * {@link ChecklistSource} over that file, labelled by its folder-relative path (forward slashes). `undefined` when
 * `want` does not name an existing `.md` file.
 */
export function checklistAt(
  folder: string,
  want: string,
  actor: string,
  env?: NodeJS.ProcessEnv,
): WorkSource | undefined {
  if (!want.toLowerCase().endsWith('.md')) return undefined;
  const abs = path.resolve(folder, want);
  try {
    if (readTextSync(abs) === undefined) return undefined;
  } catch {
    return undefined;
  }
  const rel = path.relative(folder, abs).split(path.sep).join('/');
  return new ChecklistSource({ folder, actor, ...(env ? { env } : {}) }, rel);
}

/** The task sources a folder offers the engine, in the order `ralph run` picks by default. */
export function availableSources(o: WorkSourceOptions): WorkSource[] {
  const out: WorkSource[] = [];
  if (readFlowWorkspace(o.folder, o.env)) out.push(new FlowSource(o));
  if (readQuantum(o.folder)) out.push(new QuantumSource(o));
  for (const c of readChecklists(o.folder)) out.push(new ChecklistSource(o, c.path));
  return out;
}

/** Is `id` a flow-next task id (for `--source` auto-detection). */
export const isFlowTaskId = (id: string) => FLOW_TASK_ID.test(id);
