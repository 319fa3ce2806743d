#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import '../dist/src/cli.js';
