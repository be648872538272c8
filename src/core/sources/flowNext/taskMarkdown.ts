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

interface Section { headingLine: number; start: number; end: number }

function splitLines(md: string): { lines: string[]; eol: string; finalNewline: boolean } {
  const eol = md.includes('\r\n') ? '\r\n' : '\n';
  const finalNewline = md.endsWith('\n');
  const body = finalNewline ? md.slice(0, md.length - eol.length) : md;
  return { lines: body.length ? body.split(eol) : [], eol, finalNewline };
}

function findSection(lines: string[], heading: string): Section | undefined {
  const h = lines.findIndex((l) => l.trimEnd() === `## ${heading}`);
  if (h < 0) return undefined;
  let end = lines.length;
  for (let i = h + 1; i < lines.length; i++) if (/^##?\s/.test(lines[i]!)) { end = i; break; }
  return { headingLine: h, start: h + 1, end };
}

/** The body lines of a `## <heading>` section (without trailing blank lines), or `undefined` when absent. */
export function sectionBody(md: string, heading: string): string[] | undefined {
  const { lines } = splitLines(md);
  const s = findSection(lines, heading);
  if (!s) return undefined;
  const body = lines.slice(s.start, s.end);
  while (body.length && !body.at(-1)!.trim()) body.pop();
  return body;
}

/**
 * Replaces the body of `## <heading>` with `body` lines, keeping the blank lines that separated it from the next
 * heading. A missing section is appended at the end. Returns `md` itself when nothing changes.
 */
export function replaceSection(md: string, heading: string, body: string[]): string {
  const { lines, eol, finalNewline } = splitLines(md);
  const s = findSection(lines, heading);
  if (!s) {
    const out = [...lines];
    if (out.length && out.at(-1)!.trim()) out.push('');
    out.push(`## ${heading}`, ...body);
    return out.join(eol) + (finalNewline || !md.length ? eol : '');
  }
  const old = lines.slice(s.start, s.end);
  let trailingBlank = 0;
  while (trailingBlank < old.length && !old[old.length - 1 - trailingBlank]!.trim()) trailingBlank++;
  const next = [...body, ...old.slice(old.length - trailingBlank)];
  if (next.length === old.length && next.every((l, i) => l === old[i])) return md;
  const out = [...lines.slice(0, s.start), ...next, ...lines.slice(s.end)];
  return out.join(eol) + (finalNewline ? eol : '');
}

/** The reason `flowctl block` stored: the text after the last `Blocked:` line of `## Done summary` (§2.5). */
export function blockedReasonFromMarkdown(md: string): string | undefined {
  const body = sectionBody(md, 'Done summary');
  if (!body) return undefined;
  const at = body.map((l) => l.trim()).lastIndexOf('Blocked:');
  if (at < 0) return undefined;
  const reason = body.slice(at + 1).join('\n').trim();
  return reason || undefined;
}

/** `## Done summary` after a block: `Blocked:\n<reason>` appended to a real summary, or replacing a placeholder. */
export function appendBlockedToSummary(md: string, reason: string): string {
  const existing = sectionBody(md, 'Done summary') ?? [];
  const meaningful = existing.some((l) => l.trim() && l.trim() !== 'TBD');
  const blocked = ['Blocked:', ...reason.replace(/\r\n/g, '\n').trimEnd().split('\n')];
  return replaceSection(md, 'Done summary', meaningful ? [...existing, '', ...blocked] : blocked);
}
