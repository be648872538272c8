/**
 * Edits of flow-next's task markdown (`.flow/tasks/<id>.md`, seed-systems.md §2.4): `# <id> <title>`, then
 * `## Description`, `## Acceptance`, `## Done summary`, `## Evidence`. Sections are replaced in place; the rest of
 * the text (line endings, a missing final newline) is kept byte for byte.
 */

/** The three empty Evidence lines `flowctl task reset` writes (§2.5). */
export const EMPTY_EVIDENCE = ['- Commits:', '- Tests:', '- PRs:'];

/** Evidence lines as `flowctl done` writes them: values comma-joined (§2.4). */
export function evidenceLines(e: { commits?: string[]; tests?: string[]; prs?: string[] }): string[] {
  const line = (label: string, v?: string[]) => (v && v.length ? `- ${label}: ${v.join(', ')}` : `- ${label}:`);
  return [line('Commits', e.commits), line('Tests', e.tests), line('PRs', e.prs)];
}

interface Section {
  headingLine: number;
  start: number;
  end: number;
}

/** One line of the file with its own ending (`\r\n`, `\n`, or `''` for a last line without one). */
interface Line {
  text: string;
  eol: string;
}

/**
 * Splits on /\r?\n/ keeping each line's own ending, so a file that mixes CRLF and LF lines (a pasted line) is
 * rebuilt byte for byte. `eol` is the file's dominant ending, used for lines an edit adds.
 */
function splitLines(md: string): { lines: Line[]; eol: string } {
  const lines: Line[] = [];
  const re = /\r?\n/g;
  let start = 0;
  let crlf = 0;
  for (let m = re.exec(md); m; m = re.exec(md)) {
    lines.push({ text: md.slice(start, m.index), eol: m[0] });
    if (m[0] === '\r\n') crlf++;
    start = m.index + m[0].length;
  }
  if (start < md.length) lines.push({ text: md.slice(start), eol: '' });
  return { lines, eol: crlf * 2 > lines.length ? '\r\n' : '\n' };
}

/**
 * Joins lines back: a line that gained a successor gets the dominant ending; the last line keeps the file's
 * final newline or its absence (an empty file gains one, as flowctl writes it).
 */
function joinLines(out: Line[], md: string, eol: string): string {
  const finalNewline = !md.length || /\n$/.test(md);
  return out.map((l, i) => l.text + (i < out.length - 1 ? l.eol || eol : finalNewline ? l.eol || eol : '')).join('');
}

function findSection(lines: readonly Line[], heading: string): Section | undefined {
  const h = lines.findIndex((l) => l.text.trimEnd() === `## ${heading}`);
  if (h < 0) return undefined;
  let end = lines.length;
  for (let i = h + 1; i < lines.length; i++)
    if (/^##?\s/.test(lines[i]!.text)) {
      end = i;
      break;
    }
  return { headingLine: h, start: h + 1, end };
}

/** The body lines of a `## <heading>` section (without trailing blank lines), or `undefined` when absent. */
export function sectionBody(md: string, heading: string): string[] | undefined {
  const { lines } = splitLines(md);
  const s = findSection(lines, heading);
  if (!s) return undefined;
  const body = lines.slice(s.start, s.end).map((l) => l.text);
  while (body.length && !body.at(-1)!.trim()) body.pop();
  return body;
}

/**
 * Replaces the body of `## <heading>` with `body` lines, keeping the blank lines that separated it from the next
 * heading. A missing section is appended at the end. Every line outside the replaced body keeps its bytes, its
 * own line ending included; new lines take the file's dominant ending. Returns `md` itself when nothing changes.
 */
export function replaceSection(md: string, heading: string, body: string[]): string {
  const { lines, eol } = splitLines(md);
  const fresh = (text: string): Line => ({ text, eol });
  const s = findSection(lines, heading);
  if (!s) {
    const out = [...lines];
    if (out.length && out.at(-1)!.text.trim()) out.push(fresh(''));
    out.push(fresh(`## ${heading}`), ...body.map(fresh));
    return joinLines(out, md, eol);
  }
  const old = lines.slice(s.start, s.end);
  let trailingBlank = 0;
  while (trailingBlank < old.length && !old[old.length - 1 - trailingBlank]!.text.trim()) trailingBlank++;
  const kept = old.slice(old.length - trailingBlank);
  const oldBody = old.slice(0, old.length - trailingBlank);
  if (body.length === oldBody.length && body.every((l, i) => l === oldBody[i]!.text)) return md;
  // An unchanged line keeps its own ending; a changed or added one takes the dominant ending.
  const next = body.map((text, i) => (oldBody[i]?.text === text ? oldBody[i]! : fresh(text)));
  return joinLines([...lines.slice(0, s.start), ...next, ...kept, ...lines.slice(s.end)], md, eol);
}

/** The reason `flowctl block` stored: the text after the last `Blocked:` line of `## Done summary` (§2.5). */
export function blockedReasonFromMarkdown(md: string): string | undefined {
  const body = sectionBody(md, 'Done summary');
  if (!body) return undefined;
  const at = body.map((l) => l.trim()).lastIndexOf('Blocked:');
  if (at < 0) return undefined;
  const reason = body
    .slice(at + 1)
    .join('\n')
    .trim();
  return reason || undefined;
}

/** `## Done summary` after a block: `Blocked:\n<reason>` appended to a real summary, or replacing a placeholder. */
export function appendBlockedToSummary(md: string, reason: string): string {
  const existing = sectionBody(md, 'Done summary') ?? [];
  const meaningful = existing.some((l) => l.trim() && l.trim() !== 'TBD');
  const blocked = ['Blocked:', ...reason.replace(/\r\n/g, '\n').trimEnd().split('\n')];
  return replaceSection(md, 'Done summary', meaningful ? [...existing, '', ...blocked] : blocked);
}

/**
 * flowctl 4.4.0's `clear_task_evidence` (used by `task reset`), byte for byte: every `## Evidence` section's body,
 * up to the next `## ` heading or the end of the file, becomes `- Commits:\n- Tests:\n- PRs:\n` (its regex
 * `(## Evidence\s*\r?\n).*?(?=\r?\n## |\Z)` with DOTALL). Text without such a heading is returned unchanged.
 */
export function clearEvidence(md: string): string {
  return md.replace(/(## Evidence\s*\r?\n)[\s\S]*?(?=\r?\n## |(?![\s\S]))/g, '$1- Commits:\n- Tests:\n- PRs:\n');
}
