import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CommandIds } from '../../../src/extension/commandIds';
import { ralphApi } from './helpers';

/**
 * Issue 11 in the real host (a trusted workspace whose configuration the runner trusted as `ralph trust` would, with
 * XDG_STATE_HOME in its scratch folder): Doctor reports the trust state, and after the configuration changes it shows
 * the change and never executes the agent path it names. (The Start modal itself is covered against the fake vscode.)
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
        fs.writeFileSync(configFile(), JSON.stringify({ ...config, claudePath: agent, gates: { basic: 'true' } }, null, 2));
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
  });
}
