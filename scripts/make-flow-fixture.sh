#!/usr/bin/env bash
# Re-creates test/fixtures/seed-formats/flow-next/.flow with flow-next's own CLI (flowctl), so the tests read a tree
# written the way flow-next writes it: two specs, tasks done, todo, blocked, and a closed spec.
# Usage: bash scripts/make-flow-fixture.sh /path/to/flowctl.py   (flowctl 4.4.0; it is not part of this repository)
# The output (not flowctl) is committed; its timestamps change with each run.
set -euo pipefail
flowctl=${1:?usage: $0 /path/to/flowctl.py}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/test/fixtures/seed-formats/flow-next"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/ws"
cd "$tmp/ws"
export FLOW_ACTOR=worker@example.invalid
f() { python3 "$flowctl" "$@" --json >/dev/null; }
python3 "$flowctl" init >/dev/null
f spec create --title "Parse the config file"
s1=fn-1-parse-the-config-file
f task create --spec "$s1" --title "Tokenizer" --acceptance "- [ ] tokens for every JSON value"
f task create --spec "$s1" --title "Parser" --deps "$s1.1" --acceptance "- [ ] nested objects parse"
f task create --spec "$s1" --title "Error messages" --deps "$s1.1" --acceptance "- [ ] errors name line and column"
f start "$s1.1"
f done "$s1.1" --summary "Tokenizer with line and column on every token." --evidence '{"commits":["3f2a9c1"],"tests":["npm test"],"prs":[]}'
f start "$s1.3"
echo "needs the parser's error type first" > "$tmp/reason.md"
f block "$s1.3" --reason-file "$tmp/reason.md"
f spec create --title "Release"
s2=fn-2-release
f task create --spec "$s2" --title "Release notes" --acceptance "- [ ] notes list every change"
f start "$s2.1"
f done "$s2.1" --summary "Notes written." --evidence '{"commits":["9b1d4e7"],"tests":[],"prs":[]}'
f spec close "$s2"
rm -rf .flow/locks .flow/memory .flow/state/locks
rm -rf "$out"
mkdir -p "$out"
cp -R .flow "$out/.flow"
echo "wrote $out/.flow ($(find "$out/.flow" -type f | wc -l) files)"
