// The front-end thread's entry. On Node 20 a worker stopped while it loads an ES module
// synchronously aborts the process; a CommonJS entry that import()s the module is stopped
// cleanly (see batch-entry.cts).

void import('./frontend.js');
