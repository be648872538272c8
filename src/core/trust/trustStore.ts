import { mkdir, readFile, realpath } from 'node:fs/promises';
import * as path from 'node:path';
import { z } from 'zod';
import { writeTextAtomic } from '../store/atomicWrite';
import { trustDir, trustRecordPath } from './trustRecordPath';
import type { TrustRecord } from './trustDecision';

export { trustDir, trustRecordPath } from './trustRecordPath';

/** The real path of a workspace folder (symlinks resolved), the key of its trust record. */
export async function trustKey(folder: string): Promise<string> {
  return realpath(folder).catch(() => path.resolve(folder));
}

const recordSchema = z.object({
  folder: z.string(),
  hash: z.string(),
  lines: z.array(z.string()),
  trustedAt: z.string(),
});

/**
 * The recorded trust of `folder`, or null when there is none. A record that does not parse, or that belongs to
 * another folder (a hash collision), counts as no trust: the user is asked again, nothing is overwritten silently
 * until they trust.
 */
export async function readTrustRecord(
  folder: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TrustRecord | null> {
  const key = await trustKey(folder);
  let text: string;
  try {
    text = await readFile(trustRecordPath(key, env), 'utf8');
  } catch {
    return null;
  }
  try {
    const r = recordSchema.safeParse(JSON.parse(text));
    return r.success && r.data.folder === key ? r.data : null;
  } catch {
    return null;
  }
}

/** Records that the user trusts `content` (its hash and lines) for `folder`. Returns the record written. */
export async function writeTrustRecord(
  folder: string,
  record: Omit<TrustRecord, 'folder' | 'trustedAt'>,
  env: NodeJS.ProcessEnv = process.env,
  now = new Date(),
): Promise<TrustRecord> {
  const key = await trustKey(folder);
  const full: TrustRecord = { folder: key, hash: record.hash, lines: [...record.lines], trustedAt: now.toISOString() };
  await mkdir(trustDir(env), { recursive: true, mode: 0o700 });
  await writeTextAtomic(trustRecordPath(key, env), JSON.stringify(full, null, 2) + '\n');
  return full;
}
