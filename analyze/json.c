/* json.c — streaming JSON writer: comma bookkeeping per nesting level, UTF-8-safe escaping. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "json.h"

struct ana_json {
	FILE *out;
	unsigned char *first;   /* per level: 1 until the first element was written */
	size_t depth, cap;
	int after_key;          /* a key was written; the next value needs no comma */
	int newline;            /* a line break is due before the next token (after its comma) */
	int misuse;
};

ana_json *ana_json_create(FILE *out)
{
	ana_json *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->out = out;
	j->cap = 16;
	j->first = malloc(j->cap);
	if (!j->first) {
		free(j);
		return NULL;
	}
	j->first[0] = 1;
	return j;
}

void ana_json_destroy(ana_json *j)
{
	if (!j)
		return;
	free(j->first);
	free(j);
}

/* Before any value or key: the comma that separates it from its predecessor. */
static void sep(ana_json *j)
{
	if (j->after_key) {
		j->after_key = 0;
	} else {
		if (!j->first[j->depth])
			putc_unlocked(',', j->out);
		j->first[j->depth] = 0;
	}
	if (j->newline) {
		putc_unlocked('\n', j->out);
		j->newline = 0;
	}
}

static void begin(ana_json *j, char c)
{
	sep(j);
	putc_unlocked(c, j->out);
	if (GT_GROW(j->first, j->cap, j->depth + 2) < 0) {
		j->misuse = 1;
		return;
	}
	j->first[++j->depth] = 1;
}

static void end(ana_json *j, char c)
{
	if (j->depth == 0) {
		j->misuse = 1;
		return;
	}
	j->depth--;
	if (j->newline) {
		putc_unlocked('\n', j->out);
		j->newline = 0;
	}
	putc_unlocked(c, j->out);
}

void ana_json_obj_begin(ana_json *j) { begin(j, '{'); }
void ana_json_obj_end(ana_json *j) { end(j, '}'); }
void ana_json_arr_begin(ana_json *j) { begin(j, '['); }
void ana_json_arr_end(ana_json *j) { end(j, ']'); }

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
	unsigned c = p[0];
	size_t n;
	uint32_t min;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2; min = 0x80; cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3; min = 0x800; cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4; min = 0x10000; cp = c & 0x07;
	} else {
		return 0;
	}
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void ana_json_write_string(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	putc_unlocked('"', out);
	while (p < end) {
		/* Copy the longest run that needs no escaping in one call. */
		const unsigned char *run = p;
		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
			p++;
		if (p > run)
			fwrite(run, 1, (size_t)(p - run), out);
		if (p >= end)
			break;
		unsigned c = *p;
		if (c >= 0x80) {
			size_t n = utf8_len(p, (size_t)(end - p));
			if (n) {
				fwrite(p, 1, n, out);
				p += n;
			} else {
				fputs("\\ufffd", out);
				p++;
			}
			continue;
		}
		switch (c) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		case '\b': fputs("\\b", out); break;
		case '\f': fputs("\\f", out); break;
		default: fprintf(out, "\\u%04x", c); break;
		}
		p++;
	}
	putc_unlocked('"', out);
}

void ana_json_key(ana_json *j, const char *key)
{
	sep(j);
	ana_json_write_string(j->out, key, strlen(key));
	putc_unlocked(':', j->out);
	j->after_key = 1;
}

void ana_json_strn(ana_json *j, const char *s, size_t len)
{
	sep(j);
	ana_json_write_string(j->out, s, len);
}

void ana_json_str(ana_json *j, const char *s)
{
	if (!s) {
		ana_json_null(j);
		return;
	}
	ana_json_strn(j, s, strlen(s));
}

void ana_json_u64(ana_json *j, uint64_t v)
{
	char buf[24];
	char *p = buf + sizeof(buf);
	sep(j);
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), j->out);
}

void ana_json_i64(ana_json *j, int64_t v)
{
	if (v < 0) {
		sep(j);
		fprintf(j->out, "%" PRId64, v);
		return;
	}
	ana_json_u64(j, (uint64_t)v);
}

void ana_json_double(ana_json *j, double v)
{
	if (!isfinite(v)) {
		ana_json_null(j);
		return;
	}
	char buf[40];
	if (fabs(v) < 9e15 && v == (double)(int64_t)v) { /* (the range first: the cast of a larger one is undefined) */
		ana_json_i64(j, (int64_t)v);
		return;
	}
	/* Shortest of %.15g..%.17g that reads back exactly: stable across runs and platforms. */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	sep(j);
	fputs(buf, j->out);
}

void ana_json_decimal(ana_json *j, int64_t v, int decimals)
{
	uint64_t scale = 1;
	if (decimals <= 0 || decimals > 18) {
		ana_json_i64(j, v);
		return;
	}
	for (int i = 0; i < decimals; i++)
		scale *= 10;
	sep(j);
	uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	fprintf(j->out, "%s%" PRIu64 ".%0*" PRIu64, v < 0 ? "-" : "", a / scale, decimals, a % scale);
}

void ana_json_bool(ana_json *j, int v)
{
	sep(j);
	fputs(v ? "true" : "false", j->out);
}

void ana_json_null(ana_json *j)
{
	sep(j);
	fputs("null", j->out);
}

void ana_json_newline(ana_json *j)
{
	if (j->depth == 0 && !j->after_key)
		putc_unlocked('\n', j->out);   /* after the top-level value: end the file's last line */
	else
		j->newline = 1;
}

void ana_json_kv_str(ana_json *j, const char *key, const char *s)
{
	ana_json_key(j, key);
	ana_json_str(j, s);
}

void ana_json_kv_u64(ana_json *j, const char *key, uint64_t v)
{
	ana_json_key(j, key);
	ana_json_u64(j, v);
}

void ana_json_kv_i64(ana_json *j, const char *key, int64_t v)
{
	ana_json_key(j, key);
	ana_json_i64(j, v);
}

void ana_json_kv_double(ana_json *j, const char *key, double v)
{
	ana_json_key(j, key);
	ana_json_double(j, v);
}

int ana_json_error(const ana_json *j)
{
	if (j->misuse || j->depth != 0 || j->after_key)
		return -1;
	return ferror(j->out) ? -1 : 0;
}
