// The registry of public sources shipped with ipsift (config/sources/public.json) and the
// SOURCES setting that picks from it: `public` (all of it but the frozen), names, and `-name`
// to leave one out, in order: `public,-nordvpn`, `tor-exit-addresses,aws`, `public,akamai`.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isHostName, loadSources, SourcesError, type Source } from './sources.js';

export const PUBLIC_REGISTRY_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../config/sources/public.json');

export function loadRegistry(file = PUBLIC_REGISTRY_FILE): Source[] {
  return loadSources(file).map((s) => ({ ...s, registry: true }));
}

/** The registry's sources a SOURCES value names, in registry order. */
export function selectSources(spec: string, registry: readonly Source[]): Source[] {
  const chosen = new Set<string>();
  const known = new Set(registry.map((s) => s.name));
  for (const raw of spec.split(',')) {
    const token = raw.trim();
    if (token === '') continue;
    if (token === 'public') {
      // A frozen source's publisher stopped: taken only when named.
      for (const s of registry) if (s.frozen === undefined) chosen.add(s.name);
      continue;
    }
    const remove = token.startsWith('-');
    const name = remove ? token.slice(1) : token;
    if (!known.has(name)) {
      throw new SourcesError(
        `SOURCES names ${JSON.stringify(name)}, which is not in the registry: public, a registry name, or -name to leave one out (\`ipsift sources list\` shows them)`,
      );
    }
    if (remove) chosen.delete(name);
    else chosen.add(name);
  }
  return registry.filter((s) => chosen.has(s.name));
}

/**
 * A URL as fetched through a mirror: https://HOST/PATH?Q becomes <base>/HOST/PATH?Q, so a mirror
 * is a plain tree of files named after the hosts.
 */
export function mirroredUrl(url: string, base: string): string {
  const u = new URL(url);
  // The host becomes a path segment: one that is not a host name (`..`, `.`) would leave the base.
  if (!isHostName(u.hostname)) throw new SourcesError(`${url}: the host ${JSON.stringify(u.hostname)} is not a host name, so it has no place in a mirror`);
  return `${base.replace(/\/+$/, '')}/${u.host}${u.pathname}${u.search}`;
}
