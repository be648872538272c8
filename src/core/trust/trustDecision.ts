import { contentHash, contentLines, diffLines, type TrustedEntry } from './trustedContent';

/**
 * What the user trusted for one workspace folder: the hash of the trusted content and its lines (to show what
 * changed later). Kept in the user's state folder, never in the workspace (trustStore.ts).
 */
export interface TrustRecord {
  /** Absolute real path of the workspace folder. */
  folder: string;
  /** {@link contentHash} of the content trusted. */
  hash: string;
  /** {@link contentLines} of the content trusted. */
  lines: string[];
  /** ISO time of `ralph trust` (or of the VS Code "Trust" answer). */
  trustedAt: string;
}

/** A trust given for one command only, outside the workspace: the `--trust` flag or `RALPH_TRUST=1` (CI, bots). */
export type TrustOverride = '--trust' | 'RALPH_TRUST=1' | null;

/**
 * The trust state of a workspace's content:
 * - `nothing`: its files name no program (nothing to trust; every command proceeds);
 * - `trusted`: the content's hash equals the recorded one;
 * - `untrusted`: content exists and was never trusted here;
 * - `changed`: content exists and differs from what was trusted (`diff` says how).
 * `allowed` is whether commands may use the content: `nothing`, `trusted`, or an override (`via`).
 */
export interface TrustVerdict {
  state: 'nothing' | 'trusted' | 'untrusted' | 'changed';
  allowed: boolean;
  /** Set when an override allowed content that is not trusted. */
  via?: Exclude<TrustOverride, null>;
  hash: string;
  /** The current content as lines. */
  lines: string[];
  /** For `changed`: `- ` removed and `+ ` added lines since the trusted content (may be empty: same lines reordered). */
  diff: string[];
  /** For `changed`: when the previous content was trusted. */
  trustedAt?: string;
}

/**
 * Decides whether a workspace's trusted content may be used. Pure; table-tested. The rule (after direnv and
 * mise): content is used only once the user trusts that exact content; a change (an agent weakening a gate, a
 * `git pull`) needs trust again; `override` trusts it for one command without recording it.
 */
export function decideTrust(
  content: readonly TrustedEntry[],
  record: TrustRecord | null,
  override: TrustOverride = null,
): TrustVerdict {
  const lines = contentLines(content);
  const hash = contentHash(content);
  if (!content.length) return { state: 'nothing', allowed: true, hash, lines, diff: [] };
  if (record && record.hash === hash) return { state: 'trusted', allowed: true, hash, lines, diff: [] };
  const base = record
    ? { state: 'changed' as const, hash, lines, diff: diffLines(record.lines, lines), trustedAt: record.trustedAt }
    : { state: 'untrusted' as const, hash, lines, diff: lines.map((l) => `+ ${l}`) };
  return override ? { ...base, allowed: true, via: override } : { ...base, allowed: false };
}

/** The override a command gets from its `--trust` flag and its environment (`RALPH_TRUST=1`; `true` also counts). */
export function trustOverride(flag: boolean | undefined, env: NodeJS.ProcessEnv = process.env): TrustOverride {
  if (flag) return '--trust';
  const v = (env.RALPH_TRUST ?? '').trim().toLowerCase();
  return v === '1' || v === 'true' ? 'RALPH_TRUST=1' : null;
}

/** One line on the state, for `ralph doctor`, `ralph trust --show` and the run's activity stream. */
export function describeTrust(v: TrustVerdict): string {
  switch (v.state) {
    case 'nothing':
      return 'nothing to trust: the workspace configuration names no program to run';
    case 'trusted':
      return `trusted (${v.hash.slice(0, 19)}…)`;
    case 'untrusted':
      return `NOT TRUSTED: the workspace configuration names programs to run and was never trusted here${v.via ? ` (allowed for this command by ${v.via})` : ''}`;
    case 'changed':
      return `CHANGED since you trusted it${v.trustedAt ? ` at ${v.trustedAt}` : ''}: not trusted${v.via ? ` (allowed for this command by ${v.via})` : ''}`;
  }
}

/**
 * Why a folder VS Code trusts can still be "NOT TRUSTED" here: VS Code's Workspace Trust and Ralph's trust are two
 * decisions. One record serves the CLI and the extension (the same hash, in the same place): **Trust and Start** on
 * the first **Ralph: Start** writes it, as `ralph trust` does.
 */
export const TWO_TRUSTS =
  "VS Code's Workspace Trust is another decision: it lets the extension run at all. Ralph's trust of these programs is one record for the CLI and VS Code, written by `ralph trust` or by Trust and Start on the first Ralph: Start.";

/** How to trust, in words a person can act on. */
export const HOW_TO_TRUST =
  'Check it, then run `ralph trust` to trust this content (or pass --trust, or set RALPH_TRUST=1, for one command).';

/**
 * The refusal of a command that would use untrusted content: the state, what changed (or the whole content when it
 * was never trusted), and how to trust it. `what` names what was refused (`ralph run`).
 */
export function formatTrustRefusal(v: TrustVerdict, what: string): string {
  const head =
    v.state === 'changed'
      ? `${what} refused: the workspace configuration that names programs to run (or a workspace file its gates run) changed since you trusted it${v.trustedAt ? ` (${v.trustedAt})` : ''}.`
      : `${what} refused: the workspace configuration names programs to run and is not trusted here.`;
  const body =
    v.state === 'changed'
      ? v.diff.length
        ? ['What changed:', ...v.diff.map((l) => `  ${l}`)]
        : ['What changed: the same values in another order (order matters: the first [rewrite] row that matches wins).']
      : ['What it runs:', ...v.lines.map((l) => `  ${l}`)];
  return [head, ...body, HOW_TO_TRUST].join('\n');
}
