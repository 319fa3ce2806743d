// The download history: one row per download asked for, whatever its outcome, so that an
// organisation (and its operator) can see who fetched which database, when and from where.

import type { ControlDb } from './control-db.js';

/** One download as it is recorded. */
export interface DownloadRow {
  orgId: string;
  keyId: string;
  datasetId: string;
  format: string;
  sample: boolean;
  outcome: string;
  httpStatus: number;
  bytes: number;
  clientIp: string;
  userAgent: string;
}

export function recordDownload(db: ControlDb, d: DownloadRow, now = new Date()): void {
  db.prepare(
    `INSERT INTO downloads (org_id, dataset_id, format, sample, outcome, bytes, http_status, apikey_id, client_ip, user_agent, created)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(d.orgId, d.datasetId, d.format, d.sample ? 1 : 0, d.outcome, d.bytes, d.httpStatus, d.keyId, d.clientIp, d.userAgent, now.toISOString());
}

/** An organisation's download history in its answer's shape, newest first. */
export function downloadHistory(db: ControlDb, orgId: string, limit: number): Record<string, unknown>[] {
  const rows = db.prepare('SELECT * FROM downloads WHERE org_id = ? ORDER BY id DESC LIMIT ?').all(orgId, limit) as Record<string, string | number>[];
  return rows.map((d) => ({
    dataset_id: d.dataset_id,
    format: d.format,
    outcome: d.outcome,
    sample: d.sample === 1,
    bytes: d.bytes,
    http_status: d.http_status,
    apikey_id: d.apikey_id,
    client_ip: d.client_ip,
    user_agent: d.user_agent,
    created: d.created,
  }));
}
