import { inboxLockId } from '../inbox.js'
import { lockWait } from '../lock-wait.js'
import { quoteSchema } from '../statement.js'
import type { Migration } from './migration.js'

// The migrations of the tables beside the keys: once (version 2), the outbox, dead
// letters and inbox attempts (version 3), and the inbox (version 5).

export const onceTable: Migration = {
  version: 2,
  description: 'idem_once, the first-time gate of once()',
  up: (schema) => [
    `CREATE TABLE ${quoteSchema(schema)}.idem_once (
  kind text NOT NULL,
  subject text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, subject)
)`,
  ],
}

export const queueTables: Migration = {
  version: 3,
  description: 'idem_outbox, idem_dead_letters and idem_inbox_attempts for idem/queue',
  up: (schema) => {
    const s = quoteSchema(schema)
    return [
      // One row per queued effect. A claim leases rows by pushing next_attempt_at
      // past the lease (and naming the claim in locked_by), so due rows are exactly
      // "undelivered and next_attempt_at <= now()", which the partial index serves.
      `CREATE TABLE ${s}.idem_outbox (
  id bigserial PRIMARY KEY,
  topic text NOT NULL,
  dedupe_key text NOT NULL,
  payload jsonb NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  locked_by text,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz,
  UNIQUE (topic, dedupe_key)
)`,
      `CREATE INDEX idem_outbox_due ON ${s}.idem_outbox (next_attempt_at) WHERE delivered_at IS NULL`,
      `CREATE TABLE ${s}.idem_dead_letters (
  id bigserial PRIMARY KEY,
  source text NOT NULL CHECK (source IN ('inbox', 'outbox')),
  name text NOT NULL,
  message_key text NOT NULL,
  payload jsonb,
  attempts integer NOT NULL,
  last_error text NOT NULL,
  first_seen_at timestamptz NOT NULL,
  dead_at timestamptz NOT NULL DEFAULT now()
)`,
      `CREATE INDEX idem_dead_letters_name ON ${s}.idem_dead_letters (source, name, dead_at)`,
      // Failed attempts of inbox messages not yet processed; a row lives only
      // between a message's first failure and its success or dead letter.
      `CREATE TABLE ${s}.idem_inbox_attempts (
  consumer text NOT NULL,
  message_key text NOT NULL,
  attempts integer NOT NULL,
  last_error text NOT NULL,
  first_failed_at timestamptz NOT NULL DEFAULT now(),
  last_failed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_key)
)`,
    ]
  },
}

export const inboxTable: Migration = {
  version: 5,
  description: 'idem_inbox and idem_inbox_claim(): inbox message ids move out of idem_keys',
  up: (schema) => {
    const s = quoteSchema(schema)
    return [
      // One narrow row per processed message: the inbox needs only "done, until when".
      // Measured (bench:inbox-parts): 76–108 µs of Postgres CPU a message against
      // 114–154 µs for the same id as an idem_keys row.
      `CREATE TABLE ${s}.idem_inbox (
  consumer text NOT NULL,
  message_key text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (consumer, message_key)
)`,
      `CREATE INDEX idem_inbox_expires_at ON ${s}.idem_inbox USING brin (expires_at)`,
      // idem_claim's decision for an inbox id (see version 1): the state only.
      `CREATE FUNCTION ${s}.idem_inbox_claim(p_consumer text, p_key text, p_wait_ms integer)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  lock_id bigint := ${inboxLockId('p_consumer', 'p_key')};
  previous_timeout text;
  live boolean;
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_id) THEN
    IF EXISTS (SELECT 1 FROM ${s}.idem_inbox AS i
               WHERE i.consumer = p_consumer AND i.message_key = p_key AND i.expires_at > now()) THEN
      RETURN 'found';
    END IF;
${lockWait({ locked: "RETURN 'locked';", stale: "RETURN 'stale';" })}
  END IF;
  SELECT i.expires_at > now() INTO live FROM ${s}.idem_inbox AS i
    WHERE i.consumer = p_consumer AND i.message_key = p_key;
  IF FOUND AND live THEN
    RETURN 'found';
  END IF;
  IF FOUND THEN
    DELETE FROM ${s}.idem_inbox AS i WHERE i.consumer = p_consumer AND i.message_key = p_key;
  END IF;
  RETURN 'new';
END
$fn$`,
      // Ids recorded by earlier versions (scope inbox:<consumer> in idem_keys) move
      // here, so an upgrade forgets no processed message. Stop consumers of the older
      // version first: until then they record new ids where this version no longer looks.
      `INSERT INTO ${s}.idem_inbox (consumer, message_key, expires_at)
  SELECT substr(k.scope, 7), k.key, k.expires_at FROM ${s}.idem_keys AS k
  WHERE k.scope LIKE 'inbox:%' AND k.expires_at > now()`,
      `DELETE FROM ${s}.idem_keys WHERE scope LIKE 'inbox:%'`,
    ]
  },
}
