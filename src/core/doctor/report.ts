import * as path from 'node:path';
import { discoverAgents, KNOWN_AGENT_BINARIES, which, type DiscoveredAgent } from '../agents/discover';
import { claudeRootBypassWarning } from '../agents/claude';
import { AGENT_INSTALL } from '../agents/installHints';
import { AGENT_NAMES } from '../model/agentNames';
import { agentAdapters, agentBinary, configuredAgentBinaries, findAdapter, getAdapter } from '../agents/registry';
import type { RalphConfig } from '../model/config';
import { configFileValues, configPath, loadConfig } from '../store/loadConfig';
import { readTextSync } from '../store/readJsonFile';
import { type ContainmentMode, resolveContainment, resolveProtection } from '../process/containment';
import { detectSources, formatCount, type DetectedSource } from '../sources/detect';
import { loadSources } from '../sources/plan';
import { FileProblemError, formatProblem, type FileProblem } from '../store/parseError';
import { describeTrust, HOW_TO_TRUST, TWO_TRUSTS, type TrustOverride, type TrustVerdict } from '../trust/trustDecision';
import { checkWorkspaceTrust } from '../trust/workspaceTrust';
import { coverageLines, type GateCoverage } from '../trust/gateFileContent';
import { HOW_TO_ADD_A_GATE, resolveGates } from '../gates/gateConfig';
import { GATE_TIERS, type GateTier } from '../gates/commandPolicy';

/** Source kinds the loop can work on (`.ralph/` runs and IJFW waves are shown but are not tasks). */
const TASK_SOURCE_KINDS = new Set(['flow-next', 'quantum', 'checklist']);

/** What `ralph doctor --json` prints and what **Ralph: Doctor** shows. */
export interface DoctorReport {
  folder: string;
  sources: DetectedSource[];
  agents: DiscoveredAgent[];
  problems: FileProblem[];
  /**
   * Trust of the workspace configuration that names programs: its state, the content as lines and, when it
   * changed, the diff; null when the configuration could not be read (see `problems`).
   */
  trust:
    | (Pick<TrustVerdict, 'state' | 'allowed' | 'via' | 'hash' | 'lines' | 'diff'> & {
        summary: string;
        coverage: GateCoverage;
      })
    | null;
  /** Agent paths the workspace configuration names but that were not executed because it is not trusted. */
  untrustedAgentPaths: { key: string; value: string }[];
  /**
   * Process containment `ralph run` uses for agent iterations and gate commands (process/containment.ts):
   * `pid-namespace` (everything started under an iteration ends with it) or `marker` (the environment-marker sweep
   * only), the configured `mode` and a one-line `detail`.
   */
  containment: { kind: 'pid-namespace' | 'marker'; mode: ContainmentMode; detail: string };
  /**
   * Whether an agent iteration's protected paths (process/protectedPaths.ts) are read-only in the kernel
   * (`read-only-mounts`) or kept by the guard's analyzer only (`not-enforced`, with the reason), process/containment.ts.
   */
  protection: { kind: 'read-only-mounts' | 'not-enforced'; detail: string };
  /**
   * The agent binary `ralph run` would start: the config `key` (`claudePath` / `cursorAgentPath`), its `value`, where
   * that value comes from (`default`: no layer sets it; `settings`: VS Code settings; `.ralph/config.json`) and
   * whether it was `found` (an executable, on PATH for a bare name). Null when the configuration cannot be read.
   */
  selectedAgent: { key: string; value: string; source: AgentPathSource; found: boolean } | null;
  /** Sentences about things that will stop `ralph run` but are no file problem (the agent missing, root + bypass). */
  warnings: string[];
  /**
   * The gates `ralph run` would verify with (gates/gateConfig.ts `resolveGates`): where they come from and the tiers
   * set. Null when none is configured: a plain `ralph run` refuses, `--no-gates` runs without verification.
   */
  gates: { source: 'command-policy' | 'config'; file: string; tiers: GateTier[] } | null;
  /**
   * Why a plain `ralph run` would refuse at once though a task source and the agent are there: no gate, or the
   * Claude CLI as root with `bypassPermissions`. Short phrases for the verdict; empty when none.
   */
  refusals: string[];
  /**
   * True when `ralph run` can start: a task source (flow-next, quantum-loop, checklist), the agent it would start,
   * trusted configuration and no {@link refusals} (the CLI exits 0).
   */
  ok: boolean;
}

/** Where the agent path `ralph run` would use comes from (layers of `loadConfig`, lowest first). */
export type AgentPathSource = 'default' | '.ralph/config.json' | 'settings';

export interface DoctorOptions {
  pathEnv?: string;
  /** False in an untrusted workspace: agent binaries are located but not executed. */
  trusted?: boolean;
  /** `--trust` / `RALPH_TRUST=1`: use untrusted workspace configuration for this report (core/trust/trustDecision.ts). */
  trustOverride?: TrustOverride;
  /** Environment for the trust store location (`XDG_STATE_HOME`, `HOME`) and `IS_SANDBOX`; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** VS Code settings layer (only keys the user set), as `ralph run` from the extension applies it; the CLI has none. */
  settings?: Partial<RalphConfig>;
  /** The user id the agent would run as (root is 0); default `process.getuid()`. */
  uid?: number;
}

/**
 * Which layer gave `key` its effective `value` (settings > file > default, as `loadConfig` merges them; a layer
 * whose value is not the effective one was ignored, e.g. an untrusted file's agent path). Pure.
 */
export function agentPathSource(
  key: string,
  value: string,
  fileValues: Record<string, unknown>,
  settings: Partial<RalphConfig> | undefined,
): AgentPathSource {
  if (settings && (settings as Record<string, unknown>)[key] === value) return 'settings';
  if (fileValues[key] === value) return '.ralph/config.json';
  return 'default';
}

/**
 * Builds the doctor report of a workspace folder: detected sources, agent CLIs with versions (the known names on
 * PATH, plus the `claudePath` / `cursorAgentPath` of the configuration), and every file problem: sources that do not
 * parse or validate, and `.ralph/config.json`. `ok` needs a task source (flow-next, quantum-loop, a checklist) and an
 * agent CLI.
 *
 * Never executes what an untrusted workspace names: agent paths from `.ralph/config.json` run `--version`
 * only when that content is trusted (`ralph trust`) or overridden; otherwise they are listed in
 * `untrustedAgentPaths` and the known agent names are looked up on PATH instead (those need no trust).
 */
export async function buildDoctorReport(folder: string, opts: DoctorOptions = {}): Promise<DoctorReport> {
  const problems: FileProblem[] = [];
  const configured: string[] = [];
  let selected: { key: string; value: string; resolved: string; source: AgentPathSource } | undefined;
  const warnings: string[] = [];
  let trust: DoctorReport['trust'] = null;
  const untrustedAgentPaths: DoctorReport['untrustedAgentPaths'] = [];
  let containmentMode: ContainmentMode = 'auto';
  let gates: DoctorReport['gates'] = null;
  const refusals: string[] = [];
  try {
    const v = await checkWorkspaceTrust(folder, opts.trustOverride ?? null, opts.env);
    trust = {
      state: v.state,
      allowed: v.allowed,
      ...(v.via ? { via: v.via } : {}),
      hash: v.hash,
      lines: v.lines,
      diff: v.diff,
      summary: describeTrust(v),
      coverage: v.coverage,
    };
  } catch (err) {
    if (!(err instanceof FileProblemError)) throw err;
    // The same problem is reported once, by loadConfig below.
  }
  try {
    const contentAllowed = trust?.allowed === true;
    const settings = opts.settings;
    const config = await loadConfig(folder, {
      trusted: opts.trusted !== false && contentAllowed,
      ...(settings ? { settings } : {}),
    });
    containmentMode = config.containment;
    // The file's values, trusted or not: reading them runs nothing (what is not run, and which gates it names).
    const raw = opts.trusted !== false && contentAllowed ? config : await loadConfig(folder, { trusted: true });
    if (!contentAllowed && opts.trusted !== false) {
      for (const adapter of Object.values(agentAdapters)) {
        const before = agentBinary(adapter, raw, folder).configured;
        if (before !== agentBinary(adapter, config, folder).configured)
          untrustedAgentPaths.push({ key: adapter.configKey, value: before });
      }
    }
    // Configured paths are relative to the workspace folder, as `ralph run` resolves them (agents/registry.ts).
    configured.push(...configuredAgentBinaries(config, folder).map((b) => b.binary));
    const chosen = agentBinary(getAdapter(config.agent), config, folder);
    // loadConfig read the file already (a problem would have thrown), so this parse succeeds.
    const text = readTextSync(configPath(folder));
    const fileValues = text === undefined ? {} : configFileValues(configPath(folder), text);
    selected = {
      key: chosen.key,
      value: chosen.configured,
      resolved: chosen.binary,
      source: agentPathSource(chosen.key, chosen.configured, fileValues, settings),
    };
    const env = opts.env ?? process.env;
    const root = claudeRootBypassWarning(
      opts.uid ?? process.getuid?.(),
      config.agent,
      config.permissionMode,
      env.IS_SANDBOX,
    );
    if (root) {
      warnings.push(root);
      refusals.push(
        'the Claude CLI refuses bypassPermissions as root (run as a normal user, or set IS_SANDBOX=1 on a disposable sandbox)',
      );
    }
    // Trust is judged on its own (the verdict names it first); the gates are the ones a trusted run would use.
    const g = await resolveGates(folder, raw);
    if (g)
      gates = {
        source: g.source,
        file: relativeTo(folder, g.file),
        tiers: GATE_TIERS.filter((t) => g.commands[t] !== undefined),
      };
    else refusals.push(`no gate is configured (${HOW_TO_ADD_A_GATE}, or run with --no-gates)`);
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
    const what = `${selected.key} "${selected.value}" is not an executable${selected.value.includes('/') ? '' : ' on PATH'}: \`ralph run\` cannot start the agent`;
    // Only a value the file sets is a problem of the file; a default or a setting is named as such.
    if (selected.source === '.ralph/config.json')
      problems.push({ file: '.ralph/config.json', line: 0, column: 0, message: what });
    else
      warnings.push(
        `${what} (${selected.source === 'default' ? `the default ${selected.key}; set "${selected.key}" in .ralph/config.json or install the CLI on PATH` : `${selected.key} from VS Code settings`})`,
      );
  }
  const trustOk = opts.trusted === false || trust?.allowed === true;
  const c = resolveContainment(containmentMode);
  const containment = { kind: c.kind, mode: containmentMode, detail: c.detail };
  const p = resolveProtection(containmentMode);
  const protection = { kind: p.kind, detail: p.detail };
  const selectedAgent = selected
    ? { key: selected.key, value: selected.value, source: selected.source, found: selectedFound }
    : null;
  return {
    folder,
    sources,
    agents: uniqueAgents,
    problems,
    trust,
    untrustedAgentPaths,
    containment,
    protection,
    selectedAgent,
    warnings,
    gates,
    refusals,
    ok:
      sources.some((s) => TASK_SOURCE_KINDS.has(s.kind)) &&
      uniqueAgents.length > 0 &&
      selectedFound &&
      trustOk &&
      !refusals.length,
  };
}

function relativeTo(folder: string, file: string): string {
  return path.isAbsolute(file) ? path.relative(folder, file).split(path.sep).join('/') : file;
}

/** The report as plain text (the CLI's default output and the Doctor editor's content). */
export function formatDoctorReport(r: DoctorReport): string {
  const lines: string[] = [`Ralph doctor — ${r.folder}`, '', 'Task sources:'];
  if (!r.sources.length)
    lines.push(
      '  (none found: add .ralph/, quantum.json, .flow/, .ijfw/wave-*, RALPH_TASK.md, PROMPT.md or specs/*/tasks.md)',
    );
  for (const s of r.sources) {
    const c = s.count ? ` — ${formatCount(s.count)}` : '';
    lines.push(`  ${s.kind.padEnd(10)} ${s.path}${c}`);
  }
  lines.push('', 'Agent CLIs:');
  for (const a of r.agents)
    lines.push(`  ${a.name.padEnd(13)} ${a.version ?? `? (${a.note ?? 'unknown'})`}  ${a.path}`);
  // Every agent ralph can drive: the missing ones with how to install them.
  const found = new Set(r.agents.map((a) => findAdapter(a.name)?.name ?? a.name));
  for (const name of AGENT_NAMES)
    if (!found.has(name))
      lines.push(
        `  ${name.padEnd(13)} not found — install: ${AGENT_INSTALL[name]} (or set ${findAdapter(name)?.configKey ?? 'its path'})`,
      );
  for (const u of r.untrustedAgentPaths)
    lines.push(
      `  ${u.key} ${JSON.stringify(u.value)} from .ralph/config.json: not run (the workspace configuration is not trusted)`,
    );
  // The command guard rides on ralph's hook where the agent runs one; opencode and Copilot approximate [deny] only.
  lines.push(
    '',
    'Command guard:',
    '  claude        PreToolUse hook passed with --settings by `ralph run`; `ralph guard install` adds it for your own sessions',
  );
  for (const a of r.agents) {
    const adapter = findAdapter(a.name);
    if (adapter?.guardHook) continue;
    lines.push(
      adapter?.prepareGuard
        ? `  ${a.name.padEnd(13)} no hook: only [deny] rows, as its own permission rules (approximated); the other sections and the guard's hard denies are NOT enforced for it`
        : `  ${a.name.padEnd(13)} no PreToolUse hook: .ralph/command-policy and the guard's hard denies are NOT enforced for it`,
    );
  }
  lines.push('', `Process containment (containment: "${r.containment.mode}"):`, `  ${r.containment.detail}`);
  lines.push(
    r.containment.kind === 'pid-namespace'
      ? '  every process an iteration or a gate starts ends with it, even one that left its process group and cleared its environment'
      : '  a process that leaves its process group AND clears its environment (setsid env -i …) can outlive the run',
  );
  lines.push(
    '',
    "Protected paths (.ralph/, the command policy, the run folders, .git/hooks, .git/config, ralph's state folder):",
    `  ${r.protection.detail}`,
    r.protection.kind === 'read-only-mounts'
      ? '  an agent iteration cannot change them whatever the command (except the handoff, its notes and .ralph/gates/)'
      : "  NOT ENFORCED HERE: only the command guard's analyzer keeps them, and it cannot see every way to write a file",
  );
  lines.push('', 'Gates (what verifies a claimed task):');
  if (r.gates) lines.push(`  ${r.gates.tiers.join(', ')} from ${r.gates.file}`);
  else lines.push(`  none: a plain \`ralph run\` refuses; ${HOW_TO_ADD_A_GATE}`);
  lines.push('', 'Trust (workspace configuration that names programs to run):');
  if (!r.trust) lines.push('  unknown: .ralph/config.json cannot be read (see Problems)');
  else {
    lines.push(`  ${r.trust.summary}`);
    if (r.trust.state === 'changed')
      lines.push(
        ...(r.trust.diff.length ? r.trust.diff : ['(the same values in another order)']).map((l) => `    ${l}`),
      );
    else if (r.trust.state !== 'nothing') lines.push(...r.trust.lines.map((l) => `    ${l}`));
    if (r.trust.state === 'untrusted' || r.trust.state === 'changed')
      lines.push(`  ${HOW_TO_TRUST}`, `  ${TWO_TRUSTS}`);
    lines.push(...coverageLines(r.trust.coverage, '  '));
  }
  lines.push('', 'Problems:');
  if (!r.problems.length) lines.push('  none');
  for (const p of r.problems) lines.push(`  ${formatProblem(p)}`);
  if (r.warnings.length) lines.push('', 'Warnings:', ...r.warnings.map((w) => `  ${w}`));
  lines.push('', doctorVerdict(r));
  return lines.join('\n') + '\n';
}

/**
 * The report's last line: OK, or NOT READY naming what is actually missing (trust, a task source, the agent) or why
 * `ralph run` would refuse (no gate, root). Pure.
 */
export function doctorVerdict(
  r: Pick<DoctorReport, 'ok' | 'trust' | 'sources' | 'agents' | 'selectedAgent'> & { refusals?: readonly string[] },
): string {
  if (r.ok) return 'OK: `ralph run` can start: a task source, the agent, trusted configuration and a gate.';
  if (r.trust !== null && !r.trust.allowed)
    return 'NOT READY: `ralph run` refuses until the workspace configuration is trusted (`ralph trust`).';
  const missing: string[] = [];
  if (!r.sources.some((s) => TASK_SOURCE_KINDS.has(s.kind)))
    missing.push('a task source (quantum.json, .flow/, a checklist)');
  if (r.selectedAgent && !r.selectedAgent.found)
    missing.push(
      `the agent \`ralph run\` would start (${r.selectedAgent.key} "${r.selectedAgent.value}", ${r.selectedAgent.source === 'default' ? 'the default' : `from ${r.selectedAgent.source}`})`,
    );
  else if (!r.agents.length) missing.push(`an agent CLI (${AGENT_NAMES.join(', ')})`);
  const refusals = r.refusals ?? [];
  if (!missing.length && refusals.length) return `NOT READY: \`ralph run\` would refuse: ${refusals.join('; ')}.`;
  const then = refusals.length ? `; then \`ralph run\` would refuse: ${refusals.join('; ')}` : '';
  return `NOT READY: needs ${missing.join(' and ') || 'at least one task source (quantum.json, .flow/, a checklist) and one agent CLI'}${then}.`;
}
