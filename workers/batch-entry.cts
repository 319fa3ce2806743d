// Piscina's entry for the batch worker. Piscina loads a worker file with require(), and on
// Node 20 require() of an ES module (workers/batch.js) is a synchronous load that aborts the
// whole process with a fatal V8 error when the worker is terminated in the middle of it (seen
// when Piscina replaces or stops a worker that is still starting). This file is CommonJS, so
// require() loads it alone, and the ES module is loaded by import(), which a termination
// stops cleanly. Piscina awaits an exported `default` that is a promise before it reports the
// worker ready, so no task reaches a worker that is still loading (`__esModule` keeps
// Piscina's interop from wrapping the exports in another `default`).

export = { __esModule: true, default: import('./batch.js').then((m) => m.default) };
