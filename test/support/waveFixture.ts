import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from './repoRoot';

/**
 * IJFW wave fixtures (test/fixtures/ijfw/, issue 18): copies of the project's own crafted waves in a temp folder, and
 * a writer of checkpoints for tests that craft their own.
 */

/** The clock the fixtures' times are written around: 2026-05-18T15:00:00Z. */
export const WAVE_CLOCK = Date.parse('2026-05-18T15:00:00Z');

export const ijfwFixtures = path.join(repoRoot, 'test', 'fixtures', 'ijfw');

/** A copy of `test/fixtures/ijfw/{workspace,worktree}` with the mtimes the fixtures assume. */
export interface WaveWorkspace {
  /** The workspace folder (holds `.ijfw/`). */
  folder: string;
  /** An extra worktree root. */
  worktree: string;
  dispose(): void;
}

/**
 * Copies the fixture workspace and worktree into a temp folder and sets every file's and folder's mtime to 14:50 (so the
 * unreadable checkpoint ages like the others), except `events-W1-S11.jsonl` at 14:59:50 (recent activity).
 */
export function copyWaveWorkspace(): WaveWorkspace {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-waves-'));
  const folder = path.join(base, 'workspace');
  const worktree = path.join(base, 'worktree');
  fs.cpSync(path.join(ijfwFixtures, 'workspace'), folder, { recursive: true });
  fs.cpSync(path.join(ijfwFixtures, 'worktree'), worktree, { recursive: true });
  const old = new Date('2026-05-18T14:50:00Z');
  for (const root of [folder, worktree]) {
    for (const f of fs.readdirSync(root, { recursive: true }).map(String)) {
      fs.utimesSync(path.join(root, f), old, old);
    }
  }
  const ev = path.join(folder, '.ijfw', 'wave-W1', 'events-W1-S11.jsonl');
  const recent = new Date('2026-05-18T14:59:50Z');
  fs.utimesSync(ev, recent, recent);
  return { folder, worktree, dispose: () => fs.rmSync(base, { recursive: true, force: true }) };
}

/** Writes `.ijfw/wave-<waveId>/subagent-<subId>.checkpoint.json` under `root` (JSON of `body`, or the text as is). */
export function writeCheckpoint(
  root: string,
  waveId: string,
  subId: string,
  body: Record<string, unknown> | string,
): string {
  const dir = path.join(root, '.ijfw', `wave-${waveId}`);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `subagent-${subId}.checkpoint.json`);
  fs.writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body));
  return file;
}

/** Every file under `dir` with its bytes, for "checkpoints are byte-for-byte unchanged" assertions. */
export function snapshotFiles(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (!fs.existsSync(dir)) return out;
  for (const f of fs.readdirSync(dir, { recursive: true }).map(String).sort()) {
    const p = path.join(dir, f);
    if (fs.statSync(p).isFile()) out.set(f, fs.readFileSync(p));
  }
  return out;
}
