// Loaded by the unit tier (.mocharc.unit.json "require"): the unit tier is pure, so starting a child process or
// opening a network connection there throws, naming what was attempted and where such a test belongs
// (test/component/; see docs/testing.md). Nothing else changes.
'use strict';
const childProcess = require('node:child_process');
const net = require('node:net');

function refuse(what) {
  throw new Error(
    `the unit tier is pure: ${what} is not allowed here; move this test to test/component/ (docs/testing.md)`,
  );
}

for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
  childProcess[name] = (file) => refuse(`child_process.${name}(${JSON.stringify(String(file))})`);
}
net.Socket.prototype.connect = function (...args) {
  const target =
    typeof args[0] === 'object' && args[0] !== null
      ? JSON.stringify({ host: args[0].host, port: args[0].port, path: args[0].path })
      : String(args[0]);
  refuse(`a network connection to ${target}`);
};
