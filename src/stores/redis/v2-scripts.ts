/**
 * The scripts of protocol v2 (docs/redis-protocol.md), which kept a key's claim in a
 * hash. The store runs them only on a key whose claim it finds still a hash (its `SET`
 * answered WRONGTYPE): a record written by an idem of before protocol v3 is replayed for
 * its retention, and its claim respected. Nothing of protocol v3 writes a hash.
 *
 * Every script gets two keys in one Cluster slot (see `keys.ts`): `KEYS[1]`, the claim
 * hash (`state`, `fingerprint`, `token`, `lease_until`, `outcome`), and `KEYS[2]`, the
 * steps hash (step name → result). Times come from the server's `TIME`, so clients'
 * clocks never matter. Numbers are written with `%.0f`: Redis would otherwise turn a
 * Lua number into text with 14 significant digits, and tokens have 16.
 */

const PRELUDE = `
local function int(n) return string.format('%.0f', n) end
local t = redis.call('TIME')
local seconds, micros = tonumber(t[1]), tonumber(t[2])
local now = seconds * 1000 + math.floor(micros / 1000)
`

// The fencing check every write after the claim starts with: the claim must be held
// and ARGV[1] must be its current token, or nothing changes.
const FENCE = `
local held = redis.call('HMGET', KEYS[1], 'state', 'token')
if held[1] ~= 'held' or held[2] ~= ARGV[1] then return 0 end
`

/**
 * ARGV: fingerprint, leaseMs, ttlMs, confirm ('1' or '0'). Returns `{'completed',
 * fingerprint, outcome}`, `{'running', fingerprint}` or `{'acquired', token, {name,
 * result, ...}}`. A new token is the previous one plus one, or the server's clock in
 * microseconds if that is greater, so tokens grow even after the claim hash expired.
 * With confirm '1' (the store waits for replicas) a completed record's state is written
 * again, unchanged, so that the WAIT after the script covers the record it replays: WAIT
 * waits for its connection's last write, and Redis 7.2 and later do not count a command
 * that wrote nothing (7.0 counts every command).
 */
const CLAIM = `${PRELUDE}
local c = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'outcome', 'token', 'lease_until')
local state, fingerprint = c[1], c[2]
if state == 'completed' then
  if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'state', 'completed') end
  return {'completed', fingerprint, c[3]}
end
if state == 'held' and tonumber(c[5]) > now then return {'running', fingerprint} end
local resumable = false
if state then
  resumable = redis.call('EXISTS', KEYS[2]) == 1
else
  -- Steps without a claim hash belong to an earlier lifetime of the key.
  redis.call('DEL', KEYS[2])
end
if resumable and fingerprint ~= ARGV[1] then return {'running', fingerprint} end
local token = int(math.max((tonumber(c[4]) or 0) + 1, seconds * 1000000 + micros))
local lease = tonumber(ARGV[2])
local retain = int(lease + tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'state', 'held', 'fingerprint', ARGV[1], 'token', token, 'lease_until', int(now + lease))
redis.call('PEXPIRE', KEYS[1], retain)
if resumable then
  redis.call('PEXPIRE', KEYS[2], retain)
  return {'acquired', token, redis.call('HGETALL', KEYS[2])}
end
return {'acquired', token, {}}
`

/** ARGV: token, leaseMs. Returns 1, or 0 when fenced. Never lets the keys expire before the lease. */
const RENEW = `${PRELUDE}${FENCE}
local lease = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lease_until', int(now + lease))
if redis.call('PTTL', KEYS[1]) < lease then
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('PEXPIRE', KEYS[2], lease)
end
return 1
`

/** ARGV: token, name, result. Returns 1, or 0 when fenced. The steps expire with the claim. */
const SAVE_STEP = `${FENCE}
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
`

/**
 * ARGV: token, outcome, ttlMs. Returns 1, or 0 when fenced. A completed key needs no
 * steps. Its `lease_until` stays, unread: every script looks at `state` first.
 */
const COMPLETE = `${FENCE}
redis.call('HSET', KEYS[1], 'state', 'completed', 'outcome', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('DEL', KEYS[2])
return 1
`

/** ARGV: token. Returns 1, or 0 when fenced. Steps stay, for the same request to resume. */
const RELEASE = `${FENCE}
redis.call('HSET', KEYS[1], 'state', 'free')
redis.call('HDEL', KEYS[1], 'lease_until')
return 1
`

/** ARGV: token. Returns 1 while the token holds the key (what a lease's fencing token is checked with), or 0. */
const HOLDS = `${FENCE}
return 1
`

/**
 * What a key holds, without claiming it (for a dual-read window, see core/dual-read.ts).
 * Returns `{'completed', fingerprint, outcome}`, `{'held'}` (a live lease, or steps left
 * to resume) or `{'absent'}`.
 */
const PEEK = `${PRELUDE}
local c = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'outcome', 'lease_until')
if c[1] == 'completed' then return {'completed', c[2], c[3]} end
if c[1] == 'held' and tonumber(c[4]) > now then return {'held'} end
if c[1] and redis.call('EXISTS', KEYS[2]) == 1 then return {'held'} end
return {'absent'}
`

/** The v2 scripts by name (versioned: a name always means the same script). */
export const V2_SCRIPTS = {
  idemLeaseClaimV1: CLAIM,
  idemLeaseRenewV1: RENEW,
  idemLeaseSaveStepV1: SAVE_STEP,
  idemLeaseCompleteV1: COMPLETE,
  idemLeaseReleaseV1: RELEASE,
  idemLeaseHoldsV1: HOLDS,
  idemLeasePeekV1: PEEK,
} as const

/** The name of one of the v2 scripts. */
export type V2ScriptName = keyof typeof V2_SCRIPTS
