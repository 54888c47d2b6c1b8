/**
 * The Lua scripts of the Redis store's protocol v3 (docs/redis-protocol.md; the Spin
 * model test/chaos/models/leased.pml checks it). A key's claim is one string, `KEYS[1]`:
 *
 * - `3h <claimId> <fingerprint>`, with PX the lease: held, no steps;
 * - `3s <claimId> <leaseUntil> <fingerprint>`: held, or released (`leaseUntil` 0), with
 *   steps in the hash `KEYS[2]` (step name → result), both kept `leaseMs + ttlMs`;
 * - `3c <length> <fingerprint><outcome>`: completed (`length`: the fingerprint's length,
 *   in UTF-16 code units, as idem's JavaScript counts it), PX the retention.
 *
 * A claimId is a random UUID: always 36 characters, so a value's parts are found by
 * position, and nothing a fingerprint or an outcome holds can be read as one. The claim
 * itself and a completion without steps are plain commands (`SET … NX PX … GET`,
 * `SET … IFEQ`); a script runs only where the value must be read and rewritten in one
 * step. Every script after the claim is fenced on its claimId: it changes nothing
 * unless the value is this claim's 3h, or its 3s not released. Times come from the
 * server's `TIME`; numbers are written with `%.0f` (a Lua number would become text with
 * 14 significant digits).
 */

// The claimId's place: '3h ' or '3s ' then 36 characters.
const PRELUDE = `
local function int(n) return string.format('%.0f', n) end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function stepped(v)
  local rest = string.sub(v, 41)
  local space = string.find(rest, ' ', 1, true)
  return tonumber(string.sub(rest, 1, space - 1)), string.sub(rest, space + 1)
end
local function holder(v, cid)
  if not v or string.sub(v, 4, 39) ~= cid then return nil end
  local kind = string.sub(v, 1, 2)
  if kind == '3h' then return 'h', 0, string.sub(v, 41) end
  if kind ~= '3s' then return nil end
  local until_, fp = stepped(v)
  if until_ == 0 then return nil end
  return 's', until_, fp
end
local v = redis.call('GET', KEYS[1])
`

/**
 * The compare-and-set a server without `SET … IFEQ` runs instead. ARGV: the value
 * expected, the new value, its PX. Returns OK, or nil (changing nothing) when the key
 * holds anything else: what `SET … IFEQ … PX` answers.
 */
const SWAP = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
`

/**
 * ARGV: claimId, leaseMs. Returns 1, or 0 when fenced. A 3h value gets PX leaseMs again;
 * a 3s value a live leaseUntil, and the keys never expire before the lease.
 */
const RENEW = `${PRELUDE}
local form, _, fp = holder(v, ARGV[1])
if not form then return 0 end
local lease = tonumber(ARGV[2])
if form == 'h' then
  redis.call('PEXPIRE', KEYS[1], lease)
  return 1
end
redis.call('SET', KEYS[1], '3s ' .. ARGV[1] .. ' ' .. int(now_ms() + lease) .. ' ' .. fp, 'KEEPTTL')
if redis.call('PTTL', KEYS[1]) < lease then
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('PEXPIRE', KEYS[2], lease)
end
return 1
`

/**
 * ARGV: claimId, step name, result, retainMs (leaseMs + ttlMs). Returns 1, or 0 when
 * fenced. The first step turns the 3h value into 3s (its lease unchanged, the key now
 * kept retainMs, and never less than its lease), dropping steps an earlier lifetime of
 * the key may have left.
 */
const SAVE_STEP = `${PRELUDE}
local form, _, fp = holder(v, ARGV[1])
if not form then return 0 end
if form == 'h' then
  local lease = redis.call('PTTL', KEYS[1])
  redis.call('DEL', KEYS[2])
  redis.call('SET', KEYS[1], '3s ' .. ARGV[1] .. ' ' .. int(now_ms() + lease) .. ' ' .. fp, 'PX', math.max(tonumber(ARGV[4]), lease))
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
return 1
`

/** ARGV: claimId, the 3c value, ttlMs. Returns 1, or 0 when fenced. A completed key needs no steps. */
const COMPLETE = `${PRELUDE}
if not holder(v, ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
return 1
`

/** ARGV: claimId. Returns 1, or 0 when fenced. A 3h claim is deleted; a 3s one keeps its steps, leaseUntil 0. */
const RELEASE = `${PRELUDE}
local form, _, fp = holder(v, ARGV[1])
if not form then return 0 end
if form == 'h' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], '3s ' .. ARGV[1] .. ' 0 ' .. fp, 'KEEPTTL')
end
return 1
`

/**
 * The second round trip of a claim that found steps of its own request (a 3s value of
 * its fingerprint). ARGV: the new claimId, fingerprint, leaseMs, retainMs. Decides on
 * the value it finds now: an absent key is claimed as a 3h value (`{'h'}`); a 3s value
 * of this fingerprint whose lease ended or was released is taken over with its steps
 * (`{'s', {name, result, ...}}`); anything else is returned as it is, for the client to
 * read as a claim's reply.
 */
const TAKEOVER = `${PRELUDE}
if not v then
  redis.call('DEL', KEYS[2])
  redis.call('SET', KEYS[1], '3h ' .. ARGV[1] .. ' ' .. ARGV[2], 'PX', ARGV[3])
  return {'h'}
end
if string.sub(v, 1, 2) ~= '3s' then return v end
local until_, fp = stepped(v)
local now = now_ms()
if until_ > now or fp ~= ARGV[2] then return v end
redis.call('SET', KEYS[1], '3s ' .. ARGV[1] .. ' ' .. int(now + tonumber(ARGV[3])) .. ' ' .. fp, 'PX', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {'s', redis.call('HGETALL', KEYS[2])}
`

/**
 * The claim with `waitForReplicas`: `SET … NX PX … GET`, and a completed value found is
 * written again, unchanged, so that the WAIT after the script covers the record it
 * replays (WAIT waits for its connection's last write; Redis 7.2 and later do not count
 * a command that wrote nothing). ARGV: the 3h value, leaseMs. Returns what the SET did.
 */
const CLAIM_CONFIRMED = `
local v = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
if v and string.sub(v, 1, 2) == '3c' then redis.call('SET', KEYS[1], v, 'KEEPTTL') end
return v
`

/**
 * A fencing token, asked only when a call reads one. KEYS[2] here is the key's fence
 * (`<token> <claimId>`). ARGV: claimId, the token this lease was given already (or ''),
 * retainMs (leaseMs + ttlMs). Returns the token (as text), or 0 when fenced. A new token
 * is the previous one plus one, or the server's clock in microseconds if greater, so
 * tokens grow across claims, releases and the key's expiry; the fence is kept retainMs
 * (and as long as the claim), as protocol v2 kept its token in the claim.
 */
const FENCING_TOKEN = `${PRELUDE}
if not holder(v, ARGV[1]) then return 0 end
if ARGV[2] ~= '' then return ARGV[2] end
local previous = 0
local fence = redis.call('GET', KEYS[2])
if fence then previous = tonumber(string.sub(fence, 1, string.find(fence, ' ', 1, true) - 1)) end
local t = redis.call('TIME')
local token = int(math.max(previous + 1, tonumber(t[1]) * 1000000 + tonumber(t[2])))
redis.call('SET', KEYS[2], token .. ' ' .. ARGV[1], 'PX', math.max(redis.call('PTTL', KEYS[1]), tonumber(ARGV[3])))
return token
`

/** The scripts of protocol v3 by name (versioned: a name always means the same script). */
export const SCRIPTS = {
  idemSwapV3: SWAP,
  idemRenewV3: RENEW,
  idemSaveStepV3: SAVE_STEP,
  idemCompleteV3: COMPLETE,
  idemReleaseV3: RELEASE,
  idemTakeoverV3: TAKEOVER,
  idemClaimConfirmedV3: CLAIM_CONFIRMED,
  idemFencingTokenV3: FENCING_TOKEN,
} as const

/** The name of one of the v3 scripts. */
export type ScriptName = keyof typeof SCRIPTS

export { V2_SCRIPTS, type V2ScriptName } from './v2-scripts.js'
