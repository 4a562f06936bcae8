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

int pk_flags_parse(const struct pk_flag *table, size_t n, int argc, char *const argv[],
                   struct pk_flag_value *vals, const char **pos, size_t *npos, struct pk_err *err)
{
	memset(vals, 0, n * sizeof(*vals));
	*npos = 0;
	int drc = set_defaults(table, n, vals, err);
	if (drc != PK_OK)
		return drc;
	bool flags_done = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (flags_done || a[0] != '-' || a[1] == '\0') {
			pos[(*npos)++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			flags_done = true;
			continue;
		}
		size_t idx;
		if (a[1] == '-') {
			const char *name = a + 2;
			const char *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			const struct pk_flag *f = find_long(table, n, name, len, &idx);
			if (f == NULL)
				return pk_err_set(err, PK_ERR_INVALID, "unknown flag --%.*s",
				                  (int)(len > 64 ? 64 : len), name);
			if (f->type == PK_FLAG_BOOL) {
				/* "--x false" would be the flag and a stray argument: say so. */
				if (eq == NULL && i + 1 < argc &&
				    (!strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false")))
					return pk_err_set(err, PK_ERR_INVALID,
					                  "--%s takes its value after \"=\" "
					                  "(--%s=%s), not as the next argument",
					                  f->name, f->name, argv[i + 1]);
				int rc = parse_bool(f, eq ? eq + 1 : NULL, &vals[idx].on, err);
				if (rc != PK_OK)
					return rc;
				vals[idx].set = true;
				vals[idx].count++;
				continue;
			}
			if (!takes_value(f)) {
				if (eq != NULL)
					return pk_err_set(err, PK_ERR_INVALID,
					                  "--%s takes no value", f->name);
				vals[idx].set = true;
				vals[idx].count++;
				continue;
			}
			const char *value = eq ? eq + 1 : NULL;
			if (value == NULL) {
				if (i + 1 >= argc)
					return pk_err_set(err, PK_ERR_INVALID, "--%s needs a value",
					                  f->name);
				value = argv[++i];
			}
			int rc = set_value(f, &vals[idx], value, err);
			if (rc != PK_OK)
				return rc;
			continue;
		}
		/* One or more short flags: -v, -vR, -o json, -ojson. */
		for (const char *c = a + 1; *c != '\0'; c++) {
			const struct pk_flag *f = find_short(table, n, *c, &idx);
			if (f == NULL)
				return pk_err_set(err, PK_ERR_INVALID, "unknown flag -%c", *c);
			if (!takes_value(f)) {
				vals[idx].set = true;
				vals[idx].count++;
				vals[idx].on = true;
				continue;
			}
			const char *value = c[1] != '\0' ? c + 1 + (c[1] == '=') : NULL;
			if (value == NULL) {
				if (i + 1 >= argc)
					return pk_err_set(err, PK_ERR_INVALID, "-%c needs a value",
					                  *c);
				value = argv[++i];
			}
			int rc = set_value(f, &vals[idx], value, err);
			if (rc != PK_OK)
				return rc;
			break;
		}
	}
	return PK_OK;
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
