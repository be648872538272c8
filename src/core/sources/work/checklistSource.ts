import * as path from 'node:path';
import { boxKeys, isClaimBaseline, type ClaimBaseline } from '../../model/claimBaseline';
import { ralphFile } from '../../model/ralphPaths';
import { blockedFileSchema, type BlockedFile } from '../../model/ralphState';
import {
  parseCheckboxes,
  readChecklists,
  type CheckboxItem,
  type ChecklistFile,
} from '../../sources/checklist/checklist';
import { setCheckboxes } from '../../sources/checklist/checklistWrite';
import { readTextIfExists, writeTextAtomic } from '../../store/atomicWrite';
import { parseJsonWithSchema, readTextSync } from '../../store/readJsonFile';
import type { WorkItemRef } from '../../model/runEvent';
import { OtherKinds } from './otherKinds';
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
    return boxKeys(this.list().items)
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
   * The box an item names now. By key; when the key is gone (the agent reworded the box) only the box at the same
   * line, and only while no box was added or removed (otherwise lines moved, and guessing would touch another
   * box). `undefined` when it cannot be told: then it counts as not done and is never unticked.
   */
  private find(item: WorkItemRef, boxes: CheckboxItem[]): CheckboxItem | undefined {
    const key = this.keys.get(item.id);
    const byKey = key === undefined ? undefined : boxKeys(boxes).find((k) => k.key === key)?.box;
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
    const open = boxKeys(boxes).filter((k) => !k.box.done);
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
    const keyed = boxKeys(this.before);
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
    const newly = boxKeys(this.list().items).filter((k) => k.box.done && !was.has(k.key));
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
      boxKeys(this.before)
        .filter((k) => k.box.done)
        .map((k) => k.key),
    );
    const newly = boxKeys(after).filter((k) => k.box.done && !wasDone.has(k.key));
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
    return fingerprintOf(JSON.stringify(this.list().items.map((b) => [b.text, b.done])));
  }
  async inProgress() {
    return [];
  }
  /** Unticks every box ticked since `baseline` (the keys done when the crashed iteration began). */
  async recoverCrashed(_item: WorkItemRef, baseline: unknown) {
    const keys = isClaimBaseline(baseline) ? baseline.done : Array.isArray(baseline) ? baseline : null;
    if (!keys) return;
    const wasDone = new Set(keys.map(String));
    const lines = boxKeys(this.list().items)
      .filter((k) => k.box.done && !wasDone.has(k.key))
      .map((k) => k.box.line);
    if (lines.length) await setCheckboxes(this.list().file, lines, false, putBackWrites());
  }
  async release(item: WorkItem) {
    const c = await this.claim(item);
    await this.reject(item, c.alsoDone);
  }
}

/**
 * The other checklist files of the folder than `except` (the run's own source), kept as {@link ChecklistSource}s so
 * their boxes are snapshotted, claimed and put back like the run's own (A3/A3b).
 */
export class OtherChecklists {
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
