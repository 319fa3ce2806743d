// Which methods each path takes, so that a known path asked with another method gets 405 and
// an `Allow` header rather than 404. Every route is registered through here, on the app and
// in the table at once.

import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';

type Method = 'GET' | 'POST' | 'DELETE' | 'HEAD';
type Handler = (res: HttpResponse, req: HttpRequest) => void;

interface Route {
  /** Path segments; ':name' matches one segment, a final '*' the rest. */
  parts: string[];
  /** Parameters and wildcards: among matching routes the fewest wins (static beats dynamic). */
  dynamic: number;
  methods: Set<Method>;
}

export class RouteTable {
  private readonly routes: Route[] = [];

  constructor(private readonly app: TemplatedApp) {}

  get = (pattern: string, handler: Handler): this => this.on('GET', pattern, handler);
  post = (pattern: string, handler: Handler): this => this.on('POST', pattern, handler);
  del = (pattern: string, handler: Handler): this => this.on('DELETE', pattern, handler);
  head = (pattern: string, handler: Handler): this => this.on('HEAD', pattern, handler);

  private on(method: Method, pattern: string, handler: Handler): this {
    const app = this.app;
    if (method === 'GET') app.get(pattern, handler);
    else if (method === 'POST') app.post(pattern, handler);
    else if (method === 'DELETE') app.del(pattern, handler);
    else app.head(pattern, handler);
    return this.add(method, pattern);
  }

  /** Records a route served by a catch-all handler (GET /{ip} is the app's GET /*). */
  add(method: Method, pattern: string): this {
    const existing = this.routes.find((r) => r.parts.join('/') === pattern);
    if (existing) existing.methods.add(method);
    else {
      const parts = pattern.split('/');
      this.routes.push({ parts, dynamic: parts.filter((p) => p.startsWith(':') || p === '*').length, methods: new Set([method]) });
    }
    return this;
  }

  /** The methods the path takes, for `Allow` (empty: no such path). */
  allowed(url: string): Method[] {
    const segments = url.split('/');
    let best = Infinity;
    let methods: Method[] = [];
    for (const r of this.routes) {
      if (r.dynamic > best || !matches(r.parts, segments)) continue;
      if (r.dynamic < best) {
        best = r.dynamic;
        methods = [];
      }
      for (const m of r.methods) if (!methods.includes(m)) methods.push(m);
    }
    return methods;
  }
}

function matches(parts: string[], segments: string[]): boolean {
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p === '*' && i === parts.length - 1) return segments.length > i;
    if (i >= segments.length) return false;
    if (p.startsWith(':') ? segments[i] === '' : p !== segments[i]) return false;
  }
  return parts.length === segments.length;
}
