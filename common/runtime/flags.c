/* flags.c - parsing argv against a flag table, and --help from the same table. */
#include "flags.h"

#include <stdlib.h>
#include <string.h>

#include "parse.h"

static bool takes_value(const struct pk_flag *f)
{
	return f->type != PK_FLAG_BOOL && f->type != PK_FLAG_COUNT;
}

/* The bounds of a UINT or DURATION flag from its range "min..max". */
static int bounds(const struct pk_flag *f, uint64_t *lo, uint64_t *hi, struct pk_err *err)
{
	const char *dots = f->range ? strstr(f->range, "..") : NULL;
	char a[32], b[32];
	if (dots == NULL || (size_t)(dots - f->range) >= sizeof(a) || strlen(dots + 2) >= sizeof(b))
		return pk_err_set(err, PK_ERR_INVALID, "flag table: --%s needs a range min..max",
		                  f->name);
	memcpy(a, f->range, (size_t)(dots - f->range));
	a[dots - f->range] = '\0';
	memcpy(b, dots + 2, strlen(dots + 2) + 1);
	struct pk_err e;
	int64_t dl, dh;
	if (f->type == PK_FLAG_UINT) {
		if (pk_parse_uint(a, 0, UINT64_MAX, lo, &e) == PK_OK &&
		    pk_parse_uint(b, *lo, UINT64_MAX, hi, &e) == PK_OK)
			return PK_OK;
	} else if (pk_parse_duration(a, 0, INT64_MAX, &dl, &e) == PK_OK &&
	           pk_parse_duration(b, dl, INT64_MAX, &dh, &e) == PK_OK) {
		*lo = (uint64_t)dl;
		*hi = (uint64_t)dh;
		return PK_OK;
	}
	return pk_err_set(err, PK_ERR_INVALID, "flag table: --%s range \"%s\": %s", f->name,
	                  f->range, e.msg);
}

/* A number or duration within the flag's range, into *out. */
static int parse_num(const struct pk_flag *f, const char *value, uint64_t *out, struct pk_err *err)
{
	uint64_t lo, hi;
	int rc = bounds(f, &lo, &hi, err);
	if (rc != PK_OK)
		return rc;
	struct pk_err e;
	int64_t ns;
	if (f->type == PK_FLAG_UINT)
		rc = pk_parse_uint(value, lo, hi, out, &e);
	else if ((rc = pk_parse_duration(value, (int64_t)lo, (int64_t)hi, &ns, &e)) == PK_OK)
		*out = (uint64_t)ns;
	if (rc != PK_OK)
		return pk_err_set(err, rc, "--%s %s", f->name, e.msg);
	return PK_OK;
}

static int parse_bool(const struct pk_flag *f, const char *value, bool *out, struct pk_err *err)
{
	if (value == NULL || strcmp(value, "true") == 0) {
		*out = true;
		return PK_OK;
	}
	if (strcmp(value, "false") == 0) {
		*out = false;
		return PK_OK;
	}
	char q[300];
	pk_text_quote(value, strlen(value), q, sizeof(q));
	return pk_err_set(err, PK_ERR_INVALID, "--%s must be true or false, got \"%s\"", f->name,
	                  q);
}

/* Every flag's default, checked: a table error shows on the first run of any test. */
static int set_defaults(const struct pk_flag *table, size_t n, struct pk_flag_value *vals,
                        struct pk_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct pk_flag *f = &table[i];
		struct pk_err e;
		int rc = PK_OK;
		if ((f->type == PK_FLAG_UINT || f->type == PK_FLAG_DURATION) && f->def == NULL)
			return pk_err_set(err, PK_ERR_INVALID, "flag table: --%s needs a default",
			                  f->name);
		if (f->type == PK_FLAG_BOOL && f->def != NULL)
			rc = parse_bool(f, f->def, &vals[i].on, &e);
		else if (f->type == PK_FLAG_UINT || f->type == PK_FLAG_DURATION)
			rc = parse_num(f, f->def, &vals[i].num, &e);
		if (rc != PK_OK)
			return pk_err_set(err, rc, "flag table: bad default: %s", e.msg);
	}
	return PK_OK;
}

/* True when `v` is one of the '|'-separated words of `range`. */
static bool in_range(const char *range, const char *v)
{
	size_t vl = strlen(v);
	const char *p = range;
	while (p != NULL && *p != '\0') {
		const char *bar = strchr(p, '|');
		size_t wl = bar ? (size_t)(bar - p) : strlen(p);
		if (wl == vl && !strncmp(p, v, vl))
			return true;
		p = bar ? bar + 1 : NULL;
	}
	return false;
}

static int set_value(const struct pk_flag *f, struct pk_flag_value *v, const char *value,
                     struct pk_err *err)
{
	if (f->type == PK_FLAG_CHOICE && !in_range(f->range, value))
		return pk_err_set(err, PK_ERR_INVALID, "--%s must be one of %s, got \"%.64s\"",
		                  f->name, f->range, value);
	if (f->type == PK_FLAG_UINT || f->type == PK_FLAG_DURATION) {
		int rc = parse_num(f, value, &v->num, err);
		if (rc != PK_OK)
			return rc;
	}
	v->set = true;
	v->str = value;
	return PK_OK;
}

static const struct pk_flag *find_long(const struct pk_flag *table, size_t n, const char *name,
                                       size_t len, size_t *idx)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(table[i].name) == len && !strncmp(table[i].name, name, len)) {
			*idx = i;
			return &table[i];
		}
	}
	return NULL;
}

static const struct pk_flag *find_short(const struct pk_flag *table, size_t n, char c, size_t *idx)
{
	for (size_t i = 0; i < n; i++) {
		if (table[i].short_name != 0 && table[i].short_name == c) {
			*idx = i;
			return &table[i];
		}
	}
	return NULL;
}

/* One walk over argv; pk_flags_parse and pk_flags_collect share it. */
struct parser {
	const struct pk_flag *table;
	size_t n;
	int argc;
	char *const *argv;
	int i; /* the argument being read */
	struct pk_flag_value *vals;
	const char **pos; /* positional arguments; NULL: not kept */
	size_t *npos;
	size_t want;      /* pk_flags_collect: the flag whose values are kept */
	const char **got; /* ... into got[0..max); NULL when not collecting */
	size_t max, ngot; /* ngot counts past max */
	struct pk_err *err;
};

/* A value-taking flag's value, checked; a collecting walk keeps it too. */
static int take_value(struct parser *p, size_t idx, const char *value)
{
	int rc = set_value(&p->table[idx], &p->vals[idx], value, p->err);
	if (rc == PK_OK && p->got != NULL && idx == p->want) {
		if (p->ngot < p->max)
			p->got[p->ngot] = value;
		p->ngot++;
	}
	return rc;
}

/* The value after the flag: after "=" (`inline`), else the next argument. */
static int next_value(struct parser *p, size_t idx, const char *inline_value, const char *spelling)
{
	if (inline_value == NULL) {
		if (p->i + 1 >= p->argc)
			return pk_err_set(p->err, PK_ERR_INVALID, "%s needs a value", spelling);
		inline_value = p->argv[++p->i];
	}
	return take_value(p, idx, inline_value);
}

/* A boolean in its long spelling: bare, or with "=true"/"=false". */
static int parse_long_bool(struct parser *p, size_t idx, const char *eq)
{
	const struct pk_flag *f = &p->table[idx];
	/* "--x false" would be the flag and a stray argument: say so. */
	if (eq == NULL && p->i + 1 < p->argc &&
	    (!strcmp(p->argv[p->i + 1], "true") || !strcmp(p->argv[p->i + 1], "false")))
		return pk_err_set(p->err, PK_ERR_INVALID,
		                  "--%s takes its value after \"=\" (--%s=%s), not as the next "
		                  "argument",
		                  f->name, f->name, p->argv[p->i + 1]);
	int rc = parse_bool(f, eq ? eq + 1 : NULL, &p->vals[idx].on, p->err);
	if (rc != PK_OK)
		return rc;
	p->vals[idx].set = true;
	p->vals[idx].count++;
	return PK_OK;
}

/* --name, --name=value, --name value. */
static int parse_long(struct parser *p, const char *name)
{
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name), idx;
	const struct pk_flag *f = find_long(p->table, p->n, name, len, &idx);
	if (f == NULL)
		return pk_err_set(p->err, PK_ERR_INVALID, "unknown flag --%.*s",
		                  (int)(len > 64 ? 64 : len), name);
	if (f->type == PK_FLAG_BOOL)
		return parse_long_bool(p, idx, eq);
	if (!takes_value(f)) {
		if (eq != NULL)
			return pk_err_set(p->err, PK_ERR_INVALID, "--%s takes no value", f->name);
		p->vals[idx].set = true;
		p->vals[idx].count++;
		return PK_OK;
	}
	char spelling[80];
	snprintf(spelling, sizeof(spelling), "--%s", f->name);
	return next_value(p, idx, eq ? eq + 1 : NULL, spelling);
}

/* One or more short flags: -v, -vR, -o json, -ojson, -o=json. */
static int parse_short(struct parser *p, const char *letters)
{
	for (const char *c = letters; *c != '\0'; c++) {
		size_t idx;
		const struct pk_flag *f = find_short(p->table, p->n, *c, &idx);
		if (f == NULL)
			return pk_err_set(p->err, PK_ERR_INVALID, "unknown flag -%c", *c);
		if (!takes_value(f)) {
			p->vals[idx].set = true;
			p->vals[idx].count++;
			p->vals[idx].on = true;
			continue;
		}
		char spelling[4] = {'-', *c, '\0', '\0'};
		return next_value(p, idx, c[1] != '\0' ? c + 1 + (c[1] == '=') : NULL, spelling);
	}
	return PK_OK;
}

static int walk(struct parser *p)
{
	memset(p->vals, 0, p->n * sizeof(*p->vals));
	*p->npos = 0;
	int rc = set_defaults(p->table, p->n, p->vals, p->err);
	bool flags_done = false;
	for (p->i = 0; rc == PK_OK && p->i < p->argc; p->i++) {
		const char *a = p->argv[p->i];
		if (flags_done || a[0] != '-' || a[1] == '\0') {
			if (p->pos != NULL)
				p->pos[*p->npos] = a;
			(*p->npos)++;
		} else if (!strcmp(a, "--")) {
			flags_done = true;
		} else {
			rc = a[1] == '-' ? parse_long(p, a + 2) : parse_short(p, a + 1);
		}
	}
	return rc;
}

int pk_flags_parse(const struct pk_flag *table, size_t n, int argc, char *const argv[],
                   struct pk_flag_value *vals, const char **pos, size_t *npos, struct pk_err *err)
{
	struct parser p = {.table = table,
	                   .n = n,
	                   .argc = argc,
	                   .argv = argv,
	                   .vals = vals,
	                   .pos = pos,
	                   .npos = npos,
	                   .err = err};
	return walk(&p);
}

int pk_flags_collect(const struct pk_flag *table, size_t n, int argc, char *const argv[],
                     size_t idx, const char **out, size_t max, size_t *count, struct pk_err *err)
{
	*count = 0;
	if (argc < 1 || idx >= n)
		return pk_err_set(err, PK_ERR_INVALID, "no program name in argv, or no such flag");
	struct pk_flag_value *vals = calloc(n, sizeof(*vals));
	if (vals == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	size_t npos = 0;
	struct parser p = {.table = table,
	                   .n = n,
	                   .argc = argc - 1,
	                   .argv = argv + 1,
	                   .vals = vals,
	                   .npos = &npos,
	                   .want = idx,
	                   .got = out,
	                   .max = max,
	                   .err = err};
	int rc = walk(&p);
	free(vals);
	if (rc == PK_OK)
		*count = p.ngot;
	return rc;
}

const char *pk_flags_get_string(const struct pk_flag *table, const struct pk_flag_value *vals,
                                size_t i)
{
	return vals[i].set && vals[i].str != NULL ? vals[i].str : table[i].def;
}

bool pk_flags_get_bool(const struct pk_flag_value *vals, size_t i)
{
	return vals[i].on;
}

uint64_t pk_flags_get_num(const struct pk_flag_value *vals, size_t i)
{
	return vals[i].num;
}

int pk_flags_get_hostport(const struct pk_flag *table, const struct pk_flag_value *vals, size_t i,
                          struct pk_hostport *out, bool *off, struct pk_err *err)
{
	const char *s = pk_flags_get_string(table, vals, i);
	memset(out, 0, sizeof(*out));
	if (off != NULL)
		*off = s != NULL && strcmp(s, "0") == 0;
	if (off != NULL && *off)
		return PK_OK;
	struct pk_err e;
	int rc = pk_parse_hostport(s, out, &e);
	if (rc != PK_OK)
		return pk_err_set(err, rc, "--%s %s%s", table[i].name, e.msg,
		                  off != NULL ? "; 0 turns it off" : "");
	return PK_OK;
}

void pk_flags_print_help(FILE *f, const char *usage, const char *summary,
                         const struct pk_flag *table, size_t n)
{
	fprintf(f, "Usage: %s\n\n%s\n\nFlags:\n", usage, summary);
	for (size_t i = 0; i < n; i++) {
		const struct pk_flag *t = &table[i];
		char lhs[96];
		const char *arg = "";
		if (t->type == PK_FLAG_CHOICE)
			arg = t->range;
		else if (t->type == PK_FLAG_STRING)
			arg = t->range != NULL ? t->range : "VALUE";
		else if (t->type == PK_FLAG_UINT)
			arg = "N";
		else if (t->type == PK_FLAG_DURATION)
			arg = "DURATION";
		if (t->short_name)
			snprintf(lhs, sizeof(lhs), "-%c, --%s%s%s", t->short_name, t->name,
			         *arg ? " " : "", arg);
		else
			snprintf(lhs, sizeof(lhs), "    --%s%s%s", t->name, *arg ? " " : "", arg);
		/* A flag too long for the column gets its help on the next line. */
		if (strlen(lhs) > 28)
			fprintf(f, "  %s\n  %-28s %s", lhs, "", t->help);
		else
			fprintf(f, "  %-28s %s", lhs, t->help);
		if (t->type == PK_FLAG_UINT || t->type == PK_FLAG_DURATION)
			fprintf(f, " (%s, default %s)", t->range, t->def);
		else if (t->def != NULL && t->def[0] != '\0')
			fprintf(f, " (default %s)", t->def);
		if (t->type == PK_FLAG_COUNT)
			fprintf(f, " (repeatable)");
		fputc('\n', f);
	}
}

int pk_flags_parse_only(const struct pk_flag *table, size_t n, int argc, char *const argv[],
                        struct pk_flag_value *vals, struct pk_err *err)
{
	if (argc < 1)
		return pk_err_set(err, PK_ERR_INVALID, "no program name in argv");
	const char **pos = calloc((size_t)argc, sizeof(*pos));
	size_t npos = 0;
	if (pos == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	int rc = pk_flags_parse(table, n, argc - 1, argv + 1, vals, pos, &npos, err);
	if (rc == PK_OK && npos > 0) {
		char q[300];
		pk_text_quote(pos[0], strlen(pos[0]), q, sizeof(q));
		rc = pk_err_set(err, PK_ERR_INVALID, "unexpected argument \"%s\"", q);
	}
	free(pos);
	return rc;
}
