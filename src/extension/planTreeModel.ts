import * as path from 'node:path';
import { MAX_BLOCK_CHARS, MAX_LINE_CHARS, visibleText } from '../protocol/visibleText';
import type { ItemStatus, PlanItem, PlanRoot, PlanSnapshot } from '../core/model/plan';
import { pastStaleThreshold, QUANTUM_DEFAULT_STALE_MINUTES } from '../core/model/quantumStale';
import type { SubagentJson, WaveJson } from '../core/model/waves';
import { resolveFlowStateDir, taskStateFile } from '../core/sources/flowNext/stateDir';
import type { StoreRun, StoreSnapshot } from './runStore';

/**
 * # The plan tree's model: plain rows from the store's snapshot (no `vscode` import)
 *
 * {@link buildTreeModel} maps a {@link StoreSnapshot} (plan graphs per folder, followed runs) and the live waves
 * (`WaveMonitors.waves`) to rows: per folder the sources (flow-next `.flow` → epics → tasks; quantum project →
 * stories; a checklist file → its boxes; IJFW `.ijfw` → waves → subagents; runs → the active run → its current item
 * and lanes). Every row has a stable `id` (folder + kind + the source's own id), so VS Code keeps expansion and
 * selection across refreshes; {@link diffTreeModels} compares rows field by field to name exactly the rows to redraw.
 * Given the previous model, a rebuild reuses every item row whose inputs did not change ({@link sameInputs}), so a
 * one-file change to a 10,000-item source allocates little and diffs by identity. Rows carry no file URI (no git decorations).
 *
 * `contextValue` is space-separated tokens the menus match with `viewItem =~ /\btoken\b/`:
 * `item` `root` `source` `wave` `subagent` `run` `lane` and the kind (`flow-next` `quantum` `checklist`), plus
 * `resettable` (done / blocked / failed task or story: **Reset Task**, **Reset Task and Dependents**; the command says
 * why when core refuses), `startable` (not done: **Start Here**), `file` (**Open Task File**), `waiting` (a run waits
 * on its answer: **Answer Question…**), `orphan` (a RESUMED / STALE subagent: **Open Resume Brief**, **Resume with
 * Ralph**).
 */

/**
 * The statuses a row can show; `stale` is an IJFW subagent with nothing to resume from, or a quantum story left
 * `in_progress` past its stale threshold with no run active; `waiting` an open question.
 */
export type RowStatus =
  ItemStatus | 'stale' | 'waiting' | 'open' | 'partial' | 'active' | 'pending' | 'orphan' | 'none';

/** One row of the tree. Plain data: the provider maps it to a `TreeItem`. */
export interface TreeRow {
  /** Stable across refreshes: `<folder>#<kind>/<id>`. */
  id: string;
  parentId: string | undefined;
  folder: string;
  label: string;
  description: string;
  status: RowStatus;
  /** Markdown, or a function building it (item rows: built when VS Code draws the row; see `tipKey`). Read with {@link tooltipOf}. */
  tooltip: string | (() => string);
  contextValue: string;
  /** Child row ids, in order (empty for a leaf). */
  children: string[];
  /** Opened by a click / Open Task File: workspace-relative file and 1-based line. */
  file?: string;
  line?: number;
  /** The item, subagent or run the row stands for (commands read it). */
  itemId?: string;
  /** `flow-next` | `quantum` | `checklist` for items and roots. */
  source?: string;
  /** Subagent rows: the wave, the sub's worktree (absolute or folder-relative) and its checkpoint. */
  waveId?: string;
  worktree?: string;
  /** Run rows: the run id of the question a waiting item waits on. */
  runId?: string;
  /** Item rows: what the row was built from (a rebuild reuses the row when {@link sameInputs}). */
  inputs?: ItemInputs;
  /** Ignored (rows are diffed by their fields since the bench rework); kept so rows written with `sig: ''` compile. */
  sig?: string;
}

/** Rows by id, and the top-level ids in order. */
export interface TreeModel {
  rows: Map<string, TreeRow>;
  roots: string[];
  /** Per folder, what the next {@link buildTreeModel} with this model as `prev` reuses. */
  cache?: Map<string, FolderCache>;
  /**
   * Rows reused from `prev` unchanged whose lazy tooltip now reads a changed neighbour (a dependency's or dependent's
   * status): {@link diffTreeModels} redraws them too.
   */
  touched?: Set<string>;
}

/** What a refresh must redraw: `root` when the top-level list changed, else the rows whose look or children changed. */
export interface TreeDiff {
  root: boolean;
  changed: string[];
}

const STATUS_WORD: Record<RowStatus, string> = {
  todo: 'to do',
  in_progress: 'in progress',
  done: 'done',
  blocked: 'blocked',
  failed: 'failed',
  unknown: 'unknown',
  stale: 'stale',
  waiting: 'waiting for an answer',
  open: 'open',
  partial: 'under way',
  active: 'active',
  pending: 'pending',
  orphan: 'orphan',
  none: '',
};

/** The markdown tooltip of a row (built now when it is lazy). */
export function tooltipOf(row: TreeRow): string {
  return typeof row.tooltip === 'string' ? row.tooltip : row.tooltip();
}

/** A status in words (tooltips, the confirm text). */
export function statusWord(s: RowStatus): string {
  return STATUS_WORD[s];
}

/** Formats USD as `$0.12`. */
export function usd(n: number): string {
  return `$${n < 10 ? n.toFixed(2) : n.toFixed(1)}`;
}

/** A duration in ms as `45s`, `12m`, `3h`, `2d`. */
export function age(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return 'unknown';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.round(s / 60)}m`;
  if (s < 86_400) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

/**
 * Repository text (a title, a reason, a summary) in a markdown tooltip, shown as plain text: hidden characters as
 * escapes (src/protocol/visibleText.ts), markdown's punctuation backslash-escaped, and what GitHub-flavoured
 * markdown turns into a link by itself (`https://…`, `www.…`, `a@b.c`) broken with character references (`&#58;`,
 * `&#46;`, `&#64;`), which show as the character: a backslash does not stop an autolink, whose text then shows the
 * backslashes. `$` is escaped too, so `$(icon)` draws no icon.
 */
export function mdEscape(s: string): string {
  return visibleText(s, { maxChars: MAX_BLOCK_CHARS })
    .replace(/([\\`*_{}[\]()#+\-.!|<>$~&])/g, '\\$1')
    .replace(/:/g, '&#58;')
    .replace(/@/g, '&#64;')
    .replace(/(www)\\\./gi, '$1&#46;');
}

/** Repository text as a markdown code span (shown literally, never a link): a fence longer than any backtick run in it. */
export function mdCode(s: string): string {
  const text = visibleText(s, { singleLine: true, maxChars: MAX_LINE_CHARS });
  const fence = '`'.repeat(Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length)) + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

const SOURCE_LABEL: Record<string, string> = { 'flow-next': '.flow', quantum: 'quantum.json' };

/**
 * Where a status is read from (tooltips): the file and field the seed format keeps it in. A flow-next task's runtime
 * state file is named by its real path (the folder's git common dir, `FLOW_STATE_DIR` or `.flow/state`; relative to
 * `folder` when inside it), found when the tooltip is shown.
 */
function statusSourceText(item: PlanItem, folder: string): string {
  switch (item.source) {
    case 'flow-next': {
      if (item.statusSource !== 'flow-state') return `${mdCode(item.file)} (\`status\`)`;
      const file = taskStateFile(resolveFlowStateDir(folder).dir, item.id);
      const rel = path.relative(folder, file);
      const shown = rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
      return `the flow state file ${mdCode(shown)} (over task ${mdCode(item.file)})`;
    }
    case 'quantum':
      return `\`quantum.json\` (\`stories[].status\`)`;
    case 'checklist':
      return `${mdCode(item.file)} line ${item.line ?? '?'} (the checkbox)`;
  }
}

/** What the runs of a folder say about items: the active run's current items, open questions, cost per item. */
interface RunFactsByItem {
  current: Set<string>;
  waiting: Map<string, string>;
  costUsd: Map<string, number>;
}

function runFacts(runs: StoreRun[]): RunFactsByItem {
  const out: RunFactsByItem = { current: new Set(), waiting: new Map(), costUsd: new Map() };
  for (const r of runs) {
    if (r.facts.active) {
      for (const l of r.view.lanes) if (l.item) out.current.add(l.item.id);
      for (const q of r.facts.questions) if (q.itemId) out.waiting.set(q.itemId, r.runId);
    }
    for (const c of r.view.cost.byItem) out.costUsd.set(c.item.id, (out.costUsd.get(c.item.id) ?? 0) + c.costUsd);
  }
  return out;
}

/**
 * What an item row shows, besides its neighbours' statuses (its tooltip reads those through the folder's
 * {@link TipContext}): the plan item and the run facts about it. Two rows with equal inputs ({@link sameInputs}) look
 * the same, so a rebuild reuses the previous row object.
 */
export interface ItemInputs {
  item: PlanItem;
  parentId: string;
  costUsd: number | undefined;
  current: boolean;
  waitingRun: string | undefined;
  /**
   * A quantum story `in_progress` past its stale threshold (§4.7, core `pastStaleThreshold`) while no run of the folder
   * is active: the threshold in minutes; shown `stale` (no spinner), with `ralph stale --apply` in its tooltip.
   * Undefined otherwise.
   */
  stale?: number;
}

/**
 * The plan a folder's lazy item tooltips read (dependencies' and dependents' statuses). One holder per folder lives
 * across rebuilds; each rebuild points it at the newest plan, so a reused row's tooltip is never stale.
 */
interface TipContext {
  items: Map<string, Map<string, PlanItem>>;
  /** The workspace folder (absolute). */
  folder: string;
}

/** Per folder: the item rows by source and item id (what the next rebuild may reuse), and the tooltip context. */
interface FolderCache {
  rowsBySource: Map<string, Map<string, TreeRow>>;
  tips: TipContext;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether two plan items show the same in a row and its tooltip (field by field; no strings built). */
export function sameItem(x: PlanItem, y: PlanItem): boolean {
  return (
    x === y ||
    (x.id === y.id &&
      x.source === y.source &&
      x.kind === y.kind &&
      x.title === y.title &&
      x.status === y.status &&
      x.rawStatus === y.rawStatus &&
      x.statusSource === y.statusSource &&
      x.attempts === y.attempts &&
      x.maxAttempts === y.maxAttempts &&
      x.startedAt === y.startedAt &&
      x.updatedAt === y.updatedAt &&
      x.completedAt === y.completedAt &&
      x.reason === y.reason &&
      x.assignee === y.assignee &&
      x.file === y.file &&
      x.line === y.line &&
      sameStrings(x.dependsOn, y.dependsOn))
  );
}

/** Whether an item row built from `a` looks exactly like one built from `b`. */
export function sameInputs(a: ItemInputs, b: ItemInputs): boolean {
  return (
    a.parentId === b.parentId &&
    a.costUsd === b.costUsd &&
    a.current === b.current &&
    a.waitingRun === b.waitingRun &&
    a.stale === b.stale &&
    sameItem(a.item, b.item)
  );
}

function itemTooltip(inputs: ItemInputs, status: RowStatus, tips: TipContext): string {
  const { item, waitingRun } = inputs;
  const same = tips.items.get(item.source);
  const byId = (id: string) => same?.get(id);
  // Dependents are found when the tooltip is shown (a hover): one pass over the source's items.
  const deps: string[] = [];
  if (same) for (const i of same.values()) if (i.dependsOn.includes(item.id)) deps.push(i.id);
  const tip = [
    `**${mdEscape(item.id)}** ${mdEscape(item.title)}`,
    '',
    `Status: **${statusWord(status)}** (${mdCode(item.rawStatus)}) from ${statusSourceText(item, tips.folder)}`,
  ];
  if (item.dependsOn.length)
    tip.push(
      '',
      `Depends on: ${item.dependsOn.map((d) => `${mdEscape(d)} (${mdEscape(byId(d)?.rawStatus ?? 'missing')})`).join(', ')}`,
    );
  if (deps.length)
    tip.push(
      '',
      `Dependents: ${deps.map((d) => `${mdEscape(d)} (${mdEscape(byId(d)?.rawStatus ?? '?')})`).join(', ')}`,
    );
  if (item.reason) tip.push('', `Last failure: ${mdEscape(item.reason)}`);
  if (waitingRun) tip.push('', `A run (${waitingRun}) waits for an answer to its question.`);
  if (inputs.stale !== undefined)
    tip.push(
      '',
      `Stale: no run is active and it started more than ${inputs.stale} minutes ago (the stale threshold); \`ralph stale --apply\` fails or blocks it.`,
    );
  const times = [
    item.startedAt && `started ${item.startedAt}`,
    item.updatedAt && `updated ${item.updatedAt}`,
    item.completedAt && `completed ${item.completedAt}`,
  ].filter(Boolean);
  if (times.length) tip.push('', mdEscape(times.join(' · ')));
  if (item.assignee) tip.push('', `Assignee: ${mdEscape(item.assignee)}`);
  return tip.join('\n');
}

const contextValues = new Map<string, string>();

/** An item row's menu tokens; the few distinct strings are shared by every row (no string per row). */
function itemContextValue(item: PlanItem, waiting: boolean): string {
  const resettable =
    item.source !== 'checklist' && (item.status === 'done' || item.status === 'blocked' || item.status === 'failed');
  const startable = item.status !== 'done';
  const key = `${item.source}${item.kind}${resettable ? 1 : 0}${startable ? 1 : 0}${waiting ? 1 : 0}`;
  let v = contextValues.get(key);
  if (v === undefined)
    contextValues.set(
      key,
      (v = `item ${item.source} ${item.kind} file${resettable ? ' resettable' : ''}${startable ? ' startable' : ''}${waiting ? ' waiting' : ''}`),
    );
  return v;
}

/** A new item row (only when no previous row with the same inputs can be reused). `id` is the previous row's id string, when there was one. */
function itemRow(folder: string, inputs: ItemInputs, tips: TipContext, id: string | undefined): TreeRow {
  const { item, waitingRun } = inputs;
  const status: RowStatus = waitingRun ? 'waiting' : inputs.stale !== undefined ? 'stale' : item.status;
  let description = item.source !== 'checklist' ? statusWord(status) : '';
  const more = (s: string) => {
    description = description ? `${description} · ${s}` : s;
  };
  if (item.attempts !== undefined && item.attempts > 0) more(`attempt ${item.attempts}/${item.maxAttempts ?? '?'}`);
  if (inputs.costUsd) more(usd(inputs.costUsd));
  if (inputs.current) more('current');
  const contextValue = itemContextValue(item, waitingRun !== undefined);
  const row: TreeRow = {
    id: id ?? `${folder}#${item.source}/${item.kind}/${item.id}`,
    parentId: inputs.parentId,
    folder,
    label: item.source === 'checklist' ? item.title : `${item.id} ${item.title}`,
    description,
    status,
    tooltip: () => itemTooltip(inputs, status, tips),
    contextValue,
    children: [],
    file: item.file,
    itemId: item.id,
    source: item.source,
    inputs,
  };
  if (item.line) row.line = item.line;
  if (waitingRun) row.runId = waitingRun;
  return row;
}

/**
 * The status of a group row (an epic): done when its file says so; `partial` (not the to-do icon) once one of its
 * items is done or in progress, as at 3/4; else open. Pure.
 */
export function groupStatus(status: string, items: readonly PlanItem[]): RowStatus {
  if (status === 'done') return 'done';
  return items.some((i) => i.status === 'done' || i.status === 'in_progress') ? 'partial' : 'open';
}

function countOf(items: PlanItem[]): string {
  let done = 0;
  for (const i of items) if (i.status === 'done') done++;
  return `${done}/${items.length}`;
}

function subagentStatus(s: SubagentJson): RowStatus {
  switch (s.disposition) {
    case 'RESOLVED':
      return 'done';
    case 'RESUMED':
      return 'orphan';
    case 'STALE':
      return 'stale';
    case 'ACTIVE':
      return 'active';
    case 'PENDING':
      return 'pending';
  }
}

/**
 * Lists in `touched` the reused item rows whose tooltip names the status of an item in `moved` (its dependencies and
 * dependents; items that went count too, with the dependencies they had).
 */
function touchNeighbours(
  before: FolderCache,
  rowsBySource: Map<string, Map<string, TreeRow>>,
  moved: Map<string, Set<string>>,
  noteMoved: (source: string, id: string) => void,
  rebuilt: Set<TreeRow>,
  touched: Set<string>,
): void {
  const gone: TreeRow[] = [];
  for (const [source, old] of before.rowsBySource) {
    const now = rowsBySource.get(source);
    if (now && now.size === old.size && !moved.has(source)) continue; // same ids: nothing went (an id that went makes room for one that came, which moved)
    for (const [id, row] of old)
      if (!now?.has(id)) {
        noteMoved(source, id);
        gone.push(row);
      }
  }
  if (!moved.size) return;
  const touch = (row: TreeRow | undefined) => {
    if (row && !rebuilt.has(row)) touched.add(row.id);
  };
  for (const [source, now] of rowsBySource) {
    const m = moved.get(source);
    if (!m) continue;
    for (const row of now.values()) {
      const item = row.inputs!.item;
      if (m.has(item.id)) for (const d of item.dependsOn) touch(now.get(d));
      for (const d of item.dependsOn)
        if (m.has(d)) {
          touch(row);
          break;
        }
    }
  }
  for (const row of gone) {
    const now = rowsBySource.get(row.inputs!.item.source);
    for (const d of row.inputs!.item.dependsOn) touch(now?.get(d));
  }
}

/**
 * The tree's rows for a store snapshot and each folder's live waves (pure, apart from moving `prev`'s tooltip context
 * to the newest plan). `waves(folder)` gives `WaveMonitors.waves`; when it is empty the plan snapshot's `waves` (the
 * same shape, as `loadPlan` classified them) are used. With `prev` (the model shown now), an item row whose inputs are
 * unchanged is `prev`'s row object itself, and rows whose tooltip reads a changed neighbour are listed in `touched`.
 * `nowMs` (epoch ms) dates the stale rule of quantum stories; a story crosses its threshold on the next rebuild (any
 * store change), not by a timer.
 */
export function buildTreeModel(
  snapshot: StoreSnapshot,
  waves: (folder: string) => WaveJson[] = () => [],
  prev?: TreeModel,
  nowMs: number = Date.now(),
): TreeModel {
  const rows = new Map<string, TreeRow>();
  const roots: string[] = [];
  const cache = new Map<string, FolderCache>();
  const touched = new Set<string>();
  const multi = snapshot.folders.length > 1;
  const add = (row: TreeRow): TreeRow => {
    rows.set(row.id, row);
    if (row.parentId) rows.get(row.parentId)!.children.push(row.id);
    else roots.push(row.id);
    return row;
  };
  const group = (
    folder: string,
    name: string,
    key: string,
    label: string,
    description: string,
    tooltip: string,
    contextValue: string,
    extra: Partial<TreeRow> = {},
  ): TreeRow =>
    add({
      id: `${folder}#${key}`,
      parentId: undefined,
      folder,
      label,
      description: multi ? `${description} · ${name}` : description,
      status: 'none',
      tooltip,
      contextValue,
      children: [],
      ...extra,
    });

  for (const fs of snapshot.folders) {
    const folder = fs.folder;
    const plan = fs.plan;
    const folderRuns = snapshot.runs.filter((r) => r.folder === folder);
    const f = runFacts(folderRuns);
    const anyActive = folderRuns.some((r) => r.facts.active);
    if (plan) {
      const before = prev?.cache?.get(folder);
      const tips = before?.tips ?? { items: new Map(), folder };
      const itemsBySource = new Map<string, Map<string, PlanItem>>();
      for (const i of plan.items) {
        let m = itemsBySource.get(i.source);
        if (!m) itemsBySource.set(i.source, (m = new Map()));
        m.set(i.id, i);
      }
      tips.items = itemsBySource;
      const rowsBySource = new Map<string, Map<string, TreeRow>>();
      cache.set(folder, { rowsBySource, tips });
      /** Items (by source) whose status text changed, appeared or went: their neighbours' tooltips name it. */
      const moved = new Map<string, Set<string>>();
      /** Item rows built anew (not reused from `prev`). */
      const rebuilt = new Set<TreeRow>();
      const noteMoved = (source: string, id: string) => {
        let m = moved.get(source);
        if (!m) moved.set(source, (m = new Set()));
        m.add(id);
      };
      const itemsOf = (r: PlanRoot): PlanItem[] => {
        const m = itemsBySource.get(r.source);
        const out: PlanItem[] = [];
        if (m)
          for (const id of r.itemIds) {
            const i = m.get(id);
            if (i) out.push(i);
          }
        return out;
      };
      /** The item rows under `parent` (items of one source): `prev`'s row where the inputs are the same, else a new one. */
      const addItems = (parent: TreeRow, source: string, items: PlanItem[], staleMinutes?: number) => {
        let bySource = rowsBySource.get(source);
        if (!bySource) rowsBySource.set(source, (bySource = new Map()));
        const prevBySource = before?.rowsBySource.get(source);
        const children = parent.children;
        for (const item of items) {
          const old = prevBySource?.get(item.id);
          const was = old?.inputs;
          const waitingRun = f.waiting.size ? f.waiting.get(item.id) : undefined;
          const costUsd = f.costUsd.size ? f.costUsd.get(item.id) : undefined;
          const current = f.current.size ? f.current.has(item.id) : false;
          const stale =
            staleMinutes !== undefined && !anyActive && pastStaleThreshold(item, nowMs, staleMinutes)
              ? staleMinutes
              : undefined;
          let row: TreeRow;
          if (
            was &&
            was.parentId === parent.id &&
            was.costUsd === costUsd &&
            was.current === current &&
            was.waitingRun === waitingRun &&
            was.stale === stale &&
            sameItem(was.item, item)
          )
            row = old;
          else {
            row = itemRow(
              folder,
              { item, parentId: parent.id, costUsd, current, waitingRun, ...(stale !== undefined ? { stale } : {}) },
              tips,
              was?.item.kind === item.kind ? old!.id : undefined,
            );
            rebuilt.add(row);
            if (before && (!was || was.item.rawStatus !== item.rawStatus)) noteMoved(source, item.id);
          }
          bySource.set(item.id, row);
          rows.set(row.id, row);
          children.push(row.id);
        }
      };
      const flowRoots = plan.roots.filter((r) => r.source === 'flow-next');
      if (flowRoots.length) {
        const all = flowRoots.flatMap(itemsOf);
        const src = group(
          folder,
          fs.name,
          'flow-next',
          `flow-next (${flowRoots.length} epic${flowRoots.length === 1 ? '' : 's'})`,
          `${countOf(all)} tasks`,
          `**flow-next** \`.flow/\`: epics (flowctl: specs) and their tasks`,
          'source flow-next',
          { source: 'flow-next' },
        );
        for (const r of flowRoots) {
          const items = itemsOf(r);
          const epic = add({
            id: `${folder}#flow-next/epic/${r.id}`,
            parentId: src.id,
            folder,
            label: `${r.id} ${r.title}`,
            description: `${countOf(items)}${r.status === 'done' ? ' · closed' : ''}`,
            status: groupStatus(r.status, items),
            tooltip: [
              `**${mdEscape(r.id)}** ${mdEscape(r.title)}`,
              '',
              `Epic status \`${r.rawStatus ?? r.status}\` from \`${r.file}\``,
              ...(r.dependsOn.length ? ['', `Depends on epics: ${r.dependsOn.join(', ')}`] : []),
            ].join('\n'),
            contextValue: 'root flow-next epic file',
            children: [],
            file: r.file,
            itemId: r.id,
            source: 'flow-next',
          });
          addItems(epic, 'flow-next', items);
        }
      }
      for (const r of plan.roots.filter((x) => x.source !== 'flow-next')) {
        const items = itemsOf(r);
        const key = r.source === 'quantum' ? 'quantum' : `checklist/${r.id}`;
        const label =
          r.source === 'quantum' ? (r.title === 'quantum.json' ? 'quantum.json' : `quantum.json — ${r.title}`) : r.id;
        const kindWord =
          r.source === 'quantum'
            ? 'quantum-loop project `quantum.json`: stories'
            : `checklist \`${r.file}\`: its boxes`;
        const root = group(
          folder,
          fs.name,
          key,
          label,
          `${countOf(items)} ${r.source === 'quantum' ? 'stories' : 'tasks'}`,
          `**${kindWord}**${r.title !== r.id && r.source === 'checklist' ? `\n\n${mdEscape(r.title)}` : ''}`,
          `source root ${r.source} file`,
          { file: r.file, source: r.source, status: r.status === 'done' ? 'done' : 'open' },
        );
        addItems(
          root,
          r.source,
          items,
          r.source === 'quantum' ? (r.staleThresholdMinutes ?? QUANTUM_DEFAULT_STALE_MINUTES) : undefined,
        );
      }
      if (before) touchNeighbours(before, rowsBySource, moved, noteMoved, rebuilt, touched);
    }
    const live = waves(folder);
    const ws = live.length ? live : (plan?.waves ?? []);
    if (ws.length) {
      const orphans = ws.reduce((n, w) => n + w.counts.orphans, 0);
      const src = group(
        folder,
        fs.name,
        'waves',
        'IJFW waves',
        `${ws.length} wave${ws.length === 1 ? '' : 's'}${orphans ? ` · ${orphans} orphan${orphans === 1 ? '' : 's'}` : ''}`,
        '**IJFW waves** `.ijfw/`: subagents with their dispositions (RESOLVED, RESUMED, STALE, ACTIVE, PENDING)',
        'source waves',
      );
      for (const w of ws) {
        const c = w.counts;
        const wave = add({
          id: `${folder}#waves/${w.wave_id}`,
          parentId: src.id,
          folder,
          label: `wave ${w.wave_id}`,
          description: [
            w.status ?? '',
            c.orphans ? `${c.orphans} orphan${c.orphans === 1 ? '' : 's'}` : '',
            c.ACTIVE ? `${c.ACTIVE} active` : '',
            `${c.RESOLVED}/${w.subagents.length} done`,
          ]
            .filter(Boolean)
            .join(' · '),
          // Spins only while a subagent is active; a wave with no subagents yet waits (pending).
          status: c.orphans
            ? 'orphan'
            : !w.subagents.length
              ? 'pending'
              : c.RESOLVED === w.subagents.length
                ? 'done'
                : c.ACTIVE
                  ? 'active'
                  : 'open',
          tooltip: `**wave ${mdEscape(w.wave_id)}**${w.status ? ` (STATE.md ${mdCode(w.status)})` : ''}\n\n${Object.entries(
            c,
          )
            .filter(([k]) => k !== 'orphans')
            .map(([k, n]) => `${k} ${n}`)
            .join(' · ')}`,
          contextValue: 'wave',
          children: [],
          waveId: w.wave_id,
        });
        for (const s of w.subagents) {
          const status = subagentStatus(s);
          const orphan = s.disposition === 'RESUMED' || s.disposition === 'STALE';
          const tip = [
            `**${mdEscape(s.sub_id)}** ${s.disposition}${s.done_source ? ` (DONE from ${mdEscape(s.done_source)})` : ''}`,
            '',
          ];
          if (s.summary) tip.push(mdEscape(s.summary), '');
          tip.push(
            `Checkpoint age ${age(s.checkpoint_age_ms)}, last activity ${age(s.last_activity_age_ms)}${s.orphan_in_ms !== undefined ? `, orphan in ${age(s.orphan_in_ms)}` : ''}`,
          );
          if (s.next_step) tip.push('', `Next step: ${mdEscape(s.next_step)}`);
          if (s.last_action) tip.push('', `Last action: ${mdEscape(s.last_action)}`);
          if (s.unreadable) tip.push('', `Unreadable: ${mdEscape(s.unreadable)}`);
          if (s.checkpoint) tip.push('', `Checkpoint \`${s.checkpoint}\``);
          if (s.worktree) tip.push('', `Worktree \`${s.worktree}\``);
          add({
            id: `${folder}#waves/${w.wave_id}/${s.sub_id}`,
            parentId: wave.id,
            folder,
            label: s.sub_id,
            description: [
              s.disposition.toLowerCase(),
              s.last_activity_age_ms !== null ? `${age(s.last_activity_age_ms)} ago` : '',
              s.next_step ? `next: ${s.next_step}` : '',
            ]
              .filter(Boolean)
              .join(' · '),
            status,
            tooltip: tip.join('\n'),
            contextValue: `subagent${orphan ? ' orphan' : ''}${s.checkpoint ? ' file' : ''}`,
            children: [],
            ...(s.checkpoint ? { file: s.checkpoint } : {}),
            itemId: s.sub_id,
            waveId: w.wave_id,
            ...(s.worktree ? { worktree: s.worktree } : {}),
          });
        }
      }
    }
    const active = folderRuns.filter((r) => r.facts.active);
    if (folderRuns.length) {
      const src = group(
        folder,
        fs.name,
        'runs',
        'Ralph runs',
        active.length ? `${active.length} active` : 'none active',
        '**Ralph runs** of this folder (whoever started them): the active run, its current item and lanes',
        'source runs',
      );
      for (const r of active) {
        const v = r.view;
        const run = add({
          id: `${folder}#runs/${r.runId}`,
          parentId: src.id,
          folder,
          label: r.runId,
          description: [
            v.stateText,
            v.agent ?? '',
            v.progress ? `${v.progress.done}/${v.progress.total}` : '',
            v.iteration ? `iteration ${v.iteration}` : '',
            v.cost.runUsd ? usd(v.cost.runUsd) : '',
            v.workers ? `${v.workers.length} worker${v.workers.length === 1 ? '' : 's'} alive` : '',
          ]
            .filter(Boolean)
            .join(' · '),
          status: r.facts.questions.length ? 'waiting' : r.facts.paused ? 'blocked' : 'in_progress',
          tooltip: [
            `**run ${mdEscape(r.runId)}** (${r.kind})`,
            '',
            `${mdEscape(v.stateText)}`,
            '',
            mdEscape(`Source ${v.source ?? '?'} · agent ${v.agent ?? '?'} · started ${v.startedAt ?? '?'}`),
            ...(v.workers
              ? [
                  '',
                  mdEscape(
                    `Workers alive: ${v.workers.length ? v.workers.map((w) => w.id).join(', ') : 'none'} (remote lanes)`,
                  ),
                ]
              : []),
            ...(v.warnings.length ? ['', `Last warning: ${mdEscape(v.warnings.at(-1)!)}`] : []),
          ].join('\n'),
          contextValue: `run${r.facts.questions.length ? ' waiting' : ''}`,
          children: [],
          runId: r.runId,
        });
        for (const l of v.lanes) {
          const waiting = r.facts.questions.find((q) => q.itemId === (l.item?.id ?? null));
          add({
            id: `${run.id}/lane/${l.lane}`,
            parentId: run.id,
            folder,
            label: l.item ? `${l.item.id} ${l.item.title ?? ''}`.trim() : `lane ${l.lane}`,
            description: [
              v.lanes.length > 1 ? `lane ${l.lane}` : '',
              l.activity,
              l.agent && l.agent !== v.agent ? l.agent : '',
              l.worker ? `on ${l.worker}` : '',
              l.iteration ? `iteration ${l.iteration}` : '',
              l.attempt ? `attempt ${l.attempt.text}` : '',
              l.iterationCostUsd ? usd(l.iterationCostUsd) : '',
            ]
              .filter(Boolean)
              .join(' · '),
            status: l.activity === 'waiting' ? 'waiting' : l.activity === 'idle' ? 'todo' : 'in_progress',
            tooltip: [
              `**lane ${l.lane}**: ${l.activity}${l.purpose ? ` (${l.purpose})` : ''}`,
              ...(l.item ? ['', `Current item ${mdEscape(l.item.id)}`] : []),
              ...(l.worker ? ['', mdEscape(`Runs on worker ${l.worker} (remote lane)`)] : []),
              ...(l.lastEnding
                ? [
                    '',
                    `Last iteration ${l.lastEnding.iteration}: ${l.lastEnding.ending} ${mdEscape(l.lastEnding.detail)}`,
                  ]
                : []),
            ].join('\n'),
            contextValue: `lane${waiting ? ' waiting' : ''}`,
            children: [],
            runId: r.runId,
            ...(l.item ? { itemId: l.item.id } : {}),
          });
        }
      }
    }
  }
  return { rows, roots, cache, touched };
}

/**
 * Whether two rows with the same id look the same (pure): every field the provider shows or a command reads, and
 * whether there are children. Lazy tooltips compare by identity: a rebuilt item row (inputs changed) is redrawn.
 */
export function sameLook(a: TreeRow, b: TreeRow): boolean {
  return (
    a === b ||
    (a.label === b.label &&
      a.description === b.description &&
      a.status === b.status &&
      a.tooltip === b.tooltip &&
      a.contextValue === b.contextValue &&
      a.file === b.file &&
      a.line === b.line &&
      a.worktree === b.worktree &&
      a.runId === b.runId &&
      a.itemId === b.itemId &&
      a.waveId === b.waveId &&
      a.source === b.source &&
      a.children.length > 0 === b.children.length > 0)
  );
}

/**
 * The rows a refresh must redraw going from `prev` to `next` (pure): a row whose look changed ({@link sameLook}, or
 * listed in `next.touched`), and the parent of a row added or removed (its children list changed; a redrawn parent
 * re-asks for its children). Rows inside a redrawn parent are not listed again. `root` when the top-level list changed.
 */
export function diffTreeModels(prev: TreeModel, next: TreeModel): TreeDiff {
  if (!sameStrings(prev.roots, next.roots)) return { root: true, changed: [] };
  const changed = new Set<string>();
  const regrown = new Set<string>();
  for (const row of next.rows.values()) {
    const old = prev.rows.get(row.id);
    if (!old) continue;
    if (!sameStrings(old.children, row.children)) {
      changed.add(row.id);
      regrown.add(row.id);
    } else if (!sameLook(old, row) || next.touched?.has(row.id)) changed.add(row.id);
  }
  // A row whose children list changed re-reads its subtree: drop its descendants.
  const out: string[] = [];
  for (const id of changed) {
    let p = next.rows.get(id)?.parentId;
    let covered = false;
    while (p && regrown.size) {
      if (regrown.has(p)) {
        covered = true;
        break;
      }
      p = next.rows.get(p)?.parentId;
    }
    if (!covered) out.push(id);
  }
  return { root: false, changed: out };
}

/** The source word of a row (`.flow`, `quantum.json`, the checklist path). */
export function sourceLabelOf(source: string | undefined, file: string | undefined): string {
  return (source && SOURCE_LABEL[source]) ?? file ?? '';
}

/** The modal confirm of **Reset Task** / **Reset Task and Dependents**, or the refusal (a sentence saying why). */
export type ResetConfirm =
  { ok: true; message: string; detail: string; ids: string[] } | { ok: false; message: string };

/**
 * The confirm text of a reset from the core offer (`resetOfferOf`, the same function `ralph task reset --cascade`
 * decides with): `ids` are exactly the items the reset will set back to todo / pending, in reset order (the item
 * first). Pure.
 */
export function resetConfirmOf(
  plan: PlanSnapshot,
  offer: { id: string; resettable: boolean; why?: string; cascade: string[]; leftInProgress?: string[] },
  cascade: boolean,
): ResetConfirm {
  if (!offer.resettable)
    return { ok: false, message: `Ralph: cannot reset ${offer.id}: ${offer.why ?? 'not resettable'}.` };
  const ids = cascade ? [offer.id, ...offer.cascade] : [offer.id];
  const item = (id: string) => plan.items.find((i) => i.id === id && i.source !== 'checklist');
  // The tree's words for a status ("to do", "done", "failed"), not the file's (`pending`, `passed`).
  const word = (id: string) => {
    const i = item(id);
    return i ? STATUS_WORD[i.status] : '?';
  };
  const line = (id: string, tail: string) => `• ${id} ${item(id)?.title ?? ''}`.trimEnd() + ` (${tail})`;
  const lines = ids.map((id) => line(id, `${word(id)} → to do`));
  const left = cascade ? (offer.leftInProgress ?? []) : [];
  const leftText = left.length
    ? `\n\nLeft alone (in progress; reset them once they finish):\n${left.map((id) => line(id, 'in progress')).join('\n')}`
    : '';
  if (!cascade) return { ok: true, message: `Reset ${offer.id} to "to do"?`, detail: lines.join('\n'), ids };
  const none = offer.cascade.length
    ? ''
    : '\n\nNothing done, blocked or failed depends on it: only this item is reset.';
  return {
    ok: true,
    message: `Reset ${offer.id} and its dependents (${ids.length} item${ids.length === 1 ? '' : 's'}) to "to do"?`,
    detail: `${lines.join('\n')}${none}${leftText}`,
    ids,
  };
}
