import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ContextKeys } from '../../../src/extension/contextKeys';
import { bash, edit, say, startModelServer, type ModelServer } from '../../support/modelServer';
import { makeTempDir } from '../../support/tempFolder';
import { EXTENSION_ID, ralphApi, until } from './helpers';

interface Sample {
  text: string;
  background: string | undefined;
  visible: boolean;
  running: boolean | undefined;
  runningHere: boolean | undefined;
}

/**
 * The store and the status bar gauge follow a run this window did not start: `ralph run` in a separate process (the
 * real Claude Code CLI against a scripted model server), through a warn and a rotation to its end.
 */
export function registerGaugeSuite(): void {
  describe('the gauge and the context keys follow a run started with `ralph run` in another process', function () {
    this.timeout(150_000);
    let server: ModelServer | undefined;
    let child: ChildProcess | undefined;
    let restore: (() => void) | undefined;
    const folder = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    afterEach(async () => {
      if (child && child.exitCode === null) child.kill('SIGINT');
      await server?.close();
      server = undefined;
      restore?.();
      restore = undefined;
    });

    it('shows the spinner, the warn and rotate backgrounds and the end, with Start off and Stop on while it runs', async () => {
      const api = await ralphApi();
      const repo = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
      const task = path.join(folder(), 'RALPH_TASK.md');
      fs.writeFileSync(task, '- [ ] Add tests\n- [ ] Document the CLI\n');
      server = await startModelServer([
        bash('echo start', { usage: { input: 1000, cacheRead: 20_000 } }),
        bash('sleep 1.5; echo warm', { usage: { input: 1000, cacheRead: 149_000 } }),
        bash('sleep 1.5; echo full', { usage: { input: 1000, cacheRead: 171_000 } }),
        bash('sleep 5', {}),
        edit(task, '- [ ] Add tests', '- [x] Add tests', { usage: { input: 1000, cacheRead: 10_000 } }),
        say('Tests added.'),
        edit(task, '- [ ] Document the CLI', '- [x] Document the CLI'),
        say('Documented.'),
      ]);
      const configFile = path.join(folder(), '.ralph', 'config.json');
      const config = fs.readFileSync(configFile, 'utf8');
      fs.writeFileSync(
        configFile,
        JSON.stringify(
          { ...JSON.parse(config), claudePath: path.join(repo, 'node_modules', '.bin', 'claude') },
          null,
          2,
        ),
      );
      restore = () => fs.writeFileSync(configFile, config);
      const home = makeTempDir('ralph-gauge-home-');
      const samples: Sample[] = [];
      const item = api.gauge.statusBarItem;
      const sample = () => {
        const s: Sample = {
          text: item.text,
          background: (item.backgroundColor as vscode.ThemeColor | undefined)?.id,
          visible: true,
          running: api.store.contextKey(ContextKeys.running),
          runningHere: api.store.contextKey(ContextKeys.runningHere),
        };
        const last = samples.at(-1);
        if (!last || last.text !== s.text || last.background !== s.background || last.running !== s.running)
          samples.push(s);
      };
      const timer = setInterval(sample, 50);
      let stdout = '';
      try {
        child = spawn(
          process.execPath,
          [
            path.join(repo, 'dist', 'cli.js'),
            '-C',
            folder(),
            'run',
            '--source',
            'RALPH_TASK.md',
            '--no-gates',
            '--max-iterations',
            '6',
            '--trust',
          ],
          {
            env: {
              ...process.env,
              ANTHROPIC_BASE_URL: server.url,
              ANTHROPIC_API_KEY: 'test',
              HOME: home,
              IS_SANDBOX: '1',
              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        child.stdout!.on('data', (d) => {
          stdout += String(d);
        });
        child.stderr!.on('data', (d) => {
          stdout += String(d);
        });
        const code = await new Promise<number | null>((resolve) => child!.on('close', resolve));
        assert.equal(code, 0, stdout);
        // The follower sees the end within a poll or two, and the gauge shows it.
        await until(
          'the gauge to show the completed run',
          () => api.store.contextKey(ContextKeys.running) === false && /· completed$/.test(item.text),
          { now: () => item.text },
        );
        sample();
      } finally {
        clearInterval(timer);
      }
      const trace = samples
        .map((s) => `${s.text} [${s.background ?? '-'}] running=${s.running} here=${s.runningHere}`)
        .join('\n');
      const during = samples.filter((s) => s.running);
      assert.ok(during.length > 0, `the store saw the run as running:\n${trace}`);
      assert.ok(
        during.every((s) => s.runningHere === false),
        `not this window's run: Cancel stays off\n${trace}`,
      );
      assert.ok(
        samples.some((s) => /^\$\(sync~spin\) \d+k\/200k \d+% · \$/.test(s.text)),
        `the spinner with the context and cost:\n${trace}`,
      );
      const warnAt = samples.findIndex((s) => s.background === 'statusBarItem.warningBackground');
      const rotateAt = samples.findIndex((s) => s.background === 'statusBarItem.errorBackground');
      assert.ok(warnAt >= 0, `the warning background at the warn threshold:\n${trace}`);
      assert.ok(rotateAt > warnAt, `then the error background at the rotate threshold:\n${trace}`);
      assert.ok(
        samples.slice(rotateAt).some((s) => s.running && s.background === undefined),
        `a fresh iteration after the rotation clears it:\n${trace}`,
      );
      const last = samples.at(-1)!;
      assert.equal(last.running, false, `Start on, Stop off after the end:\n${trace}`);
      assert.match(last.text, /· completed$/, trace);
      assert.match((item.tooltip as vscode.MarkdownString).value, /Cost is an estimate/);
    });

    it('a question from that run is answered from VS Code (Ralph: Answer Question…) and the run goes on', async () => {
      const api = await ralphApi();
      const repo = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
      const task = path.join(folder(), 'RALPH_TASK.md');
      fs.writeFileSync(task, '- [ ] Pick the database\n');
      server = await startModelServer([
        say('I need a decision first.\n<question>Postgres or SQLite?</question>'),
        edit(task, '- [ ] Pick the database', '- [x] Pick the database'),
        say('Done with SQLite.'),
      ]);
      const configFile = path.join(folder(), '.ralph', 'config.json');
      const config = fs.readFileSync(configFile, 'utf8');
      fs.writeFileSync(
        configFile,
        JSON.stringify(
          { ...JSON.parse(config), claudePath: path.join(repo, 'node_modules', '.bin', 'claude') },
          null,
          2,
        ),
      );
      restore = () => fs.writeFileSync(configFile, config);
      const asked = new Promise<{ runId: string; text: string; itemId: string | null }>((resolve) => {
        const sub = api.store.onQuestion((q) => {
          sub.dispose();
          resolve({ runId: q.run.runId, text: q.text, itemId: q.itemId });
        });
      });
      const home = makeTempDir('ralph-question-home-');
      let out = '';
      child = spawn(
        process.execPath,
        [
          path.join(repo, 'dist', 'cli.js'),
          '-C',
          folder(),
          'run',
          '--source',
          'RALPH_TASK.md',
          '--no-gates',
          '--max-iterations',
          '4',
          '--trust',
        ],
        {
          env: {
            ...process.env,
            ANTHROPIC_BASE_URL: server.url,
            ANTHROPIC_API_KEY: 'test',
            HOME: home,
            IS_SANDBOX: '1',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      child.stdout!.on('data', (d) => {
        out += String(d);
      });
      child.stderr!.on('data', (d) => {
        out += String(d);
      });
      const exited = new Promise<number | null>((resolve) => child!.on('close', resolve));
      const q = await Promise.race([
        asked,
        exited.then((code) => {
          throw new Error(`the run ended (${code}) without a question the store saw:\n${out}`);
        }),
      ]);
      assert.equal(q.text, 'Postgres or SQLite?');
      assert.equal(api.store.contextKey(ContextKeys.waiting), true, 'Answer Question… is enabled');
      await until('the gauge to say it waits for an answer', () =>
        /waiting for an answer/.test(api.gauge.statusBarItem.text),
      );
      assert.match(api.gauge.statusBarItem.text, /^\$\(question\) .*waiting for an answer$/);
      const requestsAtQuestion = server.agentRequests().length;
      const answered = await vscode.commands.executeCommand<string | undefined>('ralph.answer', {
        folder: folder(),
        runId: q.runId,
        text: 'SQLite, in data/app.db',
      });
      assert.ok(answered, 'the question was answered');
      assert.equal(await exited, 0, out);
      assert.ok(server.agentRequests().length > requestsAtQuestion, 'the run went on');
      const prompts = JSON.stringify(server.agentRequests().map((r) => r.body));
      assert.match(prompts, /SQLite, in data\/app\.db/, 'the next prompt holds the answer');
      await until('the question to be gone', () => api.store.contextKey(ContextKeys.waiting) === false);
      assert.equal(api.store.contextKey(ContextKeys.waiting), false);
    });

    it('Ralph: Start with a .ralph/config.json that does not parse resolves (no generic error modal) and clears the starting spinner', async () => {
      const api = await ralphApi();
      const configFile = path.join(folder(), '.ralph', 'config.json');
      const config = fs.readFileSync(configFile, 'utf8');
      try {
        fs.writeFileSync(configFile, '{\n  "maxIterations": 3,\n  "agent": claude\n}\n');
        // A rejected command promise is what VS Code shows as "command resulted in an error"; Start reports the
        // problem itself (file:line:column with Open File, unit test startErrors.test.ts) and resolves.
        const started = await vscode.commands.executeCommand<string | undefined>('ralph.start', {
          folder: folder(),
          source: 'RALPH_TASK.md',
          noGates: true,
        });
        assert.equal(started, undefined);
        assert.equal(
          api.store.snapshot().folders.find((f) => f.folder === folder())?.starting,
          false,
          'the starting mark is cleared',
        );
        await until('the starting spinner to clear', () => !/starting/.test(api.gauge.statusBarItem.text));
        assert.doesNotMatch(api.gauge.statusBarItem.text, /starting/);
        assert.equal(api.runs.isRunning(folder()), false);
      } finally {
        fs.writeFileSync(configFile, config);
      }
    });

    it('Ralph: Open Log opens the activity log at its end (the latest run), not at line 1', async () => {
      const editor = vscode.window.activeTextEditor;
      assert.ok(await vscode.commands.executeCommand<boolean>('ralph.openLog', folder()));
      const e = vscode.window.activeTextEditor!;
      assert.notEqual(e, editor);
      assert.match(e.document.uri.fsPath, /\.ralph[\\/]activity\.log$/);
      assert.ok(e.document.lineCount > 10, 'the log of the runs above');
      assert.equal(e.selection.active.line, e.document.lineCount - 1);
    });

    it('Ralph: Status is a document that refreshes from the store while it is open, and says when it was built', async () => {
      fs.writeFileSync(path.join(folder(), 'RALPH_TASK.md'), '- [x] One\n- [ ] Two\n');
      const text = await vscode.commands.executeCommand<string>('ralph.status');
      assert.match(text, /^Ralph status at .+ \(refreshes while this document is open\)/);
      const doc = vscode.workspace.textDocuments.find(
        (d) => d.uri.scheme === 'ralph' && d.uri.path.endsWith('Ralph Status.txt'),
      )!;
      assert.match(doc.getText(), /RALPH_TASK\.md: 1\/2 done/);
      fs.writeFileSync(path.join(folder(), 'RALPH_TASK.md'), '- [x] One\n- [x] Two\n- [ ] Three\n');
      await until('the open status document to follow the change', () =>
        /RALPH_TASK\.md: 2\/3 done/.test(doc.getText()),
      );
      assert.match(doc.getText(), /RALPH_TASK\.md: 2\/3 done/, 'the open document followed the change');
    });
  });
}
