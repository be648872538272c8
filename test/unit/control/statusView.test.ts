import * as assert from 'node:assert/strict';
import * as os from 'node:os';
import { buildStatus, formatStatusText } from '../../../src/core/control/status';
import { runLogLine, type EngineEvent } from '../../../src/core/model/runEvent';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const RUN = '20261201T090000Z-cd34';
const AT = '2026-12-01T09:00:00.000Z';
const HOST = os.hostname();

describe('ralph status: the run view', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-status-view-');
  });
  afterEach(() => t.dispose());

  function activeRun(events: EngineEvent[]): void {
    t.write('RALPH_TASK.md', '- [ ] a\n');
    t.write(
      `.ralph/runs/${RUN}/run.json`,
      JSON.stringify({
        runId: RUN,
        pid: 4242,
        host: HOST,
        startedAt: AT,
        state: 'running',
        iteration: 1,
        currentItem: null,
      }),
    );
    t.write(`.ralph/runs/${RUN}/events.jsonl`, events.map((e, i) => runLogLine(i + 1, AT, 0, e)).join(''));
  }
  const item = { source: 'checklist' as const, id: 'RALPH_TASK.md#1', title: 'a' };
  const events: EngineEvent[] = [
    {
      type: 'runStarted',
      runId: RUN,
      folder: '/ws',
      source: 'RALPH_TASK.md',
      agent: 'claude',
      maxIterations: 25,
      gates: { basic: 'true' },
    },
    { type: 'iterationStarted', iteration: 1, item, attempt: 2, attemptKind: 'fix', purpose: 'work', maxAttempts: 5 },
    {
      type: 'tokens',
      iteration: 1,
      contextTokens: 50_000,
      contextWindow: 200_000,
      warnAt: 140_000,
      rotateAt: 160_000,
      totals: { input: 1, output: 1, cacheRead: 0, cacheCreation: 0 },
      costUsd: 0.5,
    },
    {
      type: 'question',
      id: 'q1',
      iteration: 1,
      item,
      text: 'Which database?',
      answerFile: '/ws/.ralph/runs/x/answers/q1.md',
    },
  ];

  it("puts the run's view under runs[].view in --json", () => {
    activeRun(events);
    const s = buildStatus(t.dir, { probe: { isAlive: () => true, hostNames: [HOST] } });
    const v = s.runs[0]!.view;
    assert.deepEqual(
      [v.state, v.lanes[0]!.attempt?.text, v.lanes[0]!.context?.percent, v.questions[0]?.text],
      ['waiting', '2 of 5', 25, 'Which database?'],
    );
  });

  it("agrees with itself in --json: a PAUSE the run has not honoured yet is the view's pauseRequested", () => {
    activeRun(events.slice(0, 3));
    t.write(`.ralph/runs/${RUN}/PAUSE`, '');
    const s = buildStatus(t.dir, { probe: { isAlive: () => true, hostNames: [HOST] } });
    const r = s.runs[0]!;
    assert.equal(r.paused, true);
    assert.deepEqual([r.view.state, r.view.pauseRequested], ['running', true]);
  });

  it('shows state, lane, gauge and how to answer a question in text', () => {
    activeRun(events);
    const text = formatStatusText(buildStatus(t.dir, { probe: { isAlive: () => true, hostNames: [HOST] } }));
    assert.match(text, /state: waiting for an answer \(RALPH_TASK\.md#1\) · iteration 1 of 25/);
    // A sequential run: no "lane 0:"; the run's one context figure as the gauge and the dashboard write it.
    assert.match(text, /now: waiting · RALPH_TASK\.md#1 a · attempt 2 of 5/);
    assert.doesNotMatch(text, /lane 0:/);
    assert.match(text, /context: 50k\/200k 25% \(warn 140k · rotate 160k\)/);
    assert.match(text, /question \(RALPH_TASK\.md#1\): Which database\?/);
    assert.match(
      text,
      new RegExp(
        `answer: ralph answer --run ${RUN} --item RALPH_TASK\\.md#1 "<text>", or write /ws/\\.ralph/runs/x/answers/q1\\.md`,
      ),
    );
  });

  it("shows the lanes at work of a parallel run, one line each (story, iteration, attempt, state, a remote lane's worker), the workers alive, and under runs[].lanes in --json", () => {
    t.write(
      'quantum.json',
      JSON.stringify({
        project: 'p',
        stories: ['S1', 'S2', 'S3'].map((id) => ({ id, title: `story ${id}`, status: 'in_progress', dependsOn: [] })),
      }),
    );
    t.write(
      `.ralph/runs/${RUN}/run.json`,
      JSON.stringify({
        runId: RUN,
        pid: 4242,
        host: HOST,
        startedAt: AT,
        state: 'running',
        iteration: 3,
        currentItem: null,
        parallel: { maxParallel: 4, featureBranch: 'main' },
        lanes: [],
      }),
    );
    const s = (id: string) => ({ source: 'quantum' as const, id, title: `story ${id}` });
    const lanes: [number, EngineEvent][] = [
      [
        0,
        {
          type: 'runStarted',
          runId: RUN,
          folder: '/ws',
          source: 'quantum.json (parallel, up to 4 lanes, feature branch main)',
          agent: 'claude',
          maxIterations: 25,
          gates: { basic: 'true' },
        },
      ],
      [
        1,
        {
          type: 'iterationStarted',
          iteration: 1,
          item: s('S1'),
          attempt: 1,
          attemptKind: 'first',
          purpose: 'work',
          maxAttempts: 3,
        },
      ],
      [
        2,
        {
          type: 'iterationStarted',
          iteration: 2,
          item: s('S2'),
          attempt: 2,
          attemptKind: 'fix',
          purpose: 'work',
          maxAttempts: 3,
          // A remote lane (docs/distributed-lanes.md): its worker.
          worker: 'build2:77',
        },
      ],
      [0, { type: 'workers', alive: [{ id: 'build2:77', host: 'build2', pid: 77 }] }],
      [
        3,
        {
          type: 'iterationStarted',
          iteration: 3,
          item: s('S3'),
          attempt: 1,
          attemptKind: 'first',
          purpose: 'work',
          maxAttempts: 3,
        },
      ],
      [
        3,
        {
          type: 'laneMerge',
          item: s('S3'),
          branch: 'ql-wt/S3',
          outcome: 'merged',
          reason: 'merged into main',
          durationMs: 10,
        },
      ],
      [2, { type: 'gateStarted', tier: 'basic', command: 'true' }],
    ];
    t.write(`.ralph/runs/${RUN}/events.jsonl`, lanes.map(([lane, e], i) => runLogLine(i + 1, AT, lane, e)).join(''));
    const snap = buildStatus(t.dir, { probe: { isAlive: () => true, hostNames: [HOST] } });
    assert.deepEqual(snap.runs[0]!.lanes, [
      { lane: 1, story: 'S1', title: 'story S1', iteration: 1, attempt: '1 of 3', state: 'agent', worker: null },
      { lane: 2, story: 'S2', title: 'story S2', iteration: 2, attempt: '2 of 3', state: 'gate', worker: 'build2:77' },
    ]);
    const text = formatStatusText(snap);
    assert.match(text, new RegExp(`${RUN} \\(iteration 3, 2 lanes at work\\)`));
    assert.match(text, /lane 1: agent · S1 story S1 · iteration 1 · attempt 1 of 3/);
    assert.match(text, /lane 2: gate · S2 story S2 · iteration 2 · attempt 2 of 3 · .* · on build2:77/);
    assert.match(text, /workers: 1 alive \(build2:77\)/);
    assert.doesNotMatch(text, /lane 3:/, 'a lane that ended is not shown');
  });

  it('a sequential run has no runs[].lanes and no iteration on its lane line', () => {
    activeRun(events);
    const snap = buildStatus(t.dir, { probe: { isAlive: () => true, hostNames: [HOST] } });
    assert.equal(snap.runs[0]!.lanes, undefined);
    assert.doesNotMatch(formatStatusText(snap), /lane 0:.* iteration 1/);
  });

  it('shows a run whose engine is gone as crashed in its view', () => {
    activeRun(events.slice(0, 2));
    const s = buildStatus(t.dir, { probe: { isAlive: () => false, hostNames: [HOST] } });
    assert.deepEqual(s.runs, []);
    assert.equal(s.recent_runs[0]!.state, 'crashed');
    assert.equal(s.recent_runs[0]!.view.state, 'crashed');
  });
});
