// Preloaded into a hosted JavaScript bot's sandbox (`node --require /runtime/started.js
// /bot/bot.js`; copied into the Node runtime when it is built, tournaments/hosting/runtimes.py):
// loads the runtime's own packages, then tells the runner that the runtime is up. The line
// written to TIENLEN_STATUS_FD is the boundary between the platform's fault and the bot's:
// everything before it is the platform's; the bot's own module runs after it. The
// descriptor is closed before, so the bot cannot write to it.
"use strict";
require("@grpc/grpc-js");
require("@grpc/proto-loader");
const fs = require("node:fs");
const fd = Number(process.env.TIENLEN_STATUS_FD);
delete process.env.TIENLEN_STATUS_FD;
if (Number.isInteger(fd) && fd > 2) {
  fs.writeSync(fd, "started\n");
  fs.closeSync(fd);
}
