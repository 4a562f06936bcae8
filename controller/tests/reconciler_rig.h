/*
 * reconciler_rig.h - the claim reconciler (claim_reconciler.h) on the fake
 * writer, for the suites that drive it against a backend: its writer,
 * metrics and expectations, and the claims it queued again. Include after
 * <cmocka.h>, json_fixture.h and fake_writer.h.
 */
#ifndef PK_TEST_RECONCILER_RIG_H
#define PK_TEST_RECONCILER_RIG_H

#include "claim_reconciler.h"

struct reconciler_rig {
	struct fake_writer fw;
	struct pk_writer writer;
	struct pk_metrics metrics;
	struct pk_claim_reconciler r;
	unsigned requeued;        /* claims the reconciler queued again */
	long requeue_delay;       /* the last one's delay */
	unsigned followed;        /* what the backend's operations changed, handed on */
	struct pk_pool_next next; /* the last one */
};

static inline void rig_queue_claim(void *ud, const char *ns, const char *name, long delay_ms)
{
	struct reconciler_rig *g = ud;
	(void)ns, (void)name;
	g->requeued++;
	g->requeue_delay = delay_ms;
}

static inline void rig_follow(void *ud, const struct pk_pool_next *next)
{
	struct reconciler_rig *g = ud;
	g->followed++;
	g->next = *next;
}

/* g's reconciler over backend b. */
static inline void rig_init(struct reconciler_rig *g, struct pk_backend *b)
{
	g->writer = fake_writer_init(&g->fw);
	assert_int_equal(pk_metrics_init(&g->metrics), PK_OK);
	g->r = (struct pk_claim_reconciler){.backend = b,
	                                    .writer = &g->writer,
	                                    .expect = pk_expect_new(),
	                                    .metrics = &g->metrics,
	                                    .ipam_version = "v1beta2",
	                                    .queue_claim = rig_queue_claim,
	                                    .follow = rig_follow,
	                                    .ud = g};
	assert_non_null(g->r.expect);
}

static inline void rig_release(struct reconciler_rig *g)
{
	fake_writer_release(&g->fw);
	json_decref(g->fw.patched);
	pk_expect_free(g->r.expect);
	pk_metrics_release(&g->metrics);
}

/* Before another pass as if the cache had caught up: the calls and the expectations of the
 * last pass forgotten. */
static inline void rig_next_pass(struct reconciler_rig *g)
{
	fake_writer_release(&g->fw);
	pk_expect_free(g->r.expect);
	g->r.expect = pk_expect_new();
	assert_non_null(g->r.expect);
}

#endif
