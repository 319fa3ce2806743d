// Route patterns as uWS reads them: '/'-separated segments, ':name' matches one non-empty
// segment, a final '*' matches the rest. Among patterns that match, static segments beat
// parameters and parameters beat the wildcard, segment by segment from the left.

export interface Pattern {
  readonly text: string;
  readonly parts: readonly string[];
  /** Per segment: 0 static, 1 parameter, 2 wildcard (lower is more specific). */
  readonly ranks: readonly number[];
}

export function parsePattern(text: string): Pattern {
  const parts = text.split('/');
  return { text, parts, ranks: parts.map((p, i) => (p === '*' && i === parts.length - 1 ? 2 : p.startsWith(':') ? 1 : 0)) };
}

/**
 * Whether the path ('/'-separated, from its leading '/') matches; `params` (when given)
 * receives the ':name' segments. Walks the text: splitting it would cost an array per request.
 */
export function matchPath(p: Pattern, path: string, params?: string[]): boolean {
  const parts = p.parts;
  /** Where segment i starts; -1 when the path has no segment i. */
  let start = 0;
  for (let i = 0; i < parts.length; i++) {
    const rank = p.ranks[i];
    if (rank === 2) return start >= 0;
    if (start < 0) return false;
    let end = path.indexOf('/', start);
    const next = end < 0 ? -1 : end + 1;
    if (end < 0) end = path.length;
    if (rank === 1) {
      if (end === start) return false;
      params?.push(path.slice(start, end));
    } else if (end - start !== parts[i].length || !path.startsWith(parts[i], start)) return false;
    start = next;
  }
  return start < 0;
}

/** Negative when a is more specific than b (to sort routes so that the first match wins). */
export function compareSpecificity(a: Pattern, b: Pattern): number {
  const n = Math.min(a.ranks.length, b.ranks.length);
  for (let i = 0; i < n; i++) if (a.ranks[i] !== b.ranks[i]) return a.ranks[i] - b.ranks[i];
  return b.ranks.length - a.ranks.length;
}
