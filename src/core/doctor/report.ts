import * as path from 'node:path';
import { discoverAgents, KNOWN_AGENT_BINARIES, which, type DiscoveredAgent } from '../agents/discover';
import { agentBinary, configuredAgentBinaries, findAdapter, getAdapter } from '../agents/registry';
import { loadConfig } from '../store/loadConfig';
import { detectSources, formatCount, type DetectedSource } from '../sources/detect';
import { loadSources } from '../sources/plan';
import { FileProblemError, formatProblem, type FileProblem } from '../store/parseError';

/** Source kinds the loop can work on (`.ralph/` runs and IJFW waves are shown but are not tasks). */
const TASK_SOURCE_KINDS = new Set(['flow-next', 'quantum', 'checklist']);

/** What `ralph doctor --json` prints and what **Ralph: Doctor** shows. */
export interface DoctorReport {
  folder: string;
  sources: DetectedSource[];
  agents: DiscoveredAgent[];
  problems: FileProblem[];
  /** True when at least one task source (flow-next, quantum-loop, checklist) and one agent CLI were found (the CLI exits 0). */
  ok: boolean;
}

export interface DoctorOptions {
  pathEnv?: string;
  /** False in an untrusted workspace: agent binaries are located but not executed. */
  trusted?: boolean;
}

/**
 * Builds the doctor report of a workspace folder: detected sources, agent CLIs with versions (the known names on
 * PATH, plus the `claudePath` / `cursorAgentPath` of the configuration), and every file problem: sources that do not
 * parse or validate, and `.ralph/config.json`. `ok` needs a task source (flow-next, quantum-loop, a checklist) and an
 * agent CLI.
 */
export async function buildDoctorReport(folder: string, opts: DoctorOptions = {}): Promise<DoctorReport> {
  const problems: FileProblem[] = [];
  const configured: string[] = [];
  let selected: { key: string; value: string; resolved: string } | undefined;
  try {
    const config = await loadConfig(folder, { trusted: opts.trusted !== false });
    // Configured paths are relative to the workspace folder, as `ralph run` resolves them (agents/registry.ts).
    configured.push(...configuredAgentBinaries(config, folder).map((b) => b.binary));
    const chosen = agentBinary(getAdapter(config.agent), config, folder);
    selected = { key: chosen.key, value: chosen.configured, resolved: chosen.binary };
  } catch (err) {
    if (!(err instanceof FileProblemError)) throw err;
    problems.push({ ...err.problem, file: relativeTo(folder, err.problem.file) });
  }
  const names = [...new Set<string>([...KNOWN_AGENT_BINARIES, ...configured])];
  const [detection, agents] = await Promise.all([
    detectSources(folder),
    discoverAgents({ pathEnv: opts.pathEnv, runVersions: opts.trusted !== false, names }),
  ]);
  for (const p of [...detection.problems, ...loadSources(folder).problems]) {
    const q = { ...p, file: relativeTo(folder, p.file) };
    if (!problems.some((x) => x.file === q.file && x.line === q.line && x.column === q.column)) problems.push(q);
  }
  const sources = detection.sources;
  const uniqueAgents = agents.filter((a, i) => agents.findIndex((b) => b.path === a.path) === i);
  // The agent `ralph run` would start must be there, not just any agent CLI.
  const selectedFound = !selected || (await which(selected.resolved, opts.pathEnv ?? process.env.PATH ?? '')) !== null;
  if (selected && !selectedFound) {
    problems.push({ file: '.ralph/config.json', line: 0, column: 0, message: `${selected.key} "${selected.value}" is not an executable${selected.value.includes('/') ? '' : ' on PATH'}: \`ralph run\` cannot start the agent` });
  }
  return { folder, sources, agents: uniqueAgents, problems, ok: sources.some((s) => TASK_SOURCE_KINDS.has(s.kind)) && uniqueAgents.length > 0 && selectedFound };
}

function relativeTo(folder: string, file: string): string {
  return path.isAbsolute(file) ? path.relative(folder, file).split(path.sep).join('/') : file;
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
  // The command guard (issue 17) rides on Claude Code's PreToolUse hook; cursor-agent has none.
  lines.push('', 'Command guard:', '  claude        PreToolUse hook passed with --settings by `ralph run`; `ralph guard install` adds it for your own sessions');
  for (const a of r.agents) if (!findAdapter(a.name)?.guardHook) lines.push(`  ${a.name.padEnd(13)} no PreToolUse hook: .ralph/command-policy and the guard's hard denies are NOT enforced for it`);
  lines.push('', 'Problems:');
  if (!r.problems.length) lines.push('  none');
  for (const p of r.problems) lines.push(`  ${formatProblem(p)}`);
  lines.push('', r.ok ? 'OK: at least one task source and one agent CLI found.' : 'NOT READY: needs at least one task source (quantum.json, .flow/, a checklist) and one agent CLI.');
  return lines.join('\n') + '\n';
}
