import * as assert from 'node:assert/strict';
import * as os from 'node:os';
import * as path from 'node:path';
import { updateRunRecord, createRunRecord } from '../../../src/core/control/runRecords';
import { quantumJson, tempWorkspace, writeFlow, type TempWorkspace } from '../../support/workspace';
import { runCli, runCliInProcess } from '../../support/cli';

/**
 * Files the store must refuse to write, and how the CLI names them (the tester's findings). The commands run in this
 * process (`runCliInProcess`): their output, exit code and files are the point.
 */
describe('cli: files the store refuses to write', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());

  describe('duplicate keys', () => {
    const dupStory =
      '{"project":"Demo","stories":[{"id":"US-001","status":"passed","status":"pending","dependsOn":[]}],"progress":[]}\n';

    it('task start on a quantum story with a duplicate key is refused at the second key and writes nothing', async () => {
      ws = tempWorkspace('ralph-dup-');
      ws.write('quantum.json', dupStory);
      const r = await runCliInProcess(ws.dir, ['task', 'start', 'US-001']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^Error: quantum\.json:1:63: duplicate key "status"/);
      assert.equal(ws.read('quantum.json'), dupStory);
    });

    it('status still reads a quantum.json with a duplicate key, taking the last value', async () => {
      ws = tempWorkspace('ralph-dup-');
      ws.write('quantum.json', dupStory);
      const r = await runCliInProcess(ws.dir, ['status', '--json']);
      assert.equal(r.code, 0);
      assert.deepEqual(r.json().stories, { pending: 1, in_progress: 0, passed: 0, failed: 0, blocked: 0 });
    });

    it('task block on a flow-next task whose JSON repeats a key is refused with its workspace-relative name', async () => {
      ws = tempWorkspace('ralph-dup-');
      writeFlow(ws, [{ id: 'fn-1.1', status: 'in_progress' }]);
      const before = ws.read('.flow/tasks/fn-1.1.json').replace('  "title"', '  "status": "todo",\n  "title"');
      ws.write('.flow/tasks/fn-1.1.json', before);
      const r = await runCliInProcess(ws.dir, ['task', 'block', 'fn-1.1', '--reason', 'x', '--json']);
      assert.equal(r.code, 1);
      assert.match(String(r.json().error), /^\.flow\/tasks\/fn-1\.1\.json:\d+:3: duplicate key "status"/);
      assert.equal(ws.read('.flow/tasks/fn-1.1.json'), before);
    });

    it('a run record with a duplicate key is not updated', async () => {
      ws = tempWorkspace('ralph-dup-');
      await createRunRecord(ws.dir, { runId: 'r1' });
      const file = '.ralph/runs/r1/run.json';
      const before = ws.read(file).replace('{\n', '{\n  "state": "running",\n');
      ws.write(file, before);
      await assert.rejects(updateRunRecord(ws.dir, 'r1', { iteration: 3 }), {
        message: /^\.ralph\/runs\/r1\/run\.json:\d+:3: duplicate key "state"/,
      });
      assert.equal(ws.read(file), before);
    });
  });
});

describe('cli: a minified quantum.json', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());

  type Q = {
    updatedAt: string;
    stories: { status: string; startedAt?: string | null; retries: { attempts: number; failureLog: unknown[] } }[];
  };

  it('start and block change only the touched values and keep the file on one line', async () => {
    ws = tempWorkspace('ralph-min-');
    const original = JSON.parse(quantumJson([{ id: 'US-001' }, { id: 'US-002' }])) as Q;
    ws.write('quantum.json', JSON.stringify(original));
    assert.equal((await runCliInProcess(ws.dir, ['task', 'start', 'US-001'])).code, 0);
    const started = ws.read('quantum.json');
    const s = JSON.parse(started) as Q;
    const expectStarted = structuredClone(original);
    Object.assign(expectStarted.stories[0]!, { status: 'in_progress', startedAt: s.stories[0]!.startedAt });
    expectStarted.updatedAt = s.updatedAt;
    assert.equal(started, JSON.stringify(expectStarted));

    assert.equal((await runCliInProcess(ws.dir, ['task', 'block', 'US-001', '--reason', 'tests fail'])).code, 0);
    const blocked = ws.read('quantum.json');
    const b = JSON.parse(blocked) as Q;
    const expectBlocked = structuredClone(expectStarted);
    Object.assign(expectBlocked.stories[0]!, { status: 'failed', startedAt: null });
    expectBlocked.stories[0]!.retries = {
      ...expectBlocked.stories[0]!.retries,
      attempts: 1,
      failureLog: b.stories[0]!.retries.failureLog,
    };
    expectBlocked.updatedAt = b.updatedAt;
    assert.equal(blocked, JSON.stringify(expectBlocked));
    assert.equal(b.stories[0]!.retries.failureLog.length, 1);
  });
});

describe('cli: a JSON file that starts with a byte order mark', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());
  const bomMessage = 'the file starts with a byte order mark (BOM): save it as UTF-8 without a BOM';

  it('task start names the BOM at quantum.json:1:1 and writes nothing', async () => {
    ws = tempWorkspace('ralph-bom-');
    const text = '\uFEFF' + quantumJson([{ id: 'US-001' }]);
    ws.write('quantum.json', text);
    const r = await runCliInProcess(ws.dir, ['task', 'start', 'US-001', '--json']);
    assert.equal(r.code, 1);
    assert.deepEqual(r.json(), { success: false, error: `quantum.json:1:1: ${bomMessage}` });
    assert.equal(ws.read('quantum.json'), text);
  });

  it('status lists a flow-next task JSON with a BOM as a problem naming the BOM', async () => {
    ws = tempWorkspace('ralph-bom-');
    writeFlow(ws, [{ id: 'fn-1.1' }]);
    ws.write('.flow/tasks/fn-1.1.json', '\uFEFF' + ws.read('.flow/tasks/fn-1.1.json'));
    const j = (await runCliInProcess(ws.dir, ['status', '--json'])).json();
    assert.deepEqual(j.problems, [{ file: '.flow/tasks/fn-1.1.json', line: 1, column: 1, message: bomMessage }]);
  });
});

describe('cli: file names in messages', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());

  const commands: { name: string; args: string[] }[] = [
    { name: 'task start', args: ['task', 'start', 'US-001', '--json'] },
    { name: 'stale', args: ['stale', '--json'] },
    { name: 'stale --apply', args: ['stale', '--apply', '--json'] },
    { name: 'next', args: ['next', '--json'] },
  ];
  for (const c of commands) {
    it(`${c.name} names a quantum.json that does not parse relative to the workspace folder`, async () => {
      ws = tempWorkspace('ralph-names-');
      ws.write('quantum.json', '{\n  "stories": [\n');
      const r = await runCliInProcess(ws.dir, c.args);
      assert.equal(r.code, 1);
      assert.match(String(r.json().error), /^quantum\.json:3:1: invalid JSON: /);
    });
  }
});

describe('cli: usage errors', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());

  const cases: { name: string; args: string[]; stderr: RegExp }[] = [
    {
      name: 'task block without --reason',
      args: ['task', 'block', 'US-001'],
      stderr: /a reason is required: --reason <text> or --reason-file <file>/,
    },
    {
      name: 'task block --json without --reason',
      args: ['task', 'block', 'US-001', '--json'],
      stderr: /a reason is required/,
    },
    {
      name: 'task block with an empty --reason',
      args: ['task', 'block', 'US-001', '--reason', ' '],
      stderr: /a reason is required/,
    },
    {
      name: 'stale --stale-timeout abc',
      args: ['stale', '--stale-timeout', 'abc'],
      stderr: /--stale-timeout <minutes>' argument 'abc' is invalid\. expected a positive number of minutes/,
    },
    {
      name: 'stale --stale-timeout 0',
      args: ['stale', '--stale-timeout', '0', '--apply'],
      stderr: /expected a positive number of minutes/,
    },
    {
      name: 'task done --evidence that is not JSON',
      args: ['task', 'done', 'US-001', '--evidence', '{commits'],
      stderr: /--evidence <json>' argument '\{commits' is invalid/,
    },
  ];
  for (const c of cases) {
    it(`${c.name} is a usage error: exit 2, the message on stderr, nothing written`, async () => {
      ws = tempWorkspace('ralph-usage-');
      const text = quantumJson([{ id: 'US-001', status: 'in_progress', startedAt: '2000-01-01T00:00:00Z' }]);
      ws.write('quantum.json', text);
      const r = await runCliInProcess(ws.dir, c.args);
      assert.deepEqual([r.code, r.stdout], [2, '']);
      assert.match(r.stderr, c.stderr);
      assert.equal(ws.read('quantum.json'), text);
    });
  }

  it('task block with --reason-file and no --reason is not a usage error', async () => {
    ws = tempWorkspace('ralph-usage-');
    ws.write('quantum.json', quantumJson([{ id: 'US-001', status: 'in_progress' }]));
    const reasonFile = ws.write('reason.txt', 'tests fail\n');
    const r = await runCliInProcess(ws.dir, ['task', 'block', 'US-001', '--reason-file', reasonFile, '--json']);
    assert.deepEqual([r.code, r.json().status], [0, 'failed']);
  });
});

describe('cli: -C naming a folder that does not exist', () => {
  const missing = path.join(os.tmpdir(), 'ralph-no-such-folder', 'x');
  const commands: string[][] = [
    ['status'],
    ['next'],
    ['task', 'start', 'US-001'],
    ['task', 'block', 'US-001', '--reason', 'r'],
    ['task', 'reset', 'US-001'],
    ['stale'],
    ['pause'],
    ['resume'],
    ['stop'],
    ['doctor'],
    ['run', '--no-gates'],
    ['session', 'inspect', '-'],
  ];
  for (const args of commands) {
    it(`${args.join(' ')} fails with "folder not found" and exit 1`, async () => {
      // `run` and `session inspect -` (which reads stdin) as processes: they are the commands a process matters to.
      const r =
        args[0] === 'run' || args[0] === 'session' ? runCli(missing, args) : await runCliInProcess(missing, args);
      assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', `ralph: folder not found: ${missing}\n`]);
    });
  }

  for (const args of [
    ['status', '--json'],
    ['task', 'start', 'US-001', '--json'],
    ['stale', '--json'],
    ['doctor', '--json'],
  ]) {
    it(`${args.join(' ')} prints the refusal as JSON on stdout and exits 1`, async () => {
      const r = await runCliInProcess(missing, args);
      assert.deepEqual(
        [r.code, r.json(), r.stderr],
        [1, { success: false, error: `folder not found: ${missing}` }, ''],
      );
    });
  }

  it('a -C naming a file is refused as not a folder', async () => {
    const r = await runCliInProcess(__filename, ['status']);
    assert.deepEqual([r.code, r.stderr], [1, `ralph: not a folder: ${__filename}\n`]);
  });
});
