// The import graph of src/ by folder, and the layer rule it must keep: a folder imports only
// folders of lower layers, so dependencies point one way and no cycle between folders can
// form. Inside a folder, modules must not import each other in a circle either (file cycles:
// shared types belong in a module both sides import). The layers
// are written down here once; docs/contributing/architecture.md explains them, and
// test/layers.test.ts fails when an import breaks the rule.
//
//   node dist/scripts/import-graph.js [src-dir]   prints the folder graph and any breach

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Lowest first. A module at the root of src/ is its own unit (named without `.ts`), a folder
 * is one unit. A unit may import units of lower layers only: not its own layer's siblings.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['clock', 'errors', 'log', 'files', 'process-identity', 'version'],
  ['model', 'net', 'bridge', 'wire'],
  ['config', 'data-dir'],
  ['accounting', 'config-reference', 'feeds', 'index', 'objects'],
  ['exports', 'lookup', 'replica'],
  ['build', 'catalogue', 'batch', 'control', 'history'],
  ['pipeline'],
  ['http'],
  ['api', 'startup'],
  ['frontend', 'demo'],
  ['service'],
  ['cli'],
];

/** One import: the module that imports, the module imported (paths relative to src/). */
export interface Import {
  from: string;
  to: string;
}

const SPECIFIER = /(?:^|[^.\w])(?:import|export)\s[^'"`;]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|(?:^|[^.\w])import\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/gm;

function sourceFiles(dir: string, into: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sourceFiles(p, into);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) into.push(p);
  }
  return into;
}

/** Every relative import between modules of `srcDir`, type-only imports included. */
export function importsOf(srcDir: string): Import[] {
  const imports: Import[] = [];
  for (const file of sourceFiles(srcDir)) {
    const text = fs.readFileSync(file, 'utf8').replace(/^\s*\/\/.*$/gm, '');
    for (const m of text.matchAll(SPECIFIER)) {
      const target = path.resolve(path.dirname(file), m[1] ?? m[2]).replace(/\.js$/, '.ts');
      const to = path.relative(srcDir, target);
      if (to.startsWith('..')) continue;
      imports.push({ from: path.relative(srcDir, file), to });
    }
  }
  return imports;
}

/** The unit a module belongs to: its top folder, or its own name at the root. */
export function unitOf(module: string): string {
  const parts = module.split(/[\\/]/);
  return parts.length > 1 ? parts[0] : parts[0].replace(/\.ts$/, '');
}

export interface Graph {
  /** "from -> to" between units, with the imports behind each arrow. */
  arrows: Map<string, Import[]>;
  /** Imports that break the layer rule, each with the reason. */
  breaches: string[];
  /** Units found in src/ that no layer names. */
  unplaced: string[];
  /** Circles of modules importing each other (type-only imports included), each as a path. */
  cycles: string[];
}

/**
 * The circles of the module graph: each strongly connected component of more than one module
 * (or a module importing itself), as its modules in order, sorted (Tarjan's algorithm).
 */
export function fileCycles(imports: readonly Import[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of imports) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let counter = 0;
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || (next.get(v) ?? []).includes(v)) cycles.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles.sort((a, b) => a[0].localeCompare(b[0]));
}

export function graphOf(srcDir: string, layers = LAYERS): Graph {
  const rank = new Map<string, number>();
  for (const [i, units] of layers.entries()) for (const u of units) rank.set(u, i);
  const arrows = new Map<string, Import[]>();
  const breaches: string[] = [];
  const unplaced = new Set<string>();
  const imports = importsOf(srcDir);
  for (const imp of imports) {
    const a = unitOf(imp.from);
    const b = unitOf(imp.to);
    for (const u of [a, b]) if (!rank.has(u)) unplaced.add(u);
    if (a === b) continue;
    const key = `${a} -> ${b}`;
    arrows.set(key, [...(arrows.get(key) ?? []), imp]);
    const ra = rank.get(a);
    const rb = rank.get(b);
    if (ra === undefined || rb === undefined) continue;
    if (rb > ra) breaches.push(`${imp.from} imports ${imp.to}: ${b} (layer ${rb}) is above ${a} (layer ${ra})`);
    else if (rb === ra) breaches.push(`${imp.from} imports ${imp.to}: ${a} and ${b} share layer ${ra}; one of them must move`);
  }
  return { arrows, breaches, unplaced: [...unplaced].sort(), cycles: fileCycles(imports).map((c) => c.join(' <-> ')) };
}

/** The folder graph as text: one line per unit, lowest layer first, with what it imports. */
export function drawGraph(graph: Graph, layers = LAYERS): string {
  const lines: string[] = [];
  const targets = new Map<string, Set<string>>();
  for (const key of graph.arrows.keys()) {
    const [a, b] = key.split(' -> ');
    targets.set(a, (targets.get(a) ?? new Set()).add(b));
  }
  layers.forEach((units, i) => {
    for (const u of units) {
      const to = [...(targets.get(u) ?? [])].sort();
      lines.push(`${String(i).padStart(2)} ${u.padEnd(17)} -> ${to.join(', ') || '(nothing)'}`);
    }
  });
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const srcDir = path.resolve(process.argv[2] ?? path.join(here, '../../src'));
  const graph = graphOf(srcDir);
  console.log(drawGraph(graph));
  for (const u of graph.unplaced) console.log(`unplaced: ${u} (add it to a layer in scripts/import-graph.ts)`);
  for (const b of graph.breaches) console.log(`breach: ${b}`);
  for (const c of graph.cycles) console.log(`file cycle: ${c} (move what both sides share into a module both import)`);
  process.exitCode = graph.breaches.length || graph.unplaced.length || graph.cycles.length ? 1 : 0;
}
