/*
 * convert.c - `poolkeeper convert` (convert.h): loading manifests, the
 * objects around the pools (claims, IPAddresses, everything else), overlap
 * between converted pools, the output stream and the summary.
 */
#include "convert.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "buf.h"
#include "flags.h"
#include "inputs.h"
#include "json.h"
#include "manifest.h"
#include "pool.h"
#include "pool_lookup.h"
#include "rules.h"

#define ORIGIN_MAX 512
#define OUTPUT_MAX ((size_t)1 << 30)

/* A converted pool, kept for the overlap check. */
struct conv_pool {
	char origin[ORIGIN_MAX];
	char name[PK_OBJECT_NAME_MAX]; /* "IPPool \"ns\"/\"a\"" */
	const char *kind;              /* PK_POOL_KIND or PK_GLOBAL_POOL_KIND */
	const char *ns;                /* borrowed from the output object; NULL for global */
	struct pk_pool pool;
};

struct pk_convert {
	char *ns;
	json_t *out; /* array of the objects to write, in input order */
	struct conv_pool *pools;
	size_t n_pools, cap_pools;
	struct pk_convert_msg *msgs;
	size_t n_msgs, cap_msgs;
	struct pk_convert_totals totals;
	bool nomem;
	/* The object being converted, for messages. */
	const char *cur_origin;
	const char *cur_desc;
};

struct pk_convert *pk_convert_new(const char *ns)
{
	struct pk_convert *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->out = json_array();
	c->ns = ns != NULL ? strdup(ns) : NULL;
	if (c->out == NULL || (ns != NULL && c->ns == NULL)) {
		pk_convert_free(c);
		return NULL;
	}
	return c;
}

void pk_convert_free(struct pk_convert *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n_pools; i++)
		pk_pool_release(&c->pools[i].pool);
	for (size_t i = 0; i < c->n_msgs; i++)
		free(c->msgs[i].text);
	free(c->pools);
	free(c->msgs);
	json_decref(c->out);
	free(c->ns);
	free(c);
}

static void add_msg(struct pk_convert *c, enum pk_convert_level level, const char *text)
{
	if (pk_array_reserve(&c->msgs, &c->cap_msgs, c->n_msgs + 1, sizeof(*c->msgs)) != PK_OK ||
	    (c->msgs[c->n_msgs].text = strdup(text)) == NULL) {
		c->nomem = true;
		return;
	}
	c->msgs[c->n_msgs++].level = level;
	if (level == PK_CONVERT_ERROR)
		c->totals.errors++;
	else
		c->totals.changes++;
}

/* The log callback: "<origin>: <object>: <field>: <message>". */
static void log_add(void *ctx, enum pk_convert_level level, const char *field, const char *msg)
{
	struct pk_convert *c = ctx;
	char line[2048];
	snprintf(line, sizeof(line), "%s: %s: %s: %s", c->cur_origin, c->cur_desc, field, msg);
	add_msg(c, level, line);
}

/* "IPPool \"ns\"/\"name\"", with `ns` the namespace the object lands in. */
static void describe(char *buf, size_t len, const char *kind, const json_t *obj, const char *ns)
{
	pk_pool_lookup_object_name(buf, len, kind, ns, pk_json_meta_cstr(obj, "name"));
}

/* The namespace a namespaced object lands in: its own, --namespace, or "default". */
static const char *landing_ns(const struct pk_convert *c, const json_t *obj)
{
	const char *ns = pk_json_meta_cstr(obj, "namespace");
	if (ns != NULL && ns[0] != '\0')
		return ns;
	return c->ns != NULL ? c->ns : "default";
}

/* Writes --namespace into an object that names none. */
static int set_namespace(struct pk_convert *c, json_t *obj, struct pk_convert_log *lg)
{
	const char *ns = pk_json_meta_cstr(obj, "namespace");
	json_t *meta = pk_json_obj_at(obj, "metadata");
	if (c->ns == NULL || meta == NULL || (ns != NULL && ns[0] != '\0'))
		return PK_OK;
	if (json_object_set_new(meta, "namespace", json_string(c->ns)) != 0)
		return PK_ERR_NOMEM;
	pk_convert_logf(lg, PK_CONVERT_CHANGE, "metadata.namespace", "set to \"%s\" (--namespace)",
	                c->ns);
	return PK_OK;
}

/* What the API server or the in-cluster provider wrote, left out of a new pool. */
static bool server_meta(const char *key)
{
	static const char *const keep[] = {"name", "generateName", "namespace", "labels",
	                                   "annotations"};
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (!strcmp(key, keep[i]))
			return false;
	return true;
}

/* metadata for the new pool: the user's fields; the rest dropped, each said. */
static json_t *pool_metadata(const json_t *obj, struct pk_convert_log *lg)
{
	json_t *meta = json_object();
	json_t *in = json_object_get(obj, "metadata");
	const char *key;
	json_t *val;

	if (meta == NULL || !json_is_object(in))
		return meta;
	json_object_foreach(in, key, val)
	{
		char field[300];
		snprintf(field, sizeof(field), "metadata.%s", key);
		if (server_meta(key)) {
			pk_convert_logf(lg, PK_CONVERT_CHANGE, field,
			                "dropped (written by the API server or the in-cluster "
			                "provider; poolkeeper writes its own)");
			continue;
		}
		if (json_object_set(meta, key, val) != 0) {
			json_decref(meta);
			return NULL;
		}
	}
	return meta;
}

/* Records a converted pool for the overlap check. */
static int keep_pool(struct pk_convert *c, const json_t *obj, const char *kind, const char *ns,
                     const char *origin)
{
	struct pk_violations v;
	if (pk_array_reserve(&c->pools, &c->cap_pools, c->n_pools + 1, sizeof(*c->pools)) != PK_OK)
		return PK_ERR_NOMEM;
	struct conv_pool *p = &c->pools[c->n_pools];
	memset(p, 0, sizeof(*p));
	pk_violations_init(&v);
	int rc = pk_pool_decode(json_object_get(obj, "spec"), &p->pool, &v);
	c->n_pools++;
	if (rc != PK_OK)
		return rc;
	snprintf(p->origin, sizeof(p->origin), "%s", origin);
	p->kind = kind;
	p->ns = ns;
	pk_pool_lookup_object_name(p->name, sizeof(p->name), kind, ns,
	                           pk_json_meta_cstr(obj, "name"));
	return PK_OK;
}

/* The new pool against poolkeeper's own rules: what they deny is an error. */
static void check_rules(const json_t *pool, struct pk_convert_log *lg)
{
	struct pk_violations v;
	pk_violations_init(&v);
	pk_rules_check_pool(pool, NULL, &v);
	for (size_t i = 0; i < v.n; i++)
		pk_convert_logf(
		    lg, v.items[i].severity == PK_SEV_DENY ? PK_CONVERT_ERROR : PK_CONVERT_WARNING,
		    v.items[i].field, "poolkeeper %s: %s",
		    v.items[i].severity == PK_SEV_DENY ? "refuses it" : "warns",
		    v.items[i].message);
}

/* Builds { apiVersion, kind, metadata, spec } of the poolkeeper pool. */
static json_t *build_pool(struct pk_convert *c, const json_t *obj, const char *kind,
                          const char *version, struct pk_convert_log *lg, bool *failed)
{
	json_t *spec = NULL, *meta = NULL, *pool = json_object();
	int rc = pool == NULL ? PK_ERR_NOMEM : PK_OK;
	if (rc == PK_OK)
		rc = pk_convert_pool_spec(json_object_get(obj, "spec"), version, &spec, lg);
	if (rc == PK_OK && (meta = pool_metadata(obj, lg)) == NULL)
		rc = PK_ERR_NOMEM;
	if (rc == PK_OK &&
	    (json_object_set_new(pool, "apiVersion", json_string(PK_POOL_API_VERSION)) != 0 ||
	     json_object_set_new(pool, "kind", json_string(kind)) != 0 ||
	     json_object_set(pool, "metadata", meta) != 0 ||
	     (spec != NULL && json_object_set(pool, "spec", spec) != 0)))
		rc = PK_ERR_NOMEM;
	if (rc == PK_OK && strcmp(kind, PK_GLOBAL_POOL_KIND) != 0)
		rc = set_namespace(c, pool, lg);
	if (rc == PK_OK && json_object_get(obj, "status") != NULL)
		pk_convert_logf(lg, PK_CONVERT_CHANGE, "status",
		                "dropped (poolkeeper writes the pool's status)");
	json_decref(spec);
	json_decref(meta);
	if (rc != PK_OK) {
		c->nomem = true;
		json_decref(pool);
		return NULL;
	}
	size_t errors = lg->errors;
	if (errors == 0)
		check_rules(pool, lg);
	*failed = lg->errors > 0;
	return pool;
}

static int convert_pool(struct pk_convert *c, const json_t *obj, const char *in_kind,
                        const char *version, struct pk_convert_log *lg)
{
	bool global = !strcmp(in_kind, PK_INCLUSTER_GLOBAL_POOL_KIND), failed = false;
	const char *kind = global ? PK_GLOBAL_POOL_KIND : PK_POOL_KIND;
	json_t *pool = build_pool(c, obj, kind, version, lg, &failed);
	if (pool == NULL)
		return PK_ERR_NOMEM;
	if (failed) {
		json_decref(pool);
		return PK_OK;
	}
	if (json_array_append_new(c->out, pool) != 0)
		return PK_ERR_NOMEM;
	c->totals.pools++;
	return keep_pool(c, pool, kind, global ? NULL : landing_ns(c, pool), c->cur_origin);
}

/* True for the poolRef of an in-cluster IP pool; *ours set to poolkeeper's kind. */
static bool incluster_ref(const json_t *ref, const char **ours)
{
	const char *group = pk_json_cstr_at(ref, "apiGroup"), *kind = pk_json_cstr_at(ref, "kind");
	if (group == NULL || kind == NULL || strcmp(group, PK_CAPI_IPAM_GROUP) != 0)
		return false;
	if (!strcmp(kind, PK_INCLUSTER_POOL_KIND))
		*ours = PK_POOL_KIND;
	else if (!strcmp(kind, PK_INCLUSTER_GLOBAL_POOL_KIND))
		*ours = PK_GLOBAL_POOL_KIND;
	else
		return false;
	return true;
}

/* Everything that is not an in-cluster pool or a claim on one goes out unchanged. */
static int pass_through(struct pk_convert *c, json_t *obj, const char *kind,
                        struct pk_convert_log *lg)
{
	const char *ours;
	if (kind != NULL && !strcmp(kind, PK_ADDRESS_KIND) &&
	    incluster_ref(pk_json_path(obj, "spec", "poolRef"), &ours))
		pk_convert_logf(lg, PK_CONVERT_WARNING, "spec.poolRef",
		                "names the in-cluster provider's %s; passed through unchanged (its "
		                "spec is immutable): poolkeeper does not count its address as held "
		                "(docs/migration.md)",
		                pk_json_cstr_path(obj, "spec", "poolRef", "kind"));
	c->totals.passed++;
	return json_array_append(c->out, obj) != 0 ? PK_ERR_NOMEM : PK_OK;
}

/* A claim on an in-cluster pool: its poolRef names poolkeeper's pool of the same name. */
static int convert_claim(struct pk_convert *c, json_t *obj, struct pk_convert_log *lg)
{
	const char *ours;
	if (!incluster_ref(pk_json_path(obj, "spec", "poolRef"), &ours))
		return pass_through(c, obj, PK_CLAIM_KIND, lg);
	json_t *copy = json_deep_copy(obj);
	json_t *ref = copy != NULL ? pk_json_path(copy, "spec", "poolRef") : NULL;
	if (ref == NULL) {
		json_decref(copy);
		return PK_ERR_NOMEM;
	}
	char was[300];
	snprintf(was, sizeof(was), "%s", pk_json_cstr_at(ref, "kind"));
	if (json_object_set_new(ref, "apiGroup", json_string(PK_POOL_GROUP)) != 0 ||
	    json_object_set_new(ref, "kind", json_string(ours)) != 0 ||
	    set_namespace(c, copy, lg) != PK_OK || json_array_append_new(c->out, copy) != 0)
		return PK_ERR_NOMEM;
	pk_convert_logf(lg, PK_CONVERT_CHANGE, "spec.poolRef",
	                "%s %s -> %s %s (same name); a claim that exists already keeps its pool: "
	                "its spec is immutable (docs/migration.md)",
	                PK_CAPI_IPAM_GROUP, was, PK_POOL_GROUP, ours);
	c->totals.claims++;
	return PK_OK;
}

/* Splits "group/version"; false when there is no slash. */
static bool split_api(const char *api, char *group, size_t len, const char **version)
{
	const char *slash = api != NULL ? strchr(api, '/') : NULL;
	if (slash == NULL || (size_t)(slash - api) >= len)
		return false;
	memcpy(group, api, (size_t)(slash - api));
	group[slash - api] = '\0';
	*version = slash + 1;
	return true;
}

static bool is_incluster_pool_kind(const char *kind)
{
	return !strcmp(kind, PK_INCLUSTER_POOL_KIND) ||
	       !strcmp(kind, PK_INCLUSTER_GLOBAL_POOL_KIND);
}

static int convert_object(struct pk_convert *c, json_t *obj, struct pk_convert_log *lg)
{
	const char *api = pk_json_cstr_at(obj, "apiVersion"), *kind = pk_json_cstr_at(obj, "kind");
	const char *version = NULL;
	char group[256];
	if (kind == NULL || !split_api(api, group, sizeof(group), &version) ||
	    strcmp(group, PK_CAPI_IPAM_GROUP) != 0)
		return pass_through(c, obj, kind, lg);
	if (is_incluster_pool_kind(kind)) {
		if (!strcmp(version, "v1alpha1") || !strcmp(version, "v1alpha2"))
			return convert_pool(c, obj, kind, version, lg);
		pk_convert_logf(lg, PK_CONVERT_ERROR, "apiVersion",
		                "\"%s\" is not a version of %s convert knows (v1alpha1, v1alpha2)",
		                api, kind);
		return PK_OK;
	}
	if (!strcmp(kind, PK_INCLUSTER_PREFIX_POOL_KIND) ||
	    !strcmp(kind, PK_INCLUSTER_GLOBAL_PREFIX_POOL_KIND)) {
		pk_convert_logf(
		    lg, PK_CONVERT_ERROR, "kind",
		    "%s hands out prefixes; poolkeeper has no prefix pools, so it stays "
		    "with the in-cluster provider",
		    kind);
		return PK_OK;
	}
	if (!strcmp(kind, PK_CLAIM_KIND) && pk_rules_is_capi_served_version(version))
		return convert_claim(c, obj, lg);
	return pass_through(c, obj, kind, lg);
}

static int convert_doc(struct pk_convert *c, const struct pk_manifest *m,
                       const struct pk_manifest_doc *d)
{
	char origin[ORIGIN_MAX], desc[PK_OBJECT_NAME_MAX];
	const char *kind = pk_json_cstr_at(d->value, "kind");
	bool global = kind != NULL && (!strcmp(kind, PK_INCLUSTER_GLOBAL_POOL_KIND) ||
	                               !strcmp(kind, PK_INCLUSTER_GLOBAL_PREFIX_POOL_KIND));
	struct pk_convert_log lg = {log_add, c, 0};

	pk_manifest_format_origin(m, d, origin, sizeof(origin));
	describe(desc, sizeof(desc), kind != NULL ? kind : "(no kind)", d->value,
	         global ? NULL : landing_ns(c, d->value));
	c->cur_origin = origin;
	c->cur_desc = desc;
	int rc = convert_object(c, d->value, &lg);
	c->cur_origin = c->cur_desc = NULL;
	return rc != PK_OK || c->nomem ? PK_ERR_NOMEM : PK_OK;
}

int pk_convert_add_buffer(struct pk_convert *c, const char *buf, size_t len, const char *source)
{
	struct pk_manifest m = {0};
	struct pk_err err = {{0}};
	int rc = pk_manifest_parse_buffer(buf, len, source, NULL, &m, &err);
	if (rc == PK_OK)
		rc = pk_manifest_expand_lists(&m, &err);
	if (rc == PK_ERR_NOMEM) {
		pk_manifest_free(&m);
		return rc;
	}
	if (rc != PK_OK) {
		add_msg(c, PK_CONVERT_ERROR, err.msg);
		pk_manifest_free(&m);
		return c->nomem ? PK_ERR_NOMEM : PK_OK;
	}
	for (size_t i = 0; i < m.n && rc == PK_OK; i++)
		rc = convert_doc(c, &m, &m.docs[i]);
	pk_manifest_free(&m);
	return rc;
}

int pk_convert_add_unreadable(struct pk_convert *c, const char *message)
{
	c->totals.unreadable++;
	add_msg(c, PK_CONVERT_ERROR, message);
	return c->nomem ? PK_ERR_NOMEM : PK_OK;
}

/* Overlap as the webhook checks it: each pair once, reported on the later pool. */
int pk_convert_run(struct pk_convert *c)
{
	for (size_t i = 0; i < c->n_pools; i++) {
		const struct conv_pool *a = &c->pools[i];
		for (size_t j = 0; j < i; j++) {
			const struct conv_pool *b = &c->pools[j];
			struct pk_violations v;
			char other[PK_OBJECT_NAME_MAX + ORIGIN_MAX + 4];
			if (a->ns != NULL && b->ns != NULL && strcmp(a->ns, b->ns) != 0)
				continue;
			snprintf(other, sizeof(other), "%s (%s)", b->name, b->origin);
			pk_violations_init(&v);
			pk_rules_check_pool_overlap(&a->pool, &b->pool, other, &v);
			for (size_t k = 0; k < v.n; k++) {
				char line[2048];
				snprintf(line, sizeof(line), "%s: %s: %s: %s", a->origin, a->name,
				         v.items[k].field, v.items[k].message);
				add_msg(c, PK_CONVERT_ERROR, line);
			}
		}
	}
	return c->nomem ? PK_ERR_NOMEM : PK_OK;
}

const struct pk_convert_msg *pk_convert_messages(const struct pk_convert *c, size_t *n)
{
	*n = c->n_msgs;
	return c->msgs;
}

struct pk_convert_totals pk_convert_get_totals(const struct pk_convert *c)
{
	return c->totals;
}

int pk_convert_exit_code(const struct pk_convert *c)
{
	if (c->totals.unreadable > 0)
		return 2;
	return c->totals.errors > 0 ? 1 : 0;
}

char *pk_convert_output(const struct pk_convert *c, size_t *len)
{
	struct pk_buf b;
	size_t i;
	json_t *obj;

	pk_buf_init(&b, OUTPUT_MAX);
	json_array_foreach(c->out, i, obj)
	{
		char *text = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		int rc = text == NULL ? PK_ERR_NOMEM : pk_buf_append(&b, "---\n", 4);
		if (rc == PK_OK)
			rc = pk_buf_append(&b, text, strlen(text));
		if (rc == PK_OK)
			rc = pk_buf_append(&b, "\n", 1);
		free(text);
		if (rc != PK_OK) {
			pk_buf_free(&b);
			return NULL;
		}
	}
	return pk_buf_take(&b, len);
}

void pk_convert_write_summary(FILE *f, const struct pk_convert *c)
{
	static const char *const names[] = {"changed", "warning", "error"};
	for (size_t i = 0; i < c->n_msgs; i++)
		fprintf(f, "%s: %s\n", names[c->msgs[i].level], c->msgs[i].text);
	fprintf(f,
	        "poolkeeper convert: %zu pool%s converted, %zu claim%s rewritten, %zu object%s "
	        "passed through; %zu change%s, %zu error%s\n",
	        c->totals.pools, c->totals.pools == 1 ? "" : "s", c->totals.claims,
	        c->totals.claims == 1 ? "" : "s", c->totals.passed,
	        c->totals.passed == 1 ? "" : "s", c->totals.changes,
	        c->totals.changes == 1 ? "" : "s", c->totals.errors,
	        c->totals.errors == 1 ? "" : "s");
}

/* ---- the command ---- */

enum convert_flag { C_OUTPUT, C_NAMESPACE, C_RECURSIVE, C_FOLLOW_SYMLINKS, C_HELP, C_COUNT };

static const struct pk_flag convert_flags[C_COUNT] = {
    [C_OUTPUT] = {"output", 'o', PK_FLAG_STRING, NULL, "FILE",
                  "write the converted manifests to FILE instead of standard output"},
    [C_NAMESPACE] = {"namespace", 'n', PK_FLAG_STRING, NULL, "N",
                     "namespace of InClusterIPPools and claims that name none (written into "
                     "the objects convert rewrites; \"default\" otherwise)"},
    [C_RECURSIVE] = {"recursive", 'R', PK_FLAG_BOOL, NULL, NULL,
                     "descend into subdirectories of DIR arguments"},
    [C_FOLLOW_SYMLINKS] = {"follow-symlinks", 0, PK_FLAG_BOOL, NULL, NULL,
                           "follow symbolic links that lead out of a DIR argument's tree "
                           "(by default such a link is reported and not read)"},
    [C_HELP] = PK_FLAG_DEF_HELP,
};

static const char convert_usage[] = "poolkeeper convert [flags] FILE|DIR|- ...";
static const char convert_summary[] =
    "Converts the in-cluster IPAM provider's " PK_INCLUSTER_POOL_KIND
    " and " PK_INCLUSTER_GLOBAL_POOL_KIND "\n"
    "(" PK_CAPI_IPAM_GROUP " v1alpha1 and v1alpha2) into poolkeeper's " PK_POOL_KIND
    " and " PK_GLOBAL_POOL_KIND "\n"
    "(" PK_POOL_API_VERSION "), and rewrites the poolRef of " PK_CLAIM_KIND "s that name them;\n"
    "other objects pass through unchanged. Output: one JSON document per object after a\n"
    "\"---\" line (a YAML stream kubectl applies). Every change, warning and error is\n"
    "listed on standard error with file:line, the object and the field; when anything\n"
    "could not be converted, nothing is written. See docs/migration.md.\n"
    "\n"
    "Exit status: 0 converted, 1 something could not be converted, 2 usage error or\n"
    "a file could not be read.";

/* Reads one input; an unreadable file is recorded, not fatal. */
static int convert_one(struct pk_convert *c, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	struct pk_err err = {{0}};
	bool std_in = !strcmp(path, "-");
	const char *name = std_in ? "(stdin)" : path;
	int rc = std_in ? pk_manifest_read_fd(STDIN_FILENO, name, PK_MANIFEST_MAX_BYTES, &buf, &len,
	                                      &err)
	                : pk_manifest_read_regular(path, PK_MANIFEST_MAX_BYTES, &buf, &len, &err);
	if (rc != PK_OK)
		return pk_convert_add_unreadable(c, err.msg);
	rc = pk_convert_add_buffer(c, buf, len, name);
	free(buf);
	return rc;
}

static int convert_inputs(struct pk_convert *c, const char **pos, size_t npos, unsigned flags)
{
	struct pk_inputs in = {0};
	struct pk_err err = {{0}};
	int rc = PK_OK;
	for (size_t i = 0; i < npos && rc == PK_OK; i++) {
		size_t bad = in.n_bad;
		if (pk_inputs_add(&in, pos[i], flags, NULL, &err) != PK_OK)
			rc = pk_convert_add_unreadable(c, err.msg);
		/* entries the walk could not use: unreadable too, so nothing is written */
		for (; bad < in.n_bad && rc == PK_OK; bad++)
			rc = pk_convert_add_unreadable(c, in.bad[bad].message);
	}
	for (size_t i = 0; i < in.n && rc == PK_OK; i++)
		rc = convert_one(c, in.paths[i]);
	pk_inputs_free(&in);
	return rc != PK_OK ? rc : pk_convert_run(c);
}

/* Writes the output to `path` (NULL: standard output); false after a message. */
static bool write_output(const struct pk_convert *c, const char *path)
{
	size_t len = 0;
	char *text = pk_convert_output(c, &len);
	FILE *f = path != NULL ? fopen(path, "w") : stdout;
	bool ok = text != NULL && f != NULL && fwrite(text, 1, len, f) == len;
	if (f != NULL && f != stdout)
		ok = fclose(f) == 0 && ok;
	else if (f != NULL)
		ok = fflush(f) == 0 && ok;
	if (!ok)
		fprintf(stderr, "poolkeeper convert: writing %s: %s\n",
		        path != NULL ? path : "standard output",
		        text == NULL ? "out of memory" : strerror(errno));
	free(text);
	return ok;
}

static int convert_and_write(const struct pk_flag_value *vals, const char **pos, size_t npos)
{
	struct pk_convert *c = pk_convert_new(vals[C_NAMESPACE].str);
	int status = 2;
	if (c == NULL ||
	    convert_inputs(
	        c, pos, npos,
	        (pk_flags_get_bool(vals, C_RECURSIVE) ? PK_INPUTS_RECURSIVE : 0) |
	            (pk_flags_get_bool(vals, C_FOLLOW_SYMLINKS) ? PK_INPUTS_FOLLOW_SYMLINKS : 0)) !=
	        PK_OK) {
		fprintf(stderr, "poolkeeper convert: out of memory\n");
		pk_convert_free(c);
		return 2;
	}
	pk_convert_write_summary(stderr, c);
	status = pk_convert_exit_code(c);
	if (status == 0 && !write_output(c, vals[C_OUTPUT].str))
		status = 2;
	else if (status != 0)
		fprintf(stderr, "poolkeeper convert: nothing written\n");
	pk_convert_free(c);
	return status;
}

int pk_convert_main(int argc, char *argv[])
{
	struct pk_flag_value vals[C_COUNT];
	const char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	struct pk_err err = {{0}};
	size_t npos = 0;
	int status = 2;

	if (pos == NULL) {
		fprintf(stderr, "poolkeeper convert: out of memory\n");
		return 2;
	}
	if (pk_flags_parse(convert_flags, C_COUNT, argc, argv, vals, pos, &npos, &err) != PK_OK) {
		fprintf(stderr,
		        "poolkeeper convert: %s\nRun 'poolkeeper convert --help' for usage.\n",
		        err.msg);
	} else if (pk_flags_get_bool(vals, C_HELP)) {
		pk_flags_print_help(stdout, convert_usage, convert_summary, convert_flags, C_COUNT);
		status = 0;
	} else if (npos == 0) {
		fprintf(stderr, "poolkeeper convert: name at least one FILE, DIR or - (standard "
		                "input)\nRun 'poolkeeper convert --help' for usage.\n");
	} else {
		status = convert_and_write(vals, pos, npos);
	}
	free(pos);
	return status;
}
