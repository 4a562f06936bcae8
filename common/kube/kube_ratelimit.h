/*
 * kube_ratelimit.h - the client-side token bucket that keeps poolkeeper from
 * flooding the API server: `qps` tokens per second, at most `burst` saved
 * up (client-go's flowcontrol.NewTokenBucketRateLimiter; controller-runtime
 * defaults 20 and 30).
 *
 * A request reserves one token and waits the returned time before it is
 * sent. Reservations are granted in order, so waiting callers are served
 * first come, first served and the long-run rate never passes qps.
 *
 * The clock is injectable so that tests do not sleep.
 *
 * Threading: a limiter may be shared by any number of threads; a mutex
 * guards it. The caller owns it and releases it with pk_kube_ratelimit_free.
 */
#ifndef PK_KUBE_RATELIMIT_H
#define PK_KUBE_RATELIMIT_H

#include <stdbool.h>

#include "pk.h"

#define PK_KUBE_DEFAULT_QPS   20.0
#define PK_KUBE_DEFAULT_BURST 30

/* Monotonic nanoseconds. */
typedef long long pk_kube_clock_fn(void *ud);

struct pk_kube_ratelimit;

/* qps <= 0 disables limiting; burst < 1 is taken as 1. clock NULL: the
 * monotonic clock. The bucket starts full. NULL when out of memory. */
struct pk_kube_ratelimit *pk_kube_ratelimit_new(double qps, int burst, pk_kube_clock_fn *clock,
                                                void *clock_ud);

/* NULL is fine. */
void pk_kube_ratelimit_free(struct pk_kube_ratelimit *rl);

/* Takes one token; returns how many nanoseconds the caller must wait
 * before using it (0 when one was available). */
long long pk_kube_ratelimit_reserve(struct pk_kube_ratelimit *rl);

/* Takes one token only when the caller would wait for it at most max_wait_ns: then true
 * and *wait_ns the wait (0 when one was available). Otherwise false and nothing is taken,
 * so a caller with a deadline does not pay for a token it will not use. */
bool pk_kube_ratelimit_reserve_within(struct pk_kube_ratelimit *rl, long long max_wait_ns,
                                      long long *wait_ns);

/* Takes one token only when one is available now. */
bool pk_kube_ratelimit_try(struct pk_kube_ratelimit *rl);

#endif
