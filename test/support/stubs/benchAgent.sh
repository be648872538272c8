#!/bin/bash
# The lanes bench's stub agent (bench/lanes.bench.ts, issue 19): a Claude Code CLI stand-in that costs next to no CPU,
# so that the bench measures the runner's scheduling rather than its agents' start-up (a Node stub costs ~0.1 s of CPU
# per start here, ~0.3 s on two busy cores: a third of what a story costs the machine). From the story id in its
# prompt (the last argument, "Story <id>: …") it writes `<lower-cased id>.txt` holding the id, commits it, sleeps
# $BENCH_STUB_SLEEP_S seconds (default 1.5) and prints a stream-json reply ending in <quantum>STORY_PASSED</quantum>.
# Exits 2 when the prompt names no story, non-zero when git fails (set -e). With $BENCH_STUB_LOG set it first appends
# `start <id> <epoch seconds.micro>` there (the remote lanes bench times a dispatch up to the agent's start).
set -eu
prompt="${!#}"
if [[ $prompt =~ Story\ ([A-Za-z0-9._-]+): ]]; then id="${BASH_REMATCH[1]}"; else echo "benchAgent.sh: no 'Story <id>:' in the prompt" >&2; exit 2; fi
if [[ -n ${BENCH_STUB_LOG:-} ]]; then printf 'start %s %s\n' "$id" "$EPOCHREALTIME" >> "$BENCH_STUB_LOG"; fi
file="${id,,}.txt"
printf '%s\n' "$id" > "$file"
export GIT_AUTHOR_NAME=stub GIT_AUTHOR_EMAIL=stub@example.invalid GIT_COMMITTER_NAME=stub GIT_COMMITTER_EMAIL=stub@example.invalid
git add -A -- "$file"
git commit -q --no-verify -m "$id: work"
sleep "${BENCH_STUB_SLEEP_S:-1.5}"
nonce="$id-$$-$EPOCHREALTIME"
text="$id done <quantum>STORY_PASSED</quantum>"
usage='"usage":{"input_tokens":100,"output_tokens":10}'
printf '%s\n' "{\"type\":\"assistant\",\"message\":{\"id\":\"m-$nonce\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"$text\"}],$usage}}"
printf '%s\n' "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"$text\",\"num_turns\":1,\"total_cost_usd\":0.01,$usage,\"session_id\":\"$nonce\"}"
