// Route tables for the servers that do not route natively (node:http, Bun.serve): per method,
// the patterns in uWS's order of precedence, then the any-method routes.

import { compareSpecificity, matchPath, parsePattern, type Pattern } from './patterns.js';
import type { Handler, HttpApp } from './types.js';

interface Route {
  pattern: Pattern;
  handler: Handler;
}

const LOWER_METHODS: Record<string, string> = { GET: 'get', HEAD: 'head', POST: 'post', DELETE: 'delete', PUT: 'put', PATCH: 'patch', OPTIONS: 'options' };

/** A request method in lower case, as uWS gives it (the common ones without a new string). */
export const lowerMethod = (method: string): string => LOWER_METHODS[method] ?? method.toLowerCase();

/** A method's routes: those whose first segment is fixed, by that segment, and the others. */
interface MethodRoutes {
  byFirst: Map<string, Route[]>;
  open: Route[];
}

export class Router implements HttpApp {
  private readonly byMethod = new Map<string, MethodRoutes>();
  private readonly anyMethod: MethodRoutes = { byFirst: new Map(), open: [] };

  get = (pattern: string, handler: Handler): this => this.add('GET', pattern, handler);
  post = (pattern: string, handler: Handler): this => this.add('POST', pattern, handler);
  del = (pattern: string, handler: Handler): this => this.add('DELETE', pattern, handler);
  head = (pattern: string, handler: Handler): this => this.add('HEAD', pattern, handler);
  any = (pattern: string, handler: Handler): this => this.add('*', pattern, handler);

  private add(method: string, text: string, handler: Handler): this {
    let routes = this.anyMethod;
    if (method !== '*') {
      routes = this.byMethod.get(method) ?? { byFirst: new Map(), open: [] };
      this.byMethod.set(method, routes);
    }
    const pattern = parsePattern(text);
    // parts[0] is the empty text before the leading '/'; parts[1] decides the bucket.
    let list = routes.open;
    if (pattern.ranks[1] === 0) {
      list = routes.byFirst.get(pattern.parts[1]) ?? [];
      routes.byFirst.set(pattern.parts[1], list);
    }
    list.push({ pattern, handler });
    list.sort((a, b) => compareSpecificity(a.pattern, b.pattern));
    return this;
  }

  /** The handler for a method (upper case) and path (from its leading '/'), with its ':name' segments in `params`; null for none. */
  find(method: string, path: string, params: string[]): Handler | null {
    const end = path.indexOf('/', 1);
    const firstSegment = path.slice(1, end < 0 ? path.length : end);
    return inRoutes(this.byMethod.get(method), path, firstSegment, params) ?? inRoutes(this.anyMethod, path, firstSegment, params);
  }
}

/** A fixed first segment beats a parameter or wildcard there (uWS's order), so its bucket goes first. */
function inRoutes(routes: MethodRoutes | undefined, path: string, firstSegment: string, params: string[]): Handler | null {
  if (routes === undefined) return null;
  const fixed = routes.byFirst.get(firstSegment);
  return (fixed === undefined ? null : first(fixed, path, params)) ?? first(routes.open, path, params);
}

function first(routes: Route[], path: string, params: string[]): Handler | null {
  for (const r of routes) {
    params.length = 0;
    if (matchPath(r.pattern, path, params)) return r.handler;
  }
  return null;
}
