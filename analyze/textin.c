/* textin.c — line-oriented text input with one set of rules for every tool (textin.h). */
#include "textin.h"

#include <stdlib.h>
#include <string.h>

#include "gt_util.h"

struct ana_lines {
	ana_line_fn fn;
	void *ctx;
	char *carry;          /* an unterminated line between pieces */
	size_t n_carry, cap_carry;
	int pending_cr;       /* the last piece ended in CR: an LF first in the next one belongs to it */
	uint64_t lineno;
	char why[160];
};

ana_lines *ana_lines_create(ana_line_fn fn, void *ctx)
{
	ana_lines *lr = calloc(1, sizeof(*lr));
	if (lr) {
		lr->fn = fn;
		lr->ctx = ctx;
	}
	return lr;
}

void ana_lines_destroy(ana_lines *lr)
{
	if (!lr)
		return;
	free(lr->carry);
	free(lr);
}

uint64_t ana_lines_count(const ana_lines *lr)
{
	return lr->lineno;
}

const char *ana_lines_why(const ana_lines *lr)
{
	return lr->why;
}

static int too_long(ana_lines *lr)
{
	snprintf(lr->why, sizeof(lr->why), "line %llu is longer than %u MiB: not line-oriented text",
	         (unsigned long long)lr->lineno + 1, ANA_LINE_MAX >> 20);
	return GTT_EFORMAT;
}

/* One whole line (its bytes checked as they came in) to fn. */
static int emit(ana_lines *lr, const char *s, size_t len)
{
	/* a UTF-8 byte-order mark (editors on Windows write one) is not part of the first frame */
	if (lr->lineno == 0 && len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
		s += 3;
		len -= 3;
	}
	lr->lineno++;
	return lr->fn(lr->ctx, s, len, lr->lineno);
}

/* A NUL byte in the part of the current line in s[0..len): refused at once (binary input such as
 * /dev/zero is not read any further). */
static int check_nul(ana_lines *lr, const char *s, size_t len)
{
	if (!memchr(s, 0, len))
		return 0;
	snprintf(lr->why, sizeof(lr->why), "NUL byte at line %llu: binary data, not text",
	         (unsigned long long)lr->lineno + 1);
	return GTT_EFORMAT;
}

static int carry_add(ana_lines *lr, const char *s, size_t len)
{
	if (len > ANA_LINE_MAX - lr->n_carry)
		return too_long(lr);
	if (gt_grow((void **)&lr->carry, &lr->cap_carry, lr->n_carry + len, 1) < 0)
		return GTT_ENOMEM;
	memcpy(lr->carry + lr->n_carry, s, len);
	lr->n_carry += len;
	return 0;
}

int ana_lines_feed(ana_lines *lr, const char *data, size_t len)
{
	int rc;
	while (len) {
		if (lr->pending_cr) {
			lr->pending_cr = 0;
			if (*data == '\n') {
				data++;
				len--;
				continue;
			}
		}
		size_t t = 0;
		while (t < len && data[t] != '\n' && data[t] != '\r')
			t++;
		if ((rc = check_nul(lr, data, t)) < 0)
			return rc;
		if (t == len)
			return carry_add(lr, data, len);
		if (lr->n_carry) {
			if ((rc = carry_add(lr, data, t)) < 0)
				return rc;
			size_t n = lr->n_carry;
			lr->n_carry = 0;
			rc = emit(lr, lr->carry, n);
		} else if (t > ANA_LINE_MAX) {
			return too_long(lr);
		} else {
			rc = emit(lr, data, t);
		}
		if (rc < 0)
			return rc;
		if (data[t] == '\r') {
			if (t + 1 == len)
				lr->pending_cr = 1;
			else if (data[t + 1] == '\n')
				t++;
		}
		data += t + 1;
		len -= t + 1;
	}
	return 0;
}

int ana_lines_finish(ana_lines *lr)
{
	if (!lr->n_carry)
		return 0;
	size_t n = lr->n_carry;
	lr->n_carry = 0;
	return emit(lr, lr->carry, n);
}

int ana_lines_read(ana_lines *lr, FILE *in)
{
	enum { CHUNK = 1 << 16 };
	char buf[CHUNK];
	int rc = 0;
	for (;;) {
		size_t got = fread(buf, 1, CHUNK, in);
		if (got && (rc = ana_lines_feed(lr, buf, got)) < 0)
			return rc;
		if (got < CHUNK) {
			if (ferror(in))
				return GTT_EIO;
			break;
		}
	}
	return ana_lines_finish(lr);
}

int ana_parse_count(const char *s, size_t len, uint64_t *v)
{
	uint64_t x = 0;
	if (!len)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, (uint64_t)(s[i] - '0'), &x))
			return -1;
	}
	*v = x;
	return 0;
}
