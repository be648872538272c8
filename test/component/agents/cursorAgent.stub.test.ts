import * as assert from 'node:assert/strict';
import { execa } from 'execa';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cursorAgentAdapter } from '../../../src/core/agents/cursorAgent';
import { findAdapter } from '../../../src/core/agents/registry';
import { type IterationExit, processGroupAlive, spawnIteration } from '../../../src/core/agents/spawn';
import type { IterationSpec } from '../../../src/core/agents/adapter';
import type { AgentEvent } from '../../../src/core/stream/events';
import { streamFixture } from '../../support/fixtures';
import { assertReplayedToSuccess, cursorAgentStub, installCursorAgentStub } from '../../support/stubs/installStubs';
import { makeTempDir } from '../../support/tempFolder';
import { gitWorkerReady, holdGitWorker } from '../../../src/core/git/gitWorker';
import { spawnsDuring } from '../../support/processes';

interface Record_ {
  argv: string[];
  env: Record<string, string>;
  stdin: string;
  cwd: string;
}

for (const via of ['this process', 'the helper process of a parallel run'] as const)
  describe(`cursor-agent through the adapter (a stub on PATH replaying the stream fixtures), started from ${via}`, () => {
    // A parallel run starts agents from its helper process (git/gitWorker.ts spawnInWorker, issue 19): the same
    // events, exit, argv, environment, closed stdin, group and kill.
    let release: (() => Promise<void>) | undefined;
    before(async () => {
      if (via === 'this process') return;
      release = holdGitWorker();
      assert.equal(await gitWorkerReady(), true); // starts the helper and waits until it is up
    });
    after(async () => {
      await release?.();
    });
    const captures = streamFixture('cursor-agent');
    let bin: string;
    let ws: string;
    let recordFile: string;

    beforeEach(() => {
      bin = installCursorAgentStub();
      ws = makeTempDir('ralph-cursor-ws-');
      recordFile = path.join(ws, 'stub-record.json');
    });
    afterEach(() => {
      fs.rmSync(bin, { recursive: true, force: true });
      fs.rmSync(ws, { recursive: true, force: true });
    });

    async function runStub(
      stubEnv: Record<string, string>,
      spec: Partial<IterationSpec> = {},
    ): Promise<{ exit: IterationExit; events: AgentEvent[]; record: Record_; pid: number | undefined }> {
      const handle = spawnIteration(cursorAgentAdapter, {
        prompt: 'Do the task.',
        cwd: ws,
        env: { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, RALPH_STUB_RECORD: recordFile, ...stubEnv },
        ...spec,
      });
      const events: AgentEvent[] = [];
      handle.onEvent((e) => events.push(e));
      const exit = await handle.done;
      assert.ok(!exit.stderr.startsWith('stub:'), exit.stderr);
      assert.equal(
        handle.pid !== undefined && processGroupAlive(handle.pid),
        false,
        'no process remains in the agent group',
      );
      return { exit, events, record: JSON.parse(fs.readFileSync(recordFile, 'utf8')) as Record_, pid: handle.pid };
    }

    for (const file of fs
      .readdirSync(captures)
      .filter((f) => f.endsWith('.jsonl'))
      .sort()) {
      it(`replays ${file} into events that end in success`, async () => {
        const { exit, events } = await runStub({ RALPH_STUB_REPLAY: path.join(captures, file) });
        assertReplayedToSuccess(exit, events);
      });
    }

    it('passes -p --force --trust --output-format stream-json, the model, resume, and the prompt last', async () => {
      const { record } = await runStub(
        { RALPH_STUB_REPLAY: path.join(captures, 'read-write.jsonl') },
        { model: 'composer-2', resume: 'chat-7' },
      );
      assert.deepEqual(record.argv, [
        '-p',
        '--force',
        '--trust',
        '--output-format',
        'stream-json',
        '--model',
        'composer-2',
        '--resume=chat-7',
        'Do the task.',
      ]);
      assert.equal(record.cwd, fs.realpathSync(ws));
    });

    it('runs with an isolated CURSOR_CONFIG_DIR under the workspace', async () => {
      const { record } = await runStub({ RALPH_STUB_REPLAY: path.join(captures, 'read-write.jsonl') });
      assert.equal(record.env.CURSOR_CONFIG_DIR, path.join(ws, '.ralph', 'cursor-config'));
      assert.equal(record.env.HOME, process.env.HOME);
    });

    it('runs with PWD set to its working folder, whatever PWD ralph has (a CLI that trusts PWD works there)', async () => {
      const { record } = await runStub({ PWD: '/', RALPH_STUB_REPLAY: path.join(captures, 'read-write.jsonl') });
      assert.equal(record.env.PWD, ws);
    });

    it('runs with stdin closed', async () => {
      const { record } = await runStub({});
      assert.equal(record.stdin, 'closed');
    });

    it('correlates the read and write calls and estimates context from their bytes', async () => {
      const { events, exit } = await runStub({ RALPH_STUB_REPLAY: path.join(captures, 'read-write.jsonl') });
      assert.deepEqual(
        events.flatMap((e) => (e.type === 'toolResult' ? [[e.name, e.kind, e.isError]] : [])),
        [
          ['read', 'read', false],
          ['write', 'write', false],
        ],
      );
      assert.ok(exit.ledger.estimate.bytesRead > 0 && exit.ledger.estimate.bytesWritten > 0);
      assert.ok(exit.ledger.contextTokens > 750);
    });

    it('a stream that stops without a result, exit 1 and a login error on stderr, is fatal', async () => {
      const { exit, events } = await runStub({
        RALPH_STUB_REPLAY: path.join(captures, 'sequential-shell.jsonl'),
        RALPH_STUB_LINES: '20',
        RALPH_STUB_STDERR:
          '{"type":"thinking","subtype":"delta","text":"rate limit"}\nError: Authentication required. Please run `cursor-agent login` first.\n',
        RALPH_STUB_EXIT: '1',
      });
      assert.equal(events.filter((e) => e.type === 'result').length, 0);
      assert.deepEqual([exit.exitCode, exit.outcome.kind, exit.outcome.evidence], [1, 'fatal', 'stderr']);
    });

    it('a usage-limit message on stderr with exit 1 is rate-limited', async () => {
      const { exit } = await runStub({
        RALPH_STUB_STDERR: "Error: You've hit your usage limit. Try again later.\n",
        RALPH_STUB_EXIT: '1',
      });
      assert.equal(exit.outcome.kind, 'rateLimited');
    });

    it('a bare-text model error on stdout is counted as non-JSON and reported as fatal', async () => {
      const { exit, events } = await runStub({
        RALPH_STUB_REPLAY: path.join(captures, 'read-write.jsonl'),
        RALPH_STUB_LINES: '2',
        RALPH_STUB_STDOUT: 'Cannot use this model: gpt-9. Available models: auto, composer-2\n',
        RALPH_STUB_EXIT: '1',
      });
      assert.equal(exit.decoder.nonJsonLines, 1);
      assert.ok(events.some((e) => e.type === 'error' && e.message.startsWith('Cannot use this model')));
      assert.equal(exit.outcome.kind, 'fatal');
    });

    it('a failure with an unknown message and no result is noResult with the stderr tail', async () => {
      const { exit } = await runStub({ RALPH_STUB_STDERR: 'Aborting operation...\n', RALPH_STUB_EXIT: '130' });
      assert.equal(exit.outcome.kind, 'noResult');
      assert.match(exit.outcome.reason, /exit code 130.*Aborting operation/);
    });

    it('is found under its other name, agent', async () => {
      const adapter = findAdapter('agent')!;
      const handle = spawnIteration(adapter, {
        prompt: 'hi',
        cwd: ws,
        binary: 'agent',
        env: {
          PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
          RALPH_STUB_REPLAY: path.join(captures, 'parallel-shell.jsonl'),
        },
      });
      assert.equal((await handle.done).outcome.kind, 'success');
    });

    it('knows the pid (its group) once started, and starts it from the helper in a parallel run', async () => {
      const { value: handle, spawns } = await spawnsDuring(async () => {
        const h = spawnIteration(cursorAgentAdapter, {
          prompt: 'hi',
          cwd: ws,
          env: {
            PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
            RALPH_STUB_REPLAY: path.join(captures, 'parallel-shell.jsonl'),
          },
        });
        await h.started;
        return h;
      });
      assert.equal(spawns, via === 'this process' ? 1 : 0);
      assert.ok(handle.pid! > 0);
      const exit = await handle.done;
      assert.equal(exit.outcome.kind, 'success');
      assert.equal(processGroupAlive(handle.pid!), false);
    });

    it('kill ends a hanging agent and its whole group', async () => {
      const handle = spawnIteration(
        cursorAgentAdapter,
        {
          prompt: 'hi',
          cwd: ws,
          env: {
            PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
            RALPH_STUB_REPLAY: path.join(captures, 'sequential-shell.jsonl'),
            RALPH_STUB_LINES: '3',
            RALPH_STUB_HANG: '1',
          },
        },
        { killGraceMs: 500 },
      );
      await new Promise<void>((resolve) => handle.onEvent((e) => e.type === 'toolUse' && resolve()));
      const exit = await handle.kill('test');
      assert.deepEqual([exit.killedBy, exit.outcome.kind], ['test', 'noResult']);
      assert.equal(processGroupAlive(handle.pid!), false);
    });

    it('an agent that exits while a detached child (its own session, marker containment) holds its stdout open ends within the grace, the child ended', async function () {
      this.timeout(30_000);
      const fake = makeTempDir('ralph-cursor-bg-');
      try {
        const bgPidFile = path.join(fake, 'bg.pid');
        fs.writeFileSync(
          path.join(fake, 'cursor-agent'),
          `#!/bin/bash\nsetsid bash -c 'echo $$ > ${bgPidFile}; exec sleep 8' &\nwhile [ ! -s ${bgPidFile} ]; do sleep 0.05; done\necho '{"type":"system","subtype":"init"}'\nexit 0\n`,
          { mode: 0o755 },
        );
        const t0 = Date.now();
        const handle = spawnIteration(
          cursorAgentAdapter,
          { prompt: 'hi', cwd: ws, env: { PATH: `${fake}${path.delimiter}${process.env.PATH ?? ''}` } },
          { killGraceMs: 300, containment: 'marker' },
        );
        const exit = await handle.done;
        const bg = Number(fs.readFileSync(bgPidFile, 'utf8'));
        let bgAlive = true;
        try {
          bgAlive = !/^\S+ \(.*\) Z/.test(fs.readFileSync(`/proc/${bg}/stat`, 'utf8'));
        } catch {
          bgAlive = false;
        }
        if (bgAlive) process.kill(bg, 'SIGKILL');
        assert.equal(bgAlive, false, `the detached child was ended (${Date.now() - t0} ms)`);
        assert.ok(
          Date.now() - t0 < 5_000,
          `done after ${Date.now() - t0} ms (not when the detached child ended by itself)`,
        );
        assert.deepEqual(exit.leftBehind, [bg]);
        assert.equal(exit.exitCode, 0);
      } finally {
        fs.rmSync(fake, { recursive: true, force: true });
      }
    });

    it('the stub itself refuses an open stdin (so the checks above mean something)', async () => {
      const r = await execa(
        process.execPath,
        [cursorAgentStub, '-p', '--force', '--trust', '--output-format', 'stream-json', 'hi'],
        { stdin: 'pipe', reject: false, env: { CURSOR_CONFIG_DIR: path.join(ws, 'cfg') } },
      );
      assert.equal(r.exitCode, 96);
      assert.match(String(r.stderr), /stdin is left open/);
    });

    it('the stub itself refuses a missing CURSOR_CONFIG_DIR', async () => {
      const r = await execa(
        process.execPath,
        [cursorAgentStub, '-p', '--force', '--trust', '--output-format', 'stream-json', 'hi'],
        { stdin: 'ignore', reject: false, env: { CURSOR_CONFIG_DIR: '' } },
      );
      assert.equal(r.exitCode, 96);
      assert.match(String(r.stderr), /CURSOR_CONFIG_DIR/);
    });
  });
