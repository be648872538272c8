import * as assert from 'node:assert/strict';
import {
  decideFencing,
  decideStall,
  laneJobId,
  liveWorkers,
  normalizeRemote,
  redactRedisUrl,
  redisUrlRefusal,
  remoteAllowed,
} from '../../../src/core/remote/decide';
import { parseFeatureNote, parseLaneJob, parseStreamEntry, type LaneJob } from '../../../src/core/remote/laneJob';

const SHA = 'a'.repeat(40);
const job: LaneJob = {
  v: 1,
  runId: '20261206-021500-ab12',
  remote: '/srv/git/app.git',
  sha: SHA,
  featureBranch: 'ralph/feature',
  storyId: 'US-001',
  title: 'One',
  attempt: 1,
  token: 3,
  storyTimeoutMs: 900_000,
  heartbeatMs: 1000,
};

describe('remote lanes: a job is data only (laneJob.ts parseLaneJob)', () => {
  const table: [string, unknown, RegExp | null][] = [
    ['a whole job', job, null],
    ['a job with no title gets an empty one', { ...job, title: undefined }, null],
    ['a command field', { ...job, command: 'rm -rf /' }, /Unrecognized key/],
    ['agent settings', { ...job, claudePath: '/tmp/evil' }, /Unrecognized key/],
    ['a branch name for the SHA', { ...job, sha: 'main' }, /sha: a full commit SHA/],
    ['an abbreviated SHA', { ...job, sha: 'abc1234' }, /sha/],
    ['a story id with a path', { ...job, storyId: '../x' }, /storyId/],
    ['a story id with ..', { ...job, storyId: 'a..b' }, /storyId/],
    ['a story id that is an option', { ...job, storyId: '-rf' }, /storyId/],
    ['an ext:: remote (runs a command)', { ...job, remote: 'ext::sh -c touch% /tmp/x' }, /remote/],
    ['a remote that is an option', { ...job, remote: '--upload-pack=evil' }, /remote/],
    ['a relative path remote', { ...job, remote: 'repo.git' }, /remote/],
    ['an https remote', { ...job, remote: 'https://github.com/o/r.git' }, null],
    ['an scp-like remote', { ...job, remote: 'git@github.com:o/r.git' }, null],
    ['attempt 0', { ...job, attempt: 0 }, /attempt/],
    ['no token', { ...job, token: undefined }, /token/],
    ['a fractional token', { ...job, token: 1.5 }, /token/],
    ['another version', { ...job, v: 2 }, /v:/],
    ['not an object', 'US-001', /lane job refused/],
  ];
  for (const [name, data, refused] of table)
    it(name, () => {
      const r = parseLaneJob(data);
      if (!refused) assert.ok(r.ok, r.ok ? '' : r.reason);
      else {
        assert.equal(r.ok, false);
        if (!r.ok) assert.match(r.reason, refused);
      }
    });
});

describe('remote lanes: stream entries (laneJob.ts parseStreamEntry)', () => {
  const entry = { kind: 'heartbeat', storyId: 'US-001', attempt: 1, token: 3, worker: 'h1:42', laneSeq: 1 };
  const result = { state: 'completed', reason: 'done', verified: true, blocked: null, sha: SHA, timedOut: false };
  const green = { command: 'npm test', state: `# branch.oid ${SHA}\0# branch.head x\0` };
  const table: [string, string[], boolean][] = [
    ['a heartbeat', ['m', JSON.stringify(entry)], true],
    ['no field m', ['x', JSON.stringify(entry)], false],
    ['not JSON', ['m', '{'], false],
    ['an unknown kind', ['m', JSON.stringify({ ...entry, kind: 'exec' })], false],
    ['a result without its fields', ['m', JSON.stringify({ ...entry, kind: 'result', result: {} })], false],
    [
      'a result with its green tree',
      ['m', JSON.stringify({ ...entry, kind: 'result', result: { ...result, green } })],
      true,
    ],
    ['a result without one (an older worker)', ['m', JSON.stringify({ ...entry, kind: 'result', result })], true],
    [
      'a green tree with another field',
      ['m', JSON.stringify({ ...entry, kind: 'result', result: { ...result, green: { ...green, run: 'x' } } })],
      false,
    ],
  ];
  for (const [name, fields, ok] of table) it(name, () => assert.equal(parseStreamEntry(fields).ok, ok));
});

describe('remote lanes: the feature branch channel (laneJob.ts parseFeatureNote)', () => {
  const note = { v: 1, kind: 'moved', runId: job.runId, remote: job.remote, featureBranch: 'ralph/feature', sha: SHA };
  const table: [string, string, boolean][] = [
    ['a move', JSON.stringify(note), true],
    ["a run's end", JSON.stringify({ ...note, kind: 'ended' }), true],
    ['not JSON', '{', false],
    ['another kind', JSON.stringify({ ...note, kind: 'run' }), false],
    ['a branch name for a SHA', JSON.stringify({ ...note, sha: 'main' }), false],
    ['an ext:: remote (a command)', JSON.stringify({ ...note, remote: 'ext::sh -c touch% /tmp/x' }), false],
    ['a field more (a command)', JSON.stringify({ ...note, command: 'rm -rf /' }), false],
  ];
  for (const [name, message, ok] of table) it(name, () => assert.equal(parseFeatureNote(message).ok, ok));
});

describe('remote lanes: fencing (decide.ts decideFencing)', () => {
  const table: [string, Parameters<typeof decideFencing>[0], number, RegExp | null][] = [
    ['the current token', { token: 5, ended: false }, 5, null],
    [
      'a late result of a superseded token',
      { token: 5, ended: false },
      4,
      /late result of token 4, superseded by token 5/,
    ],
    ['a token never dispatched', { token: 5, ended: false }, 6, /never dispatched/],
    ['a repeat after the lane ended', { token: 5, ended: true }, 5, /after the lane's end/],
    ['a story with no dispatch', null, 1, /no dispatch/],
  ];
  for (const [name, current, token, refused] of table)
    it(name, () => {
      const d = decideFencing(current, { token, kind: 'result' });
      if (!refused) assert.deepEqual(d, { kind: 'accept' });
      else {
        assert.equal(d.kind, 'refuse');
        if (d.kind === 'refuse') assert.match(d.reason, refused);
      }
    });
});

describe('remote lanes: stall detection (decide.ts decideStall)', () => {
  const base: Parameters<typeof decideStall>[0] = {
    now: 100_000,
    takenAt: 50_000,
    lastSeenAt: 95_000,
    redisUp: true,
    redisBackAt: 0,
    laneStallMs: 10_000,
  };
  const table: [string, Partial<typeof base>, boolean, number][] = [
    ['heard 5 s ago: alive', {}, false, 5_000],
    ['silent exactly the limit: alive', { lastSeenAt: 90_000 }, false, 10_000],
    ['silent past the limit: stalled', { lastSeenAt: 89_999 }, true, 10_001],
    ['never heard after taking it: counted from taking', { lastSeenAt: null, takenAt: 80_000 }, true, 20_000],
    ['still in the queue: waiting, not stalled', { takenAt: null, lastSeenAt: null }, false, 0],
    ['Redis down: nothing can be heard, not stalled', { lastSeenAt: 1_000, redisUp: false }, false, 0],
    ['Redis back 3 s ago: counted from then', { lastSeenAt: 1_000, redisBackAt: 97_000 }, false, 3_000],
    ['Redis back long ago: counted from the last entry', { lastSeenAt: 80_000, redisBackAt: 60_000 }, true, 20_000],
  ];
  for (const [name, over, stalled, silentMs] of table)
    it(name, () => assert.deepEqual(decideStall({ ...base, ...over }), { stalled, silentMs }));
});

describe('remote lanes: the repository allowlist (decide.ts remoteAllowed)', () => {
  const table: [string, string, string[], boolean][] = [
    ['the same path', '/srv/git/app.git', ['/srv/git/app.git'], true],
    ['a trailing slash and .git', '/srv/git/app.git/', ['/srv/git/app'], true],
    ['host case', 'https://GitHub.com/o/r.git', ['https://github.com/o/r'], true],
    ['path case counts', 'https://github.com/O/r', ['https://github.com/o/r'], false],
    ['scp-like host case', 'git@GitHub.com:o/r.git', ['git@github.com:o/r'], true],
    ['another repository', '/srv/git/other.git', ['/srv/git/app.git'], false],
    ['a prefix is not enough', '/srv/git/app.git.evil', ['/srv/git/app.git'], false],
    ['an empty allowlist serves nothing', '/srv/git/app.git', [], false],
  ];
  for (const [name, remote, allow, ok] of table) it(name, () => assert.equal(remoteAllowed(remote, allow), ok));
  it('normalizes a file URL', () => assert.equal(normalizeRemote('FILE:///srv/a.git/'), 'file:///srv/a'));
});

describe('remote lanes: Redis addresses (decide.ts redisUrlRefusal)', () => {
  const table: [string, string, RegExp | null][] = [
    ['a password', 'redis://:s3cret@127.0.0.1:6380', null],
    ['an ACL user and password', 'redis://ralph:s3cret@redis.internal:6379/0', null],
    ['TLS with a password', 'rediss://:s3cret@redis.internal:6380', null],
    ['no password', 'redis://127.0.0.1:6379', /refused without a password/],
    ['a user without a password', 'redis://ralph@127.0.0.1:6379', /refused without a password/],
    ['another scheme', 'http://:p@127.0.0.1:6379', /redis:\/\/ or rediss:\/\//],
    ['not a URL', '127.0.0.1:6379', /not a Redis URL|redis:\/\/ or rediss/],
  ];
  for (const [name, url, refused] of table)
    it(name, () => {
      const r = redisUrlRefusal(url);
      if (!refused) assert.equal(r, null);
      else assert.match(r ?? '', refused);
    });
  it('hides the password in messages', () => {
    assert.equal(redactRedisUrl('redis://ralph:s3cret@h:1'), 'redis://ralph:***@h:1');
    assert.equal(redactRedisUrl('rediss://:s3cret@h:1'), 'rediss://:***@h:1');
  });
  it('a job id names run, story and token, without colons', () =>
    assert.equal(laneJobId('r1', 'US-001', 7), 'r1.US-001.7'));
});

describe('remote lanes: the workers alive (decide.ts liveWorkers)', () => {
  const now = 1_000_000;
  const beat = (host: string, pid: number, at: number) => JSON.stringify({ host, pid, at });
  const table: [string, Record<string, string>, string[]][] = [
    ['none', {}, []],
    ['a fresh beat', { 'b:2': beat('b', 2, now - 100) }, ['b:2']],
    ['a beat just at the limit', { 'b:2': beat('b', 2, now - 6000) }, ['b:2']],
    ['a stale beat (killed without a word)', { 'b:2': beat('b', 2, now - 6001) }, []],
    ['sorted by id', { 'b:2': beat('b', 2, now), 'a:9': beat('a', 9, now) }, ['a:9', 'b:2']],
    ['not JSON', { 'x:1': 'alive' }, []],
    ['JSON without a time', { 'x:1': JSON.stringify({ host: 'x', pid: 1 }) }, []],
  ];
  for (const [name, beats, ids] of table)
    it(name, () =>
      assert.deepEqual(
        liveWorkers(beats, now, 6000).map((w) => w.id),
        ids,
      ),
    );
  it('gives host and pid', () =>
    assert.deepEqual(liveWorkers({ 'b:2': beat('b', 2, now) }, now, 6000), [{ id: 'b:2', host: 'b', pid: 2 }]));
});
