/* gt_termsafe.c — the control-character filter for human-readable output (gt_termsafe.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gtt.h"
#include "gt_termsafe.h"

typedef struct guard {
	FILE *to;
	int held_c2; /* the last byte written was 0xC2: a C1 control if a byte in 80..9F follows */
	int err;     /* errno of the first failed write to `to` */
	int kept;    /* static (stderr's): not freed at close */
} guard;

static int put(guard *g, const char *p, size_t n)
{
	if (n && fwrite(p, 1, n, g->to) != n) {
		if (!g->err)
			g->err = errno ? errno : EIO;
		return -1;
	}
	return 0;
}

static ssize_t guard_write(void *c, const char *buf, size_t size)
{
	guard *g = c;
	char out[512];
	size_t n = 0;
	for (size_t i = 0; i < size; i++) {
		unsigned char b = (unsigned char)buf[i];
		if (n + 2 > sizeof(out)) {
			if (put(g, out, n) < 0)
				return -1;
			n = 0;
		}
		if (g->held_c2) {
			g->held_c2 = 0;
			if (b >= 0x80 && b <= 0x9f) {
				out[n++] = '?';
				continue;
			}
			out[n++] = (char)0xc2;
		}
		if (b == 0xc2)
			g->held_c2 = 1;
		else if ((b < 0x20 && b != '\n' && b != '\t') || b == 0x7f)
			out[n++] = '?';
		else
			out[n++] = (char)b;
	}
	if (put(g, out, n) < 0)
		return -1;
	return (ssize_t)size;
}

static int guard_close(void *c)
{
	guard *g = c;
	if (g->held_c2)
		put(g, "\xc2", 1);
	if (fflush(g->to) != 0 && !g->err)
		g->err = errno ? errno : EIO;
	int rc = g->err ? -1 : 0;
	if (g->err)
		errno = g->err;
	if (!g->kept)
		free(g);
	return rc;
}

static FILE *guard_open(guard *g, FILE *to)
{
	cookie_io_functions_t io = { .write = guard_write, .close = guard_close };
	g->to = to;
	FILE *f = fopencookie(g, "w", io);
	if (f && to == stderr)
		setvbuf(f, NULL, _IONBF, 0);
	return f;
}

FILE *gt_termsafe_open(FILE *to)
{
	guard *g = calloc(1, sizeof(*g));
	FILE *f = g ? guard_open(g, to) : NULL;
	if (!f)
		free(g);
	return f;
}

int gt_termsafe_close(FILE *f)
{
	if (!f)
		return 0;
	return fclose(f) == 0 ? 0 : GTT_EIO;
}

void gt_termsafe_stderr(void)
{
	/* static: the filter lives as long as the process and is never closed (each message is
	 * written through at once, unbuffered) */
	static guard g = { .kept = 1 };
	FILE *f = g.to ? NULL : guard_open(&g, stderr);
	if (f)
		stderr = f;
}

void gt_termsafe_scrub(char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			*s = '?';
		else if (c == 0xc2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f)
			s[0] = s[1] = '?';
	}
}
