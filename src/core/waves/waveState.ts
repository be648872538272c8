import type * as Yaml from 'yaml';
import { parseIsoTime } from '../model/time';
import { DONE_STATUSES } from './checkpoint';

/**
 * A wave's `STATE.md` (seed-systems.md §1.6): `---`, a flat YAML frontmatter, `---`, a markdown body. Only what wave
 * recovery needs is read: `status`, `updated_at`, the `subagents` roster and the `tasks` entries
 * (`"<taskId>:<status>:<dedupKey>"`).
 */
export interface WaveState {
  status?: string;
  updatedAtMs?: number;
  /** The roster (`subagents:`), ids as written (invalid ones are dropped by the reader). */
  subagents: string[];
  /** Task ids whose `tasks:` entry says DONE or DONE_WITH_CONCERNS (§1.5-3). */
  doneTasks: Set<string>;
}

/** Wave statuses that mean the wave is over (§1.5-4): every claim released (`review`) or advanced (`complete`). */
export const WAVE_OVER_STATUSES: readonly string[] = ['review', 'complete'];

/**
 * Parses STATE.md text (pure). Returns `{ok: false, reason}` when the frontmatter is missing or is not YAML.
 * The flat subset IJFW writes (strings, numbers, booleans, null, string arrays) is a subset of YAML.
 */
export function parseWaveState(text: string): { ok: true; state: WaveState } | { ok: false; reason: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/.exec(text);
  if (!m) return { ok: false, reason: 'no YAML frontmatter (the file must start with ---)' };
  let fm: unknown = parseFlatYaml(m[1]!);
  if (fm === undefined) {
    try {
      // Loaded only here: most STATE.md files take the flat fast path, and a CLI pass need not initialise `yaml`.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      fm = (require('yaml') as typeof Yaml).parse(m[1]!);
    } catch (err) {
      return { ok: false, reason: `frontmatter is not YAML: ${(err as Error).message.split('\n')[0]}` };
    }
  }
  if (fm === null || typeof fm !== 'object' || Array.isArray(fm))
    return { ok: false, reason: 'frontmatter is not a map' };
  const f = fm as Record<string, unknown>;
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => String(x)) : []);
  const doneTasks = new Set<string>();
  for (const t of list(f.tasks)) {
    const [id, status] = t.split(':');
    if (id && status && DONE_STATUSES.includes(status)) doneTasks.add(id);
  }
  const updated =
    typeof f.updated_at === 'string'
      ? parseIsoTime(f.updated_at)
      : f.updated_at instanceof Date
        ? f.updated_at.getTime()
        : undefined;
  return {
    ok: true,
    state: {
      ...(typeof f.status === 'string' ? { status: f.status } : {}),
      ...(updated !== undefined ? { updatedAtMs: updated } : {}),
      subagents: list(f.subagents),
      doneTasks,
    },
  };
}

/**
 * The flat YAML subset IJFW writes (§1.6): `key: scalar`, `key: [a, b]`, and `key:` followed by `  - item` lines;
 * scalars plain or double-quoted (JSON escapes), `null` / `~`, booleans and numbers. Returns `undefined` for anything
 * else, and the caller falls back to a full YAML parser: a fast path for large rosters (bench/waves.bench.ts). Pure.
 */
export function parseFlatYaml(text: string): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  let list: unknown[] | undefined;
  for (const raw of text.split(/\r?\n/)) {
    // The roster's lines (`  - W1-S0001`, a thousand in a large wave) in one test: a plain word is itself.
    if (list && raw.startsWith('  - ')) {
      const v = raw.slice(4);
      if (PLAIN_WORD.test(v) && v !== 'null' && v !== 'true' && v !== 'false') {
        list.push(v);
        continue;
      }
    }
    if (!raw.trim() || /^\s*#/.test(raw)) continue;
    const item = /^\s+-\s+(.*)$/.exec(raw) ?? /^-\s+(.*)$/.exec(raw);
    if (item) {
      if (!list) return undefined;
      const v = flatScalar(item[1]!);
      if (v === INVALID) return undefined;
      list.push(v);
      continue;
    }
    const kv = /^([A-Za-z_][A-Za-z0-9_-]*):(?:\s+(.*?))?\s*$/.exec(raw);
    if (!kv) return undefined;
    const value = kv[2];
    list = undefined;
    if (value === undefined || value === '') {
      list = [];
      out[kv[1]!] = list;
    } else if (value.startsWith('[')) {
      if (!value.endsWith(']')) return undefined;
      const inner = value.slice(1, -1).trim();
      let parts: unknown[];
      if (inner.includes('"')) {
        // Quoted items may hold commas: the flow sequence is JSON when every item is quoted.
        try {
          parts = JSON.parse(value) as unknown[];
        } catch {
          return undefined;
        }
      } else {
        parts = inner ? inner.split(',').map((p) => flatScalar(p.trim())) : [];
      }
      if (parts.includes(INVALID)) return undefined;
      out[kv[1]!] = parts;
    } else {
      const v = flatScalar(value);
      if (v === INVALID) return undefined;
      out[kv[1]!] = v;
    }
  }
  return out;
}

const INVALID = Symbol('invalid');

/** A scalar {@link flatScalar} returns as it is: a word of letters, digits, `_` and `-`, not starting with a digit or `-`. */
const PLAIN_WORD = /^[A-Za-z_][A-Za-z0-9_-]*$/;

function flatScalar(s: string): unknown {
  if (s.startsWith('"')) {
    try {
      return JSON.parse(s) as unknown;
    } catch {
      return INVALID;
    }
  }
  if (/^['{|>&*!%@`]/.test(s) || /:\s|\s#/.test(s)) return INVALID;
  if (s === 'null' || s === '~') return null;
  if (s === 'true') return true;
  if (s === 'false') return false;
  if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
  return s;
}

/** One blackboard claim, as far as the resume brief needs it (§1.7). */
export interface ClaimSummary {
  id?: string;
  artifactId?: string;
  agent?: string;
  note?: string;
  status?: string;
}

/** The claims of `.ijfw/blackboard/claims.json` (`{version, claims: [...]}`), tolerant of the legacy aliases (pure). */
export function parseClaims(text: string): ClaimSummary[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return [];
  }
  const claims =
    raw && typeof raw === 'object' && Array.isArray((raw as { claims?: unknown }).claims)
      ? (raw as { claims: unknown[] }).claims
      : [];
  const s = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
  // Plain assignments, not conditional spreads: a pass reads a thousand claims in code that has not warmed up yet.
  const out: ClaimSummary[] = [];
  for (const c of claims) {
    if (!c || typeof c !== 'object') continue;
    const r = c as Record<string, unknown>;
    const one: ClaimSummary = {};
    const id = s(r.id);
    if (id) one.id = id;
    const artifactId = s(r.artifact_id) ?? s(r.artifact);
    if (artifactId) one.artifactId = artifactId;
    const agent = s(r.agent) ?? s(r.owner);
    if (agent) one.agent = agent;
    const note = s(r.note);
    if (note) one.note = note;
    const status = s(r.status);
    if (status) one.status = status;
    out.push(one);
  }
  return out;
}

/**
 * The claim that describes a subagent's task (§1.7 "practical join"): one whose `agent` is the subId, else one whose
 * `artifact_id` starts with `<waveId>:` and whose agent, artifact or note mentions the subId. `byAgent` (claims by
 * `agent`, first wins) makes the first lookup O(1) for large waves. Pure.
 */
export function claimFor(
  claims: readonly ClaimSummary[],
  waveId: string,
  subId: string,
  byAgent?: ReadonlyMap<string, ClaimSummary>,
): ClaimSummary | undefined {
  return (
    (byAgent ? byAgent.get(subId) : claims.find((c) => c.agent === subId)) ??
    claims.find(
      (c) => c.artifactId?.startsWith(`${waveId}:`) && [c.agent, c.artifactId, c.note].some((t) => t?.includes(subId)),
    )
  );
}

/** The task summary a claim gives: its note, else its artifact id; `undefined` without a claim. */
export function claimSummary(c: ClaimSummary | undefined): string | undefined {
  return c?.note ?? c?.artifactId;
}
