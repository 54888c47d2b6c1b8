/*
 * The leased protocol on Redis, protocol v3 (docs/redis-protocol.md), for one key and up
 * to 3 processes that crash, stall and whose messages are delayed. It mirrors:
 *   - src/stores/redis/        the claim (SET NX PX GET), the takeover script, and the
 *                              writes through a lease: complete, renew, saveStep, release
 *                              (SET IFEQ or a compare-and-set script on a 3h value,
 *                              scripts fenced on the claimId on a 3s value)
 *   - src/core/leased/runner.ts, held-call.ts  claim, poll, run, then complete or release
 *   - src/core/leased/heartbeat.ts             renewals, beside the call's own requests
 *   - src/core/leased/steps.ts                 a step's result saved before the call goes on
 *   - src/core/leased/store.ts                 the LeasedStore port: a Lease per claim
 *
 * The key's claim is one Redis string (kind, below), with a steps hash beside it:
 *   absent                     ABSENT
 *   3h claimId fp, PX lease    HELD, no steps: the lease's end deletes the key
 *   3s claimId leaseUntil fp   STEPPED, held or released, with steps: the lease's end only
 *                              puts leaseUntil in the past (PAST), a release makes it 0 (ZERO)
 *   3c fp outcome              COMPLETED
 * A claim is SET NX PX GET, one atomic step: an absent key becomes the claim's 3h value
 * (the reply is nil: acquired), any other value is the reply. A 3s value of the caller's
 * own request sends the TAKEOVER script, a second round trip, which decides on the value
 * it finds then. Each claim makes a new claimId (16 random bytes there; here the process
 * and its claim number, as unique), and every write after the claim is compare-and-set
 * on it: on the exact 3h value while the lease has no steps, on the claimId in the 3s
 * value after. A lease's heartbeat runs beside its steps, so a renewal sent in the 3h
 * form may meet the 3s value the lease's own first step made: the lease then sends it
 * again by claimId, which the model folds into one step (the store takes either form of
 * the claim's claimId). EXACT=1 does not: Spin then finds the holder refused while its
 * claim still holds the key (a false LeaseLostError).
 *
 * Time is the adversary: the Clock may end a held lease at any moment (a holder stalled
 * by GC, SIGSTOP or a blocked event loop cannot tell), so safety rests on the claimId
 * alone. Each process talks to the store over channels of its own (its calls, and its
 * heartbeat's renewals), and the store serves the channels in any order: a request may
 * arrive long after it was sent, after a takeover, or after its sender died. Processes
 * 0 and 1 send the same request, process 2 another one with the same key.
 *
 * Left out: the fencing token (fencingToken()), and the keys' retention (ttlMs, taken to
 * outlast the scenario: an expired key is a new key). RETAIN=1 (in the full run) lets a
 * 3s key whose lease ended expire.
 *
 * FENCED=0 (spin -DFENCED=0) compares nothing in the writes after the claim: the broken
 * variant the test expects a counterexample from.
 */
#ifndef FENCED
#define FENCED 1
#endif
#ifndef EXACT
#define EXACT 0
#endif
#ifndef RETAIN
#define RETAIN 0
#endif
#define N 3
#ifndef CLAIMS
#define CLAIMS 1      /* claims per process: each poll after "running" is one */
#endif

#define ABSENT 0
#define HELD 1
#define STEPPED 2
#define COMPLETED 3

#define LIVE 0
#define PAST 1
#define ZERO 2

/* The form a lease writes in: the 3h value, or the 3s one. */
#define PLAIN 0
#define STEPS 1

/* The request a process sends: its fingerprint. */
#define FP(w) (w == 2)

/* The claimId of process w's n-th claim (n from 1), unique per claim as 16 random bytes
 * are; and the process whose claim a value names. */
#define ID(w, n) (w * CLAIMS + n)
#define HOLDER ((cid - 1) / CLAIMS)

mtype = { CLAIM, TAKEOVER, SAVE, COMPLETE, RELEASE, ACQUIRED, RUNNING, SEEN3S, DONE, OK, REFUSED }

/* The key's value and its steps hash (one atomic step per command or script). */
byte kind = ABSENT
byte cid = 0          /* the claimId in a 3h or 3s value */
bit fp = 0            /* the fingerprint in the value */
byte leaseUntil = LIVE /* a 3s value's leaseUntil */
byte stepValue = 0    /* the steps hash (3s only): one step's result */
byte outcome = 0

/* Ghost state for the properties. */
byte saves = 0        /* step results that landed (in this lifetime of the key) */
byte completes = 0    /* outcomes that landed */
bool dead[N]

chan req[N] = [1] of { mtype, byte, byte, bit }     /* op, claimId, value, form */
chan rep[N] = [1] of { mtype, bool, byte }          /* answer, steps taken over, value */
chan beat[N] = [CLAIMS] of { byte, bit }            /* a renewal: claimId, form */

/* The claim c holds the key: its value names c and was not released. */
#define HOLDS(c) (cid == c && (kind == HELD || (kind == STEPPED && leaseUntil != ZERO)))

#if EXACT
#define MATCHES(c, f) (HOLDS(c) && (kind == HELD) == (f == PLAIN))
#else
#define MATCHES(c, f) HOLDS(c)
#endif

#if FENCED
#define MAYWRITE(c, f) MATCHES(c, f)
#else
#define MAYWRITE(c, f) true
#endif

/* A write that lands comes from the claim that holds the key (the fencing promise). */
#define LANDS(c) assert(HOLDS(c))
/* A write is refused only once its claim no longer holds the key: no false LeaseLostError. */
#define REFUSES(c) assert(!HOLDS(c))

inline claim(w, c) {
  if
  :: kind == ABSENT ->
    /* SET NX PX GET: nil, the key is this claim's 3h value */
    kind = HELD; cid = c; fp = FP(w);
    rep[w]!ACQUIRED, false, 0
  :: kind == HELD -> rep[w]!RUNNING, false, 0
  :: kind == STEPPED -> rep[w]!SEEN3S, false, fp
  :: kind == COMPLETED -> rep[w]!DONE, false, outcome
  fi
}

inline takeover(w, c) {
  if
  :: kind == ABSENT ->
    /* gone meanwhile (its retention ended): claimed as a free key, without steps */
    kind = HELD; cid = c; fp = FP(w);
    rep[w]!ACQUIRED, false, 0
  :: kind == STEPPED && leaseUntil != LIVE && fp == FP(w) ->
    /* lapsed or released, same request: a new claimId, a new lease, the steps */
    cid = c; leaseUntil = LIVE;
    rep[w]!ACQUIRED, true, stepValue
  :: kind == COMPLETED -> rep[w]!DONE, false, outcome
  :: else -> rep[w]!RUNNING, false, 0    /* a live lease, another request's steps, a 3h claim */
  fi
}

inline save(w, c, v, f) {
  if
  :: MAYWRITE(c, f) ->
    LANDS(c);
    /* the first step turns 3h into 3s, its lease still live */
    if :: kind == HELD -> kind = STEPPED; leaseUntil = LIVE :: else fi;
    stepValue = v; saves++;
    rep[w]!OK, false, 0
  :: else -> REFUSES(c); rep[w]!REFUSED, false, 0
  fi
}

inline complete(w, c, v, f) {
  if
  :: MAYWRITE(c, f) ->
    LANDS(c);
    /* the outcome is made from the step the store kept, never from a replaced holder's */
    assert((kind == STEPPED && v == stepValue) || (kind == HELD && v == c));
    kind = COMPLETED; outcome = v; completes++;
    cid = 0; leaseUntil = LIVE; stepValue = 0;   /* 3c fp outcome; the steps hash deleted */
    rep[w]!OK, false, 0
  :: else -> REFUSES(c); rep[w]!REFUSED, false, 0
  fi
}

inline release(w, c, f) {
  if
  :: MAYWRITE(c, f) ->
    LANDS(c);
    if
    :: kind == HELD -> kind = ABSENT; cid = 0; fp = 0   /* compare-and-delete */
    :: else -> leaseUntil = ZERO                         /* 3s: leaseUntil 0, the steps kept */
    fi;
    rep[w]!OK, false, 0
  :: else -> REFUSES(c); rep[w]!REFUSED, false, 0
  fi
}

/* A renewal: 3h gets PX lease again (the Clock may still end it later), 3s a live leaseUntil. */
inline renew(c, f) {
  if
  :: MAYWRITE(c, f) -> LANDS(c); if :: kind == STEPPED -> leaseUntil = LIVE :: else fi
  :: else -> REFUSES(c)
  fi
}

inline serve(w) {
  if
  :: op == CLAIM -> claim(w, c)
  :: op == TAKEOVER -> takeover(w, c)
  :: op == SAVE -> save(w, c, v, f)
  :: op == COMPLETE -> complete(w, c, v, f)
  :: op == RELEASE -> release(w, c, f)
  fi
}

/* No two holders' effects of the key both count. */
#define ONCE assert(saves <= 1 && completes <= 1)

/* The request served is not part of the store's state. */
#define FORGET op = 0; c = 0; v = 0; f = 0

active proctype Store() {
  mtype op; byte c, v; bit f
end:
  do
  :: atomic { req[0]?op, c, v, f -> serve(0); ONCE; FORGET }
  :: atomic { req[1]?op, c, v, f -> serve(1); ONCE; FORGET }
  :: atomic { req[2]?op, c, v, f -> serve(2); ONCE; FORGET }
  :: atomic { beat[0]?c, f -> renew(c, f); FORGET }
  :: atomic { beat[1]?c, f -> renew(c, f); FORGET }
  :: atomic { beat[2]?c, f -> renew(c, f); FORGET }
  od
}

/* Leases end whenever the holder has not renewed "recently enough": at any time. */
active proctype Clock() {
end:
  do
  :: atomic { kind == HELD -> kind = ABSENT; cid = 0; fp = 0 }   /* PX lease: gone */
  :: atomic { kind == STEPPED && leaseUntil == LIVE -> leaseUntil = PAST }
#if RETAIN
  /* a key with steps kept leaseMs + ttlMs after its last claim: then a new key */
  :: atomic { kind == STEPPED && leaseUntil != LIVE -> kind = ABSENT; cid = 0; fp = 0; leaseUntil = LIVE; stepValue = 0; saves = 0 }
#endif
  od
}

/* A crash ends the process where it stands; a request it sent may still arrive. */
#define CRASH_POINT if :: dead[me] = true; goto gone :: skip fi

proctype Worker(byte me) {
  byte claims = 0, c, sv, mine; mtype a; bool has; bit form
again:
  if
  :: claims < CLAIMS -> claims++
  :: else -> goto gone
  fi;
  c = ID(me, claims);                                /* a new claimId, made by the client */
  req[me]!CLAIM, c, 0, 0; rep[me]?a, has, sv;
  if
  :: a == SEEN3S && sv != FP(me) -> a = RUNNING      /* steps of another request */
  :: a == SEEN3S && sv == FP(me) ->                  /* its own request's steps: the script decides */
     req[me]!TAKEOVER, c, 0, 0; rep[me]?a, has, sv
  :: else
  fi;
  if
  :: a == DONE -> assert(sv == outcome); goto gone    /* a replay returns the stored outcome */
  :: a == RUNNING -> goto again                      /* 409, a mismatch, or poll after a backoff */
  :: a == ACQUIRED -> form = has                     /* 3s when it took steps over, else 3h */
  fi;
  CRASH_POINT;
  /* The heartbeat renews beside the call, served whenever: as the store takes either form,
     one renewal sent now stands for every later one. */
  if
  :: beat[me]!c, form
  :: skip
  fi;
  if
  :: has -> mine = sv                                /* resume after the saved step */
  :: else ->
    mine = c;                                        /* the effect, tagged by its claim; the
                                                        downstream dedupes it by derive(key) */
    if
    :: CRASH_POINT;
       req[me]!SAVE, c, mine, form; rep[me]?a, _, _;
       if
       :: a == REFUSED -> goto again                 /* LeaseLostError: the client retries */
       :: else -> form = STEPS
       fi
    :: skip                                          /* a call without steps */
    fi
  fi;
  CRASH_POINT;
  if
  :: req[me]!COMPLETE, c, mine, form; rep[me]?a, _, _;
     if :: a == REFUSED -> goto again :: else fi
  :: req[me]!RELEASE, c, 0, form; rep[me]?a, _, _; /* fn threw: a retry starts over (the
                                                        port lets a 3s claim be released too) */
     goto again
  fi;
gone:
  skip;
  /* a process that is gone holds nothing: its locals do not tell states apart */
  d_step { c = 0; sv = 0; mine = 0; a = 0; has = false; form = 0; claims = 0 }
}

init {
  atomic { run Worker(0); run Worker(1); run Worker(2) }
}

/* A key whose holder died becomes claimable: its lease ends (nobody renews it). */
#define live ((kind == HELD) || (kind == STEPPED && leaseUntil == LIVE))
#define orphaned (live && dead[HOLDER])
ltl orphan_claimable { [] (orphaned -> <> !live) }
