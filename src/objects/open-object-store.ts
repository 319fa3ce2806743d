// The configured object store: local (default) or S3. The AWS SDK is loaded only when S3
// is configured: it is large, and a local deployment never needs it.

import type { Config } from '../config.js';
import { LocalStore } from './local-store.js';
import type { ObjectStore } from './object-store.js';

export async function openObjectStore(config: Config): Promise<{ store: ObjectStore; local: LocalStore | null }> {
  if (config.objectStore.kind === 's3') {
    const s = config.objectStore;
    const { S3Store } = await import('./s3-store.js');
    return { store: new S3Store({ bucket: s.bucket, prefix: s.prefix, region: s.region, endpoint: s.endpoint }), local: null };
  }
  const local = new LocalStore(config.dataDir);
  return { store: local, local };
}
