#!/usr/bin/env node
// `node scripts/record-agent-streams.mjs`: re-records test/fixtures/streams/<agent>/recorded/ (see scripts/record-agent-streams.ts).
// Bundles the recorder with esbuild into a temp file and runs it; commit the changed fixtures.
import { bundleAndRun } from './bundleAndRun.mjs';

await bundleAndRun('record-agent-streams', process.argv.slice(2));
