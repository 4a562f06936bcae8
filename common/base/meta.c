/* meta.c - metav1 times and status conditions; see meta.h. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "meta.h"

void pk_meta_time_text(long long unix_seconds, char buf[PK_TIME_TEXT_MAX])
{
	time_t t = (time_t)unix_seconds;
	struct tm tm;
	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, PK_TIME_TEXT_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, PK_TIME_TEXT_MAX, "1970-01-01T00:00:00Z");
}

/* The decimal of text[at..at+n), all digits; -1 otherwise. */
static int digits(const char *text, int at, int n)
{
	int v = 0;
	for (int i = at; i < at + n; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -1;
		v = v * 10 + (text[i] - '0');
	}
	return v;
}

int pk_meta_time_parse(const char *text, long long *out)
{
	/* YYYY-MM-DDTHH:MM:SSZ */
	if (text == NULL || strlen(text) != 20 || text[4] != '-' || text[7] != '-' ||
	    text[10] != 'T' || text[13] != ':' || text[16] != ':' || text[19] != 'Z')
		return PK_ERR_INVALID;
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	int y = digits(text, 0, 4), mo = digits(text, 5, 2), d = digits(text, 8, 2),
	    h = digits(text, 11, 2), mi = digits(text, 14, 2), s = digits(text, 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
	    mi > 59 || s < 0 || s > 60)
		return PK_ERR_INVALID;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	*out = (long long)timegm(&tm);
	return PK_OK;
}

const json_t *pk_meta_condition(const json_t *conditions, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(conditions, i, c)
	{
		const char *t = pk_json_cstr_at(c, "type");
		if (t != NULL && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}
