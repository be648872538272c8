import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { readTextIfExists, writeTextAtomic } from '../store/atomicWrite';
import { gateSummary } from './gateRunner';
import { ralphFile } from '../model/ralphPaths';

/**
 * `.ralph/handoff.md`, the rolling state carried from one iteration to the next (seed-systems.md §3.8; seed
 * `corpus/ralph-wiggum-plugin/handoff-skeleton.md`). It is one file with three owners:
 *
 * - `## Working set` — the agent's. Ralph never writes it; the engine only reads it to tell a graceful yield.
 * - `## Last gate state` — Ralph's, rewritten after every gate run ({@link rewriteLastGateState}).
 * - `## Auto-enriched state` — Ralph's, rewritten after each iteration ({@link rewriteAutoEnriched}).
 *
 * A section is its heading line (`## <name>`, any case, trailing blanks allowed) and every line up to the next
 * `#` or `##` heading outside a fenced code block, or the end of the file. Rewrites replace one section's lines and
 * keep every other byte of the file identical (line endings included), so the agent's text survives: the fix
 * for §3.15-3, where TURN_END overwrote the whole file and lost the Working set. A missing owned section is
 * appended, as the seed does.
 */

/** Section names (§3.8). The Working set is the agent's; the other two are Ralph's. */
export const WORKING_SET = 'Working set';
export const LAST_GATE_STATE = 'Last gate state';
export const AUTO_ENRICHED_STATE = 'Auto-enriched state';

/** What a fresh workspace gets (our wording of the seed's skeleton, §3.8). */
export const HANDOFF_SKELETON = `# Loop Handoff

> Rolling state document, inlined at the top of the next iteration's prompt.
>
> - \`## Working set\` — yours. Replace it in full before you yield: current task, files in flight, next
>   step, at most 5 facts the next iteration needs. Ralph never edits it.
> - \`## Last gate state\` — rewritten by Ralph after every gate run.
> - \`## Auto-enriched state\` — rewritten by Ralph after each iteration (last commit, last task done,
>   next task), so the next iteration has the mechanical state even when this one was killed.

## Last gate state

_(none yet)_
`;

/** Path of the handoff of a workspace folder. */
export function handoffPath(folder: string): string {
  return ralphFile(folder, 'handoff');
}

/** Character offsets of a section in the text: `[start, bodyStart)` is the heading line, `[bodyStart, end)` the body. */
export interface SectionSpan {
  start: number;
  bodyStart: number;
  end: number;
  /** Whether another heading follows the section (false: the section runs to the end of the text). */
  followed: boolean;
}

const HEADING = /^(#{1,2})[ \t]+(.*?)[ \t]*\r?\n?$/;
const FENCE = /^[ \t]{0,3}(```|~~~)/;

/** Lines of `text` with their terminators and start offsets. */
function linesOf(text: string): { line: string; start: number }[] {
  const out: { line: string; start: number }[] = [];
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl + 1;
    out.push({ line: text.slice(start, end), start });
    start = end;
  }
  return out;
}

/** Finds the first section named `name` (case-insensitive, `##` level). Pure. */
export function findSection(text: string, name: string): SectionSpan | undefined {
  const want = name.toLowerCase();
  let inFence = false;
  let found: { start: number; bodyStart: number } | undefined;
  for (const { line, start } of linesOf(text)) {
    if (FENCE.test(line)) {
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const h = HEADING.exec(line);
    if (!h) continue;
    if (found) return { ...found, end: start, followed: true };
    if (h[1] === '##' && h[2]!.toLowerCase() === want) found = { start, bodyStart: start + line.length };
  }
  return found ? { ...found, end: text.length, followed: false } : undefined;
}

/** The body of section `name` (the text between its heading line and the next heading), or `undefined`. Pure. */
export function sectionContent(text: string, name: string): string | undefined {
  const s = findSection(text, name);
  return s ? text.slice(s.bodyStart, s.end) : undefined;
}

/**
 * The agent's `## Working set` section body, or `undefined` when the handoff (or the section) does not exist.
 * The engine takes it at the start and the end of an iteration: a different content is a graceful yield.
 * Comparing the content, not the file's mtime, fixes §3.15-2 (Ralph's own gate-state rewrites made every
 * iteration that ran a gate look like a yield).
 */
export function workingSet(text: string | undefined): string | undefined {
  return text === undefined ? undefined : sectionContent(text, WORKING_SET);
}

/**
 * Whether the agent changed its Working set between two readings of handoff.md: the section appeared, or its
 * content differs other than in line endings and trailing blanks. A section that disappeared is not a yield.
 */
export function workingSetChanged(before: string | undefined, after: string | undefined): boolean {
  const a = workingSet(before);
  const b = workingSet(after);
  if (b === undefined) return false;
  const norm = (s: string) =>
    s
      .replace(/\r\n/g, '\n')
      .replace(/[ \t]+$/gm, '')
      .trim();
  return a === undefined ? norm(b) !== '' : norm(a) !== norm(b);
}

/**
 * Replaces the body of section `name` with `body` (heading line kept as written, blank lines before the next
 * heading kept as they were), or appends the section when
 * it is missing. Everything outside the section stays byte-identical; the inserted lines use the file's line
 * ending (CRLF when the file has any). An appended section follows the last line directly: a blank line before it
 * would change the body of the section above. (A file whose last line has no newline gets one.) Pure.
 */
export function replaceSection(text: string, name: string, body: string): string {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = body.replace(/\r\n/g, '\n').replace(/\n+$/, '').split('\n').join(eol);
  const span = findSection(text, name);
  if (span) {
    let heading = text.slice(span.start, span.bodyStart);
    if (!heading.endsWith('\n')) heading += eol;
    // Keep the blank lines that ended the old body (the file's own spacing before the next heading).
    const oldBody = text.slice(span.bodyStart, span.end);
    const contentEnd = oldBody.trimEnd().length;
    const trailing = contentEnd === 0 ? oldBody : oldBody.slice(contentEnd).replace(/^[ \t]*\r?\n/, '');
    const block = `${eol}${lines}${eol}${trailing}`;
    return text.slice(0, span.start) + heading + block + text.slice(span.end);
  }
  // No blank separator line: it would become part of the section above (often the agent's Working set).
  const sep = text === '' || text.endsWith('\n') ? '' : eol;
  return `${text}${sep}## ${name}${eol}${eol}${lines}${eol}`;
}

/** What {@link rewriteLastGateState} needs of a gate result (a `GateResult` fits). */
export interface GateStateInput {
  label: string;
  exitCode: number;
  /** The failure summary (`<L>-latest.summary`); rebuilt from the other fields when absent. */
  summary?: string;
  command?: string;
  durationMs?: number;
  logRelPath?: string;
  failingLines?: readonly string[];
}

/** The body of `## Last gate state` (§3.8): `label: L` / `exit: 0` / `(passing — no details to surface)`, or the failure summary. Pure. */
export function lastGateStateBody(g: GateStateInput): string {
  if (g.exitCode === 0) return `label: ${g.label}\nexit: 0\n(passing — no details to surface)`;
  if (g.summary !== undefined) return g.summary;
  if (g.logRelPath !== undefined) {
    return gateSummary({
      label: g.label,
      exitCode: g.exitCode,
      durationMs: g.durationMs ?? 0,
      logRelPath: g.logRelPath,
      command: g.command ?? '',
      failingLines: g.failingLines,
    });
  }
  return `label: ${g.label}\nexit: ${g.exitCode}\nlog: .ralph/gates/${g.label}-latest.log`;
}

/** `text` with only its `## Last gate state` section replaced by the gate's state (appended if missing). Pure. */
export function rewriteLastGateState(text: string, gate: GateStateInput): string {
  return replaceSection(text, LAST_GATE_STATE, lastGateStateBody(gate));
}

/** The loop-owned facts of `## Auto-enriched state` (§3.8). `null`/absent values print `(none)`. */
export interface AutoEnrichedState {
  /** `<short sha> <subject>` of HEAD, or null outside git / before the first commit. */
  lastCommit?: string | null;
  /** Title (or the checkbox line) of the last item done. */
  lastDone?: string | null;
  /** Title (or the checkbox line) of the next item to work on. */
  nextItem?: string | null;
}

function oneLine(s: string | null | undefined): string | undefined {
  const t = s?.replace(/\s+/g, ' ').trim();
  return t ? t : undefined;
}

/** The body of `## Auto-enriched state`: `**Last commit**: \`sha subject\``, `**Last task done**: …`, `**Next unchecked**: …`. Pure. */
export function autoEnrichedBody(s: AutoEnrichedState): string {
  const commit = oneLine(s.lastCommit);
  return [
    `**Last commit**: ${commit ? `\`${commit.replace(/`/g, "'")}\`` : '(none)'}`,
    `**Last task done**: ${oneLine(s.lastDone) ?? '(none)'}`,
    `**Next unchecked**: ${oneLine(s.nextItem) ?? '(none)'}`,
  ].join('\n');
}

/** `text` with only its `## Auto-enriched state` section replaced (appended if missing). Pure. */
export function rewriteAutoEnriched(text: string, state: AutoEnrichedState): string {
  return replaceSection(text, AUTO_ENRICHED_STATE, autoEnrichedBody(state));
}

/** The handoff's text, or `undefined` when the file does not exist. */
export async function readHandoff(folder: string): Promise<string | undefined> {
  return readTextIfExists(handoffPath(folder));
}

/**
 * Applies `edit` to handoff.md (the {@link HANDOFF_SKELETON} when the file is missing) and writes the result
 * atomically. The agent may write the file at any moment and cannot take our lock, so the file is read again
 * just before the write and the edit redone if it changed meanwhile (up to 5 times); an unchanged result is not
 * written. Returns the text now on disk.
 */
export async function editHandoff(folder: string, edit: (text: string) => string): Promise<string> {
  const file = handoffPath(folder);
  await mkdir(path.dirname(file), { recursive: true });
  let current = await readTextIfExists(file);
  for (let attempt = 0; attempt < 5; attempt++) {
    const next = edit(current ?? HANDOFF_SKELETON);
    const now = await readTextIfExists(file);
    if (now === current) {
      if (next !== now) await writeTextAtomic(file, next);
      return next;
    }
    current = now;
  }
  const next = edit(current ?? HANDOFF_SKELETON);
  if (next !== current) await writeTextAtomic(file, next);
  return next;
}

/** Rewrites `## Last gate state` of the workspace's handoff after a gate run (§3.8). */
export async function writeLastGateState(folder: string, gate: GateStateInput): Promise<string> {
  return editHandoff(folder, (t) => rewriteLastGateState(t, gate));
}

/** Rewrites `## Auto-enriched state` of the workspace's handoff after an iteration (§3.6 step 7). */
export async function writeAutoEnriched(folder: string, state: AutoEnrichedState): Promise<string> {
  return editHandoff(folder, (t) => rewriteAutoEnriched(t, state));
}

/** Creates handoff.md from the skeleton when it does not exist; returns the text on disk. */
export async function ensureHandoff(folder: string): Promise<string> {
  return editHandoff(folder, (t) => t);
}
