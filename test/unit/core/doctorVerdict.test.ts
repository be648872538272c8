import * as assert from 'node:assert/strict';
import { claudeRootBypassWarning as rootBypassWarning } from '../../../src/core/agents/claude';
import { agentPathSource, doctorVerdict, formatDoctorReport, type DoctorReport } from '../../../src/core/doctor/report';

type V = Parameters<typeof doctorVerdict>[0];
const base: V = { ok: false, trust: null, sources: [], agents: [], selectedAgent: null };
const quantum = [{ kind: 'quantum', path: 'quantum.json' }] as DoctorReport['sources'];
const missingClaude = { key: 'claudePath', value: 'claude', source: 'default' as const, found: false };

describe('doctor: where the agent path comes from (new-user try, session 3)', () => {
  const cases: [string, Record<string, unknown>, Record<string, unknown> | undefined, string][] = [
    ['no file, no settings: the default', {}, undefined, 'default'],
    ['the file sets it', { claudePath: 'bin/claude' }, undefined, '.ralph/config.json'],
    ['settings win over the file', { claudePath: 'bin/claude' }, { claudePath: 'bin/claude' }, 'settings'],
    ['a file value that was ignored (untrusted) is not the source', { claudePath: 'evil' }, undefined, 'default'],
  ];
  for (const [name, file, settings, want] of cases) {
    it(name, () => {
      const value = name.startsWith('a file value')
        ? 'claude'
        : ((settings?.claudePath ?? file.claudePath ?? 'claude') as string);
      assert.equal(agentPathSource('claudePath', value, file, settings), want);
    });
  }
});

describe('doctor: the verdict names what is missing', () => {
  const cases: [string, V, RegExp][] = [
    [
      'only the agent missing',
      { ...base, sources: quantum, selectedAgent: missingClaude },
      /^NOT READY: needs the agent `ralph run` would start \(claudePath "claude", the default\)\.$/,
    ],
    [
      'only the task source missing',
      {
        ...base,
        agents: [{ name: 'claude', path: '/x/claude', version: '2' }] as DoctorReport['agents'],
        selectedAgent: { ...missingClaude, found: true },
      },
      /^NOT READY: needs a task source \(quantum\.json, \.flow\/, a checklist\)\.$/,
    ],
    [
      'both missing',
      { ...base, selectedAgent: { ...missingClaude, source: '.ralph/config.json' } },
      /needs a task source .* and the agent `ralph run` would start \(claudePath "claude", from \.ralph\/config\.json\)/,
    ],
    [
      'untrusted configuration',
      { ...base, trust: { allowed: false } as DoctorReport['trust'] },
      /until the workspace configuration is trusted/,
    ],
    [
      'source and agent there, but no gate: the run would refuse, and the verdict says how to add one',
      {
        ...base,
        sources: quantum,
        agents: [{ name: 'claude', path: '/x/claude', version: '2' }] as DoctorReport['agents'],
        refusals: ['no gate is configured (add a [gates] section to .ralph/command-policy …)'],
      },
      /^NOT READY: `ralph run` would refuse: no gate is configured \(add a \[gates\] section/,
    ],
    [
      'a source missing and no gate: both named, the missing one first',
      { ...base, selectedAgent: { ...missingClaude, found: true }, refusals: ['no gate is configured'] },
      /^NOT READY: needs a task source .*; then `ralph run` would refuse: no gate is configured\.$/,
    ],
    ['ready', { ...base, ok: true }, /^OK: `ralph run` can start/],
  ];
  for (const [name, r, want] of cases) it(name, () => assert.match(doctorVerdict(r), want));
});

describe('doctor: warns that the Claude CLI refuses bypassPermissions as root', () => {
  const cases: [string, Parameters<typeof rootBypassWarning>, boolean][] = [
    ['root, claude, bypass, no IS_SANDBOX', [0, 'claude', 'bypassPermissions', undefined], true],
    ['root with IS_SANDBOX=1 (the CLI allows it)', [0, 'claude', 'bypassPermissions', '1'], false],
    ['a normal user', [1000, 'claude', 'bypassPermissions', undefined], false],
    ['root, cursor-agent', [0, 'cursor-agent', 'bypassPermissions', undefined], false],
    ['root, permission mode acceptEdits', [0, 'claude', 'acceptEdits', undefined], false],
  ];
  for (const [name, args, warns] of cases) {
    it(name, () => {
      const w = rootBypassWarning(...args);
      assert.equal(w !== null, warns);
      if (w) assert.match(w, /as root.*non-root\) user.*IS_SANDBOX=1/);
    });
  }
});

describe('doctor: the command guard (issue 17): cursor-agent has no PreToolUse hook', () => {
  const report = (agents: DoctorReport['agents']): DoctorReport => ({
    folder: '/w',
    sources: quantum,
    agents,
    problems: [],
    trust: null,
    untrustedAgentPaths: [],
    selectedAgent: null,
    warnings: [],
    gates: { source: 'command-policy', file: '.ralph/command-policy', tiers: ['basic'] },
    refusals: [],
    ok: true,
    containment: { mode: 'auto', kind: 'pid-namespace', detail: 'x' } as DoctorReport['containment'],
    protection: { kind: 'not-enforced', detail: 'not enforced here (no user namespaces)' },
  });
  it('says the guard is not enforced for cursor-agent, and how claude gets it', () => {
    const text = formatDoctorReport(
      report([
        { name: 'claude', path: '/x/claude', version: '2' },
        { name: 'cursor-agent', path: '/x/cursor-agent', version: '1' },
      ] as DoctorReport['agents']),
    );
    assert.match(text, /Command guard:\n {2}claude {8}PreToolUse hook passed with --settings by `ralph run`/);
    // Where the kernel refuses, the protected paths are said to be not enforced, never claimed.
    assert.match(text, /Protected paths .*:\n {2}not enforced here \(no user namespaces\)\n {2}NOT ENFORCED HERE/);
    assert.match(
      text,
      /\n {2}cursor-agent {2}no PreToolUse hook: \.ralph\/command-policy and the guard's hard denies are NOT enforced for it/,
    );
  });
  it('lists every agent: the found ones with version and path, the missing ones with how to install them', () => {
    const text = formatDoctorReport(
      report([
        { name: 'claude', path: '/x/claude', version: '2.1.328' },
        { name: 'gemini', path: '/x/gemini', version: '0.61.0' },
      ] as DoctorReport['agents']),
    );
    assert.match(text, /\n {2}gemini {8}0\.61\.0 {2}\/x\/gemini\n/);
    assert.match(
      text,
      /\n {2}copilot {7}not found — install: npm install -g @github\/copilot \(or set copilotPath\)\n/,
    );
    assert.match(text, /\n {2}cursor-agent {2}not found — install: curl https:\/\/cursor\.com\/install -fsS \| bash/);
    for (const name of ['codex', 'opencode', 'qwen'])
      assert.match(text, new RegExp(`\\n  ${name} +not found — install: npm`));
    assert.doesNotMatch(text, /\n {2}claude +not found/);
  });
  it('names no agent without the hook when only claude is found', () => {
    assert.doesNotMatch(
      formatDoctorReport(report([{ name: 'claude', path: '/x/claude', version: '2' }] as DoctorReport['agents'])),
      /no PreToolUse hook/,
    );
  });
});
