/* kube_ratelimit.c - token bucket with reservations. */
#include "kube_ratelimit.h"

#include <pthread.h>
#include <stdlib.h>

#include "kube.h"

struct pk_kube_ratelimit {
	pthread_mutex_t mu;
	double qps;     /* <= 0: unlimited */
	double burst;   /* bucket size, >= 1 */
	double tokens;  /* may go negative: reserved ahead */
	long long last; /* clock reading of the last refill */
	pk_kube_clock_fn *clock;
	void *clock_ud;
};

static long long mono(void *ud)
{
	(void)ud;
	return pk_kube_now_ns();
}

struct pk_kube_ratelimit *pk_kube_ratelimit_new(double qps, int burst, pk_kube_clock_fn *clock,
                                                void *clock_ud)
{
	struct pk_kube_ratelimit *rl = calloc(1, sizeof(*rl));
	if (rl == NULL)
		return NULL;
	pthread_mutex_init(&rl->mu, NULL);
	rl->qps = qps;
	rl->burst = burst < 1 ? 1.0 : (double)burst;
	rl->tokens = rl->burst;
	rl->clock = clock ? clock : mono;
	rl->clock_ud = clock_ud;
	rl->last = rl->clock(rl->clock_ud);
	return rl;
}

void pk_kube_ratelimit_free(struct pk_kube_ratelimit *rl)
{
	if (rl == NULL)
		return;
	pthread_mutex_destroy(&rl->mu);
	free(rl);
}

/* Under rl->mu. */
static void refill(struct pk_kube_ratelimit *rl, long long now)
{
	if (now > rl->last) {
		rl->tokens += (double)(now - rl->last) * rl->qps / 1e9;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
		rl->last = now;
	}
}

long long pk_kube_ratelimit_reserve(struct pk_kube_ratelimit *rl)
{
	if (rl->qps <= 0)
		return 0;
	pthread_mutex_lock(&rl->mu);
	refill(rl, rl->clock(rl->clock_ud));
	rl->tokens -= 1.0;
	long long wait = 0;
	if (rl->tokens < 0)
		wait = (long long)(-rl->tokens * 1e9 / rl->qps + 0.5);
	pthread_mutex_unlock(&rl->mu);
	return wait;
}

bool pk_kube_ratelimit_reserve_within(struct pk_kube_ratelimit *rl, long long max_wait_ns,
                                      long long *wait_ns)
{
	*wait_ns = 0;
	if (rl->qps <= 0)
		return true;
	pthread_mutex_lock(&rl->mu);
	refill(rl, rl->clock(rl->clock_ud));
	long long wait = 0;
	if (rl->tokens < 1.0)
		wait = (long long)((1.0 - rl->tokens) * 1e9 / rl->qps + 0.5);
	bool ok = wait <= max_wait_ns;
	if (ok) {
		rl->tokens -= 1.0;
		*wait_ns = wait;
	}
	pthread_mutex_unlock(&rl->mu);
	return ok;
}

bool pk_kube_ratelimit_try(struct pk_kube_ratelimit *rl)
{
	if (rl->qps <= 0)
		return true;
	pthread_mutex_lock(&rl->mu);
	refill(rl, rl->clock(rl->clock_ud));
	bool ok = rl->tokens >= 1.0;
	if (ok)
		rl->tokens -= 1.0;
	pthread_mutex_unlock(&rl->mu);
	return ok;
}
