/**
 * The Lua scripts of the Redis inbox table, one per transition, each atomic on the
 * server. Every key a script gets carries the message's hash tag (see `redisInboxKeys`),
 * so on Redis Cluster they live in one slot. Expiry is Redis's own: a hold expires with
 * its key (`holdMs`), a processed id with its retention.
 */

/**
 * KEYS: id. ARGV: token, holdMs, confirm ('1' or '0'). Returns 'new', 'held' or
 * 'processed'. With confirm '1' (the store waits for replicas) a processed id's state is
 * written again, unchanged, so that the WAIT after the script covers it before the
 * delivery is dropped as a duplicate (see CLAIM in scripts.ts).
 */
export const INBOX_BEGIN = `
local state = redis.call('HGET', KEYS[1], 'state')
if state then
  if state == 'processed' and ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'state', 'processed') end
  return state
end
redis.call('HSET', KEYS[1], 'state', 'held', 'token', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 'new'
`

// The hold is this session's: still held, with its token.
const MINE = `
local held = redis.call('HMGET', KEYS[1], 'state', 'token')
if held[1] ~= 'held' or held[2] ~= ARGV[1] then return 0 end
`

/** KEYS: id. ARGV: token, holdMs. Returns 1, or 0 when the hold is not this session's any more. */
export const INBOX_RENEW = `${MINE}
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`

/** KEYS: id. ARGV: token. Returns 1, or 0. */
export const INBOX_RELEASE = `${MINE}
redis.call('DEL', KEYS[1])
return 1
`

/**
 * KEYS: id, attempts, dead, then the keys the handler's commands name.
 * ARGV: token, retentionMs, take failures ('1'/'0'), dead letter JSON (or ''), the number
 * of commands, then each command as: name, index of its key in KEYS, argument count,
 * arguments. Returns 1, or 0 (nothing run) when the hold is not this session's any more.
 * Redis has no rollback: a command that fails as it runs (a wrong type) stops the
 * script with the commands before it applied and the id not recorded.
 */
export const INBOX_COMMIT = `${MINE}
local i = 6
for c = 1, tonumber(ARGV[5]) do
  local name, key, argc = ARGV[i], KEYS[tonumber(ARGV[i + 1])], tonumber(ARGV[i + 2])
  i = i + 3
  local args = {}
  for a = 1, argc do
    args[a] = ARGV[i]
    i = i + 1
  end
  redis.call(name, key, unpack(args))
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'processed')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[3] == '1' then redis.call('DEL', KEYS[2]) end
if ARGV[4] ~= '' then redis.call('SET', KEYS[3], ARGV[4]) end
return 1
`

/** KEYS: attempts. ARGV: error, keep for ms. Returns the count, this failure included. */
export const INBOX_FAILURE = `
local t = redis.call('TIME')
local n = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'lastError', ARGV[1])
redis.call('HSETNX', KEYS[1], 'firstFailedAt', string.format('%.0f', t[1] * 1000 + math.floor(t[2] / 1000)))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n
`

/** KEYS: attempts. Returns attempts, lastError, firstFailedAt (nil when there were no failures). */
export const INBOX_FAILURE_READ = `
return redis.call('HMGET', KEYS[1], 'attempts', 'lastError', 'firstFailedAt')
`

/** The scripts by name. */
export const INBOX_SCRIPTS = {
  idemInboxBeginV1: INBOX_BEGIN,
  idemInboxRenewV1: INBOX_RENEW,
  idemInboxReleaseV1: INBOX_RELEASE,
  idemInboxCommitV1: INBOX_COMMIT,
  idemInboxFailureV1: INBOX_FAILURE,
  idemInboxFailureReadV1: INBOX_FAILURE_READ,
} as const

export type InboxScriptName = keyof typeof INBOX_SCRIPTS
