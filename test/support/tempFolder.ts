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
  dispose(): void;
}

/** A new empty folder under the system temp folder, named `<prefix>XXXXXX`. */
export function makeTempFolder(prefix: string): TempFolder {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
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
    dispose: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
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
