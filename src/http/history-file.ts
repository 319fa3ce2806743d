// The traffic history's ring file: a header, then one fixed-size record per slot, a sample
// written to the slot its time names (period number modulo the slots). The file is the same
// size from its first sample on; a restart reads back every slot and keeps those of the last
// day. Written once a period by the admin thread, with one positioned write.
//
// Layout, little-endian: "IPSH", version (u32), period ms (u32), slots (u32); then per slot the
// sample's end (f64 ms since the epoch; 0: empty) and seven f32 (requests, 4xx, 429, 5xx per
// second; lookup p50, lookup p99, batch p99 in ms, NaN where there was none), padded to 40.

import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import { reasonOf } from '../errors.js';

/** One period of traffic: rates per second and lookup latency percentiles in milliseconds. */
export interface TrafficSample {
  /** The end of the period (ISO 8601). */
  at: string;
  requests_per_s: number;
  /** 4xx other than 429: what clients got wrong. */
  client_errors_per_s: number;
  rate_limited_per_s: number;
  /** 5xx: what the service got wrong or could not do. */
  server_errors_per_s: number;
  /** Single lookups (GET /{ip}, /myip) answered in the period; null where there were none. */
  lookup_p50_ms: number | null;
  lookup_p99_ms: number | null;
  batch_p99_ms: number | null;
}

const MAGIC = 0x48535049; // "IPSH"
const VERSION = 1;
const HEADER = 16;
const RECORD = 40;

export class HistoryFile {
  private readonly record = Buffer.alloc(RECORD);

  private constructor(
    private fd: number | null,
    private readonly periodMs: number,
    private readonly slots: number,
    private readonly log?: Logger,
  ) {}

  /** The file at `file`, made (or made again, when its period or size differ) as needed; null where it cannot be. */
  static open(file: string, periodMs: number, slots: number, log?: Logger): HistoryFile | null {
    try {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      let fd = fs.openSync(file, fs.existsSync(file) ? 'r+' : 'w+', 0o600);
      const head = Buffer.alloc(HEADER);
      const fits =
        fs.readSync(fd, head, 0, HEADER, 0) === HEADER &&
        head.readUInt32LE(0) === MAGIC &&
        head.readUInt32LE(4) === VERSION &&
        head.readUInt32LE(8) === periodMs &&
        head.readUInt32LE(12) === slots &&
        fs.fstatSync(fd).size === HEADER + slots * RECORD;
      if (!fits) {
        fs.closeSync(fd);
        fd = fs.openSync(file, 'w+', 0o600);
        head.writeUInt32LE(MAGIC, 0);
        head.writeUInt32LE(VERSION, 4);
        head.writeUInt32LE(periodMs, 8);
        head.writeUInt32LE(slots, 12);
        fs.writeSync(fd, head, 0, HEADER, 0);
        fs.ftruncateSync(fd, HEADER + slots * RECORD);
      }
      return new HistoryFile(fd, periodMs, slots, log);
    } catch (e) {
      log?.warn('the traffic history is kept in memory only: its file cannot be written', { file, reason: reasonOf(e) });
      return null;
    }
  }

  write(atMs: number, s: TrafficSample): void {
    if (this.fd === null) return;
    const r = this.record;
    r.writeDoubleLE(atMs, 0);
    const values = [s.requests_per_s, s.client_errors_per_s, s.rate_limited_per_s, s.server_errors_per_s, s.lookup_p50_ms, s.lookup_p99_ms, s.batch_p99_ms];
    for (const [i, v] of values.entries()) r.writeFloatLE(v ?? Number.NaN, 8 + 4 * i);
    const slot = Math.floor(atMs / this.periodMs) % this.slots;
    try {
      fs.writeSync(this.fd, r, 0, RECORD, HEADER + slot * RECORD);
    } catch (e) {
      // A full or failing disk: the history goes on in memory; the lookups never notice.
      this.log?.warn('the traffic history is kept in memory only from now: its file cannot be written', { reason: reasonOf(e) });
      this.close();
    }
  }

  /** Every sample in the file, in slot order. */
  read(): { atMs: number; sample: TrafficSample }[] {
    if (this.fd === null) return [];
    const all = Buffer.alloc(this.slots * RECORD);
    fs.readSync(this.fd, all, 0, all.length, HEADER);
    const out: { atMs: number; sample: TrafficSample }[] = [];
    const f32 = (o: number): number => Math.round(all.readFloatLE(o) * 1000) / 1000;
    const opt = (o: number): number | null => (Number.isNaN(all.readFloatLE(o)) ? null : f32(o));
    for (let i = 0; i < this.slots; i++) {
      const o = i * RECORD;
      const atMs = all.readDoubleLE(o);
      if (!(atMs > 0)) continue;
      out.push({
        atMs,
        sample: {
          at: new Date(atMs).toISOString(),
          requests_per_s: f32(o + 8),
          client_errors_per_s: f32(o + 12),
          rate_limited_per_s: f32(o + 16),
          server_errors_per_s: f32(o + 20),
          lookup_p50_ms: opt(o + 24),
          lookup_p99_ms: opt(o + 28),
          batch_p99_ms: opt(o + 32),
        },
      });
    }
    return out;
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}
