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

/** Whether the path's segments match; `params` (when given) receives the ':name' segments. */
export function matchPattern(p: Pattern, segments: readonly string[], params?: string[]): boolean {
  const parts = p.parts;
  for (let i = 0; i < parts.length; i++) {
    const rank = p.ranks[i];
    if (rank === 2) return segments.length > i;
    if (i >= segments.length) return false;
    if (rank === 1) {
      if (segments[i] === '') return false;
      params?.push(segments[i]);
    } else if (parts[i] !== segments[i]) return false;
  }
  return parts.length === segments.length;
}

/** Negative when a is more specific than b (to sort routes so that the first match wins). */
export function compareSpecificity(a: Pattern, b: Pattern): number {
  const n = Math.min(a.ranks.length, b.ranks.length);
  for (let i = 0; i < n; i++) if (a.ranks[i] !== b.ranks[i]) return a.ranks[i] - b.ranks[i];
  return b.ranks.length - a.ranks.length;
}
