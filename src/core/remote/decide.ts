/**
 * The remote lanes' decisions (docs/distributed-lanes.md), pure: which Redis address may be used, which repository a
 * worker serves, which lane report counts (fencing), and when a lane is taken for dead (stall). The worker
 * (worker.ts) and the coordinator's BullMQ dispatcher (bullmqDispatcher.ts) observe and act; they ask these.
 */

/**
 * Why a Redis address is refused, or null when it may be used. A lane job, its events and the control words travel
 * in clear inside Redis, and anyone who can write there can add a job: an address without a password (or an ACL
 * user and password) is refused, whatever the host. Only `redis://` and `rediss://` (TLS) are accepted. Pure.
 */
export function redisUrlRefusal(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `not a Redis URL: ${JSON.stringify(url.replace(/\/\/[^@/]*@/, '//***@'))} (expected redis://[user]:password@host:port or rediss://…)`;
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    return `a Redis URL must be redis:// or rediss://, not ${u.protocol}//`;
  if (!u.hostname) return 'a Redis URL must name a host';
  if (!u.password)
    return `Redis at ${u.hostname}:${u.port || '6379'} is refused without a password: give redis://[user]:password@host:port (requirepass or an ACL user), or rediss:// for TLS`;
  return null;
}

/** The address a Redis URL's password is hidden in, for logs and messages. Pure. */
export function redactRedisUrl(url: string): string {
  return url.replace(/^(rediss?:\/\/)([^@/]*)@/, (_m, scheme: string, cred: string) => {
    const user = cred.includes(':') ? cred.slice(0, cred.indexOf(':')) : '';
    return `${scheme}${user}:***@`;
  });
}

/**
 * A remote address in the form allowlists compare: a trailing `/` and `.git` dropped, the scheme and host of a URL
 * in lower case, `user@` kept (it names the account). Pure.
 */
export function normalizeRemote(remote: string): string {
  let r = remote.trim().replace(/\/+$/, '');
  if (r.endsWith('.git')) r = r.slice(0, -4);
  r = r.replace(/\/+$/, '');
  const url = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/]*)(.*)$/.exec(r);
  if (url) return `${url[1]!.toLowerCase()}://${url[2]!.toLowerCase()}${url[3]}`;
  const scp = /^([^@/]+@)?([^:/]+):(.*)$/.exec(r);
  if (scp && !r.startsWith('/')) return `${scp[1] ?? ''}${scp[2]!.toLowerCase()}:${scp[3]}`;
  return r;
}

/**
 * Does a worker serve this repository: is `remote` one of its `allowlist` (`--repo`), compared normalized
 * ({@link normalizeRemote})? An empty allowlist serves nothing. Pure.
 */
export function remoteAllowed(remote: string, allowlist: readonly string[]): boolean {
  const r = normalizeRemote(remote);
  return allowlist.some((a) => normalizeRemote(a) === r);
}

/** What the coordinator knows of a story's current dispatch. */
export interface Dispatch {
  /** The fencing token of the story's newest dispatch. */
  token: number;
  /** Its result was taken (or the coordinator gave up on it): nothing more of this token counts. */
  ended: boolean;
}

/** A report's fate: taken, or refused with why. */
export type Fencing = { kind: 'accept' } | { kind: 'refuse'; reason: string };

/**
 * Does a lane's report (an event, a heartbeat, its result) count? Only the story's newest dispatch speaks for it:
 * a report of an older token (a lane the coordinator gave up on, a SIGSTOPped worker that woke) is refused, so two
 * agents never both count for one story and a superseded branch is never merged; so is anything after the current
 * dispatch's result was taken (at-least-once delivery repeats entries), and a token never dispatched (forged, or
 * another run's). `current`: the story's dispatch, null when the story has none. Pure.
 */
export function decideFencing(current: Dispatch | null, report: { token: number; kind: string }): Fencing {
  if (!current) return { kind: 'refuse', reason: `no dispatch of this story is current (token ${report.token})` };
  if (report.token < current.token)
    return {
      kind: 'refuse',
      reason: `late ${report.kind} of token ${report.token}, superseded by token ${current.token}`,
    };
  if (report.token > current.token)
    return { kind: 'refuse', reason: `token ${report.token} was never dispatched (current ${current.token})` };
  if (current.ended) return { kind: 'refuse', reason: `${report.kind} after the lane's end (token ${report.token})` };
  return { kind: 'accept' };
}

/**
 * Is a dispatched lane taken for dead? A lane whose job no worker took yet is waiting, not stalled (workers may all
 * be busy). Once taken, its worker sends heartbeats; silence longer than `laneStallMs` (the setting) means the
 * worker is gone (SIGKILL, machine lost, SIGSTOP, partition). While Redis itself is unreachable nothing can be heard:
 * silence is then counted from the moment Redis answered again (`redisBackAt`), never against the lane. All times
 * ms since the epoch. Pure.
 */
export function decideStall(s: {
  now: number;
  /** When a worker took the job (its `started` entry), or null while it waits in the queue. */
  takenAt: number | null;
  /** The last entry of this dispatch read from the stream (any kind), or null. */
  lastSeenAt: number | null;
  /** Redis is answering now. */
  redisUp: boolean;
  /** When Redis answered again after it was last unreachable (0: never lost). */
  redisBackAt: number;
  laneStallMs: number;
}): { stalled: boolean; silentMs: number } {
  if (s.takenAt === null || !s.redisUp) return { stalled: false, silentMs: 0 };
  const since = Math.max(s.lastSeenAt ?? s.takenAt, s.takenAt, s.redisBackAt);
  const silentMs = Math.max(0, s.now - since);
  return { stalled: silentMs > s.laneStallMs, silentMs };
}

/**
 * The BullMQ job id of a dispatch: run, story and token, so the same dispatch is never added twice and each new
 * attempt is a new job. BullMQ refuses `:` in custom ids. Pure.
 */
export const laneJobId = (runId: string, storyId: string, token: number): string => `${runId}.${storyId}.${token}`;

/** A worker of remote lanes as its heartbeat names it. */
export interface LiveWorker {
  /** `host:pid`, as its lanes' events name it. */
  id: string;
  host: string;
  pid: number;
}

/**
 * The workers alive, from the hash of heartbeats (worker id → JSON `{host, pid, at}`, `at` ms since the epoch): those
 * heard within `staleMs` before `now` (a worker beats every {@link WORKER_BEAT_MS}; one killed without a word stays in
 * the hash and drops out once stale), sorted by id. An entry that is not such JSON is not a worker. Pure.
 */
export function liveWorkers(beats: Record<string, string>, now: number, staleMs: number): LiveWorker[] {
  const out: LiveWorker[] = [];
  for (const [id, raw] of Object.entries(beats)) {
    let b: unknown;
    try {
      b = JSON.parse(raw);
    } catch {
      continue;
    }
    const { host, pid, at } = (b ?? {}) as { host?: unknown; pid?: unknown; at?: unknown };
    if (typeof host !== 'string' || typeof pid !== 'number' || typeof at !== 'number') continue;
    if (now - at > staleMs) continue;
    out.push({ id, host, pid });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** How often a worker writes its heartbeat into the workers hash, ms. */
export const WORKER_BEAT_MS = 2000;
