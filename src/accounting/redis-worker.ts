// The Redis side of redis-store.ts, on a thread of its own (bridge/sync-serve.ts): a client
// connection and the accounting scripts.
//
// Every change is one Lua script, atomic on the server, so any number of nodes spending from
// the same counters never grant past a limit. Bucket time is the server's clock (TIME), not
// the nodes': nodes whose clocks disagree still refill a bucket at its rate.

import { createClient } from '@redis/client';
import { createHash } from 'node:crypto';
import { serveSyncCalls, syncData } from '../bridge/sync-serve.js';
import type { SyncRequest } from '../bridge/sync-call.js';

export type RedisOp = 'ping' | 'spent' | 'reserve' | 'release' | 'take' | 'add' | 'quit';

const { url, prefix, connectTimeoutMs } = syncData<{
  url: string;
  prefix: string;
  connectTimeoutMs: number;
}>();

/** Day counters live two days (yesterday's still shows), month counters 25 months (KEEP_MONTHS + 1). */
const DAY_TTL_S = 2 * 86_400;
const MONTH_TTL_S = 25 * 31 * 86_400;

// KEYS[1] counter; ARGV need, extra, limit (-1: none), ttl seconds. The rule of accounting-store.ts grantFor.
const RESERVE = `
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
local need, extra, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local granted
if limit < 0 then
  granted = need + extra
else
  local room = math.max(0, limit - spent)
  granted = math.min(room, need + math.min(extra, math.floor(math.max(0, room - need) / 16)))
end
if granted > 0 then
  redis.call('INCRBY', KEYS[1], granted)
  if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
end
return {granted, spent + granted}`;

// KEYS[1] counter; ARGV units. Never below zero; a counter already gone stays gone. Returns
// the units given back.
const RELEASE = `
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
if spent == 0 then return 0 end
local back = math.min(spent, tonumber(ARGV[1]))
redis.call('DECRBY', KEYS[1], back)
return back`;

// KEYS[1] bucket (hash: t tokens, at ms); ARGV want, per second, burst. Returns granted and
// the level left as text (a Lua number returned to Redis would lose its fraction). The bucket
// expires once it would be full again: a missing bucket is a full one.
const TAKE = `
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local want, perSecond, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = burst
if b[1] then tokens = math.min(burst, tonumber(b[1]) + math.max(0, nowMs - tonumber(b[2])) / 1000 * perSecond) end
local granted = math.max(0, math.min(want, math.floor(tokens)))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'at', nowMs)
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / perSecond * 1000) + 1000)
return {granted, string.format('%.17g', tokens)}`;

// KEYS counters; ARGV their units, then their ttls. Adds units already answered (keyless
// sources counted at the edge, see edge-counts.ts) to many counters in one call; returns each
// counter after the addition.
const ADD = `
local n = #KEYS
local out = {}
for i = 1, n do
  out[i] = redis.call('INCRBY', KEYS[i], ARGV[i])
  if redis.call('TTL', KEYS[i]) < 0 then redis.call('EXPIRE', KEYS[i], ARGV[n + i]) end
end
return out`;

const sha = (script: string): string => createHash('sha1').update(script).digest('hex');
const SCRIPTS = { reserve: [RESERVE, sha(RESERVE)], release: [RELEASE, sha(RELEASE)], take: [TAKE, sha(TAKE)], add: [ADD, sha(ADD)] } as const;

const client = createClient({
  url,
  // Commands fail at once while disconnected (the caller is blocked waiting): never queued.
  disableOfflineQueue: true,
  socket: { connectTimeout: connectTimeoutMs, reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000) },
});
// Errors reach the caller through the command that met them; reconnecting is the client's.
client.on('error', () => {});
// The store's start waits for the first connection, and fails with the first error (a refused
// connection, a wrong password) rather than after its whole timeout.
const connected = new Promise<void>((resolve, reject) => {
  client.once('error', reject);
  client.connect().then(() => resolve(), reject);
});
connected.catch(() => {});

/** EVALSHA, falling back to EVAL where the server does not hold the script (new or restarted). */
async function script(name: keyof typeof SCRIPTS, keys: string[], args: unknown[]): Promise<unknown> {
  const [text, hash] = SCRIPTS[name];
  const tail = [String(keys.length), ...keys, ...args.map(String)];
  try {
    return await client.sendCommand(['EVALSHA', hash, ...tail]);
  } catch (e) {
    if (!String((e as Error)?.message).startsWith('NOSCRIPT')) throw e;
    return client.sendCommand(['EVAL', text, ...tail]);
  }
}

const ttlOf = (counter: string): number => (counter.startsWith('d:') ? DAY_TTL_S : MONTH_TTL_S);

async function answer(r: SyncRequest<RedisOp>): Promise<unknown> {
  // The first call (the store's start) waits for the connection; later ones fail at once
  // while it is down, and the client reconnects behind them.
  if (r.op === 'ping') await connected;
  if (!client.isReady) throw new Error('not connected');
  if (r.op === 'add') {
    const [counters, units] = r.args as [string[], number[]];
    return script(
      'add',
      counters.map((c) => `${prefix}${c}`),
      [...units, ...counters.map(ttlOf)],
    );
  }
  const key = `${prefix}${r.args[0]}`;
  switch (r.op) {
    case 'ping':
      return client.sendCommand(['PING']);
    case 'spent':
      return Number((await client.sendCommand(['GET', key])) ?? 0);
    case 'reserve':
      return script('reserve', [key], [r.args[1], r.args[2], r.args[3], ttlOf(String(r.args[0]))]);
    case 'release':
      return script('release', [key], [r.args[1]]);
    case 'take':
      return script('take', [key], r.args.slice(1));
    case 'quit':
      await client.close();
      return 'OK';
  }
}

/**
 * Gives back what a blocking call did after its caller gave up on it (sync-serve.ts): the
 * units a reservation granted, the units an addition added, the units a release returned.
 * Token takes are left alone: a rate bucket refills by itself.
 */
async function undo(r: SyncRequest<RedisOp>, value: unknown): Promise<void> {
  if (r.op === 'reserve') {
    const granted = Number((value as [number, number])[0]);
    if (granted > 0) await script('release', [`${prefix}${r.args[0]}`], [granted]);
  } else if (r.op === 'add') {
    const [counters, units] = r.args as [string[], number[]];
    await script(
      'add',
      counters.map((c) => `${prefix}${c}`),
      [...units.map((u) => -u), ...counters.map(ttlOf)],
    );
  } else if (r.op === 'release') {
    const back = Number(value);
    if (back > 0) await script('add', [`${prefix}${r.args[0]}`], [back, ttlOf(String(r.args[0]))]);
  }
}

serveSyncCalls(answer, undo);
