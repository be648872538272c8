import * as assert from 'node:assert/strict';
import { changedClaudeProjectFiles } from '../../../src/core/trust/agentConfig';
import type { TrustedEntry } from '../../../src/core/trust/trustedContent';

/** breaker-s6 row 05: which of Claude Code's project files changed since the run's trust check. */
describe('changedClaudeProjectFiles', () => {
  const e = (key: string, value: string): TrustedEntry => ({ file: 'workspace file', key, value });
  const rows: [string, TrustedEntry[], TrustedEntry[], string[]][] = [
    ['no files, still none', [], [], []],
    ['unchanged', [e('.claude/settings.json', 'sha256:a')], [e('.claude/settings.json', 'sha256:a')], []],
    [
      'edited',
      [e('.claude/settings.json', 'sha256:a')],
      [e('.claude/settings.json', 'sha256:b')],
      ['.claude/settings.json'],
    ],
    [
      'created during the run',
      [],
      [e('.claude/settings.local.json', 'sha256:a'), e('.mcp.json', 'sha256:m')],
      ['.claude/settings.local.json', '.mcp.json'],
    ],
    ['deleted', [e('.mcp.json', 'sha256:m')], [], ['.mcp.json']],
    ['a cursor file changed: not a Claude Code file', [], [e('.cursor/hooks.json', 'sha256:c')], []],
  ];
  for (const [name, before, now, want] of rows)
    it(name, () => assert.deepEqual(changedClaudeProjectFiles(before, now), want));
});
