import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const json = (v: unknown) => JSON.stringify(v, null, 2) + '\n';

/**
 * A generated workspace in os.tmpdir() (the caller deletes it): n flow-next tasks in flowctl's format (n/50 epics,
 * each task depending on the previous one of its epic, every third done, every fourth with a flow-state overlay
 * saying done) and, unless `opts.quantum` is false, n quantum stories in a chain. Shared by the benchmarks.
 */
export function makeWorkspace(n: number, opts: { quantum?: boolean } = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ralph-bench-${n}-`));
  fs.mkdirSync(path.join(dir, '.flow', 'epics'), { recursive: true });
  fs.mkdirSync(path.join(dir, '.flow', 'tasks'), { recursive: true });
  fs.mkdirSync(path.join(dir, '.git', 'flow-state', 'tasks'), { recursive: true });
  fs.writeFileSync(path.join(dir, '.flow', 'meta.json'), json({ next_epic: 1, schema_version: 2 }));
  const perEpic = 50;
  for (let e = 1; e <= Math.ceil(n / perEpic); e++) {
    fs.writeFileSync(
      path.join(dir, '.flow', 'epics', `fn-${e}.json`),
      json({ depends_on_epics: [], id: `fn-${e}`, plan_review_status: 'unknown', status: 'open', title: `Epic ${e}` }),
    );
  }
  for (let i = 0; i < n; i++) {
    const e = Math.floor(i / perEpic) + 1;
    const t = (i % perEpic) + 1;
    const id = `fn-${e}.${t}`;
    fs.writeFileSync(
      path.join(dir, '.flow', 'tasks', `${id}.json`),
      json({
        assignee: null,
        claim_note: '',
        claimed_at: null,
        created_at: '2026-01-10T07:32:10.987913Z',
        depends_on: t > 1 ? [`fn-${e}.${t - 1}`] : [],
        epic: `fn-${e}`,
        id,
        priority: null,
        spec_path: `.flow/tasks/${id}.md`,
        status: i % 3 === 0 ? 'done' : 'todo',
        title: `Task ${id}`,
        updated_at: '2026-01-10T07:32:10.987913Z',
      }),
    );
    if (i % 4 === 0)
      fs.writeFileSync(
        path.join(dir, '.git', 'flow-state', 'tasks', `${id}.state.json`),
        json({ status: 'done', updated_at: '2026-01-11T00:00:00Z' }),
      );
  }
  if (opts.quantum === false) return dir;
  const stories = Array.from({ length: n }, (_, i) => ({
    id: `US-${String(i + 1).padStart(5, '0')}`,
    title: `Story ${i + 1}`,
    description: 'd',
    acceptanceCriteria: ['a'],
    priority: i + 1,
    status: i % 2 ? 'pending' : 'passed',
    dependsOn: i ? [`US-${String(i).padStart(5, '0')}`] : [],
    tasks: [],
    review: {
      specCompliance: { status: 'pending', issues: [], reviewedAt: null },
      codeQuality: { status: 'pending', issues: [], reviewedAt: null },
    },
    retries: { attempts: 0, maxAttempts: 3, failureLog: [] },
    notes: '',
  }));
  fs.writeFileSync(
    path.join(dir, 'quantum.json'),
    json({ project: 'bench', stories, progress: [], codebasePatterns: [] }),
  );
  return dir;
}

/** Runs git in `dir` quietly, without the user's global configuration. Throws when git fails. */
export function gitIn(dir: string, ...args: string[]): void {
  execFileSync('git', args, { cwd: dir, stdio: 'ignore', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' } });
}

/**
 * Makes `dir` (existing, empty) a git repository on `main` with one commit of a quantum.json of `stories` independent
 * stories (S1…Sn, each with its own file path) and a .gitignore of `.ralph/`: the plan the lanes benchmarks run.
 */
export function makeLanesRepository(dir: string, stories: number): void {
  const list = Array.from({ length: stories }, (_, i) => ({
    id: `S${i + 1}`,
    title: `story ${i + 1}`,
    priority: i + 1,
    status: 'pending',
    dependsOn: [],
    filePaths: [`s${i + 1}.txt`],
  }));
  fs.writeFileSync(path.join(dir, 'quantum.json'), json({ project: 'bench', stories: list }));
  fs.writeFileSync(path.join(dir, '.gitignore'), '.ralph/\n');
  gitIn(dir, 'init', '-q', '-b', 'main');
  gitIn(dir, 'config', 'user.email', 'bench@example.invalid');
  gitIn(dir, 'config', 'user.name', 'bench');
  gitIn(dir, 'add', '-A');
  gitIn(dir, 'commit', '-q', '-m', 'initial');
}
