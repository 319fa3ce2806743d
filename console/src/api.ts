// The admin API, as the console calls it: same origin, the operator token in the
// Authorization header of every call (no cookie, so no request can be forged across sites),
// nothing cached.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class AdminApi {
  constructor(private readonly token: string) {}

  async call<T = any>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store', credentials: 'omit' });
    const text = await res.text();
    let doc: any = null;
    try {
      doc = text === '' ? null : JSON.parse(text);
    } catch {
      doc = null;
    }
    if (!res.ok) throw new ApiError(res.status, doc?.message ?? doc?.error ?? `${res.status} ${res.statusText}`);
    return doc as T;
  }

  get = <T = any>(path: string): Promise<T> => this.call<T>('GET', path);
  post = <T = any>(path: string, body: unknown = {}): Promise<T> => this.call<T>('POST', path, body);
  del = <T = any>(path: string): Promise<T> => this.call<T>('DELETE', path);
}

/** A path segment, encoded. */
export const seg = (s: string): string => encodeURIComponent(s);
