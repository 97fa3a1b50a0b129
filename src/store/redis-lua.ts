/**
 * The Lua scripts of the Redis store. Each runs atomically on the server, which is what makes
 * commit() all-or-nothing under concurrent writers in several processes. They are declared
 * with `luaScript` (lib/redis.ts: node-redis `defineScript`, EVALSHA with NOSCRIPT handled by
 * the client) and run as methods of the store's client (`storeScripts`).
 *
 * Layout (readable with redis-cli):
 *   ep:cfg:<key>   hash {v: JSON text, e: etag}
 *   ep:cfg-index   sorted set of every config key, score 0 (ZRANGEBYLEX for prefixes)
 *   ep:rev         commit counter
 *   ep:changes     pub/sub channel: JSON array of the keys changed by one commit. Pub/sub is
 *                  server-wide, not per database, so a store on database N > 0 uses
 *                  ep:changes:N (see changesChannel) and never hears another database's commits.
 *   ep:kv:<key>    kv string, PX expiry when given a TTL
 *   ep:cfg-history stream of configuration revisions (history.ts): one entry per commit that
 *                  carries a note, {r: revision, d: note JSON}, added by the commit script
 *                  itself (one of its keys: on Cluster it shares the configuration's hash tag),
 *                  trimmed by time (MINID ~) as entries are added
 *   ep:cfg-changed list of the last 1,000 commits, newest first: `<revision> <mark> <JSON array of
 *                  the keys changed>`, the mark a random word per commit. A reader that knows
 *                  where it stands (a revision and its mark) reads the ETags of what changed
 *                  since in one step instead of every ETag (etagsSinceScript); the mark tells
 *                  it when its revision belongs to another history (a failover lost commits).
 *
 * On Redis Cluster the configuration's keys share the hash tag `{ep}` (one slot: the commit
 * script touches all of them): `{ep}:cfg:<key>`, `{ep}:cfg-index`, `{ep}:rev`,
 * `{ep}:cfg-history`, `{ep}:cfg-changed`, and the change channel is the sharded channel `{ep}:changes` (SPUBLISH
 * from the commit script, in the same slot). kv keys are single keys: `ep:kv:<key>` everywhere.
 */
import { channelOf, luaScript, type RedisTarget } from '../lib/redis.js';

export const layout = {
  cfgPrefix: 'ep:cfg:',
  index: 'ep:cfg-index',
  revision: 'ep:rev',
  changes: 'ep:changes',
  kvPrefix: 'ep:kv:',
  history: 'ep:cfg-history',
  changedLog: 'ep:cfg-changed',
} as const;

export type Layout = { readonly [K in keyof typeof layout]: string };

/** The configuration store on Redis Cluster: one hash tag, one slot (see above). */
const clusterLayout: Layout = {
  cfgPrefix: '{ep}:cfg:',
  index: '{ep}:cfg-index',
  revision: '{ep}:rev',
  changes: '{ep}:changes',
  kvPrefix: 'ep:kv:',
  history: '{ep}:cfg-history',
  changedLog: '{ep}:cfg-changed',
};

/** The key layout of `target`: hash-tagged on Cluster, the historical names elsewhere. */
export function layoutOf(target: RedisTarget | string): Layout {
  return typeof target !== 'string' && target.kind === 'cluster' ? clusterLayout : layout;
}

/**
 * The change channel of the database selected by `target` (its URL's path, as node-redis reads
 * it). On Cluster a sharded channel (its name starts with the hash tag, which is how the commit
 * script knows to SPUBLISH).
 */
export function changesChannel(target: RedisTarget | string): string {
  return channelOf(target, layoutOf(target).changes);
}

/** Fields per op in ARGV after ARGV[1] = op count and ARGV[2] = channel; see commitArgs() in redis.ts. */
export const opFields = 5;

/** Commits ep:cfg-changed remembers: a reader further behind reads every ETag. */
export const changedKept = 1000;

/**
 * KEYS: ep:cfg:<key> for each op, then ep:cfg-index, ep:rev, ep:cfg-history, ep:cfg-changed.
 * ARGV: n, the changes channel, then per op: kind ('put'|'delete'), key, expect mode ('' none | 'n' absent |
 * '*' present | 'e' etag equal), expected etag, and for put: 'value JSON' followed by the
 * new etag packed as one field `<etag>\n<json>` so every op has the same width.
 * After the ops: the revision note ('' for none), the oldest entry ID the history keeps
 * (`<ms>-0`: MINID ~ trims older ones) and the commit's mark (ep:cfg-changed).
 * Returns {0, key, reason} when an expectation fails (nothing written), else {1, revision}.
 * Every expectation is checked before the first write, against the state before the commit.
 */
const commitScript = luaScript(`
local n = tonumber(ARGV[1])
local index = KEYS[n + 1]
local rev = KEYS[n + 2]
for i = 1, n do
  local b = 3 + (i - 1) * ${opFields}
  local mode = ARGV[b + 2]
  if mode ~= '' then
    local cur = redis.call('HGET', KEYS[i], 'e')
    if mode == 'n' then
      if cur then return {0, ARGV[b + 1], 'exists'} end
    elseif not cur then
      return {0, ARGV[b + 1], 'missing'}
    elseif mode == 'e' and cur ~= ARGV[b + 3] then
      return {0, ARGV[b + 1], 'etag-mismatch'}
    end
  end
end
local changed = {}
for i = 1, n do
  local b = 3 + (i - 1) * ${opFields}
  local key = ARGV[b + 1]
  if ARGV[b] == 'put' then
    local packed = ARGV[b + 4]
    local nl = string.find(packed, '\\n', 1, true)
    redis.call('HSET', KEYS[i], 'v', string.sub(packed, nl + 1), 'e', string.sub(packed, 1, nl - 1))
    redis.call('ZADD', index, 0, key)
  else
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', index, key)
  end
  changed[#changed + 1] = key
end
local r = redis.call('INCR', rev)
local h = 3 + n * ${opFields}
if ARGV[h] ~= '' then
  redis.call('XADD', KEYS[n + 3], 'MINID', '~', ARGV[h + 1], '*', 'r', r, 'd', ARGV[h])
end
local json = cjson.encode(changed)
redis.call('LPUSH', KEYS[n + 4], r .. ' ' .. ARGV[h + 2] .. ' ' .. json)
redis.call('LTRIM', KEYS[n + 4], 0, ${changedKept - 1})
if string.sub(ARGV[2], 1, 1) == '{' then
  redis.call('SPUBLISH', ARGV[2], json)
else
  redis.call('PUBLISH', ARGV[2], json)
end
return {1, r}
`);

/** The revision and mark of an ep:cfg-changed entry (`<revision> <mark> <keys JSON>`), and where its keys start. */
const parseChanged = `
local function changedEntry(e)
  local a = string.find(e, ' ', 1, true)
  local b = a and string.find(e, ' ', a + 1, true)
  if not b then return -1, '', 0 end
  return tonumber(string.sub(e, 1, a - 1)), string.sub(e, a + 1, b - 1), b + 1
end
`;

/**
 * KEYS: ep:cfg-index, ep:rev, ep:cfg-changed. ARGV: the cfg prefix (ep:cfg:), the key prefix ('' = every key).
 * Returns {revision, mark, key1, etag1, key2, etag2, ...}: the keys list(prefix) reads, at one
 * revision, and that revision's mark ('' when ep:cfg-changed does not hold it).
 */
const etagsScript = luaScript(`${parseChanged}
local keys
if ARGV[2] == '' then
  keys = redis.call('ZRANGE', KEYS[1], 0, -1)
else
  keys = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[2] .. '/', '(' .. ARGV[2] .. '0')
  table.insert(keys, 1, ARGV[2])
end
local rev = tonumber(redis.call('GET', KEYS[2]) or '0')
local newest = redis.call('LINDEX', KEYS[3], 0)
local mark = ''
if newest then
  local r, m = changedEntry(newest)
  if r == rev then mark = m end
end
local out = {rev, mark}
for _, k in ipairs(keys) do
  local e = redis.call('HGET', ARGV[1] .. k, 'e')
  if e then
    out[#out + 1] = k
    out[#out + 1] = e
  end
end
return out
`);

/**
 * KEYS: ep:rev, ep:cfg-changed. ARGV: the cfg prefix (ep:cfg:), a revision and its mark (from an
 * earlier etags or etags-since read). Returns {revision, mark, key1, etag1, ...}: every key
 * changed by the commits after that revision with its ETag now ('' when deleted), at one
 * revision, in the order of the commits (ep:cfg-changed holds the newest first: read from its
 * end), each key at the first commit that changed it; {-1} when ep:cfg-changed cannot tell
 * (fewer commits kept than made since, a revision ahead of the store's, or another mark at that
 * revision: another history).
 */
const etagsSinceScript = luaScript(`${parseChanged}
local rev = tonumber(redis.call('GET', KEYS[1]) or '0')
local want = rev - tonumber(ARGV[2])
if want < 0 or want >= ${changedKept} then return {-1} end
local entries = redis.call('LRANGE', KEYS[2], 0, want)
if #entries < want + 1 then return {-1} end
local out = {rev, ''}
local seen = {}
for i = want + 1, 1, -1 do
  local r, mark, at = changedEntry(entries[i])
  if r ~= rev - i + 1 then return {-1} end
  if i == 1 then out[2] = mark end
  if i == want + 1 then
    if mark ~= ARGV[3] then return {-1} end
  else
    for _, k in ipairs(cjson.decode(string.sub(entries[i], at))) do
      if not seen[k] then
        seen[k] = true
        out[#out + 1] = k
        out[#out + 1] = redis.call('HGET', ARGV[1] .. k, 'e') or ''
      end
    end
  end
end
return out
`);

/**
 * KEYS[1] the kv key; ARGV: by, ttlMs ('' for none). The expiry is set only when the key did
 * not exist before, so repeated increments do not extend a window (throttle counters).
 */
const incrScript = luaScript(`
local existed = redis.call('EXISTS', KEYS[1])
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if existed == 0 and ARGV[2] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return v
`);

/** The scripts of the store's client: `client.storeCommit(keys, args)` and so on. */
export const storeScripts = {
  storeCommit: commitScript,
  storeEtags: etagsScript,
  storeEtagsSince: etagsSinceScript,
  storeIncr: incrScript,
};
