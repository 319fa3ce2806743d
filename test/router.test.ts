// The route matching of the servers that do not route natively (node:http, Bun.serve): the
// text-walking matcher against the plain reading of uWS's rules (split into segments), and the
// router's precedence (a fixed segment beats a parameter, a parameter the wildcard).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { prng } from '../scripts/gen-feeds.js';
import { matchPath, parsePattern, type Pattern } from '../src/http/server/patterns.js';
import { Router } from '../src/http/server/router.js';
import type { Handler } from '../src/http/server/types.js';

/** uWS's rules read plainly: split both, compare segment by segment. */
function reference(p: Pattern, path: string): string[] | null {
  const segments = path.split('/');
  const params: string[] = [];
  for (let i = 0; i < p.parts.length; i++) {
    if (p.ranks[i] === 2) return segments.length > i ? params : null;
    if (i >= segments.length) return null;
    if (p.ranks[i] === 1) {
      if (segments[i] === '') return null;
      params.push(segments[i]);
    } else if (p.parts[i] !== segments[i]) return null;
  }
  return p.parts.length === segments.length ? params : null;
}

const PATTERNS = ['/', '/:ip', '/myip', '/batch', '/api/v1/database/:op', '/api/v1/iam/apikeys/:id/rotate', '/files/*', '/*', '/a/:b/*', '/a//b'];
const WORDS = ['', 'a', 'b', 'myip', 'batch', 'api', 'v1', 'database', 'list', 'iam', 'apikeys', 'rotate', 'files', '1.2.3.4', 'x'];

describe('route matching', () => {
  test('the text-walking matcher agrees with the split reading on 20 000 random paths', () => {
    const random = prng(14);
    const patterns = PATTERNS.map(parsePattern);
    for (let n = 0; n < 20_000; n++) {
      const depth = 1 + Math.floor(random() * 6);
      let path = '';
      for (let d = 0; d < depth; d++) path += '/' + WORDS[Math.floor(random() * WORDS.length)];
      for (const p of patterns) {
        const params: string[] = [];
        const ok = matchPath(p, path, params);
        const want = reference(p, path);
        assert.equal(ok, want !== null, `${p.text} ~ ${path}`);
        if (ok) assert.deepEqual(params, want, `${p.text} ~ ${path}`);
      }
    }
  });

  test("a fixed segment beats a parameter, a parameter the wildcard; a method's routes beat any-method ones", () => {
    const router = new Router();
    const named = (name: string): Handler => Object.assign(() => {}, { route: name });
    router.any('/*', named('any /*'));
    router.get('/:ip', named('GET /:ip'));
    router.get('/myip', named('GET /myip'));
    router.get('/files/*', named('GET /files/*'));
    router.get('/api/v1/database/:op', named('GET /api/v1/database/:op'));
    router.any('/api/v1/database/:op', named('any /api/v1/database/:op'));
    const found = (method: string, path: string): [string | undefined, string[]] => {
      const params: string[] = [];
      const h = router.find(method, path, params) as (Handler & { route?: string }) | null;
      return [h?.route, params];
    };
    assert.deepEqual(found('GET', '/myip'), ['GET /myip', []]);
    assert.deepEqual(found('GET', '/8.8.8.8'), ['GET /:ip', ['8.8.8.8']]);
    assert.deepEqual(found('GET', '/files/a/b'), ['GET /files/*', []]);
    assert.deepEqual(found('GET', '/files'), ['GET /:ip', ['files']]);
    assert.deepEqual(found('GET', '/api/v1/database/list'), ['GET /api/v1/database/:op', ['list']]);
    assert.deepEqual(found('POST', '/api/v1/database/list'), ['any /api/v1/database/:op', ['list']]);
    assert.deepEqual(found('GET', '/'), ['any /*', []]);
    assert.deepEqual(found('DELETE', '/x/y'), ['any /*', []]);
  });
});
