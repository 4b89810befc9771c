// Node `--require` preload for the HTTP interop tests: keeps every TCP server
// the process starts on the loopback interface.
//
//     PORT=8123 node --require interop/loopback.cjs server.js
//     NODE_OPTIONS="--require /abs/path/interop/loopback.cjs" PORT=8123 mcp-server-everything streamableHttp
//
// * Every `net.Server#listen()` (and so `http.Server#listen()`, Express's
//   `app.listen()`) on a TCP port is forced to host 127.0.0.1, whatever host
//   (or none, meaning all interfaces) the server asked for. Unix-socket and
//   handle listens are left alone.
// * When the environment variable `PORT` is set, the FIRST TCP listen of the
//   process uses that port instead of the one in the code (the TypeScript SDK
//   examples hard-code 3000). Later listens keep their own port (an example's
//   second listener, e.g. an OAuth server on MCP_AUTH_PORT, stays where it was).
'use strict';

const net = require('net');

const HOST = '127.0.0.1';
const originalListen = net.Server.prototype.listen;
let portOverride = process.env.PORT ? Number.parseInt(process.env.PORT, 10) : undefined;
if (!Number.isInteger(portOverride) || portOverride < 0 || portOverride > 65535) {
  portOverride = undefined;
}

function takePort(port) {
  if (portOverride === undefined) return port;
  const p = portOverride;
  portOverride = undefined;
  return p;
}

function isPort(value) {
  return (
    typeof value === 'number' ||
    (typeof value === 'string' && value !== '' && /^\d+$/.test(value))
  );
}

net.Server.prototype.listen = function listen(...args) {
  const first = args[0];
  if (isPort(first) || first === undefined || typeof first === 'function') {
    // listen([port[, host[, backlog]]][, callback])
    const callback = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
    const port = takePort(isPort(first) ? Number(first) : 0);
    // Drop the caller's host; keep a numeric backlog if one was given.
    const backlog = args.length >= 3 && typeof args[2] === 'number' ? args[2] : undefined;
    const options = { port, host: HOST };
    if (backlog !== undefined) options.backlog = backlog;
    return callback
      ? originalListen.call(this, options, callback)
      : originalListen.call(this, options);
  }
  if (first !== null && typeof first === 'object' && !(first instanceof net.Server) && first.path === undefined && first.fd === undefined && first._handle === undefined && first.handle === undefined) {
    // listen(options[, callback]) on a TCP port.
    const options = Object.assign({}, first, { host: HOST });
    options.port = takePort(first.port === undefined ? 0 : Number(first.port));
    delete options.ipv6Only;
    return originalListen.call(this, options, ...args.slice(1));
  }
  return originalListen.apply(this, args);
};
