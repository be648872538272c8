import { discoverAgents, type DiscoveredAgent } from '../agents/discover';
import { formatProblem, type FileProblem } from '../store/parseError';
import { detectSources, formatCount, type DetectedSource } from '../sources/detect';

/** What `ralph doctor --json` prints and what **Ralph: Doctor** shows. */
export interface DoctorReport {
  folder: string;
  sources: DetectedSource[];
  agents: DiscoveredAgent[];
  problems: FileProblem[];
  /** True when at least one task source and one agent CLI were found (the CLI exits 0). */
  ok: boolean;
}

export interface DoctorOptions {
  pathEnv?: string;
  /** False in an untrusted workspace: agent binaries are located but not executed. */
  trusted?: boolean;
}

/** Builds the doctor report of a workspace folder: detected sources, agent CLIs with versions, problems. */
export async function buildDoctorReport(folder: string, opts: DoctorOptions = {}): Promise<DoctorReport> {
  const [detection, agents] = await Promise.all([
    detectSources(folder),
    discoverAgents({ pathEnv: opts.pathEnv, runVersions: opts.trusted !== false }),
  ]);
  const sources = detection.sources;
  return { folder, sources, agents, problems: detection.problems, ok: sources.length > 0 && agents.length > 0 };
}

/** The report as plain text (the CLI's default output and the Doctor editor's content). */
export function formatDoctorReport(r: DoctorReport): string {
  const lines: string[] = [`Ralph doctor — ${r.folder}`, '', 'Task sources:'];
  if (!r.sources.length) lines.push('  (none found: add .ralph/, quantum.json, .flow/, .ijfw/wave-*, RALPH_TASK.md, PROMPT.md or specs/*/tasks.md)');
  for (const s of r.sources) {
    const c = s.count ? ` — ${formatCount(s.count)}` : '';
    lines.push(`  ${s.kind.padEnd(10)} ${s.path}${c}`);
  }
  lines.push('', 'Agent CLIs:');
  if (!r.agents.length) lines.push('  (none found on PATH: install claude or cursor-agent)');
  for (const a of r.agents) lines.push(`  ${a.name.padEnd(13)} ${a.version ?? `? (${a.note ?? 'unknown'})`}  ${a.path}`);
  lines.push('', 'Problems:');
  if (!r.problems.length) lines.push('  none');
  for (const p of r.problems) lines.push(`  ${formatProblem(p)}`);
  lines.push('', r.ok ? 'OK: at least one task source and one agent CLI found.' : 'NOT READY: needs at least one task source and one agent CLI.');
  return lines.join('\n') + '\n';
}
