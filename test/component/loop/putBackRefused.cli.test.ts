import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runCli } from '../../support/cli';
import { makeWorkspace, type Workspace } from '../../support/engineHarness';

/**
 * Issue 11, breaker-s5 rows 12, 13, 14, 16 and 36: the agent claims an item done and makes the put-back hard (a
 * read-only file, a byte that is not UTF-8, a link out of the workspace, a duplicate key, a file that cannot be read,
 * the main folder's quantum.json from a parallel lane). The claim must not stay in the file. A fake agent script
 * (the claude stream-json a real run prints) does the attack through `ralph run`, as the breaker's lib.sh does.
 */
const TASK = '# Task\n## Success criteria\n- [ ] First box\n- [ ] Second box\n';
const QUANTUM = (deps2: string[] = []) =>
  JSON.stringify(
    {
      project: 'p',
      branchName: 'main',
      stories: [
        {
          id: 'US-001',
          title: 'One',
          status: 'pending',
          priority: 1,
          dependsOn: [],
          retries: { attempts: 0, maxAttempts: 3 },
        },
        {
          id: 'US-002',
          title: 'Two',
          status: 'pending',
          priority: 2,
          dependsOn: deps2,
          retries: { attempts: 0, maxAttempts: 3 },
        },
      ],
    },
    null,
    2,
  ) + '\n';

/** A fake claude: runs `body` (bash, cwd = the workspace or lane) on its first call, then prints a minimal stream. */
function agentScript(t: string, body: string): string {
  return [
    '#!/bin/bash',
    `T='${t}'`,
    'N=$(( $(cat "$T/n" 2>/dev/null || echo 0) + 1 )); echo $N > "$T/n"',
    `if [ $N = 1 ]; then { ${body}; } >>"$T/agent.log" 2>&1; fi`,
    'printf "%s\\n" "{\\"type\\":\\"system\\",\\"subtype\\":\\"init\\",\\"session_id\\":\\"s$N\\",\\"model\\":\\"claude-sonnet-4-5\\",\\"tools\\":[],\\"cwd\\":\\"$PWD\\"}" "{\\"type\\":\\"result\\",\\"subtype\\":\\"success\\",\\"is_error\\":false,\\"result\\":\\"done\\",\\"num_turns\\":1,\\"total_cost_usd\\":0.01,\\"usage\\":{\\"input_tokens\\":100,\\"output_tokens\\":10}}"',
    '',
  ].join('\n');
}

interface Attack {
  ws: Workspace;
  t: string;
  out: string;
  code: number | null;
  events: Record<string, unknown>[];
}

function attack(files: Record<string, string>, body: string, args: string[] = []): Attack {
  const ws = makeWorkspace(files);
  const t = path.join(ws.root, 't');
  fs.mkdirSync(t);
  const agent = path.join(t, 'agent.sh');
  fs.writeFileSync(agent, agentScript(t, body), { mode: 0o755 });
  ws.write(
    '.ralph/config.json',
    JSON.stringify({
      claudePath: agent,
      gates: { basic: 'false', final: 'false' },
      timing: { betweenIterationsMs: 0, killGraceMs: 500 },
    }),
  );
  const env: NodeJS.ProcessEnv = {
    XDG_STATE_HOME: path.join(ws.root, 'state'),
    RALPH_TRUST: '',
    RALPH_ITERATION_TOKEN: '',
    RALPH_RUN_ID: '',
    RALPH_WORKSPACE: '',
  };
  const r = runCli(ws.dir, ['run', '--trust', '--max-iterations', '1', ...args], env);
  const runs = path.join(ws.dir, '.ralph', 'runs');
  const events = fs.readdirSync(runs).flatMap((id) => {
    const f = path.join(runs, id, 'events.jsonl');
    return fs.existsSync(f)
      ? fs
          .readFileSync(f, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>)
      : [];
  });
  return { ws, t, out: r.stdout + r.stderr, code: r.code, events };
}

const tick2 = 'sed -i "s/^- \\[ \\] Second box$/- [x] Second box/" RALPH_TASK.md';

describe('put-backs the writer used to refuse (issue 11, breaker-s5 rows 12, 13, 14, 16, 36)', function () {
  this.timeout(120_000);
  let a: Attack | undefined;
  afterEach(() => {
    a?.ws.cleanup();
    a = undefined;
  });

  it('row 12: a box ticked in a file the agent made read-only is unticked by an atomic replace, the mode kept, and the line says so', () => {
    a = attack({ 'RALPH_TASK.md': TASK }, `${tick2}; chmod a-w RALPH_TASK.md`);
    assert.equal(a.ws.read('RALPH_TASK.md'), TASK, a.out);
    assert.equal(fs.statSync(a.ws.file('RALPH_TASK.md')).mode & 0o777, 0o444);
    assert.match(a.out, /put back anyway: RALPH_TASK\.md: read-only \(mode 0444\): replaced by a new file/);
    assert.doesNotMatch(a.out, /could not put back/);
    const back = a.events.find((e) => e.type === 'claimPutBack') as { how?: string[] } | undefined;
    assert.deepEqual(back?.how, [
      'RALPH_TASK.md: read-only (mode 0444): replaced by a new file (temporary file + rename in its folder), mode 0444 kept',
    ]);
  });

  it('row 13: a box ticked in a file the agent made not UTF-8 is unticked byte for byte, the bad byte kept', () => {
    a = attack({ 'RALPH_TASK.md': TASK }, `${tick2}; printf '<!-- \\xff -->\\n' >> RALPH_TASK.md`);
    assert.deepEqual(
      [...fs.readFileSync(a.ws.file('RALPH_TASK.md'))],
      [...Buffer.concat([Buffer.from(TASK), Buffer.from('<!-- \xff -->\n', 'latin1')])],
      a.out,
    );
    assert.match(a.out, /put back anyway: RALPH_TASK\.md: not UTF-8 text/);
  });

  it('row 16: a checklist replaced by a link out of the workspace becomes a regular file with the box unticked; the outside file is untouched', () => {
    a = attack(
      { 'RALPH_TASK.md': TASK },
      `sed "s/^- \\[ \\] Second box$/- [x] Second box/" RALPH_TASK.md > "$T/outside.md"; ln -sf "$T/outside.md" RALPH_TASK.md`,
    );
    assert.ok(!fs.lstatSync(a.ws.file('RALPH_TASK.md')).isSymbolicLink(), a.out);
    assert.equal(a.ws.read('RALPH_TASK.md'), TASK);
    assert.match(fs.readFileSync(path.join(a.t, 'outside.md'), 'utf8'), /- \[x\] Second box/);
    assert.match(
      a.out,
      /put back anyway: RALPH_TASK\.md: was a symbolic link to .*outside\.md, outside the workspace: the link was replaced/,
    );
  });

  it('row 14: quantum.json with a duplicate "status" key is set aside in the run folder and restored; JSON.parse no longer reads passed', () => {
    a = attack(
      { 'quantum.json': QUANTUM() },
      'sed -i \'s/"id": "US-002",/"id": "US-002", "status": "passed",/\' quantum.json',
    );
    const q = JSON.parse(a.ws.read('quantum.json')) as { stories: { id: string; status: string }[] };
    assert.equal(q.stories.find((s) => s.id === 'US-002')!.status, 'pending', a.out);
    const r = a.events.find((e) => e.type === 'fileRestored') as
      { file: string; aside: string; problem: string } | undefined;
    assert.ok(r, a.out);
    assert.equal(r.file, 'quantum.json');
    assert.match(r.aside, /^\.ralph\/runs\/[^/]+\/rejected\/iter-001\/quantum\.json$/);
    assert.match(r.problem, /duplicate key "status"/);
    assert.match(a.ws.read(r.aside), /"id": "US-002", "status": "passed",/, "the agent's bytes are kept");
    assert.match(a.out, /RESTORED quantum\.json — .*duplicate key "status".* the agent's bytes are in \.ralph\/runs\//);
    assert.doesNotMatch(a.out, /engine error/);
  });

  it('row 14 for flow-next: a task file made done behind a duplicate key is restored', () => {
    const task = (n: number) =>
      JSON.stringify({
        assignee: null,
        claim_note: '',
        claimed_at: null,
        created_at: `2026-12-01T09:00:0${n}Z`,
        depends_on: [],
        id: `fn-1-e.${n}`,
        priority: null,
        spec: 'fn-1-e',
        spec_path: `.flow/tasks/fn-1-e.${n}.md`,
        status: 'todo',
        title: `Task ${n}`,
        updated_at: `2026-12-01T09:00:0${n}Z`,
      }) + '\n';
    a = attack(
      {
        '.flow/meta.json': '{"next_spec": 2, "schema_version": 3}\n',
        '.flow/specs/fn-1-e.json':
          JSON.stringify({
            branch_name: 'fn-1-e',
            created_at: '2026-12-01T09:00:00Z',
            depends_on_epics: [],
            id: 'fn-1-e',
            next_task: 3,
            plan_review_status: 'unknown',
            plan_reviewed_at: null,
            spec_path: '.flow/specs/fn-1-e.md',
            status: 'open',
            title: 'E',
            updated_at: '2026-12-01T09:00:00Z',
          }) + '\n',
        '.flow/specs/fn-1-e.md': '# E\n',
        '.flow/tasks/fn-1-e.1.json': task(1),
        '.flow/tasks/fn-1-e.1.md': '# fn-1-e.1 Task 1\n\n## Description\nDo 1.\n',
        '.flow/tasks/fn-1-e.2.json': task(2),
        '.flow/tasks/fn-1-e.2.md': '# fn-1-e.2 Task 2\n\n## Description\nDo 2.\n',
      },
      'sed -i \'s/"status":"todo",/"status":"todo","status":"done",/\' .flow/tasks/fn-1-e.2.json',
    );
    assert.equal((JSON.parse(a.ws.read('.flow/tasks/fn-1-e.2.json')) as { status: string }).status, 'todo', a.out);
    assert.ok(
      a.events.some((e) => e.type === 'fileRestored' && e.file === '.flow/tasks/fn-1-e.2.json'),
      a.out,
    );
  });

  it('a checklist the agent made unreadable (a NUL byte) is restored, the tick with it', () => {
    a = attack({ 'RALPH_TASK.md': TASK }, `${tick2}; printf 'x\\0y\\n' >> RALPH_TASK.md`);
    assert.equal(a.ws.read('RALPH_TASK.md'), TASK, a.out);
    const r = a.events.find((e) => e.type === 'fileRestored') as { aside: string } | undefined;
    assert.ok(r, a.out);
    assert.match(a.ws.read(r.aside), /- \[x\] Second box\nx\0y\n$/);
  });

  it("row 36: a lane agent that sets stories passed in the main folder's quantum.json is put back by the coordinator", () => {
    a = attack(
      { 'quantum.json': QUANTUM(['US-001']), '.gitignore': '.ralph/\n' },
      'MAIN=$(git rev-parse --path-format=absolute --git-common-dir); MAIN=${MAIN%/.git}; sed -i \'s/"status": "pending"/"status": "passed"/g; s/"status": "in_progress"/"status": "passed"/g\' "$MAIN/quantum.json"',
      ['--source', 'quantum', '--parallel'],
    );
    const q = JSON.parse(a.ws.read('quantum.json')) as { stories: { id: string; status: string }[] };
    assert.deepEqual(
      q.stories.map((s) => s.status === 'passed'),
      [false, false],
      a.out,
    );
    assert.match(
      a.out,
      /PUT BACK US-002 — Two: .*status set to passed in the main folder's quantum\.json by no write of the coordinator while lane 1 \(US-001\) worked/,
    );
    assert.doesNotMatch(a.out, /no longer open/);
  });
});
