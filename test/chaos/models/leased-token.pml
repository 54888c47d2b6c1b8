/*
 * The leased protocol fenced by a numeric token, for one key and up to 3 processes that
 * crash, stall and whose messages are delayed: the protocol of the SQL and DynamoDB
 * stores' leases, and of the Redis keys written before protocol v3 (a v2 hash is still
 * claimed by the v2 scripts and honoured for its retention: docs/redis-protocol.md;
 * leased.pml models v3). It mirrors:
 *   - src/core/leased/runner.ts, held-call.ts  claim, takeover with saved steps, complete, release
 *   - src/core/leased/heartbeat.ts   renewals while the call runs
 *   - src/core/leased/steps.ts       a step's result saved before the call goes on
 *   - src/core/leased/store.ts       the LeasedStore port: atomic transitions, fencing
 *   - src/stores/postgres/dialect/leases.ts and idem_lease_claim() in dialect/migrations.ts
 *   - src/stores/sqlite/leased.ts, src/stores/dynamodb/leased/ (fence.ts)
 *   - src/stores/redis/: the v2 scripts CLAIM, RENEW, SAVE_STEP, COMPLETE, RELEASE (FENCE)
 *
 * Time is the adversary: the Clock may let a held lease lapse at any moment (a holder
 * stalled by GC, SIGSTOP or a blocked event loop cannot tell), so safety rests on the
 * fencing token alone. Each process talks to the store over a channel of its own, and
 * the store serves the channels in any order: a request may arrive long after it was
 * sent, after a takeover, or after its sender died.
 *
 * FENCED=0 (spin -DFENCED=0) removes the token check from every write after the claim:
 * the broken variant the test expects a counterexample from.
 */
#ifndef FENCED
#define FENCED 1
#endif
#define N 3
#ifndef CLAIMS
#define CLAIMS 1      /* claims per process: each poll after "running" is one */
#endif
#define NONE 255

#define FREE 0
#define HELD 1
#define COMPLETED 2

mtype = { CLAIM, RENEW, SAVE, COMPLETE, RELEASE, ACQUIRED, RUNNING, DONE, OK, REFUSED }

/* The store's record of the key (one atomic step per request, as a Lua script or one statement). */
byte state = FREE
byte token = 0
bool expired = false
bool stepSaved = false
byte stepValue = 0
byte outcome = 0
byte holder = NONE

/* Ghost counters for the properties. */
byte saves = 0        /* step results that landed */
byte completes = 0    /* outcomes that landed */
bool dead[N]

chan req[N] = [1] of { mtype, byte, byte }          /* op, token, value */
chan rep[N] = [1] of { mtype, byte, bool, byte }    /* answer, token, has a saved step, value */

#if FENCED
#define MAYWRITE(t) (t == token && state == HELD)
#else
#define MAYWRITE(t) (state != COMPLETED || true)
#endif

/* A write that lands must come from the current holder (the fencing promise). */
#define LANDS(t) assert(t == token && state == HELD)

inline serve(w) {
  if
  :: op == CLAIM ->
    if
    :: state == COMPLETED -> rep[w]!DONE, 0, false, outcome
    :: state == HELD && !expired -> rep[w]!RUNNING, 0, false, 0
    :: else ->
      /* free, released, or lapsed: take over with a greater token and the saved steps */
      token++; state = HELD; expired = false; holder = w;
      rep[w]!ACQUIRED, token, stepSaved, stepValue
    fi
  :: op == RENEW ->
    if
    :: MAYWRITE(t) -> LANDS(t); expired = false; rep[w]!OK, 0, false, 0
    :: else -> rep[w]!REFUSED, 0, false, 0
    fi
  :: op == SAVE ->
    if
    :: MAYWRITE(t) -> LANDS(t); stepSaved = true; stepValue = v; saves++; rep[w]!OK, 0, false, 0
    :: else -> rep[w]!REFUSED, 0, false, 0
    fi
  :: op == COMPLETE ->
    if
    :: MAYWRITE(t) ->
      LANDS(t);
      /* the outcome is made from the step result the store kept, never a replaced holder's */
      assert(stepSaved && v == stepValue);
      state = COMPLETED; outcome = v; completes++; holder = NONE;
      rep[w]!OK, 0, false, 0
    :: else -> rep[w]!REFUSED, 0, false, 0
    fi
  :: op == RELEASE ->
    if
    :: MAYWRITE(t) -> LANDS(t); state = FREE; holder = NONE; rep[w]!OK, 0, false, 0
    :: else -> rep[w]!REFUSED, 0, false, 0
    fi
  fi;
  /* no two holders' effects of the key both count */
  assert(saves <= 1 && completes <= 1)
}

active proctype Store() {
  mtype op; byte t, v
end:
  do
  :: atomic { req[0]?op, t, v -> serve(0) }
  :: atomic { req[1]?op, t, v -> serve(1) }
  :: atomic { req[2]?op, t, v -> serve(2) }
  od
}

/* Leases lapse whenever the holder has not renewed "recently enough": at any time. */
active proctype Clock() {
end:
  do
  :: atomic { state == HELD && !expired -> expired = true }
  od
}

/* A crash ends the process where it stands; a request it sent may still arrive. */
#define CRASH_POINT if :: dead[me] = true; goto gone :: skip fi

proctype Worker(byte me) {
  byte claims = 0, t, sv, mine; mtype a; bool has
again:
  if
  :: claims < CLAIMS -> claims++
  :: else -> goto gone
  fi;
  req[me]!CLAIM, 0, 0; rep[me]?a, t, has, sv;
  if
  :: a == DONE -> assert(sv == outcome); goto gone    /* a replay returns the stored outcome */
  :: a == RUNNING -> goto again                      /* 409, or poll after a backoff */
  :: a == ACQUIRED
  fi;
  CRASH_POINT;
  if
  :: has -> mine = sv                                /* resume after the saved step */
  :: else ->
    mine = t;                                        /* the effect, tagged by its holder; the
                                                        downstream dedupes it by derive(key) */
    CRASH_POINT;
    req[me]!SAVE, t, mine; rep[me]?a, _, _, _;
    if
    :: a == REFUSED -> goto again                    /* LeaseLostError: the client retries */
    :: else
    fi
  fi;
  CRASH_POINT;
  if
  :: req[me]!RENEW, t, 0; rep[me]?a, _, _, _;        /* a heartbeat */
     if :: a == REFUSED -> goto again :: else fi
  :: skip
  fi;
  CRASH_POINT;
  if
  :: req[me]!COMPLETE, t, mine; rep[me]?a, _, _, _;
     if :: a == REFUSED -> goto again :: else fi
  :: req[me]!RELEASE, t, 0; rep[me]?a, _, _, _;      /* fn threw after the step: leave it resumable */
     goto again
  fi;
gone:
  skip;
  /* a process that is gone holds nothing: its locals do not tell states apart */
  d_step { t = 0; sv = 0; mine = 0; a = 0; has = false; claims = 0 }
}

init {
  atomic { run Worker(0); run Worker(1); run Worker(2) }
}

/* A key whose holder died becomes claimable: its lease lapses (nobody renews it). */
#define orphaned (state == HELD && holder != NONE && dead[holder])
#define claimable (state != HELD || expired)
ltl orphan_claimable { [] (orphaned -> <> claimable) }
