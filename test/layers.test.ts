// The shape of src/: dependencies point one way (scripts/import-graph.ts names the layers),
// and SQL lives in the control plane only.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LAYERS, drawGraph, graphOf } from '../scripts/import-graph.js';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/** A throwaway src/ tree of the given files (path → text). */
function tree(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-layers-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe('layers', () => {
  test('every folder of src/ has a layer and imports only lower ones', () => {
    const graph = graphOf(SRC);
    assert.deepEqual(graph.unplaced, [], 'a new folder or root module needs a place in LAYERS (scripts/import-graph.ts)');
    assert.deepEqual(graph.breaches, [], `an import points up or sideways; the graph now:\n${drawGraph(graph)}`);
    assert.deepEqual(graph.cycles, [], 'modules that import each other in a circle: move what both sides share into a module both import');
  });

  test('a circle of modules inside one folder is caught, type-only imports included', () => {
    const dir = tree({
      'api/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'api/b.ts': "import type { C } from './c.js';\nexport const b: C = 1;\n",
      'api/c.ts': "import { a } from './a.js';\nexport type C = typeof a;\n",
      'api/d.ts': "import { a } from './a.js';\nexport const d = a;\n",
      'api/self.ts': "export { self } from './self.js';\n",
    });
    try {
      assert.deepEqual(graphOf(dir).cycles, ['api/a.ts <-> api/b.ts <-> api/c.ts', 'api/self.ts']);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  test('an upward import, a sideways one, a dynamic one and a re-export are each caught', () => {
    const dir = tree({
      'model/a.ts': "import { b } from '../http/b.js';\nexport const a = b;\n",
      'net/c.ts': "import type { a } from '../model/a.js';\nexport type C = typeof a;\n",
      'lookup/d.ts': "export const d = async () => import('../api/e.js');\n",
      'index/f.ts': "export { e } from '../api/e.js';\n",
      'http/b.ts': "import { log } from '../log.js';\nexport const b = log;\n",
      'api/e.ts': "import { b } from '../http/b.js';\nexport const e = b;\n",
      'log.ts': 'export const log = 1;\n',
    });
    try {
      const graph = graphOf(dir);
      assert.deepEqual(graph.unplaced, []);
      assert.deepEqual(graph.breaches.map((b) => b.split(':')[0]).sort(), [
        'index/f.ts imports api/e.ts',
        'lookup/d.ts imports api/e.ts',
        'model/a.ts imports http/b.ts',
        'net/c.ts imports model/a.ts',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  test('a commented-out import is not an import', () => {
    const dir = tree({ 'model/a.ts': "// import { b } from '../http/b.js';\nexport const a = 1;\n", 'http/b.ts': 'export const b = 1;\n' });
    try {
      assert.deepEqual(graphOf(dir).breaches, []);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  test('no unit is named twice and every layer has one', () => {
    const all = LAYERS.flat();
    assert.equal(new Set(all).size, all.length);
    assert.ok(LAYERS.every((l) => l.length > 0));
  });

  test('SQL is written in src/control/ only', () => {
    const found: string[] = [];
    const walk = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (p !== path.join(SRC, 'control')) walk(p);
        } else if (/\b(SELECT\s.+\sFROM|INSERT INTO|UPDATE\s+\w+\s+SET|DELETE FROM|CREATE (TABLE|INDEX))\b|\.prepare\(/.test(fs.readFileSync(p, 'utf8'))) {
          found.push(path.relative(SRC, p));
        }
      }
    };
    walk(SRC);
    assert.deepEqual(found, []);
  });
});
