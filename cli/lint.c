/*
 * lint.c - a lint's inputs: each loaded and checked by its own rules as a
 * batch (lint_object.c), on as many threads as asked, joining the lint in
 * input order; then the checks across objects (lint_cross.c) and the
 * totals the report reads.
 */
#include "lint.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "lint_internal.h"
#include "pool_lookup.h"
#include "pool_ref.h"
#include "rules.h"

struct pk_lint *pk_lint_new(void)
{
	struct pk_lint *l = calloc(1, sizeof(struct pk_lint));
	if (l != NULL) {
		l->set.claims = PK_ENFORCE_REPAIR;
		l->set.foreign_claims = PK_ENFORCE_WARN;
		l->set.limits = pk_manifest_limits_default();
		lint_init_lookup(l);
	}
	return l;
}

void pk_lint_set_enforcement(struct pk_lint *l, enum pk_enforcement claims,
                             enum pk_enforcement foreign_claims)
{
	l->set.claims = claims;
	l->set.foreign_claims = foreign_claims;
}

void pk_lint_set_max_file_size(struct pk_lint *l, size_t bytes)
{
	struct pk_manifest_limits d = pk_manifest_limits_default();
	l->set.limits = d;
	l->set.limits.max_bytes = bytes;
	if (bytes > d.max_bytes) {
		size_t times = bytes / d.max_bytes + 1;
		l->set.limits.max_docs = d.max_docs * times;
		l->set.limits.max_nodes = d.max_nodes * times;
	}
}

void pk_lint_free(struct pk_lint *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n_objects; i++)
		lint_object_release(&l->objects[i], &l->internal[i]);
	free(l->objects);
	free(l->internal);
	free(l->pool_refs);
	free(l->addr_refs);
	lint_uncache_pool(l);
	for (size_t i = 0; i < l->n_sources; i++) {
		free(l->sources[i].name);
		free(l->sources[i].text);
	}
	free(l->sources);
	for (size_t i = 0; i < l->n_problems; i++) {
		free(l->problems[i].source);
		free(l->problems[i].message);
	}
	free(l->problems);
	free(l);
}

/* The decimal at s (0 when none); where it ends. */
static const char *read_number(const char *s, size_t *out)
{
	*out = 0;
	for (; *s >= '0' && *s <= '9' && *out < SIZE_MAX / 10 - 10; s++)
		*out = *out * 10 + (size_t)(*s - '0');
	return s;
}

static int add_problem(struct pk_lint *l, const char *source, const char *message, bool unreadable)
{
	if (pk_array_reserve(&l->problems, &l->cap_problems, l->n_problems + 1,
	                     sizeof(*l->problems)) != PK_OK)
		return PK_ERR_NOMEM;
	struct pk_lint_problem *p = &l->problems[l->n_problems];
	p->source = strdup(source);
	p->message = strdup(message);
	p->unreadable = unreadable;
	p->line = p->column = 0;
	p->detail = p->message;
	/* "<source>:<line>:<column>: what", as the manifest loader words it. */
	size_t sl = strlen(source);
	if (!strncmp(p->message, source, sl) && p->message[sl] == ':') {
		const char *q = p->message + sl + 1;
		q = read_number(q, &p->line);
		if (*q == ':')
			q = read_number(q + 1, &p->column);
		if (p->line > 0 && q[0] == ':' && q[1] == ' ')
			p->detail = q + 2;
	}
	if (p->source == NULL || p->message == NULL) {
		free(p->source);
		free(p->message);
		return PK_ERR_NOMEM;
	}
	l->n_problems++;
	return PK_OK;
}

int pk_lint_add_unreadable(struct pk_lint *l, const char *source, const char *message)
{
	l->files++;
	return add_problem(l, source, message, true);
}

/* ---- batches: one input each ---- */

static void batch_init(struct lint_batch *b, const struct pk_lint *l, struct pk_violations *scratch)
{
	memset(b, 0, sizeof(*b));
	b->set = &l->set;
	b->scratch = scratch;
}

/* Moves the batch's objects and problem onto the lint, in order; empties the batch. */
static int join(struct pk_lint *l, struct lint_batch *b)
{
	l->files++;
	if (pk_array_reserve(&l->objects, &l->cap_objects, l->n_objects + b->n,
	                     sizeof(*l->objects)) != PK_OK ||
	    pk_array_reserve(&l->internal, &l->cap_internal, l->n_objects + b->n,
	                     sizeof(*l->internal)) != PK_OK ||
	    pk_array_reserve(&l->sources, &l->cap_sources, l->n_sources + 1, sizeof(*l->sources)) !=
	        PK_OK)
		return PK_ERR_NOMEM;
	if (b->problem != NULL && add_problem(l, b->source, b->problem, b->unreadable) != PK_OK)
		return PK_ERR_NOMEM;
	if (b->n > 0) {
		memcpy(l->objects + l->n_objects, b->objects, b->n * sizeof(*b->objects));
		memcpy(l->internal + l->n_objects, b->internal, b->n * sizeof(*b->internal));
	}
	l->n_objects += b->n;
	b->n = 0;
	l->sources[l->n_sources++] = (struct lint_source){b->source, b->text, b->text_len};
	b->source = NULL;
	b->text = NULL;
	return PK_OK;
}

/* Loads buf into the batch b, named source (copied), then joins it. */
static int add_one(struct pk_lint *l, struct lint_batch *b, const char *buf, size_t len,
                   const char *source)
{
	int rc = PK_ERR_NOMEM;
	b->source = strdup(source);
	if (b->source != NULL)
		rc = lint_batch_load(b, buf, len);
	if (rc == PK_OK)
		rc = join(l, b);
	lint_batch_free(b);
	return rc;
}

int pk_lint_add_buffer(struct pk_lint *l, const char *buf, size_t len, const char *source)
{
	struct lint_batch b;
	batch_init(&b, l, &l->scratch);
	/* Kept for the positions of what the checks across objects find. */
	b.text = malloc(len ? len : 1);
	if (b.text == NULL)
		return PK_ERR_NOMEM;
	if (len > 0)
		memcpy(b.text, buf, len);
	b.text_len = len;
	return add_one(l, &b, buf, len, source);
}

int pk_lint_add_object(struct pk_lint *l, json_t *obj, const char *source, size_t line)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	if (text == NULL)
		return PK_ERR_NOMEM;
	struct lint_batch b;
	batch_init(&b, l, &l->scratch);
	b.text = text; /* the batch's from here on */
	b.text_len = strlen(text);
	size_t from = l->n_objects;
	int rc = add_one(l, &b, text, b.text_len, source ? source : "(object)");
	/* The object had no lines of its own: it starts where the caller says. */
	for (size_t i = from; rc == PK_OK && i < l->n_objects; i++) {
		struct pk_lint_object *o = &l->objects[i];
		struct pk_manifest_doc d = {.source = o->source, .document = 1, .line = line};
		char origin[PK_LINT_ORIGIN_MAX];
		free(o->origin);
		o->origin = strdup(pk_manifest_format_origin(NULL, &d, origin, sizeof(origin)));
		o->line = line;
		for (size_t k = 0; k < o->n_findings; k++)
			o->findings[k].line = line;
		if (o->origin == NULL)
			rc = PK_ERR_NOMEM;
	}
	return rc;
}

/* ---- reading files, on threads ---- */

struct files_job {
	struct pk_lint *l;
	char *const *paths;
	struct lint_batch *batches;
	size_t n;
	atomic_size_t next;
	atomic_int rc;
};

/* Reads and loads one path into its batch. */
static int load_path(struct files_job *j, size_t i, struct pk_violations *scratch)
{
	struct lint_batch *b = &j->batches[i];
	bool std_in = !strcmp(j->paths[i], "-");
	char *buf = NULL;
	size_t len = 0;
	struct pk_err err = {{0}};
	batch_init(b, j->l, scratch);
	b->source = strdup(std_in ? "(stdin)" : j->paths[i]);
	if (b->source == NULL)
		return PK_ERR_NOMEM;
	size_t max = j->l->set.limits.max_bytes;
	int rc = std_in ? pk_manifest_read_fd(STDIN_FILENO, b->source, max, &buf, &len, &err)
	                : pk_manifest_read_regular(b->source, max, &buf, &len, &err);
	if (rc != PK_OK) {
		b->unreadable = true;
		b->problem = strdup(err.msg);
		return b->problem != NULL ? PK_OK : PK_ERR_NOMEM;
	}
	rc = lint_batch_load(b, buf, len);
	if (std_in) { /* it cannot be read again */
		b->text = buf;
		b->text_len = len;
	} else {
		free(buf);
	}
	return rc;
}

static void *files_worker(void *arg)
{
	struct files_job *j = arg;
	struct pk_violations *scratch = malloc(sizeof(*scratch));
	if (scratch == NULL) {
		atomic_store(&j->rc, PK_ERR_NOMEM);
		return NULL;
	}
	pk_violations_init(scratch);
	for (;;) {
		size_t i = atomic_fetch_add(&j->next, 1);
		if (i >= j->n || atomic_load(&j->rc) != PK_OK)
			break;
		if (load_path(j, i, scratch) != PK_OK)
			atomic_store(&j->rc, PK_ERR_NOMEM);
	}
	free(scratch);
	return NULL;
}

int pk_lint_add_files(struct pk_lint *l, char *const *paths, size_t n, unsigned jobs)
{
	struct files_job j = {.l = l, .paths = paths, .n = n};
	pthread_t threads[PK_LINT_MAX_JOBS];
	size_t started = 0;
	atomic_init(&j.next, 0);
	atomic_init(&j.rc, PK_OK);
	j.batches = calloc(n ? n : 1, sizeof(*j.batches));
	if (j.batches == NULL)
		return PK_ERR_NOMEM;
	if (jobs > PK_LINT_MAX_JOBS)
		jobs = PK_LINT_MAX_JOBS;
	if (jobs > n)
		jobs = (unsigned)n;
	for (; jobs > 1 && started < jobs; started++)
		if (pthread_create(&threads[started], NULL, files_worker, &j) != 0)
			break;
	if (started == 0)
		files_worker(&j);
	for (size_t t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
	int rc = atomic_load(&j.rc);
	for (size_t i = 0; i < n; i++) {
		if (rc == PK_OK)
			rc = join(l, &j.batches[i]);
		lint_batch_free(&j.batches[i]);
	}
	free(j.batches);
	return rc;
}

/* ---- after loading ---- */

int lint_flush(struct pk_lint *l, size_t i, const char *prefix, const char *rule)
{
	return lint_flush_to(&l->scratch, &l->objects[i], prefix, rule);
}

/*
 * Namespaced kinds land in "default" when the manifest names no namespace;
 * a cluster-scoped pool kind has none, whatever the manifest says.
 */
const char *lint_effective_namespace(const struct pk_lint_object *o)
{
	const struct pk_pool_kind *pk = lint_pool_kind(o);
	if (o->kind == NULL || (pk != NULL && !pk->namespaced))
		return NULL;
	if (o->namespace_ != NULL && o->namespace_[0] != '\0')
		return o->namespace_;
	if (pk != NULL || !strcmp(o->kind, PK_CLAIM_KIND) || !strcmp(o->kind, PK_ADDRESS_KIND))
		return "default";
	return NULL;
}

const char *pk_lint_object_namespace(const struct pk_lint_object *o)
{
	return lint_effective_namespace(o);
}

char *pk_lint_describe_object(const struct pk_lint_object *o, char *buf, size_t len)
{
	const char *ns = lint_effective_namespace(o);
	snprintf(buf, len, "%s %s%s%s", o->kind ? o->kind : "(no kind)", ns ? ns : "",
	         ns ? "/" : "", o->name ? o->name : "(no name)");
	return buf;
}

static int fill_summary(struct pk_lint_object *o, const struct pk_pool *p)
{
	size_t n;
	const struct pk_range *r = pk_range_set_ranges(p->usable, &n);
	if (n == 0)
		return PK_OK;
	struct pk_lint_pool_summary *s = o->pool = calloc(1, sizeof(*o->pool));
	if (s == NULL)
		return PK_ERR_NOMEM;
	s->family = p->family;
	pk_count_format(pk_range_set_size(p->usable), s->size);
	pk_address_format_v(r[0].lo, p->family, s->first);
	pk_address_format_v(r[n - 1].hi, p->family, s->last);
	size_t na;
	const struct pk_range *a = pk_range_set_ranges(p->addresses, &na);
	pk_u128 net, bcast;
	char net_text[PK_ADDR_STRLEN];
	pk_address_subnet(na ? a[0].lo : r[0].lo, p->family, p->prefix, &net, &bcast);
	snprintf(s->subnet, sizeof(s->subnet), "%s/%u",
	         pk_address_format_v(net, p->family, net_text), p->prefix);
	return PK_OK;
}

/* Whether object i has findings without a position: what the checks across objects found. */
static bool unplaced(const struct pk_lint *l, size_t i)
{
	const struct pk_lint_object *o = &l->objects[i];
	for (size_t k = 0; k < o->n_findings; k++)
		if (o->findings[k].column == 0)
			return true;
	return false;
}

/*
 * Positions for what the checks across objects found: from each source's
 * kept text, or from its file read again (once, and only when one of its
 * objects needs it). A file that changed since is still safe to read:
 * a field not found where it was gives its object's line.
 */
static void place_findings(struct pk_lint *l)
{
	size_t s = 0;
	for (size_t i = 0; i < l->n_objects;) {
		while (s < l->n_sources && l->sources[s].name != l->objects[i].source)
			s++;
		size_t end = i;
		bool any = false;
		for (; end < l->n_objects && l->objects[end].source == l->objects[i].source; end++)
			any = any || unplaced(l, end);
		char *text = s < l->n_sources ? l->sources[s].text : NULL, *read = NULL;
		size_t len = s < l->n_sources ? l->sources[s].text_len : 0;
		struct pk_err err;
		if (any && text == NULL &&
		    pk_manifest_read_regular(l->objects[i].source, l->set.limits.max_bytes, &read,
		                             &len, &err) == PK_OK)
			text = read;
		for (; any && i < end; i++)
			lint_locate(&l->objects[i], &l->internal[i], text, len);
		free(read);
		i = end;
	}
}

int pk_lint_run(struct pk_lint *l)
{
	if (l->ran)
		return PK_OK;
	l->ran = true;
	pk_violations_init(&l->scratch);
	if (lint_build_lookup(l) != PK_OK)
		return PK_ERR_NOMEM;
	if (lint_check_across(l) != PK_OK)
		return PK_ERR_NOMEM;
	place_findings(l);
	for (size_t i = 0; i < l->n_objects; i++) {
		struct pk_lint_object *o = &l->objects[i];
		if (o->status == PK_LINT_SKIPPED)
			continue;
		if (o->n_deny > 0)
			o->status = PK_LINT_DENY;
		else if (o->n_warn > 0)
			o->status = PK_LINT_WARN;
		else
			o->status = PK_LINT_PASS;
		if (o->status != PK_LINT_DENY && l->internal[i].pool != NULL &&
		    fill_summary(o, l->internal[i].pool) != PK_OK)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

const struct pk_lint_object *pk_lint_objects(const struct pk_lint *l, size_t *n)
{
	*n = l->n_objects;
	return l->objects;
}

const struct pk_lint_problem *pk_lint_problems(const struct pk_lint *l, size_t *n)
{
	*n = l->n_problems;
	return l->problems;
}

struct pk_lint_totals pk_lint_get_totals(const struct pk_lint *l)
{
	struct pk_lint_totals t = {0};
	t.files = l->files;
	t.objects = l->n_objects;
	for (size_t i = 0; i < l->n_objects; i++) {
		const struct pk_lint_object *o = &l->objects[i];
		switch (o->status) {
		case PK_LINT_PASS:
			t.passed++;
			break;
		case PK_LINT_WARN:
			t.warned++;
			break;
		case PK_LINT_DENY:
			t.denied++;
			break;
		case PK_LINT_SKIPPED:
			t.skipped++;
			break;
		}
		t.deny += o->n_deny;
		t.warn += o->n_warn;
	}
	t.checked = t.passed + t.warned + t.denied;
	for (size_t i = 0; i < l->n_problems; i++) {
		if (l->problems[i].unreadable)
			t.unreadable++;
		else
			t.unloadable++;
	}
	return t;
}

int pk_lint_exit_code(const struct pk_lint *l, bool fail_on_warning)
{
	struct pk_lint_totals t = pk_lint_get_totals(l);
	if (t.unreadable > 0 || t.unloadable > 0)
		return 2;
	if (t.denied > 0 || (fail_on_warning && t.warned > 0))
		return 1;
	return 0;
}

const char *pk_lint_status_name(enum pk_lint_status s)
{
	switch (s) {
	case PK_LINT_PASS:
		return "pass";
	case PK_LINT_WARN:
		return "warn";
	case PK_LINT_DENY:
		return "deny";
	case PK_LINT_SKIPPED:
		return "skipped";
	}
	return "unknown";
}
