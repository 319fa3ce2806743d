// A strict reader of Structured Field lists (RFC 8941 §4.2.1) as far as RateLimit-Policy and
// RateLimit use them: items that are strings, integers or tokens, with parameters. It throws
// where a conforming parser would fail, so a test that reads a header through it also checks
// the header's syntax.

export type Bare = string | number | boolean;
export interface Member {
  value: Bare;
  params: Record<string, Bare>;
}

export function parseList(text: string): Member[] {
  let i = 0;
  const fail = (why: string): never => {
    throw new Error(`not a Structured Field list (${why} at ${i}): ${JSON.stringify(text)}`);
  };
  const spaces = (): void => {
    while (text[i] === ' ') i++;
  };
  const ows = (): void => {
    while (text[i] === ' ' || text[i] === '\t') i++;
  };
  const key = (): string => {
    const m = /^[a-z*][a-z0-9_\-.*]*/.exec(text.slice(i));
    if (m === null) return fail('a key');
    i += m[0].length;
    return m[0];
  };
  const bare = (): Bare => {
    const c = text[i];
    if (c === '"') {
      let out = '';
      for (i++; ; i++) {
        if (i >= text.length) fail('an unterminated string');
        const ch = text[i];
        if (ch === '\\') {
          const next = text[++i];
          if (next !== '"' && next !== '\\') fail('an escape');
          out += next;
        } else if (ch === '"') {
          i++;
          return out;
        } else if (ch < ' ' || ch > '~') fail('a character');
        else out += ch;
      }
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /^-?\d{1,15}(?![\d.])/.exec(text.slice(i));
      if (m === null) return fail('an integer');
      i += m[0].length;
      return Number(m[0]);
    }
    if (c === '?') {
      const v = text[i + 1];
      if (v !== '0' && v !== '1') fail('a boolean');
      i += 2;
      return v === '1';
    }
    const m = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(text.slice(i));
    if (m === null) return fail('an item');
    i += m[0].length;
    return m[0];
  };
  const out: Member[] = [];
  spaces();
  if (i === text.length) return out;
  for (;;) {
    const value = bare();
    const params: Record<string, Bare> = {};
    while (text[i] === ';') {
      i++;
      spaces();
      const k = key();
      if (text[i] === '=') {
        i++;
        params[k] = bare();
      } else params[k] = true;
    }
    out.push({ value, params });
    ows();
    if (i === text.length) return out;
    if (text[i] !== ',') fail('a comma');
    i++;
    ows();
    if (i === text.length) fail('a trailing comma');
  }
}
