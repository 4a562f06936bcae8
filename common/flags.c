/* flags.c - parsing argv against a flag table, and --help from the same table. */
#include "flags.h"

#include <string.h>

static bool takes_value(const struct pk_flag *f)
{
	return f->type == PK_FLAG_CHOICE || f->type == PK_FLAG_STRING;
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
			arg = "VALUE";
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
		if (t->def != NULL && t->def[0] != '\0')
			fprintf(f, " (default %s)", t->def);
		if (t->type == PK_FLAG_COUNT)
			fprintf(f, " (repeatable)");
		fputc('\n', f);
	}
}
