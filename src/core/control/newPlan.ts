import * as fs from 'node:fs';
import * as path from 'node:path';
import { readFlowWorkspace } from '../sources/flowNext/readFlow';
import { FLOW_EPIC_ID } from '../model/flowNext';
import { ralphFile } from '../model/ralphPaths';
import { applyJsonChanges, newJsonText, refuseDuplicateKeys } from '../store/jsonEdit';

/**
 * Starter plans (**Ralph: New Plan…**, the walkthrough's "Create a plan" step): a small plan of the chosen kind that
 * Ralph reads and runs at once, and the gate command that verifies it. The plan is a pure function of what the folder
 * holds ({@link planStarter}); {@link writeStarter} creates its files and never overwrites one.
 */

/** The kinds of plan Ralph can start from scratch (README "Plan formats"). */
export type NewPlanKind = 'checklist' | 'quantum' | 'flow-next';

export const NEW_PLAN_KINDS: readonly NewPlanKind[] = ['checklist', 'quantum', 'flow-next'];

/** What the folder already holds, as far as a starter plan cares. */
export interface FolderFacts {
  /** `RALPH_TASK.md` exists (the checklist then goes to Spec Kit's `specs/<slug>/tasks.md`). */
  ralphTask: boolean;
  /** `quantum.json` exists: one per folder, so a new quantum plan is refused. */
  quantum: boolean;
  /** Folder names under `specs/` (a Spec Kit checklist must not take one). */
  specDirs: readonly string[];
  /** `.flow/` as read: its dialect (`specs` since flowctl 1.0) and epic ids; absent without `.flow/`. */
  flow?: { dialect: 'epics' | 'specs'; epicIds: readonly string[]; hasMeta: boolean };
  /** `.ralph/config.json`'s text when it exists (the gate is added to it). */
  configText?: string;
  /** A gate is configured already (`[gates]` in the command policy or `gates` in config): none is written. */
  hasGates: boolean;
}

/** One file of a starter plan, relative to the workspace folder (forward slashes). */
export interface StarterFile {
  path: string;
  text: string;
  /** `true`: the file exists and this is its new text (only `.ralph/config.json`, to add the gate). */
  replaces?: boolean;
}

/** A starter plan: its files, the one to open in an editor, and a sentence for the person. */
export interface Starter {
  files: StarterFile[];
  open: string;
  summary: string;
}

/** Inputs of {@link planStarter}: the kind, a title the person gave, and the gate command (empty: none). */
export interface StarterInput {
  kind: NewPlanKind;
  title: string;
  gate: string;
  /** Creation time, ms since the epoch (flow-next records it). */
  nowMs: number;
}

/**
 * flowctl's slug (flowctl.py `slugify`): ASCII after NFKD, lower case, runs of spaces and hyphens as one hyphen, at
 * most 40 characters cut at a word boundary. Empty for a title with no letter or digit.
 */
export function slugOf(title: string, maxLength = 40): string {
  let s = title
    .normalize('NFKD')
    .replace(/[^\x00-\x7f]/g, '')
    .toLowerCase()
    .replace(/[^\w\s-]/g, '')
    .replace(/_/g, ' ')
    .replace(/[-\s]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (s.length > maxLength) {
    const cut = s.slice(0, maxLength);
    s = (cut.includes('-') ? cut.slice(0, cut.lastIndexOf('-')) : cut).replace(/^-+|-+$/g, '');
  }
  return s;
}

/** The gate a folder most likely wants: `npm test` when package.json has a test script, else none. */
export function suggestedGate(packageJsonText: string | undefined): string {
  if (!packageJsonText) return '';
  try {
    const pkg = JSON.parse(packageJsonText) as { scripts?: Record<string, unknown> };
    const test = pkg.scripts?.test;
    return typeof test === 'string' && !/no test specified/.test(test) ? 'npm test' : '';
  } catch {
    return '';
  }
}

/** Why a kind cannot be created in this folder, or `undefined` when it can. */
export function refusalOf(kind: NewPlanKind, facts: FolderFacts): string | undefined {
  if (kind === 'quantum' && facts.quantum) return 'quantum.json exists in this folder (one quantum plan per folder)';
  return undefined;
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/**
 * The files of a starter plan of `input.kind` for a folder holding `facts`. Pure. Throws when the kind cannot be
 * created here ({@link refusalOf}) or the title is empty.
 *
 * - checklist: `RALPH_TASK.md` (or `specs/<slug>/tasks.md` when it exists) with three boxes, the second `[risky]`;
 * - quantum: `quantum.json` with two stories, the second depending on the first, each with `maxAttempts` 3;
 * - flow-next: an epic `fn-<n>-<slug>` (n one above the highest, as flowctl allocates) and two tasks, the second
 *   depending on the first, in the folder's dialect (`specs/` since flowctl 1.0, else `epics/`); `.flow/meta.json`
 *   when absent.
 *
 * With a gate and none configured, `.ralph/config.json` gets `gates.basic` (created, or its other keys kept).
 */
export function planStarter(input: StarterInput, facts: FolderFacts): Starter {
  const refused = refusalOf(input.kind, facts);
  if (refused) throw new Error(refused);
  const title = oneLine(input.title);
  if (!title) throw new Error('a plan needs a title');
  const gate = oneLine(input.gate);
  const check = gate ? `\`${gate}\` passes` : 'the checks pass';
  const files: StarterFile[] = [];
  let open: string;
  let what: string;
  if (input.kind === 'checklist') {
    const slug = slugOf(title) || 'plan';
    let file = 'RALPH_TASK.md';
    if (facts.ralphTask) {
      let dir = slug;
      for (let i = 2; facts.specDirs.includes(dir); i++) dir = `${slug}-${i}`;
      file = `specs/${dir}/tasks.md`;
    }
    files.push({
      path: file,
      text: [
        `# Ralph task: ${title}`,
        '',
        'What to build, for whom, and what "done" means. The agent reads this file at every iteration and ticks a',
        'box when its item is done; the gate then checks the work before Ralph believes it.',
        '',
        '## Success criteria',
        `- [ ] Write a failing test for the first behaviour, then make it pass (${check})`,
        '- [ ] Handle the edge cases: empty input, very long input [risky]',
        '- [ ] Document the usage in README.md',
        '',
      ].join('\n'),
    });
    open = file;
    what = `a checklist (${file}, 3 boxes)`;
  } else if (input.kind === 'quantum') {
    const story = (id: string, t: string, priority: number, dependsOn: string[], criteria: string[]) => ({
      id,
      title: t,
      description: '',
      acceptanceCriteria: criteria,
      priority,
      status: 'pending',
      dependsOn,
      retries: { attempts: 0, maxAttempts: 3, failureLog: [] },
      notes: '',
    });
    const doc = {
      project: title,
      description: `Stories Ralph runs one by one; a story passes when the agent says so and ${check}.`,
      stories: [
        story(
          'US-001',
          'The first behaviour, with its test',
          1,
          [],
          ['A test shows the behaviour', `${gate ? `\`${gate}\`` : 'The gate'} passes`],
        ),
        story(
          'US-002',
          'Edge cases and usage docs',
          2,
          ['US-001'],
          ['Empty and very long input are handled', 'README.md shows the usage'],
        ),
      ],
    };
    files.push({ path: 'quantum.json', text: newJsonText(doc) });
    open = 'quantum.json';
    what = 'a quantum.json (2 stories, US-002 after US-001)';
  } else {
    const dialect = facts.flow?.dialect ?? 'specs';
    const top = Math.max(
      0,
      ...(facts.flow?.epicIds ?? []).map((id) => Number(FLOW_EPIC_ID.exec(id)?.[1] ?? 0)).filter(Number.isFinite),
    );
    const slug = slugOf(title);
    const epicId = `fn-${top + 1}${slug ? `-${slug}` : ''}`;
    const at = new Date(input.nowMs).toISOString();
    const epicKey = dialect === 'specs' ? 'spec' : 'epic';
    const epicDir = `.flow/${dialect}`;
    if (!facts.flow?.hasMeta)
      files.push({
        path: '.flow/meta.json',
        text: newJsonText(
          dialect === 'specs' ? { next_spec: 1, schema_version: 3 } : { next_epic: 1, schema_version: 2 },
          { sortKeys: true, asciiOnly: true },
        ),
      });
    files.push({
      path: `${epicDir}/${epicId}.json`,
      text: newJsonText(
        {
          branch_name: epicId,
          created_at: at,
          depends_on_epics: [],
          id: epicId,
          next_task: 3,
          plan_review_status: 'unknown',
          plan_reviewed_at: null,
          spec_path: `${epicDir}/${epicId}.md`,
          status: 'open',
          title,
          updated_at: at,
        },
        { sortKeys: true, asciiOnly: true },
      ),
    });
    files.push({
      path: `${epicDir}/${epicId}.md`,
      text: [
        `# ${epicId} ${title}`,
        '',
        '## Overview',
        'What to build and why.',
        '',
        '## Quick commands',
        `- \`${gate || '# e.g. npm test'}\``,
        '',
        '## Acceptance',
        `- [ ] ${check}`,
        '',
      ].join('\n'),
    });
    const tasks: [string, string[], string][] = [
      ['The first behaviour, with its test', [], `A test shows the behaviour; ${check}`],
      [
        'Edge cases and usage docs',
        [`${epicId}.1`],
        'Empty and very long input are handled; README.md shows the usage',
      ],
    ];
    tasks.forEach(([t, deps, acceptance], i) => {
      const id = `${epicId}.${i + 1}`;
      files.push({
        path: `.flow/tasks/${id}.json`,
        text: newJsonText(
          {
            assignee: null,
            claim_note: '',
            claimed_at: null,
            created_at: at,
            depends_on: deps,
            id,
            priority: null,
            [epicKey]: epicId,
            spec_path: `.flow/tasks/${id}.md`,
            status: 'todo',
            title: t,
            updated_at: at,
          },
          { sortKeys: true, asciiOnly: true },
        ),
      });
      files.push({
        path: `.flow/tasks/${id}.md`,
        text: [
          `# ${id} ${t}`,
          '',
          '## Description',
          t + '.',
          '',
          '## Acceptance',
          `- [ ] ${acceptance}`,
          '',
          '## Done summary',
          'TBD',
          '',
          '## Evidence',
          '- Commits:',
          '- Tests:',
          '- PRs:',
          '',
        ].join('\n'),
      });
    });
    open = `${epicDir}/${epicId}.md`;
    what = `a flow-next epic ${epicId} (2 tasks, .2 after .1)`;
  }
  let gateNote = facts.hasGates ? ' Gates: as configured.' : ' No gate: set one before Start (ralph.gates).';
  if (gate && !facts.hasGates) {
    const config = gateConfigText(facts.configText, gate);
    if (config !== undefined) {
      files.push({
        path: '.ralph/config.json',
        text: config,
        ...(facts.configText !== undefined ? { replaces: true } : {}),
      });
      gateNote = ` Gate: \`${gate}\` (basic, in .ralph/config.json).`;
    } else gateNote = ` .ralph/config.json does not parse: add {"gates": {"basic": "${gate}"}} to it yourself.`;
  }
  return { files, open, summary: `Created ${what}.${gateNote}` };
}

/** `.ralph/config.json` with `gates.basic` set: new, or the existing text edited in place; `undefined` if it does not parse. */
function gateConfigText(existing: string | undefined, gate: string): string | undefined {
  if (existing === undefined) return newJsonText({ gates: { basic: gate } });
  try {
    const value = JSON.parse(existing) as unknown;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
    refuseDuplicateKeys('.ralph/config.json', existing);
  } catch {
    return undefined;
  }
  return applyJsonChanges(existing, [{ op: 'set', path: ['gates', 'basic'], value: gate }]);
}

/** Reads the {@link FolderFacts} of `folder` (small files only: config and the `.flow/` listing). */
export async function readFolderFacts(folder: string): Promise<FolderFacts> {
  const exists = (p: string) => fs.existsSync(path.join(folder, p));
  let specDirs: string[] = [];
  try {
    specDirs = fs
      .readdirSync(path.join(folder, 'specs'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    // No specs/ folder.
  }
  let flow: FolderFacts['flow'];
  if (exists('.flow')) {
    const ws = readFlowWorkspace(folder);
    if (ws) flow = { dialect: ws.dialect, epicIds: ws.epics.map((e) => e.id), hasMeta: exists('.flow/meta.json') };
  }
  const configFile = ralphFile(folder, 'config');
  const configText = fs.existsSync(configFile) ? fs.readFileSync(configFile, 'utf8') : undefined;
  const { resolveGates } = await import('../gates/gateConfig');
  let hasGates = false;
  try {
    hasGates = (await resolveGates(folder)) !== null;
  } catch {
    // A config that does not parse: no gate is known; planStarter leaves the file alone.
  }
  return { ralphTask: exists('RALPH_TASK.md'), quantum: exists('quantum.json'), specDirs, flow, configText, hasGates };
}

/**
 * Creates the starter's files in `folder`: each new file exclusively (`wx`: an existing file is never overwritten;
 * the first collision removes what this call created and throws), the config edit atomically and only if the file is
 * still the text that was read. Resolves with the absolute paths written.
 */
export async function writeStarter(folder: string, starter: Starter, configTextRead?: string): Promise<string[]> {
  const created: string[] = [];
  try {
    for (const f of starter.files) {
      const abs = path.join(folder, ...f.path.split('/'));
      await fs.promises.mkdir(path.dirname(abs), { recursive: true });
      if (f.replaces) {
        const now = await fs.promises.readFile(abs, 'utf8');
        if (now !== configTextRead) throw new Error(`${f.path} changed while the plan was made: nothing written`);
        const { writeTextAtomic } = await import('../store/atomicWrite');
        await writeTextAtomic(abs, f.text);
      } else {
        await fs.promises.writeFile(abs, f.text, { flag: 'wx' });
        created.push(abs);
      }
    }
  } catch (err) {
    for (const abs of created.reverse()) await fs.promises.rm(abs, { force: true });
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EEXIST') throw new Error(`${path.relative(folder, e.path ?? '')} exists: nothing written`);
    throw err;
  }
  return starter.files.map((f) => path.join(folder, ...f.path.split('/')));
}
