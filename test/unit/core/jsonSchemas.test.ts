import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { configKeys, defaultConfig, ralphConfigSchema } from '../../../src/core/model/config';
import { buildJsonSchemas } from '../../../src/core/model/jsonSchemas';
import { quantumFileSchema } from '../../../src/core/model/quantum';
import { parseCheckpoint } from '../../../src/core/waves/checkpoint';
import { waveCheckpointSchema } from '../../../src/core/model/waveCheckpoint';
import { repoRoot } from '../../support/repoRoot';

const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
/** What esbuild.mjs passes: each config key's setting description. */
const settingText: Record<string, string> = {};
for (const c of manifest.contributes.configuration as { properties: Record<string, { markdownDescription: string }> }[])
  for (const [name, p] of Object.entries(c.properties))
    settingText[name.replace(/^ralph\./, '')] = p.markdownDescription;
const built = buildJsonSchemas(settingText);
const byFile = new Map(built.map((b) => [b.file, b]));
const shapes = path.join(repoRoot, 'test', 'fixtures', 'ijfw', 'shapes');

/** Documents each schema is tried on: zod's verdict and the generated JSON schema's must agree, and be `ok`. */
const samples: { file: string; zod: z.ZodType; docs: { name: string; doc: unknown; ok: boolean }[] }[] = [
  {
    file: 'ralph-config.schema.json',
    zod: ralphConfigSchema,
    docs: [
      { name: 'an empty file', doc: {}, ok: true },
      { name: 'the defaults written out', doc: defaultConfig(), ok: true },
      { name: 'an unknown key (kept)', doc: { fromANewerBuild: 1 }, ok: true },
      { name: 'gates', doc: { gates: { basic: 'npm test', final: 'npm run check' } }, ok: true },
      { name: 'an agent Ralph does not drive', doc: { agent: 'aider' }, ok: false },
      { name: 'maxIterations 0', doc: { maxIterations: 0 }, ok: false },
      { name: 'a fractional iteration count', doc: { maxIterations: 2.5 }, ok: false },
      { name: 'a cost cap as a string', doc: { maxCostUsd: '5' }, ok: false },
      { name: 'an empty gate command', doc: { gates: { basic: '' } }, ok: false },
      { name: 'a timing of the wrong type', doc: { timing: { stallLimit: 0 } }, ok: false },
      { name: 'agentArgs not a list', doc: { agentArgs: '--verbose' }, ok: false },
    ],
  },
  {
    file: 'quantum.schema.json',
    zod: quantumFileSchema,
    docs: [
      { name: 'the smallest plan', doc: { stories: [] }, ok: true },
      {
        name: 'stories with dependencies and retries',
        doc: {
          project: 'p',
          stories: [
            { id: 'US-001', title: 'a', priority: 1, status: 'pending', dependsOn: [] },
            { id: 'US-002', dependsOn: ['US-001'], retries: { attempts: 1, maxAttempts: 3, failureLog: [] } },
          ],
        },
        ok: true,
      },
      {
        name: 'a status Ralph does not count (kept, reported)',
        doc: { stories: [{ id: 'a', status: 'x' }] },
        ok: true,
      },
      { name: 'no stories', doc: {}, ok: false },
      { name: 'a story without id', doc: { stories: [{ title: 'a' }] }, ok: false },
      { name: 'a priority as a string', doc: { stories: [{ id: 'a', priority: '1' }] }, ok: false },
      { name: 'dependsOn not a list', doc: { stories: [{ id: 'a', dependsOn: 'b' }] }, ok: false },
      { name: 'maxAttempts 0', doc: { stories: [{ id: 'a', retries: { maxAttempts: 0 } }] }, ok: false },
    ],
  },
  {
    file: 'wave-checkpoint.schema.json',
    zod: waveCheckpointSchema,
    docs: [
      ...['v1', 'sdk', 'retro'].map((s) => ({
        name: `the ${s} shape (test/fixtures/ijfw/shapes)`,
        doc: JSON.parse(fs.readFileSync(path.join(shapes, `${s}.checkpoint.json`), 'utf8')) as unknown,
        ok: true,
      })),
      { name: 'files_created as a string', doc: { ts: '2026-01-01T00:00:00Z', files_created: 'a.ts' }, ok: false },
      { name: 'a checkpoint payload that is not an object', doc: { waveId: 'W1', checkpoint: 'x' }, ok: false },
      { name: 'a tool count below zero', doc: { tool_use_count: -1 }, ok: false },
    ],
  },
];

describe('the JSON schemas of Ralph files (contributes.jsonValidation), built from the zod schemas', () => {
  for (const { file, zod, docs } of samples) {
    const json = z.fromJSONSchema(byFile.get(file)!.schema as Parameters<typeof z.fromJSONSchema>[0]);
    for (const { name, doc, ok } of docs)
      it(`${file} ${ok ? 'accepts' : 'refuses'} ${name}, as zod does`, () => {
        assert.equal(zod.safeParse(doc).success, ok, 'zod');
        assert.equal(json.safeParse(doc).success, ok, 'the JSON schema');
      });
  }

  it('the config schema has every key of the zod schema, with its default and its setting text as hover', () => {
    const props = byFile.get('ralph-config.schema.json')!.schema.properties as Record<
      string,
      { default?: unknown; markdownDescription?: string }
    >;
    assert.deepEqual(Object.keys(props).sort(), [...configKeys].sort());
    const defaults = defaultConfig() as Record<string, unknown>;
    for (const key of configKeys) {
      assert.deepEqual(props[key]!.default, defaults[key], key);
      assert.ok(props[key]!.markdownDescription, `${key} has a description`);
      assert.doesNotMatch(props[key]!.markdownDescription!, /#ralph\.|Overrides `/, `${key}: no setting links`);
    }
  });

  it('the checkpoint schema agrees with the reader on the fixtures: every shape reads', () => {
    for (const s of ['v1', 'sdk', 'retro'])
      assert.ok(parseCheckpoint(fs.readFileSync(path.join(shapes, `${s}.checkpoint.json`), 'utf8')).ok, s);
  });

  it('the build wrote exactly these schemas to dist/schemas (esbuild.mjs): none is stale', () => {
    for (const b of built) {
      const written = JSON.parse(fs.readFileSync(path.join(repoRoot, 'dist', 'schemas', b.file), 'utf8'));
      assert.deepEqual(written, b.schema, `dist/schemas/${b.file} differs from the zod schemas: run node esbuild.mjs`);
    }
  });

  it("package.json's jsonValidation points at each schema with its fileMatch, and the .vsix ships them", () => {
    const entries = manifest.contributes.jsonValidation as { fileMatch: string[]; url: string }[];
    assert.deepEqual(
      entries.map((e) => ({ url: e.url, fileMatch: e.fileMatch })),
      built.map((b) => ({ url: `./dist/schemas/${b.file}`, fileMatch: b.fileMatch })),
    );
    const ignore = fs.readFileSync(path.join(repoRoot, '.vscodeignore'), 'utf8').split('\n');
    assert.ok(ignore.includes('!dist/schemas/*.json'), '.vscodeignore keeps dist/schemas/*.json');
  });
});
