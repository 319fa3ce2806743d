#!/usr/bin/env -S node --initial-old-space-size=64
// The compiled CLI lives in dist/ (built by `npm ci` through the prepare script). The flag gives
// V8's old generation room (docs/contributing/decisions.md); every launcher of the service has it.
import '../dist/src/cli.js';
