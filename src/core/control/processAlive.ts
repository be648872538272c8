import * as os from 'node:os';

/** This machine's host name, full and short (`hostname -s`), for matching the host written in a run id/record. */
export function thisHostNames(): string[] {
  const h = os.hostname();
  return [...new Set([h, h.split('.')[0]!])];
}
