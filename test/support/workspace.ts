import { execFileSync } from 'node:child_process';
import { makeTempFolder, type TempFolder } from './tempFolder';

/**
 * Temporary workspaces for the sources, control and CLI tests, written in the owning tools' styles
 * (flowctl: `json.dumps(indent=2, sort_keys=True)`; quantum-loop: two-space JSON). Deleted by `dispose()`.
 */
export type TempWorkspace = TempFolder;

export function tempWorkspace(prefix = 'ralph-src-'): TempWorkspace {
  return makeTempFolder(prefix);
}

/** flowctl's JSON: sorted keys, two-space indent, ASCII only, trailing newline. */
export function flowJson(value: Record<string, unknown>): string {
  const sorted = Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, value[k]]),
  );
  return (
    JSON.stringify(sorted, null, 2).replace(
      /[^\x00-\x7f]/g,
      (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'),
    ) + '\n'
  );
}

export interface FlowTaskSpec {
  id: string;
  status?: string;
  deps?: string[];
  priority?: number | null;
  assignee?: string | null;
  extra?: Record<string, unknown>;
}

/** Writes `.flow/` with one epic per distinct epic id and the given tasks (plus their md files). */
export function writeFlow(
  ws: TempWorkspace,
  tasks: FlowTaskSpec[],
  epics: Record<string, { status?: string; deps?: string[] }> = {},
): void {
  ws.write('.flow/meta.json', flowJson({ schema_version: 2, next_epic: 1 }));
  const epicIds = new Set([...tasks.map((t) => t.id.slice(0, t.id.lastIndexOf('.'))), ...Object.keys(epics)]);
  for (const e of epicIds) {
    ws.write(
      `.flow/epics/${e}.json`,
      flowJson({
        id: e,
        title: `Epic ${e}`,
        status: epics[e]?.status ?? 'open',
        depends_on_epics: epics[e]?.deps ?? [],
        plan_review_status: 'unknown',
        spec_path: `.flow/specs/${e}.md`,
      }),
    );
  }
  for (const t of tasks) {
    const epic = t.id.slice(0, t.id.lastIndexOf('.'));
    ws.write(
      `.flow/tasks/${t.id}.json`,
      flowJson({
        id: t.id,
        epic,
        title: `Task ${t.id}`,
        status: t.status ?? 'todo',
        depends_on: t.deps ?? [],
        priority: t.priority ?? null,
        spec_path: `.flow/tasks/${t.id}.md`,
        assignee: t.assignee ?? null,
        claim_note: '',
        claimed_at: null,
        created_at: '2026-01-10T07:32:10.987913Z',
        updated_at: '2026-01-10T07:32:10.987913Z',
        ...(t.extra ?? {}),
      }),
    );
    ws.write(
      `.flow/tasks/${t.id}.md`,
      `# ${t.id} Task ${t.id}\n\n## Description\nWork.\n\n## Acceptance\n- [ ] It works\n\n## Done summary\nTBD\n\n## Evidence\n- Commits: abc123\n- Tests: npm test\n- PRs:\n`,
    );
  }
}

/** Runs `git …args` in `dir` (no global config) and returns its trimmed stdout. The one git helper of the tests. */
export function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
  }).trim();
}

/**
 * Makes a folder a git repository (so `<git-common-dir>/flow-state` is the state folder); with `commit`, also a
 * local identity, branch `main` and one commit of everything in it.
 */
export function gitInit(ws: TempWorkspace | string, o: { commit?: boolean } = {}): void {
  const dir = typeof ws === 'string' ? ws : ws.dir;
  git(dir, 'init', '-q', '-b', 'main');
  if (!o.commit) return;
  git(dir, 'config', 'user.email', 'ralph-test@example.invalid');
  git(dir, 'config', 'user.name', 'Ralph Test');
  git(dir, 'config', 'commit.gpgsign', 'false');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
}

/**
 * Makes the workspace look like a git repository to file reads (a `.git/` folder with a HEAD), without running git:
 * enough for `<git-common-dir>/flow-state` (src/core/sources/flowNext/stateDir.ts finds it by reading files only).
 */
export function fakeGitDir(ws: TempWorkspace): void {
  ws.write('.git/HEAD', 'ref: refs/heads/main\n');
}

/** Writes `<git-common-dir>/flow-state/tasks/<id>.state.json` overlays. */
export function writeFlowState(ws: TempWorkspace, states: Record<string, Record<string, unknown>>): void {
  for (const [id, s] of Object.entries(states)) ws.write(`.git/flow-state/tasks/${id}.state.json`, flowJson(s));
}

export interface StorySpec {
  id: string;
  status?: string;
  deps?: string[];
  priority?: number;
  attempts?: number;
  maxAttempts?: number;
  startedAt?: string | null;
  failureLog?: unknown[];
}

/** A quantum.json in the plan skill's shape (§4.1). */
export function quantumJson(stories: StorySpec[], extra: Record<string, unknown> = {}): string {
  return (
    JSON.stringify(
      {
        project: 'Demo',
        branchName: 'ql/demo',
        description: 'Demo feature',
        prdPath: 'tasks/prd-demo.md',
        designPath: null,
        createdAt: '2026-02-16T10:00:00Z',
        updatedAt: '2026-02-16T10:00:00Z',
        stories: stories.map((s) => ({
          id: s.id,
          title: `Story ${s.id}`,
          description: 'd',
          acceptanceCriteria: ['ok'],
          ...(s.priority !== undefined ? { priority: s.priority } : {}),
          status: s.status ?? 'pending',
          dependsOn: s.deps ?? [],
          tasks: [],
          review: {
            specCompliance: { status: 'pending', issues: [], reviewedAt: null },
            codeQuality: { status: 'pending', issues: [], reviewedAt: null },
          },
          retries: { attempts: s.attempts ?? 0, maxAttempts: s.maxAttempts ?? 3, failureLog: s.failureLog ?? [] },
          notes: '',
          ...(s.startedAt !== undefined ? { startedAt: s.startedAt } : {}),
        })),
        progress: [],
        codebasePatterns: [],
        ...extra,
      },
      null,
      2,
    ) + '\n'
  );
}
