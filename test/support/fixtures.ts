import * as path from 'node:path';
import { repoRoot } from './repoRoot';

/** The project's own test fixtures: `test/fixtures/` (workspaces, agent streams, seed-format files). */
export const fixturesDir = path.join(repoRoot, 'test', 'fixtures');

/** A path under test/fixtures/. */
export const fixture = (...parts: string[]): string => path.join(fixturesDir, ...parts);

/** A stream fixture under test/fixtures/streams/ (see the README there): `streamFixture('claude/recorded', 'x.jsonl')`. */
export const streamFixture = (...parts: string[]): string => path.join(fixturesDir, 'streams', ...parts);
