// The configured object store: local (default) or S3.

import type { Config } from '../config.js';
import { LocalStore } from './local-store.js';
import type { ObjectStore } from './object-store.js';
import { S3Store } from './s3-store.js';

export function openStore(config: Config): { store: ObjectStore; local: LocalStore | null } {
  if (config.store.kind === 's3') {
    const s = config.store;
    return { store: new S3Store({ bucket: s.bucket, prefix: s.prefix, region: s.region, endpoint: s.endpoint }), local: null };
  }
  const local = new LocalStore(config.dataDir);
  return { store: local, local };
}
