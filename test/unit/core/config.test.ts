import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { defaultConfig, defaultConfigLiteral } from '../../../src/core/model/config';
import { configFileValues, loadConfig } from '../../../src/core/store/loadConfig';
import { FileProblemError } from '../../../src/core/store/parseError';
import { makeTempDir } from '../../support/tempFolder';

function folderWithConfig(text?: string): string {
  const dir = makeTempDir('ralph-config-');
  if (text !== undefined) {
    fs.mkdirSync(path.join(dir, '.ralph'));
    fs.writeFileSync(path.join(dir, '.ralph', 'config.json'), text);
  }
  return dir;
}

describe('the .ralph/config.json configuration', () => {
  it('is all defaults when the file is absent', async () => {
    assert.deepEqual(await loadConfig(folderWithConfig()), defaultConfig());
  });

  it('has the schema defaults as a literal (the same keys, order and values as parsing {}), a fresh object each call', () => {
    assert.deepStrictEqual(defaultConfigLiteral(), defaultConfig());
    assert.deepEqual(Object.keys(defaultConfigLiteral()), Object.keys(defaultConfig()));
    assert.notEqual(defaultConfigLiteral().agentArgs, defaultConfigLiteral().agentArgs);
  });

  it('layers flags over settings over the file over the defaults', async () => {
    const dir = folderWithConfig('{"maxIterations": 7, "model": "file-model", "agent": "cursor-agent"}');
    const c = await loadConfig(dir, {
      settings: { maxIterations: 9, model: 'settings-model' },
      flags: { maxIterations: 11 },
    });
    assert.equal(c.maxIterations, 11);
    assert.equal(c.model, 'settings-model');
    assert.equal(c.agent, 'cursor-agent');
    assert.equal(c.permissionMode, defaultConfig().permissionMode);
  });

  it('configFileValues: the keys the file sets, validated, and no default of a key it leaves out', () => {
    const rows: [string, Record<string, unknown>][] = [
      ['{}', {}],
      ['{"agent": "codex"}', { agent: 'codex' }],
      ['{"maxIterations": 3, "somethingElse": 1}', { maxIterations: 3, somethingElse: 1 }],
      // A key the file sets keeps the schema's defaults inside it.
      ['{"timing": {"killGraceMs": 5}}', { timing: { ...defaultConfig().timing, killGraceMs: 5 } }],
    ];
    for (const [text, values] of rows) assert.deepEqual(configFileValues('/w/.ralph/config.json', text), values, text);
    assert.throws(
      () => configFileValues('/w/.ralph/config.json', '{\n  "maxIterations": "many"\n}'),
      (e: unknown) => e instanceof FileProblemError && /config\.json:2:\d+: maxIterations/.test(e.message),
    );
  });

  it('keeps keys it does not know', async () => {
    const c = await loadConfig(folderWithConfig('{"futureKey": {"a": 1}}'));
    assert.deepEqual((c as Record<string, unknown>).futureKey, { a: 1 });
  });

  it('ignores agent paths and arguments from an untrusted workspace', async () => {
    const dir = folderWithConfig('{"claudePath": "/tmp/evil", "agentArgs": ["--x"], "model": "m"}');
    const c = await loadConfig(dir, { trusted: false, settings: { cursorAgentPath: '/tmp/evil2' } });
    assert.equal(c.claudePath, 'claude');
    assert.equal(c.cursorAgentPath, 'cursor-agent');
    assert.deepEqual(c.agentArgs, []);
    assert.equal(c.model, 'm');
  });

  it('names the file, line and column of a syntax error', async () => {
    const dir = folderWithConfig('{\n  "maxIterations": 3,\n}\n');
    await assert.rejects(loadConfig(dir), (err: unknown) => {
      assert.ok(err instanceof FileProblemError);
      assert.equal(err.problem.line, 3);
      assert.match(err.message, /config\.json:3:1: invalid JSON/);
      return true;
    });
  });

  it('names the key of a value of the wrong type', async () => {
    const dir = folderWithConfig('{\n  "maxIterations": "many"\n}\n');
    await assert.rejects(loadConfig(dir), /config\.json:2:3: maxIterations: /);
  });
});
