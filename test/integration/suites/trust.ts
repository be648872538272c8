import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { checkWorkspaceTrust, trustWorkspace } from '../../../src/core/trust/workspaceTrust';
import { CommandIds } from '../../../src/extension/commandIds';
import { TRUST_BUTTON, vscodeTrustUi } from '../../../src/extension/contentTrust';
import { ralphApi } from './helpers';

/**
 * Issue 11 in the real host (a trusted workspace whose configuration the runner trusted as `ralph trust` would, with
 * XDG_STATE_HOME in its scratch folder): Doctor reports the trust state, and after the configuration changes it shows
 * the change and never executes the agent path it names; Ralph: Start on the changed content asks with the modal
 * (answered through `api.runs.trustUi`: a modal cannot be clicked from a test), starts nothing when declined, and
 * records the new hash when accepted.
 */
export function registerTrustSuite(): void {
  describe('trust of the workspace configuration in the real host', () => {
    const configFile = () => path.join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, '.ralph', 'config.json');

    it('Doctor reports the configuration trusted', async () => {
      await ralphApi();
      const text = await vscode.commands.executeCommand<string>(CommandIds.doctor);
      assert.match(text, /Trust \(workspace configuration that names programs to run\):\n\s+trusted \(sha256:/);
    });

    it('after gates.basic is rewritten, Doctor shows the change and does not execute the claudePath it names', async () => {
      const original = fs.readFileSync(configFile(), 'utf8');
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-int-trust-'));
      const marker = path.join(dir, 'ran');
      const agent = path.join(dir, 'claude');
      fs.writeFileSync(agent, `#!/bin/sh\necho ran > "${marker}"\necho "9.9.9 (Claude Code)"\n`, { mode: 0o755 });
      try {
        const config = JSON.parse(original) as Record<string, unknown>;
        fs.writeFileSync(
          configFile(),
          JSON.stringify({ ...config, claudePath: agent, gates: { basic: 'true' } }, null, 2),
        );
        const text = await vscode.commands.executeCommand<string>(CommandIds.doctor);
        assert.match(text, /CHANGED since you trusted it/);
        assert.match(text, /- \.ralph\/config\.json gates\.basic = "test -f RALPH_TASK\.md"/);
        assert.match(text, /\+ \.ralph\/config\.json gates\.basic = "true"/);
        assert.match(text, /claudePath ".*claude" from \.ralph\/config\.json: not run/);
        assert.equal(fs.existsSync(marker), false, 'the untrusted claudePath was executed');
      } finally {
        fs.writeFileSync(configFile(), original);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('Ralph: Start on a changed hash in this trusted workspace shows the change in the modal; Cancel starts nothing, Trust and Start records it', async () => {
      const api = await ralphApi();
      const folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      const original = fs.readFileSync(configFile(), 'utf8');
      const runsDir = path.join(folder, '.ralph', 'runs');
      const runsBefore = fs.existsSync(runsDir) ? fs.readdirSync(runsDir).length : 0;
      const asked: { message: string; detail: string; action: string }[] = [];
      let answer = false;
      api.runs.trustUi = {
        ...vscodeTrustUi,
        confirm: async (message, detail, action) => {
          asked.push({ message, detail, action });
          return answer;
        },
      };
      try {
        const config = JSON.parse(original) as Record<string, unknown>;
        // The agent weakens the gate; the claudePath named goes nowhere, so an accepted Start stops at the engine's refusal.
        fs.writeFileSync(
          configFile(),
          JSON.stringify({ ...config, claudePath: '/nonexistent/ralph-int/claude', gates: { basic: 'true' } }, null, 2),
        );
        assert.equal((await checkWorkspaceTrust(folder)).state, 'changed');

        const declined = await vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
          source: 'RALPH_TASK.md',
          agent: 'claude',
        });
        assert.equal(declined, undefined, 'Cancel starts no run');
        assert.equal(asked.length, 1);
        assert.match(asked[0]!.message, /changed since you trusted it/);
        assert.match(asked[0]!.detail, /^What changed since you trusted it/);
        assert.match(asked[0]!.detail, /- \.ralph\/config\.json gates\.basic = "test -f RALPH_TASK\.md"/);
        assert.match(asked[0]!.detail, /\+ \.ralph\/config\.json gates\.basic = "true"/);
        assert.match(asked[0]!.detail, /\+ \.ralph\/config\.json claudePath = "\/nonexistent\/ralph-int\/claude"/);
        assert.equal(asked[0]!.action, TRUST_BUTTON);
        assert.equal(api.runs.isRunning(folder), false);
        assert.equal((await checkWorkspaceTrust(folder)).state, 'changed', 'Cancel trusts nothing');

        answer = true;
        await vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
          source: 'RALPH_TASK.md',
          agent: 'claude',
        });
        assert.equal(asked.length, 2);
        assert.equal(
          (await checkWorkspaceTrust(folder)).state,
          'trusted',
          'Trust and Start recorded the shown content, as `ralph trust` does',
        );
        await api.runs.wait(folder);
        assert.equal(
          fs.existsSync(runsDir) ? fs.readdirSync(runsDir).length : 0,
          runsBefore,
          'the missing claudePath stopped the run before it started',
        );
      } finally {
        api.runs.trustUi = vscodeTrustUi;
        fs.writeFileSync(configFile(), original);
        // Trust the fixture's own content again, as the runner did, for the suites that follow.
        await trustWorkspace(folder);
      }
      assert.equal((await checkWorkspaceTrust(folder)).state, 'trusted');
    });
  });
}
