import * as assert from 'node:assert/strict';
import { decideGuard, type GuardContext } from '../../../src/core/gates/guardDecision';
import { ANALYZER_MISSES, bash, ctx, problems, TABLE, WS } from '../../support/guardTable';
import attackFile from '../../fixtures/guard/holdout-attacks.json';

/** The guard's command table and the hold-out attacks (issue 17); the table lives in test/support/guardTable.ts. */

describe('guard: the command table (issue 17)', () => {
  it('the test policy parses without problems', () => {
    assert.deepEqual(problems, []);
  });

  it(`has at least 80 rows (${TABLE.length})`, () => {
    assert.ok(TABLE.length >= 80);
  });

  for (const [command, expect] of TABLE) {
    const name = typeof expect === 'string' ? expect : 'rewrite';
    it(`${name}: ${JSON.stringify(command)}`, () => {
      const d = bash(command);
      if (expect === 'allow') assert.equal(d.kind, 'allow', JSON.stringify(d));
      else if (expect === 'deny') assert.equal(d.kind, 'deny', JSON.stringify(d));
      else {
        assert.equal(d.kind, 'rewrite', JSON.stringify(d));
        if (d.kind === 'rewrite') {
          assert.equal(d.updatedInput.command, expect.command);
          assert.equal(d.updatedInput.description, 'd', 'every other field of the input is kept');
        }
      }
    });
  }
});

describe('guard: the analyzer misses of a black-box pass, each beside a harmless look-alike', () => {
  for (const [command, expect] of ANALYZER_MISSES) {
    it(`${expect}: ${JSON.stringify(command)}`, () => {
      const d = bash(command);
      assert.equal(d.kind, expect, JSON.stringify(d));
    });
  }
});

describe('guard: hold-out attacks (test/fixtures/guard/holdout-attacks.json)', () => {
  const attacks = (attackFile as { attacks: { command: string; expect: 'allow' | 'deny' }[] }).attacks;
  it(`has at least 30 attacks (${attacks.filter((a) => a.expect === 'deny').length})`, () => {
    assert.ok(attacks.filter((a) => a.expect === 'deny').length >= 30);
  });
  for (const a of attacks) {
    it(`${a.expect}: ${JSON.stringify(a.command)}`, () => {
      const d = bash(a.command);
      if (a.expect === 'deny') assert.equal(d.kind, 'deny', `bypass: ${JSON.stringify(d)}`);
      else assert.equal(d.kind, 'allow', JSON.stringify(d));
    });
  }
});

describe('guard: Write / Edit / MultiEdit under .ralph/ (§3.9)', () => {
  const write = (tool: string, file: string) =>
    decideGuard({ tool_name: tool, tool_input: { file_path: file, content: 'x' }, cwd: WS }, ctx());
  it('allows the agent files under .ralph/', () => {
    for (const f of [
      'handoff.md',
      'progress.md',
      'errors.log',
      'guardrails.md',
      'diagnosis.md',
      'acceptance-report.md',
      'policy-proposal',
    ]) {
      assert.deepEqual(write('Write', `${WS}/.ralph/${f}`), { kind: 'allow', effects: [] });
    }
  });
  it('denies every other file under .ralph/, traversal included, pointing at policy-proposal', () => {
    for (const f of [
      `${WS}/.ralph/command-policy`,
      `${WS}/.ralph/gates/basic-latest.exit`,
      `${WS}/src/../.ralph/config.json`,
      '.ralph/runs/x/run.json',
    ]) {
      const d = write('Edit', f);
      assert.equal(d.kind, 'deny', f);
      assert.match(d.kind === 'deny' ? d.reason : '', /policy-proposal/);
    }
  });
  it('denies the external gate state and MultiEdit the same way', () => {
    assert.equal(write('Write', '/home/u/.local/state/ralph/0123abcd/last-write-ts').kind, 'deny');
    assert.equal(write('MultiEdit', `${WS}/.ralph/command-policy`).kind, 'deny');
  });
  it('allows a source file and records the write', () => {
    assert.deepEqual(write('Write', `${WS}/src/a.ts`), { kind: 'allow', effects: [{ kind: 'write' }] });
  });
  it('denies a call without a path (fail closed)', () => {
    assert.equal(decideGuard({ tool_name: 'Write', tool_input: {}, cwd: WS }, ctx()).kind, 'deny');
  });
});

describe('guard: gate-without-write (§3.9 step 6, §3.15-1)', () => {
  const state = (s: Partial<GuardContext['state']>) =>
    ctx({ state: { lastWriteMs: 0, lastGateMs: {}, latestExitMs: {}, runningLabels: [], ...s } });
  it('a first gate is allowed and recorded', () => {
    const d = bash('npm test');
    assert.equal(d.kind, 'rewrite');
    assert.deepEqual(d.kind === 'rewrite' ? d.effects : [], [{ kind: 'gate', label: 'basic' }]);
  });
  it('a wrapped gate re-run with no edit since the last one finished is denied', () => {
    const d = bash('npm test', state({ lastGateMs: { basic: 500 }, latestExitMs: { basic: 600 }, lastWriteMs: 400 }));
    assert.equal(d.kind, 'deny');
    assert.match(d.kind === 'deny' ? d.reason : '', /gate basic already ran/);
  });
  it('a direct gate call is held to the same rule', () => {
    assert.equal(
      bash('ralph gate lint -- npm run lint', state({ lastGateMs: { lint: 500 }, latestExitMs: { lint: 600 } })).kind,
      'deny',
    );
  });
  it('after an edit (ms later) it is allowed', () => {
    assert.equal(
      bash('npm test', state({ lastGateMs: { basic: 500 }, latestExitMs: { basic: 600 }, lastWriteMs: 501 })).kind,
      'rewrite',
    );
  });
  it('while the gate is still running the call joins it', () => {
    assert.equal(
      bash('npm test', state({ lastGateMs: { basic: 500 }, latestExitMs: { basic: 400 }, runningLabels: ['basic'] }))
        .kind,
      'rewrite',
    );
  });
  it('an edit in the same command counts', () => {
    const d = bash(
      'sed -i s/a/b/ src/x.ts && npm test',
      state({ lastGateMs: { basic: 500 }, latestExitMs: { basic: 600 } }),
    );
    assert.equal(d.kind, 'rewrite');
    assert.deepEqual(d.kind === 'rewrite' ? d.effects : [], [{ kind: 'write' }, { kind: 'gate', label: 'basic' }]);
  });
});

describe('guard: without a policy the hard denies still hold', () => {
  it('denies .ralph deletion and allows git push', () => {
    assert.equal(bash('rm -rf .ralph', ctx({ policy: null })).kind, 'deny');
    assert.equal(bash('git push', ctx({ policy: null })).kind, 'allow');
  });
  it('other tools pass', () => {
    assert.equal(decideGuard({ tool_name: 'Read', tool_input: { file_path: '/x' } }, ctx()).kind, 'allow');
  });
});

describe('guard: scripts the command runs (read through the injected reader)', () => {
  const files: Record<string, string> = {
    [`${WS}/scripts/ok.sh`]: '#!/bin/bash\nset -e\n$CC -o out main.c\nnpm run build\n',
    [`${WS}/scripts/push.sh`]: '#!/usr/bin/env bash\necho releasing\ngit push origin main\n',
    [`${WS}/tool.js`]: '#!/usr/bin/env node\nconsole.log("git push")\n',
  };
  const c = ctx({ readScript: (f) => (f in files ? files[f] : undefined) });
  const cases: [string, 'allow' | 'deny'][] = [
    ['bash scripts/ok.sh', 'allow'],
    ['./scripts/ok.sh', 'allow'],
    ['bash scripts/push.sh', 'deny'],
    ['sh ./scripts/push.sh', 'deny'],
    ['source scripts/push.sh', 'deny'],
    ['. scripts/push.sh', 'deny'],
    ['./scripts/push.sh', 'deny'],
    ['cd scripts && ./push.sh', 'deny'],
    ['cd scripts && ./ok.sh', 'allow'],
    ['./tool.js', 'allow'],
    ["echo 'git push' > x.sh; bash x.sh", 'deny'],
    ["printf 'git push' > y.sh && chmod +x y.sh && ./y.sh", 'deny'],
    ["bash /dev/stdin <<< 'git push'", 'deny'],
    ["source /dev/stdin <<< 'git push'", 'deny'],
    ["script -qc 'git push' /dev/null", 'deny'],
    ["su -c 'git push' me", 'deny'],
    ["ssh localhost 'git push'", 'deny'],
    ["echo 'git push' | at now", 'deny'],
    ['chroot / git push', 'deny'],
    ["python3 -c \"import subprocess; subprocess.run(['git', 'push'])\"", 'deny'],
    ["node -e \"require('child_process').execSync('git push')\"", 'deny'],
    ["python3 - <<'EOF'\nimport os\nos.system('git push')\nEOF", 'deny'],
    ['python3 -c "print(1+1)"', 'allow'],
  ];
  for (const [command, expect] of cases) {
    it(`${expect}: ${JSON.stringify(command)}`, () => {
      const d = bash(command, c);
      assert.equal(d.kind, expect, JSON.stringify(d));
    });
  }
  it('a program known under another name is checked under its real name', () => {
    const c3 = ctx({ resolveProgram: (p) => (p === 'g' || p === '/home/u/bin/g' ? 'git' : undefined) });
    assert.equal(bash('g push', c3).kind, 'deny');
    assert.equal(bash('/home/u/bin/g push origin', c3).kind, 'deny');
    assert.equal(bash('g status', c3).kind, 'allow');
  });
  it('a wrapped command behind node node_modules/.bin is routed too', () => {
    const d = bash('node node_modules/.bin/mocha t.js');
    assert.equal(d.kind, 'rewrite');
  });
  it('an output redirection is not an edit that unlocks a gate re-run', () => {
    const c2 = ctx({
      state: { lastWriteMs: 0, lastGateMs: { basic: 500 }, latestExitMs: { basic: 600 }, runningLabels: [] },
    });
    assert.equal(bash('npm test > out.txt', c2).kind, 'deny');
    assert.equal(bash('git checkout -- src/a.ts && npm test', c2).kind, 'rewrite');
  });
});
