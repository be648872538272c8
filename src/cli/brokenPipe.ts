/**
 * Ends the process quietly when the reader of stdout or stderr goes away (`ralph status --json | head -c 100`):
 * an `EPIPE` on either stream exits with the exit code set so far, without a stack trace. Other stream errors
 * are thrown as before. Its own module so that the small entry (src/cli/entry.ts) loads nothing else for it.
 */
export function endQuietlyOnBrokenPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    });
  }
}
