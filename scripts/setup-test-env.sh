#!/usr/bin/env bash
# Installs what the test tiers need, idempotently, into the git-ignored .vscode-test/ folder:
#   - Debian packages: chromium (e2e and integration host page), libkrb5-dev (kerberos addon), ripgrep (VS Code search)
#   - VS Code 1.100.3's server from the npm package code-server@4.100.3, with its native addons built for Node 20
#   - the Claude Code CLI binary (devDependency @anthropic-ai/claude-code@2.1.328; npm 11 blocks its postinstall)
#   - redis-server from Debian (the remote-lanes tests start their own on 127.0.0.1 with a password)
#   - the other agent CLIs the tests drive, at pinned versions from npm, each in its own folder of the git-ignored
#     .agent-clis/ (Codex, Gemini, Copilot, opencode, Qwen Code: not devDependencies, so `npm ci` stays as fast), and
#     opencode's @opencode-ai/plugin for the tests' opencode config folders (.agent-clis/opencode-plugin)
# Why each step is needed: docs/testing.md ("The test environment"). Safe to run again: finished steps are skipped by
# stamp files. The VS Code server and the agent CLIs are installed once per user into $RALPH_TEST_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/ralph-loop-test, one folder per pinned version, under a lock) and linked into the
# repository's git-ignored folders, so another clone of the repository (CI's clean clone) reuses them;
# RALPH_TEST_CACHE=none installs into the repository's folders alone. --agents-only (alias --claude-only): only the
# agent CLIs and redis-server (the component, stress and corpus tiers need nothing else).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.vscode-test"
cs_version="4.100.3"
mkdir -p "$cache"
log() { printf '[setup] %s\n' "$*"; }
user_cache="${RALPH_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ralph-loop-test}"

# cached <link> <stamp> <install function> <name>: makes <link> a ready folder (one holding the file <stamp>). With a
# user cache, the folder is <user cache>/<name>, installed there once (under a lock: two clones setting up at once
# wait for each other) and linked at <link>; with RALPH_TEST_CACHE=none, installed at <link> itself. The install
# function gets the folder to fill and returns non-zero on failure (errexit does not apply inside `||`).
cached() {
  local link="$1" stamp="$2" install="$3" name="$4" shared
  if [ -f "$link/$stamp" ]; then return 0; fi
  if [ "$user_cache" = none ]; then
    rm -rf "$link" && mkdir -p "$link" && "$install" "$link" && touch "$link/$stamp"
    return
  fi
  shared="$user_cache/$name"
  mkdir -p "$user_cache"
  (
    if command -v flock >/dev/null 2>&1; then flock 9; fi
    if [ ! -f "$shared/$stamp" ]; then
      { rm -rf "$shared" && mkdir -p "$shared" && "$install" "$shared" && touch "$shared/$stamp"; } || exit 1
    fi
  ) 9>"$user_cache/.lock" || return 1
  rm -rf "$link"
  ln -s "$shared" "$link"
  log "linked $link -> $shared"
}
only_agents=0
case "${1:-}" in --agents-only | --claude-only) only_agents=1 ;; esac

place_claude() {
  # The Claude Code CLI: put the native binary in place of bin/claude.exe (its blocked postinstall).
  local cc="$root/node_modules/@anthropic-ai/claude-code"
  if [ ! -d "$cc" ]; then log "ERROR: node_modules/@anthropic-ai/claude-code is missing: run 'npm ci' first."; exit 1; fi
  if ! "$root/node_modules/.bin/claude" --version >/dev/null 2>&1; then
    log "placing the Claude Code CLI binary"
    (cd "$cc" && node install.cjs >/dev/null)
  fi
  log "claude $("$root/node_modules/.bin/claude" --version)"
}

# The other agent CLIs: name, npm package@version, binary name. Bump a pin here (and in docs/agents.md).
agent_clis=(
  "codex @openai/codex@0.171.0 codex"
  "gemini @google/gemini-cli@0.61.0 gemini"
  "copilot @github/copilot@1.0.102 copilot"
  "opencode opencode-ai@1.18.33 opencode"
  "qwen @qwen-code/qwen-code@0.24.4 qwen"
)
install_agent_cli() {
  local dir="$1"
  log "installing $spec into $dir"
  echo '{"name":"ralph-agent-cli","private":true}' >"$dir/package.json" || return 1
  # Install scripts run: opencode's postinstall links its binary into place, Gemini's build its native modules.
  if ! (cd "$dir" && npm install --no-save --no-audit --no-fund --no-package-lock "$spec" >"$dir/npm.log" 2>&1); then
    log "ERROR: installing $spec failed (see $dir/npm.log)"; return 1
  fi
}
place_agent_clis() {
  local clis="$root/.agent-clis" name spec bin
  mkdir -p "$clis"
  for row in "${agent_clis[@]}"; do
    read -r name spec bin <<<"$row"
    if [ ! -x "$clis/$name/node_modules/.bin/$bin" ]; then rm -f "$clis/$name/.ready-${spec##*@}"; fi
    cached "$clis/$name" ".ready-${spec##*@}" install_agent_cli "agent-$name-${spec##*@}" || exit 1
  done
  cached "$clis/opencode-plugin" ".ready-$opencode_version" install_opencode_plugin "opencode-plugin-$opencode_version" || exit 1
  log "agent CLIs ready in $clis ($(ls "$clis" | tr '\n' ' '))"
}
# opencode, at every start, installs @opencode-ai/plugin (its own version) with npm into each config folder whose
# package-lock.json lacks it, in the background: in a fresh HOME (every test's) that is a 30 MB download and about 12 s
# of CPU, cut off when the run ends, so the next start does it again. A user's opencode does it once. Installed here
# once, as opencode would (its lock names the package, scripts not run); the tests' config folders link it
# (test/support/agentEnv.ts, opencodeConfigDeps).
opencode_version="$(for row in "${agent_clis[@]}"; do
  read -r name spec bin <<<"$row"
  if [ "$name" = opencode ]; then echo "${spec##*@}"; fi
done)"
install_opencode_plugin() {
  local dir="$1"
  log "installing @opencode-ai/plugin@$opencode_version into $dir"
  printf '{"dependencies":{"@opencode-ai/plugin":"%s"}}\n' "$opencode_version" >"$dir/package.json" || return 1
  if ! (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts >"$dir/npm.log" 2>&1); then
    log "ERROR: installing @opencode-ai/plugin@$opencode_version failed (see $dir/npm.log)"; return 1
  fi
}
# redis-server (Debian's): the remote lanes' tests (test/component/remote/) and bench start their own, on 127.0.0.1 with
# a random port and a password (test/support/redisServer.ts). Needed by the component tier too, hence here.
place_redis() {
  if command -v redis-server >/dev/null 2>&1; then return; fi
  log "installing Debian package: redis-server"
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo_cmd="sudo"
  if ! { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq redis-server; } >"$cache/apt-redis.log" 2>&1; then
    log "ERROR: could not install redis-server with apt-get (see $cache/apt-redis.log)."
    log "Install it yourself (e.g. 'sudo apt-get install redis-server') and run this script again."
    exit 1
  fi
  # Debian's package starts a system service on port 6379; the tests never use it.
  { $sudo_cmd systemctl disable --now redis-server || $sudo_cmd service redis-server stop; } >/dev/null 2>&1 || true
}
if [ "$only_agents" = 1 ]; then place_claude; place_agent_clis; place_redis; exit 0; fi

# 1. Debian packages.
missing=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing+=(chromium)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
[ -f /usr/include/krb5.h ] || [ -f /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo_cmd="sudo"
  if ! { $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"; } >"$cache/apt.log" 2>&1; then
    log "ERROR: could not install ${missing[*]} with apt-get (see $cache/apt.log)."
    log "Install them yourself (e.g. 'sudo apt-get install ${missing[*]}') and run this script again."
    exit 1
  fi
fi

# 2. The agent CLIs and redis-server.
place_claude
place_agent_clis
place_redis

# 3. VS Code 1.100.3's server from code-server@4.100.3.
srv="$cache/server"
vs="$srv/node_modules/code-server/lib/vscode"
install_server() {
  local srv="$1" vs="$1/node_modules/code-server/lib/vscode"
  log "installing code-server@$cs_version (VS Code 1.100.3 server) into $srv"
  echo '{"name":"ralph-test-server","private":true}' >"$srv/package.json" || return 1
  (cd "$srv" && npm install --no-save --no-audit --no-fund --ignore-scripts "code-server@$cs_version" >"$cache/npm-server.log" 2>&1) || return 1
  (cd "$vs" && npm install --omit=dev --no-audit --no-fund --ignore-scripts >>"$cache/npm-server.log" 2>&1) || return 1
  for m in kerberos node-pty @vscode/spdlog native-watchdog @vscode/deviceid; do
    if [ -d "$vs/node_modules/$m" ]; then
      log "building native addon $m"
      (cd "$vs/node_modules/$m" && npx --yes node-gyp rebuild >>"$cache/gyp.log" 2>&1) || { log "ERROR: building $m failed (see $cache/gyp.log)"; return 1; }
    fi
  done
  mkdir -p "$vs/node_modules/@vscode/ripgrep/bin" || return 1
  ln -sf "$(command -v rg)" "$vs/node_modules/@vscode/ripgrep/bin/rg" || return 1
  ln -sfn node_modules "$vs/node_modules.asar" || return 1
  (cd "$vs/extensions" && npm install --omit=dev --no-audit --no-fund --ignore-scripts >>"$cache/npm-server.log" 2>&1) || {
    log "ERROR: installing the server failed (see $cache/npm-server.log)"; return 1; }
}
cached "$srv" ".ready-$cs_version" install_server "vscode-server-$cs_version" || exit 1
log "VS Code server ready: $vs/out/server-main.js"
