import * as path from 'node:path';
import type { AgentAdapter } from '../../agents/adapter';
import { which } from '../../agents/discover';
import { type GuardGap, guardGaps, guardRefusal } from '../../agents/guardSupport';
import { agentBinary, getAdapter } from '../../agents/registry';
import { type CommandPolicy, loadCommandPolicy } from '../../gates/commandPolicy';
import { resolveGates, type ResolvedGates } from '../../gates/gateConfig';
import { resolveActor } from '../../sources/actor';
import { loadSources, buildPlan } from '../../sources/plan';
import { startOfferOf } from '../../sources/startPolicy';
import { agentConfigEntries } from '../../trust/agentConfig';
import { snapshotGateFiles } from '../../trust/gateFileContent';
import type { TrustedEntry } from '../../trust/trustedContent';
import { refuseWithoutGates } from '../runShell';
import { EngineRefusal, type EngineOptions } from '../runOptions';
import { availableSources, checklistAt, type WorkSource } from '../../sources/work/workSources';
import type { AgentRoster } from './agentRoster';

/*
 * What a lane settles before it runs, in the order users meet the refusals: the item to begin with, the source, its
 * unreadable files, the gates (and the files they run), the agents' project configuration, the agent binaries, and
 * what the run's agents cannot enforce of the command policy. Every refusal is an {@link EngineRefusal}.
 */

/** A lane's settled start: what it works on, with which gates and agents. */
export interface LaneSetup {
  adapter: AgentAdapter;
  actor: string;
  source: WorkSource;
  /** `--item`, checked ready: handed to the source's first `next()` only. */
  firstItem: string | undefined;
  gates: ResolvedGates | null;
  /** The files the gates run as they were when the run started (null without gates). */
  gateFiles: { changed: () => Promise<string[]> } | null;
  /** The agents' project configuration files at run start (core/trust/agentConfig.ts); compared before each agent start. */
  agentConfigAtStart: TrustedEntry[];
  /** Rows of the command policy the run's agents do not enforce (a best-effort run lists them at its start). */
  guardGaps: { agent: string; gap: GuardGap }[];
  /** The command policy as loaded at the run's start (null without one): the agents' own guard rules come from it. */
  policy: CommandPolicy | null;
}

/**
 * With `o.item`: checks it can start (core `startOfferOf` over the plan graph) and returns the source to run on (the
 * given one, else the item's own); refuses naming why and the next ready item when it cannot.
 */
function firstItemSource(folder: string, o: EngineOptions): string | undefined {
  const id = o.item;
  if (!id) return o.source;
  const offer = startOfferOf(buildPlan(loadSources(folder)), id);
  if (!offer.ready) {
    throw new EngineRefusal(
      `Cannot start with ${id}: ${offer.why ?? 'it is not ready'}.${offer.next ? ` The next ready item of its source is ${offer.next} (ralph run --item ${offer.next}).` : ' No other item of its source is ready.'}`,
    );
  }
  return o.source ?? offer.source;
}

/** Resolves the source the run works on, or refuses. */
function pickSource(folder: string, actor: string, want: string | undefined): WorkSource {
  const all = availableSources({ folder, actor });
  // A markdown task file named by path (a resume brief) needs no other source in the folder.
  const named = want ? checklistAt(folder, want, actor) : undefined;
  if (!all.length && !named)
    throw new EngineRefusal(
      `No task source in ${folder}: add quantum.json, .flow/, RALPH_TASK.md, PROMPT.md or specs/<name>/tasks.md.`,
    );
  if (!want) return all[0]!;
  const norm = want === 'flow' ? 'flow-next' : want;
  // A checklist path may be given as typed (`./specs/x/tasks.md`, absolute): compare workspace-relative paths.
  const rel = path.relative(folder, path.resolve(folder, want)).split(path.sep).join('/');
  const found = all.find((s) => s.kind === norm) ?? all.find((s) => s.label === want || s.label === rel) ?? named;
  if (!found) throw new EngineRefusal(`No ${want} source in ${folder} (found: ${all.map((s) => s.label).join(', ')}).`);
  return found;
}

/** Settles a lane's start in `folder` (resolved) or refuses; `roster` learns the run's agents. */
export async function prepareLane(folder: string, o: EngineOptions, roster: AgentRoster): Promise<LaneSetup> {
  const adapter = getAdapter(o.agent ?? o.config.agent);
  const actor = o.lane?.actor ?? resolveActor(folder);
  const firstItem = o.lane ? undefined : o.item;
  const source = o.lane?.source ?? pickSource(folder, actor, firstItemSource(folder, o));
  const unreadable = source.unreadable?.() ?? [];
  if (unreadable.length)
    throw new EngineRefusal(
      `${source.label} has ${unreadable.length === 1 ? 'a file' : `${unreadable.length} files`} that cannot be read; fix ${unreadable.length === 1 ? 'it' : 'them'} first (a source with an item it cannot read is never complete):\n${unreadable.map((u) => `  ${u}`).join('\n')}`,
    );
  const gates = await resolveGates(folder, o.config);
  // The files the gates run, read again before every gate run (core/trust/gateFileContent.ts).
  const gateFiles = gates ? await snapshotGateFiles(folder, Object.values(gates.commands)) : null;
  // The agents' project configuration as `ralph run` checked it against the user's trust.
  const agentConfigAtStart = await agentConfigEntries(folder);
  refuseWithoutGates(gates, o.noGates);
  // A configured path is relative to the workspace folder (as `-C` and the extension see it), not to our cwd.
  const { configured, binary, key } = agentBinary(adapter, o.config, folder);
  const pathEnv = o.agentEnv && 'PATH' in o.agentEnv ? (o.agentEnv.PATH ?? '') : (process.env.PATH ?? '');
  const found = await which(binary, pathEnv);
  if (!found) {
    throw new EngineRefusal(
      `The ${adapter.name} CLI was not found (${configured} is not an executable${configured.includes('/') ? '' : ' on PATH'}). Install it, or set "${key}" in .ralph/config.json (VS Code: ralph.${key}). \`ralph doctor\` lists the agents it finds.`,
    );
  }
  await roster.resolve(adapter.name, found, pathEnv);
  // What the run's agents cannot enforce of the command policy (agents/guardSupport.ts): refused, or listed.
  const policy = (await loadCommandPolicy(folder))?.policy;
  const gaps: LaneSetup['guardGaps'] = [];
  for (const agent of roster.agents) {
    const g = guardGaps(agent, policy);
    if (g.length && o.config.guard !== 'best-effort')
      throw new EngineRefusal(guardRefusal(agent, '.ralph/command-policy', g));
    gaps.push(...g.map((gap) => ({ agent, gap })));
  }
  return {
    adapter,
    actor,
    source,
    firstItem,
    gates,
    gateFiles,
    agentConfigAtStart,
    guardGaps: gaps,
    policy: policy ?? null,
  };
}
