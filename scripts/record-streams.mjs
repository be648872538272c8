#!/usr/bin/env node
// `node scripts/record-streams.mjs`: re-records test/fixtures/streams/claude/recorded/ (see scripts/record-streams.ts).
// `node scripts/record-streams.mjs gemini|copilot`: re-records that agent's streams (scripts/record-gemini-copilot-streams.ts).
// Bundles the recorder with esbuild into a temp file and runs it; commit the changed fixtures.
import { bundleAndRun } from './bundleAndRun.mjs';

const agents = process.argv.slice(2);
await bundleAndRun(agents.length ? 'record-gemini-copilot-streams' : 'record-streams', agents);
