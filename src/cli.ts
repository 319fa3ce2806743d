#!/usr/bin/env node
// `ipsift`: the command line (cli/main.ts), run with this process's arguments. The launchers
// (npm start, bin/ipsift.js, the image, the systemd unit) all start this file.

import { main } from './cli/main.js';

const code = await main(process.argv.slice(2));
// -1: serve, which keeps running.
if (code >= 0) process.exitCode = code;
