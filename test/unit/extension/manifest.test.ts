import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../../support/repoRoot';
import * as vscode from 'vscode';
import { configKeys, defaultConfig, restrictedConfigKeys } from '../../../src/core/model/config';
import { activate } from '../../../src/extension/extension';
import { allCommandIds } from '../../../src/extension/commandIds';
import { recorded, resetFake } from '../../support/fakeVscode';

const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));

describe('the extension manifest', () => {
  beforeEach(() => resetFake());

  it('lists exactly the commands of the typed command-id table', () => {
    const inManifest = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(inManifest, [...allCommandIds].sort());
  });

  it('registers exactly the commands of the typed command-id table on activation', () => {
    const subscriptions: { dispose(): unknown }[] = [];
    activate({ subscriptions } as unknown as Parameters<typeof activate>[0]);
    assert.deepEqual([...recorded.commands.keys()].sort(), [...allCommandIds].sort());
    assert.deepEqual(recorded.treeViews, ['ralph.plan']);
    subscriptions.forEach((d) => d.dispose());
    assert.equal(recorded.commands.size, 0, 'every registration is disposed with the extension');
  });

  it('puts every command in the "Ralph" category', () => {
    for (const c of manifest.contributes.commands) assert.equal(c.category, 'Ralph', c.command);
  });

  it('has every setting in the configuration schema, with the same default', () => {
    // contributes.configuration is a list of categories (settings.test.ts): every setting of every category.
    const props: Record<string, { default: unknown }> = Object.assign(
      {},
      ...manifest.contributes.configuration.map((c: { properties: object }) => c.properties),
    );
    for (const [name, prop] of Object.entries(props)) {
      const key = name.replace(/^ralph\./, '') as keyof ReturnType<typeof defaultConfig>;
      assert.ok(configKeys.includes(key), `${name} has no key in the .ralph/config.json schema`);
      assert.deepEqual(prop.default, defaultConfig()[key], `${name} default differs from the schema's`);
    }
    for (const key of configKeys) assert.ok(props[`ralph.${key}`], `schema key ${key} has no VS Code setting`);
  });

  it('restricts the agent paths and arguments in untrusted workspaces', () => {
    const restricted = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations as string[];
    assert.equal(manifest.capabilities.untrustedWorkspaces.supported, 'limited');
    assert.deepEqual([...restricted].sort(), restrictedConfigKeys.map((k) => `ralph.${k}`).sort());
  });

  it('activates on the workspaces Ralph reads and runs on the workspace side', () => {
    for (const f of ['.ralph', '.ijfw', '.flow', 'quantum.json'])
      assert.ok(manifest.activationEvents.includes(`workspaceContains:${f}`), f);
    assert.deepEqual(manifest.extensionKind, ['workspace']);
    assert.equal(manifest.main, 'dist/extension.js');
    assert.equal(manifest.bin.ralph, 'dist/cli.js');
    assert.equal(manifest.engines.vscode, '^1.100.0');
  });

  it('logs to a LogOutputChannel named "Ralph"', () => {
    const subscriptions: { dispose(): unknown }[] = [];
    activate({ subscriptions } as unknown as Parameters<typeof activate>[0]);
    assert.ok(
      recorded.logLines.some((l) => l.startsWith('Ralph info [activate]')),
      recorded.logLines.join('\n'),
    );
    subscriptions.forEach((d) => d.dispose());
    void vscode;
  });
});
