import { describe, expect, it } from 'vitest'
import { masked, reason, unquoted } from './credentials.js'

// Every form a driver takes a credential in: pg (URLs, their query, libpq's keyword/value
// pairs), ioredis (userinfo, ?password=), mysql2 (URLs; no --mysql flag yet, so only here).
const FORMS: [string, string, string][] = [
  ['URL userinfo', 'postgres://app:s3cret@db:5432/app', 'postgres://app:***@db:5432/app'],
  ['postgresql:// userinfo', 'postgresql://app:s3cret@db/app', 'postgresql://app:***@db/app'],
  ['a percent-encoded password', 'postgres://app:s3%40cret@db/app', 'postgres://app:***@db/app'],
  ['?password=', 'postgres://127.0.0.1:5432/test?user=postgres&password=s3cret', 'postgres://127.0.0.1:5432/test?user=postgres&password=***'],
  ['?sslpassword= and ?sslkey=', 'postgres://db/app?sslkey=/keys/s3cret.key&sslmode=require&sslpassword=s3cret', 'postgres://db/app?sslkey=***&sslmode=require&sslpassword=***'],
  ['?passfile=', 'postgres://db/app?passfile=/home/app/s3cret.pgpass', 'postgres://db/app?passfile=***'],
  ['userinfo and ?password= both', 'postgres://app:s3cret@db/app?password=s3cret2', 'postgres://app:***@db/app?password=***'],
  ['libpq keyword/value pairs', 'host=db port=5432 password=s3cret dbname=test', 'host=db port=5432 password=*** dbname=test'],
  ['libpq, quoted with escapes', "host=db password = 's3 \\'cret' sslpassword=s3\\ cret user=app", 'host=db password = *** sslpassword=*** user=app'],
  ['libpq sslkey', 'host=db sslkey=/keys/s3cret.key', 'host=db sslkey=***'],
  ['libpq, quote left open', "host=db password='s3cret", 'host=db password=***'],
  ['Redis :password@', 'redis://:s3cret@127.0.0.1:6379/0', 'redis://:***@127.0.0.1:6379/0'],
  ['Redis user:password@', 'rediss://default:s3cret@cache:6380', 'rediss://default:***@cache:6380'],
  ['Redis password@ (redis-cli reads it as the password)', 'redis://s3cret@127.0.0.1:6379', 'redis://***@127.0.0.1:6379'],
  ['Redis ?password=', 'redis://127.0.0.1:6379?password=s3cret&db=1', 'redis://127.0.0.1:6379?password=***&db=1'],
  ['Redis ?sentinelPassword=', 'redis://127.0.0.1:26379?sentinelPassword=s3cret', 'redis://127.0.0.1:26379?sentinelPassword=***'],
  ['MySQL URL', 'mysql://root:s3cret@127.0.0.1:3306/test', 'mysql://root:***@127.0.0.1:3306/test'],
  ['MySQL ?password=', 'mysql://root@127.0.0.1:3306/test?password=s3cret&charset=utf8mb4', 'mysql://root@127.0.0.1:3306/test?password=***&charset=utf8mb4'],
  ['mariadb:// URL', 'mariadb://root:s3cret@db/test', 'mariadb://root:***@db/test'],
  ['an http URL (--metrics, --endpoint)', 'http://scraper:s3cret@127.0.0.1:3000/metrics', 'http://scraper:***@127.0.0.1:3000/metrics'],
  ['a URL that does not parse (port)', 'postgres://app:s3cret@db:99999/app', 'postgres://app:***@db:99999/app'],
  ['a URL that does not parse (a / in the password)', 'postgres://app:s3/cret@db/app', 'postgres://app:***@db/app'],
  ['a URL that does not parse (a ? in the password)', 'mysql://root:s3?cret@db/test', 'mysql://root:***@db/test'],
]

describe('masked: every credential form a driver takes', () => {
  it.each(FORMS)('%s', (_, text, shown) => {
    expect(masked(text)).toBe(shown)
    expect(masked(text)).not.toMatch(/s3|cret/)
  })

  it('leaves a connection string without credentials as it was written', () => {
    for (const text of ['postgres://postgres@127.0.0.1:5432/test', 'redis://127.0.0.1:6379', 'host=db port=5432 user=app dbname=app', 'not-a-url', 'localhost:6379', 'postgres://db/app?user=a@b']) {
      expect(masked(text)).toBe(text)
    }
  })
})

describe('unquoted: what others wrote, without the credentials of the command line', () => {
  // What each form's credential is, as written and as the driver decodes it.
  const SECRETS: Record<string, string[]> = {
    'a percent-encoded password': ['s3%40cret', 's3@cret'],
    '?sslpassword= and ?sslkey=': ['/keys/s3cret.key', 's3cret'],
    '?passfile=': ['/home/app/s3cret.pgpass'],
    'userinfo and ?password= both': ['s3cret', 's3cret2'],
    'libpq, quoted with escapes': ["'s3 \\'cret'", "s3 'cret", 's3\\ cret', 's3 cret'],
    'libpq sslkey': ['/keys/s3cret.key'],
    'a URL that does not parse (a / in the password)': ['s3/cret'],
    'a URL that does not parse (a ? in the password)': ['s3?cret'],
  }

  it.each(FORMS)('%s, as written and as decoded', (name, text) => {
    const secrets = SECRETS[name] ?? ['s3cret']
    for (const secret of secrets) expect(unquoted(`driver: "${secret}".`, [text])).toBe('driver: "***".')
  })

  it('reads a flag written with = and a whole command line', () => {
    const argv = ['stats', '--postgress=postgres://app:s3cret@db/app', '--redis', 'redis://:r3dis@cache']
    expect(unquoted("unknown option '--postgress=postgres://app:s3cret@db/app'", argv)).toBe("unknown option '--postgress=postgres://app:***@db/app'")
    expect(reason(new Error('NOAUTH r3dis'), argv)).toBe('NOAUTH ***')
    expect(reason('plain', argv)).toBe('plain')
  })

  it('a query value with + is the value with a space, as URLSearchParams reads it', () => {
    expect(unquoted('got s3 cret', ['postgres://db/app?password=s3+cret'])).toBe('got ***')
    // In userinfo a + is itself.
    expect(unquoted('got s3+cret', ['postgres://app:s3+cret@db/app'])).toBe('got ***')
  })
})
