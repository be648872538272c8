import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A temporary folder for a test, with helpers taking paths relative to it; `dispose` removes it. */
export interface TempFolder {
  dir: string;
  /** Writes `text` to `rel` (parent folders made); returns the absolute path. */
  write(rel: string, text: string): string;
  read(rel: string): string;
  exists(rel: string): boolean;
  /** The absolute path of `rel`. */
  file(rel: string): string;
  dispose(): void;
}

/**
 * A new folder under the system temp folder, named `<prefix>XXXXXX`, with an empty `.ralph/` when `ralphDir`, and
 * `files` written into it (relative path → text; a path ending in `/` makes an empty folder). The one temp-folder
 * helper of the tests: workspaces, homes and scratch folders all come from here.
 */
export function makeTempFolder(
  prefix = 'ralph-test-',
  o: { ralphDir?: boolean; files?: Record<string, string> } = {},
): TempFolder {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (o.ralphDir) fs.mkdirSync(path.join(dir, '.ralph'));
  for (const [rel, text] of Object.entries(o.files ?? {})) {
    const f = path.join(dir, rel);
    fs.mkdirSync(rel.endsWith('/') ? f : path.dirname(f), { recursive: true });
    if (!rel.endsWith('/')) fs.writeFileSync(f, text);
  }
  return {
    dir,
    write(rel, text) {
      const f = path.join(dir, rel);
      fs.mkdirSync(path.dirname(f), { recursive: true });
      fs.writeFileSync(f, text);
      return f;
    },
    read: (rel) => fs.readFileSync(path.join(dir, rel), 'utf8'),
    exists: (rel) => fs.existsSync(path.join(dir, rel)),
    file: (rel) => path.join(dir, rel),
    dispose: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** Folders made by {@link makeTempDir}, removed when the test process exits (tests that forget to remove them leave none). */
const madeDirs: string[] = [];

/**
 * The path of a new temp folder (for tests that only need the path; see {@link makeTempFolder}); remove it with
 * `fs.rmSync` when done, else it goes when the test process exits.
 */
export function makeTempDir(prefix = 'ralph-test-', files: Record<string, string> = {}): string {
  const dir = makeTempFolder(prefix, { files }).dir;
  if (!madeDirs.length) {
    process.on('exit', () => {
      for (const d of madeDirs) {
        try {
          fs.rmSync(d, { recursive: true, force: true });
        } catch {
          /* still in use (a child writing): left */
        }
      }
    });
  }
  madeDirs.push(dir);
  return dir;
}

let cacheHome: string | undefined;

/**
 * An `XDG_CACHE_HOME` for the CLI processes a test run starts (ralph's parse cache goes there, not into the
 * user's `~/.cache/ralph`); one folder per test process, removed when it exits.
 */
export function testCacheHome(): string {
  if (!cacheHome) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-test-cache-'));
    cacheHome = dir;
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return cacheHome;
}
