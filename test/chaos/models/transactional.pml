/*
 * The transactional claim, for up to 3 processes that crash and stall, on two keys
 * whose locks collide (the lock is taken on a hash of the key). It mirrors:
 *   - src/core/engine.ts                 run: begin, replay or run, commit or roll back
 *   - src/core/decide.ts                 the claim decided: replay, mismatch, in flight, retry, run
 *   - src/core/store.ts                  the KeyStore port: one session holds the key's lock
 *   - the claim function in src/stores/postgres/dialect/key-claim.ts: a transaction-
 *     scoped advisory lock on a hash of (scope, key), the live record read after the
 *     lock, an expired record removed under the lock
 *   - src/stores/sql/key-sessions.ts: a retry of a recorded key first reads the
 *     record with no lock (recent keys); the record's plain INSERT and COMMIT at the end
 *   - src/stores/sqlite/driver/store-driver.ts: BEGIN IMMEDIATE is the lock, the key read again in it
 *
 * The record is written only at commit, atomically with the effect: a crash before it
 * rolls both back, and Postgres lets go of a dead session's lock once it notices (the
 * Reaper, some time later). Records expire at any moment (the database's clock).
 *
 * LOCKED=0 (spin -DLOCKED=0) lets a claim proceed without the lock: the broken variant
 * the test expects a counterexample from.
 */
#ifndef LOCKED
#define LOCKED 1
#endif
#define N 3
#define K 2
#define NONE 255
#ifndef ATTEMPTS
#define ATTEMPTS 2
#endif

bool lock = false
byte lockOwner = NONE
bool rec[K]            /* a committed record of key k */
byte recFor[K]         /* the key the stored outcome was made for */
bool expired[K]
byte effects[K]        /* effects of key k committed in the record's lifetime */
bool dead[N]

/* A crash: the process ends where it stands, its transaction uncommitted. */
#define CRASH_POINT if :: dead[me] = true; goto gone :: skip fi

proctype Worker(byte me) {
  byte k, attempts = 0; bool pending
again:
  if
  :: attempts < ATTEMPTS -> attempts++
  :: else -> goto gone
  fi;
  if :: k = 0 :: k = 1 fi;
  /* recent keys: a committed, live record answers without the lock */
  if
  :: atomic { rec[k] && !expired[k] -> assert(recFor[k] == k) }; goto gone
  :: skip
  fi;
  /* BEGIN; idem_claim: wait for the lock, or give up after waitMs (409, retried) */
  if
  :: atomic { (!lock || !LOCKED) -> lock = true; lockOwner = me }
  :: goto again
  fi;
  CRASH_POINT;
  atomic {
    if
    :: rec[k] && !expired[k] ->
       assert(recFor[k] == k);                /* a replay is never another key's outcome */
       lock = false; lockOwner = NONE;        /* ROLLBACK of the read-only transaction */
       goto gone
    :: rec[k] && expired[k] -> rec[k] = false; expired[k] = false; effects[k] = 0   /* an expired key is a new key */
    :: else
    fi
  }
  pending = true;                             /* the effect, written through the transaction */
  CRASH_POINT;
  atomic {
    /* INSERT INTO idem_keys …; COMMIT: the plain INSERT never meets a record */
    assert(!rec[k]);
    rec[k] = true; recFor[k] = k; effects[k]++; pending = false;
    assert(effects[k] <= 1);                  /* no two calls' effects of a key both count */
    lock = false; lockOwner = NONE
  }
  CRASH_POINT;                                /* after commit, before the response: the retry replays */
gone:
  skip;
  d_step {
    pending = false; k = 0; attempts = 0;
    /* a transaction of a live process never outlives it */
    if :: !dead[me] -> assert(lockOwner != me) :: else fi
  }
}

/* Postgres ends a dead session's transaction, and its lock, once it notices. */
active proctype Reaper() {
end:
  do
  :: atomic { lock && lockOwner != NONE && dead[lockOwner] -> lock = false; lockOwner = NONE }
  od
}

active proctype Clock() {
end:
  do
  :: atomic { rec[0] && !expired[0] -> expired[0] = true }
  :: atomic { rec[1] && !expired[1] -> expired[1] = true }
  od
}

init {
  atomic { run Worker(0); run Worker(1); run Worker(2) }
}

/* A key whose holder died becomes claimable: its session's lock is let go. */
#define orphaned (lock && lockOwner != NONE && dead[lockOwner])
ltl orphan_claimable { [] (orphaned -> <> !orphaned) }
