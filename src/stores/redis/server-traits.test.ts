import { describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { serverTraits } from './server-traits.js'

// The head of INFO server as each server writes it (CRLF line ends, as on the wire).
const info = (...lines: string[]): string => ['# Server', ...lines, 'redis_git_sha1:00000000', 'os:Linux 6.1 x86_64', ''].join('\r\n')
const redis = (version: string): string => info(`redis_version:${version}`, 'redis_mode:standalone')
// Valkey reports the Redis version it is compatible with as redis_version, and its own beside it.
const valkey = (version: string): string => info('redis_version:7.2.4', 'server_name:valkey', `valkey_version:${version}`, 'valkey_release_stage:ga')

describe('serverTraits (INFO server)', () => {
  it.each([
    ['Redis 7.0.15', [redis('7.0.15')], { server: 'redis', version: '7.0.15', setIfEq: false }],
    ['Redis 8.2.1', [redis('8.2.1')], { server: 'redis', version: '8.2.1', setIfEq: false }],
    ['Redis 8.4.0', [redis('8.4.0')], { server: 'redis', version: '8.4.0', setIfEq: true }],
    ['Redis 10.0.0', [redis('10.0.0')], { server: 'redis', version: '10.0.0', setIfEq: true }],
    ['Valkey 8.0.2 (redis_version 7.2.4)', [valkey('8.0.2')], { server: 'valkey', version: '8.0.2', setIfEq: false }],
    ['Valkey 8.1.1', [valkey('8.1.1')], { server: 'valkey', version: '8.1.1', setIfEq: true }],
    ['Valkey 9.0.0', [valkey('9.0.0')], { server: 'valkey', version: '9.0.0', setIfEq: true }],
    ['a Cluster of Redis 8.4 and 7.2 masters: the older decides', [redis('8.4.0'), redis('7.2.4'), redis('8.4.0')], { server: 'redis', version: '7.2.4', setIfEq: false }],
    ['a Cluster of Redis 8.4 masters', [redis('8.4.0'), redis('8.4.1')], { server: 'redis', version: '8.4.0', setIfEq: true }],
  ])('%s', (_, infos, traits) => {
    expect(serverTraits(infos)).toEqual(traits)
  })

  it.each([
    [[redis('6.2.14')], 'Redis 6.2.14'],
    [[redis('5.0.7')], 'Redis 5.0.7'],
    [[redis('7.0.15'), redis('6.0.20')], 'Redis 6.0.20'],
  ])('refuses a server older than 7.0, naming the version found and the minimum: %#', (infos, found) => {
    expect(() => serverTraits(infos)).toThrow(InvalidOptionError)
    expect(() => serverTraits(infos)).toThrow(
      `redisStore: option "client" reaches ${found}; idem needs Redis 7.0.0 or later (or Valkey 7.2 or later): it claims a key with SET … NX GET`,
    )
  })

  it('says so when INFO names no version', () => {
    expect(() => serverTraits([info('uptime_in_seconds:3')])).toThrow(/^INFO server named no version/)
    expect(() => serverTraits([])).toThrow('no Redis server answered INFO')
  })
})
