/* import_perf.c — `perf script` text to folded stacks (stackcollapse-perf.pl semantics):
 * a line parser written against the Perl script's patterns, and a hash table of stacks. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gt_util.h"
#include "gtt.h"
#include "outfile.h"
#include "import_perf.h"
#include "textin.h"

/* A sample's frames past this much text are not a stack but a file without blank lines. */
#define MAX_SAMPLE_TEXT (64u << 20)

#define MAX_BAD_KEPT 10

typedef struct stack_entry {
	uint64_t hash;
	uint64_t count;
	size_t off;            /* key in pi->keys */
	uint32_t len;
} stack_entry;

typedef struct buf {
	char *p;
	size_t n, cap;
} buf;

typedef struct span { size_t off, len; } span;

struct ana_perf_import {
	ana_perf_opts o;
	/* stack table: open addressing, slots hold entry index + 1 */
	stack_entry *entries;
	size_t n_entries, cap_entries;
	uint32_t *slots;
	size_t n_slots;
	buf keys;
	size_t *sorted;        /* entry indices in key order, after finish */

	/* the sample being read */
	int have_pname;
	buf pname;
	uint64_t period;
	buf frames;            /* frame groups, one per stack line, each "f1;f2" */
	span *groups;
	size_t n_groups, cap_groups;
	buf key;               /* scratch for the joined stack */

	char event[64];
	int event_set;         /* event_filter was given or chosen */
	ana_lines *lines;      /* textin.h: line ends, NUL bytes, line length */
	uint64_t total;        /* sum of the counts kept */
	char why[200];         /* why the input was refused (GTT_EFORMAT) */
	int finished;
	ana_perf_stats st;
	uint64_t bad_lineno[MAX_BAD_KEPT];
	char *bad_text[MAX_BAD_KEPT];
	int oom;
};

void ana_perf_opts_init(ana_perf_opts *o)
{
	memset(o, 0, sizeof(*o));
}

static int buf_reserve(buf *b, size_t more)
{
	return GT_GROW(b->p, b->cap, b->n + more) < 0 ? GTT_ENOMEM : 0;
}

static int buf_add(buf *b, const char *s, size_t len)
{
	if (buf_reserve(b, len) < 0)
		return GTT_ENOMEM;
	memcpy(b->p + b->n, s, len);
	b->n += len;
	return 0;
}

static int do_line(void *ctx, const char *s, size_t n, uint64_t lineno);

ana_perf_import *ana_perf_import_create(const ana_perf_opts *o)
{
	ana_perf_import *pi = calloc(1, sizeof(*pi));
	if (!pi)
		return NULL;
	if (o)
		pi->o = *o;
	if (pi->o.event_filter) {
		snprintf(pi->event, sizeof(pi->event), "%s", pi->o.event_filter);
		pi->event_set = 1;
	}
	pi->n_slots = 1024;
	pi->slots = calloc(pi->n_slots, sizeof(*pi->slots));
	pi->lines = ana_lines_create(do_line, pi);
	if (!pi->slots || !pi->lines) {
		ana_perf_import_destroy(pi);
		return NULL;
	}
	return pi;
}

void ana_perf_import_destroy(ana_perf_import *pi)
{
	if (!pi)
		return;
	free(pi->entries);
	free(pi->slots);
	free(pi->keys.p);
	free(pi->sorted);
	free(pi->pname.p);
	free(pi->frames.p);
	free(pi->groups);
	free(pi->key.p);
	ana_lines_destroy(pi->lines);
	for (size_t i = 0; i < MAX_BAD_KEPT; i++)
		free(pi->bad_text[i]);
	free(pi);
}

/* FNV-1a over 8-byte words; stacks are long and this runs once per sample. */
static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	h ^= h >> 32;
	return h * 0x9e3779b97f4a7c15ull;
}

static int table_grow(ana_perf_import *pi)
{
	size_t n = pi->n_slots * 2;
	uint32_t *s = calloc(n, sizeof(*s));
	if (!s)
		return GTT_ENOMEM;
	for (size_t i = 0; i < pi->n_entries; i++) {
		size_t k = pi->entries[i].hash & (n - 1);
		while (s[k])
			k = (k + 1) & (n - 1);
		s[k] = (uint32_t)(i + 1);
	}
	free(pi->slots);
	pi->slots = s;
	pi->n_slots = n;
	return 0;
}

static int remember(ana_perf_import *pi, const char *key, size_t len, uint64_t count)
{
	/* every stack's count is at most the total: one check keeps them all exact */
	if (__builtin_add_overflow(pi->total, count, &pi->total)) {
		snprintf(pi->why, sizeof(pi->why), "sample periods add up past 2^64 - 1 by line %llu: not "
		         "counts the folded format can hold", (unsigned long long)pi->st.lines);
		return GTT_EFORMAT;
	}
	uint64_t h = hash_bytes(key, len);
	size_t k = h & (pi->n_slots - 1);
	for (; pi->slots[k]; k = (k + 1) & (pi->n_slots - 1)) {
		stack_entry *e = &pi->entries[pi->slots[k] - 1];
		if (e->hash == h && e->len == len && memcmp(pi->keys.p + e->off, key, len) == 0) {
			e->count += count;
			return 0;
		}
	}
	if (len > UINT32_MAX || pi->n_entries >= UINT32_MAX - 1)
		return GTT_ENOMEM;
	if (GT_GROW(pi->entries, pi->cap_entries, pi->n_entries + 1) < 0)
		return GTT_ENOMEM;
	stack_entry *e = &pi->entries[pi->n_entries];
	e->hash = h;
	e->count = count;
	e->off = pi->keys.n;
	e->len = (uint32_t)len;
	if (buf_add(&pi->keys, key, len) < 0 || buf_add(&pi->keys, "", 1) < 0)
		return GTT_ENOMEM;
	pi->slots[k] = (uint32_t)(++pi->n_entries);
	if (pi->n_entries * 2 > pi->n_slots)
		return table_grow(pi);
	return 0;
}

static int is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_word(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static const char *find_sub(const char *s, size_t n, const char *sub)
{
	size_t m = strlen(sub);
	if (m > n)
		return NULL;
	return memmem(s, n, sub, m);
}

/* The sample ends: join "pname;group...;group" (groups in reverse line order: perf lists
 * the leaf first) and count it. */
static int end_sample(ana_perf_import *pi)
{
	int rc = 0;
	if (!pi->have_pname)
		goto out;
	pi->key.n = 0;
	if ((rc = buf_add(&pi->key, pi->pname.p, pi->pname.n)) < 0)
		goto out;
	for (size_t g = pi->n_groups; g-- > 0;) {
		if ((rc = buf_reserve(&pi->key, pi->groups[g].len + 1)) < 0)
			goto out;
		pi->key.p[pi->key.n++] = ';';
		memcpy(pi->key.p + pi->key.n, pi->frames.p + pi->groups[g].off, pi->groups[g].len);
		pi->key.n += pi->groups[g].len;
	}
	rc = remember(pi, pi->key.p, pi->key.n, pi->period);
	pi->st.samples++;
out:
	pi->have_pname = 0;
	pi->n_groups = 0;
	pi->frames.n = 0;
	return rc;
}

/* `(\S.+?)\s+(\d+)/?(\d+)?\s+` (roughly) at the start of a line: the sample header. The command name
 * is the shortest prefix followed by a PID (the Perl pattern wants two characters at least,
 * which garbles one-letter command names; we accept one). */
static int parse_header(const char *s, size_t n, size_t *comm_len, const char **pid, size_t *pid_len,
                        const char **tid, size_t *tid_len)
{
	if (n == 0 || is_space((unsigned char)s[0]))
		return 0;
	for (size_t c = 1; c < n; c++) {
		if (!is_space((unsigned char)s[c]))
			continue;
		size_t p = c;
		while (p < n && is_space((unsigned char)s[p]))
			p++;
		size_t d = p;
		while (p < n && is_digit((unsigned char)s[p]))
			p++;
		if (p == d || p >= n)
			continue;
		if (is_space((unsigned char)s[p])) {
			*comm_len = c;
			*pid = s + d;
			*pid_len = p - d;
			*tid = NULL;
			*tid_len = 0;
			return 1;
		}
		if (s[p] != '/')
			continue;
		size_t d_end = p;
		while (p < n && s[p] == '/')
			p++;
		size_t t = p;
		while (p < n && is_digit((unsigned char)s[p]))
			p++;
		if (p >= n || !is_space((unsigned char)s[p]))
			continue;
		*comm_len = c;
		*pid = s + d;
		*pid_len = d_end - d;
		*tid = p > t ? s + t : NULL;
		*tid_len = p - t;
		return 1;
	}
	return 0;
}

/* `:\s*(\d+)*\s+(\S+):\s*$`: the period and event name at the end of a header. */
static int parse_event(const char *s, size_t n, const char **period, size_t *period_len,
                       const char **event, size_t *event_len)
{
	while (n > 0 && is_space((unsigned char)s[n - 1]))
		n--;
	if (n < 2 || s[n - 1] != ':')
		return 0;
	size_t e_end = n - 1, e = e_end;
	while (e > 0 && !is_space((unsigned char)s[e - 1]))
		e--;
	if (e == e_end || e == 0)
		return 0;
	size_t p = e;
	while (p > 0 && is_space((unsigned char)s[p - 1]))
		p--;                            /* \s+ (at least one, known) */
	size_t d_end = p;
	while (p > 0 && is_digit((unsigned char)s[p - 1]))
		p--;
	size_t d = p;
	while (p > 0 && is_space((unsigned char)s[p - 1]))
		p--;
	if (p == 0 || s[p - 1] != ':')
		return 0;
	*period = s + d;
	*period_len = d_end - d;
	*event = s + e;
	*event_len = e_end - e;
	return 1;
}

/* `^\s*(\w+)\s*(.+) \((.*)\)`: a frame line "ADDR SYMBOL (MODULE)", matched the way Perl's
 * backtracking would: the last " (" that has a ")" after it, the last ")" in the line. */
static int parse_frame(const char *s, size_t n, span *pc, span *func, span *mod)
{
	size_t i = 0;
	while (i < n && is_space((unsigned char)s[i]))
		i++;
	size_t w = i;
	while (i < n && is_word((unsigned char)s[i]))
		i++;
	if (i == w)
		return 0;
	size_t w_end = i;
	while (i < n && is_space((unsigned char)s[i]))
		i++;
	const char *rp = memrchr(s, ')', n);
	if (!rp)
		return 0;
	size_t r = (size_t)(rp - s);
	/* (.+) needs one character after a one-letter (\w+): " (" starts at w + 2 or later */
	size_t k = SIZE_MAX;
	for (size_t j = r; j-- > w + 2;) {
		if (j + 2 <= r && s[j] == ' ' && s[j + 1] == '(') {
			k = j;
			break;
		}
	}
	if (k == SIZE_MAX)
		return 0;
	/* (.+) starts after \s*, which gives back spaces, then (\w+) gives back letters. */
	size_t start = i;
	if (k < start + 1) {
		if (k >= w_end + 1) {
			start = k - 1;
		} else {
			w_end = k - 1;  /* k > w: the word shrinks to end before the last letter */
			start = w_end;
		}
	}
	pc->off = w;
	pc->len = w_end - w;
	func->off = start;
	func->len = k - start;
	mod->off = k + 2;
	mod->len = r - (k + 2);
	return 1;
}

/* One name from a "a->b" chain, tidied as the Perl script does, appended to pi->frames. */
static int add_func(ana_perf_import *pi, const char *f, size_t fn, const char *pcs, size_t pcn,
                    const char *mod, size_t modn, int inlined)
{
	buf *o = &pi->frames;
	char tmp[64];
	const char *name = f;
	size_t namen = fn;
	char *unk = NULL;
	int rc = 0;
	if (fn == 9 && memcmp(f, "[unknown]", 9) == 0) {
		const char *base = "unknown";
		size_t basen = 7;
		if (!(modn == 9 && memcmp(mod, "[unknown]", 9) == 0)) {
			const char *sl = memrchr(mod, '/', modn);
			base = sl ? sl + 1 : mod;
			basen = modn - (size_t)(base - mod);
		}
		size_t need = basen + pcn + 8;
		unk = need <= sizeof(tmp) ? tmp : malloc(need);
		if (!unk)
			return GTT_ENOMEM;
		if (pi->o.addrs)
			namen = (size_t)sprintf(unk, "[%.*s <%.*s>]", (int)basen, base, (int)pcn, pcs);
		else
			namen = (size_t)sprintf(unk, "[%.*s]", (int)basen, base);
		name = unk;
	}
	/* Everything after the first "(" is argument noise, unless it reads like a Go method
	 * "pkg.(*T).M" or is "(anonymous namespace)". */
	const char *op = find_sub(name, namen, ".(");
	int go = 0;
	if (op) {
		for (size_t j = namen; j-- > (size_t)(op - name) + 2;)
			if (j + 1 < namen && name[j] == ')' && name[j + 1] == '.') {
				go = 1;
				break;
			}
	}
	if (!go) {
		for (size_t j = 0; j < namen; j++) {
			if (name[j] != '(')
				continue;
			if (namen - j - 1 >= 20 && memcmp(name + j + 1, "anonymous namespace)", 20) == 0)
				continue;
			namen = j;
			break;
		}
	}
	if ((rc = buf_reserve(o, namen + 8)) < 0)
		goto out;
	size_t start = o->n;
	for (size_t j = 0; j < namen; j++) {
		char c = name[j];
		if (c == '"' || c == '\'')
			continue;
		o->p[o->n++] = c == ';' ? ':' : c;
	}
	/* Java signatures "Lorg/pkg/Class;.method" lose their "L" */
	if (pi->pname.n >= 4 && memcmp(pi->pname.p, "java", 4) == 0 && o->n > start &&
	    o->p[start] == 'L' && memchr(o->p + start, '/', o->n - start)) {
		memmove(o->p + start, o->p + start + 1, o->n - start - 1);
		o->n--;
	}
	const char *tag = NULL;
	const char *out_s = o->p + start;
	size_t out_n = o->n - start;
	if (inlined) {
		if (!find_sub(out_s, out_n, "_[i]"))
			tag = "_[i]";
	} else if (pi->o.kernel && ((modn && mod[0] == '[') || (modn >= 7 && memcmp(mod + modn - 7, "vmlinux", 7) == 0)) &&
	           !find_sub(mod, modn, "unknown")) {
		tag = "_[k]";
	} else if (pi->o.jit) {
		const char *m = find_sub(mod, modn, "/tmp/perf-");
		int jit = 0;
		while (m && !jit) {
			const char *q = m + 10, *end = mod + modn;
			const char *dg = q;
			while (q < end && is_digit((unsigned char)*q))
				q++;
			if (q > dg && end - q >= 4 && memcmp(q, ".map", 4) == 0)
				jit = 1;
			else
				m = find_sub(m + 1, (size_t)(end - m - 1), "/tmp/perf-");
		}
		if (jit && !find_sub(out_s, out_n, "_[j]"))
			tag = "_[j]";
	}
	if (tag) {
		memcpy(o->p + o->n, tag, 4);
		o->n += 4;
	}
out:
	if (unk != tmp)
		free(unk);
	return rc;
}

static int frame_line(ana_perf_import *pi, const char *s, size_t n, int *bad)
{
	span pc, fs, ms;
	if (!parse_frame(s, n, &pc, &fs, &ms)) {
		*bad = 1;
		return 0;
	}
	if (!pi->have_pname)
		return 0;
	if (pi->frames.n > MAX_SAMPLE_TEXT) {
		snprintf(pi->why, sizeof(pi->why), "the sample before line %llu has over %u MiB of frames: not "
		         "`perf script` output (no blank lines between samples?)", (unsigned long long)pi->st.lines,
		         MAX_SAMPLE_TEXT >> 20);
		return GTT_EFORMAT;
	}
	const char *f = s + fs.off;
	size_t fn = fs.len;
	/* perf >= 4.8 appends "+0xOFF" to symbols */
	const char *plus = memrchr(f, '+', fn);
	if (plus && (size_t)(f + fn - plus) > 3 && plus[1] == '0' && plus[2] == 'x') {
		const char *h = plus + 3;
		while (h < f + fn && (is_digit((unsigned char)*h) || (*h >= 'a' && *h <= 'f')))
			h++;
		if (h == f + fn)
			fn = (size_t)(plus - f);
	}
	if (fn && f[0] == '(')
		return 0;                     /* a process name, not a frame */
	if (GT_GROW(pi->groups, pi->cap_groups, pi->n_groups + 1) < 0)
		return GTT_ENOMEM;
	/* Perl's split drops trailing empty fields: "a->" is one field, "" is none. */
	while (fn >= 2 && f[fn - 2] == '-' && f[fn - 1] == '>')
		fn -= 2;
	if (fn == 0)
		return 0;
	size_t start = pi->frames.n;
	int idx = 0;
	const char *p = f, *end = f + fn;
	while (fn > 0) {
		const char *arrow = find_sub(p, (size_t)(end - p), "->");
		const char *fe = arrow ? arrow : end;
		if (idx > 0) {
			if (buf_add(&pi->frames, ";", 1) < 0)
				return GTT_ENOMEM;
		}
		int rc = add_func(pi, p, (size_t)(fe - p), s + pc.off, pc.len, s + ms.off, ms.len, idx > 0);
		if (rc < 0)
			return rc;
		idx++;
		if (!arrow)
			break;
		p = arrow + 2;
	}
	pi->groups[pi->n_groups].off = start;
	pi->groups[pi->n_groups].len = pi->frames.n - start;
	pi->n_groups++;
	return 0;
}

static int header_line(ana_perf_import *pi, const char *s, size_t n, size_t comm_len,
                       const char *pid, size_t pid_len, const char *tid, size_t tid_len, int *bad)
{
	const char *per, *ev;
	size_t per_len, ev_len;
	uint64_t period = 0;
	if (parse_event(s, n, &per, &per_len, &ev, &ev_len)) {
		if (ev_len >= sizeof(pi->event))
			ev_len = sizeof(pi->event) - 1;
		if (!pi->event_set) {
			memcpy(pi->event, ev, ev_len);
			pi->event[ev_len] = 0;
			pi->event_set = 1;
		} else if (strlen(pi->event) != ev_len || memcmp(pi->event, ev, ev_len) != 0) {
			/* Mixing event types (cycles with instructions) would mislead: keep one. */
			if (!pi->st.other_event[0]) {
				memcpy(pi->st.other_event, ev, ev_len);
				pi->st.other_event[ev_len] = 0;
			}
			pi->st.filtered++;
			return 0;
		}
		if (per_len && ana_parse_count(per, per_len, &period) < 0) {
			*bad = 1; /* a period past 2^64 - 1: not perf's; the sample is left out */
			pi->have_pname = 0;
			return 0;
		}
	}
	pi->period = period ? period : 1;
	/* "1234" alone is a TID; a TID of "0" counts as absent, as in the Perl script. */
	const char *pid_s = pid;
	size_t pid_n = pid_len;
	if (!tid || (tid_len == 1 && tid[0] == '0')) {
		tid = pid;
		tid_len = pid_len;
		pid_s = "?";
		pid_n = 1;
	}
	buf *b = &pi->pname;
	b->n = 0;
	if (buf_reserve(b, comm_len + pid_n + tid_len + 3) < 0)
		return GTT_ENOMEM;
	for (size_t j = 0; j < comm_len; j++)
		b->p[b->n++] = s[j] == ' ' ? '_' : s[j];
	if (pi->o.tid || pi->o.pid) {
		b->p[b->n++] = '-';
		memcpy(b->p + b->n, pid_s, pid_n);
		b->n += pid_n;
		if (pi->o.tid) {
			b->p[b->n++] = '/';
			memcpy(b->p + b->n, tid, tid_len);
			b->n += tid_len;
		}
	}
	pi->have_pname = 1;
	return 0;
}

static int do_line(void *ctx, const char *s, size_t n, uint64_t lineno)
{
	ana_perf_import *pi = ctx;
	pi->st.lines = lineno;
	if (n && s[0] == '#')
		return 0;
	if (n == 0)
		return end_sample(pi);
	size_t comm_len, pid_len, tid_len;
	const char *pid, *tid;
	int bad = 0, rc;
	if (parse_header(s, n, &comm_len, &pid, &pid_len, &tid, &tid_len))
		rc = header_line(pi, s, n, comm_len, pid, pid_len, tid, tid_len, &bad);
	else
		rc = frame_line(pi, s, n, &bad);
	if (bad) {
		size_t k = pi->st.bad_lines < MAX_BAD_KEPT ? (size_t)pi->st.bad_lines : MAX_BAD_KEPT;
		if (!pi->st.bad_lines)
			pi->st.first_bad_line = pi->st.lines;
		if (k < MAX_BAD_KEPT) {
			pi->bad_lineno[k] = pi->st.lines;
			pi->bad_text[k] = strndup(s, n > 200 ? 200 : n);
		}
		pi->st.bad_lines++;
	}
	return rc;
}

int ana_perf_import_feed(ana_perf_import *pi, const char *data, size_t len)
{
	return ana_lines_feed(pi->lines, data, len);
}

int ana_perf_import_read(ana_perf_import *pi, FILE *in)
{
	enum { CHUNK = 1 << 20 };
	char *b = malloc(CHUNK);
	int rc = 0;
	if (!b)
		return GTT_ENOMEM;
	for (;;) {
		size_t got = fread(b, 1, CHUNK, in);
		if (got && (rc = ana_perf_import_feed(pi, b, got)) < 0)
			break;
		if (got < CHUNK) {
			if (ferror(in))
				rc = GTT_EIO;
			break;
		}
	}
	free(b);
	return rc;
}

const char *ana_perf_import_why(const ana_perf_import *pi)
{
	return pi->why[0] ? pi->why : ana_lines_why(pi->lines);
}

static const ana_perf_import *sort_ctx;

static int cmp_entries(const void *a, const void *b)
{
	const stack_entry *x = &sort_ctx->entries[*(const size_t *)a];
	const stack_entry *y = &sort_ctx->entries[*(const size_t *)b];
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(sort_ctx->keys.p + x->off, sort_ctx->keys.p + y->off, n);
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

int ana_perf_import_finish(ana_perf_import *pi)
{
	int rc;
	if (pi->finished)
		return 0;
	pi->finished = 1;
	if ((rc = ana_lines_finish(pi->lines)) < 0)
		return rc;
	if (pi->have_pname && (rc = end_sample(pi)) < 0)
		return rc;
	pi->sorted = malloc((pi->n_entries + 1) * sizeof(*pi->sorted));
	if (!pi->sorted)
		return GTT_ENOMEM;
	for (size_t i = 0; i < pi->n_entries; i++)
		pi->sorted[i] = i;
	sort_ctx = pi;
	qsort(pi->sorted, pi->n_entries, sizeof(*pi->sorted), cmp_entries);
	sort_ctx = NULL;
	return 0;
}

size_t ana_perf_import_nstacks(const ana_perf_import *pi)
{
	return pi->sorted ? pi->n_entries : 0;
}

const char *ana_perf_import_stack(const ana_perf_import *pi, size_t i, uint64_t *count)
{
	if (!pi->sorted || i >= pi->n_entries)
		return NULL;
	stack_entry *e = &pi->entries[pi->sorted[i]];
	if (count)
		*count = e->count;
	return pi->keys.p + e->off;
}

int ana_perf_import_write(const ana_perf_import *pi, FILE *out)
{
	if (!pi->sorted)
		return GTT_EINVAL;
	for (size_t i = 0; i < pi->n_entries; i++) {
		const stack_entry *e = &pi->entries[pi->sorted[i]];
		fwrite(pi->keys.p + e->off, 1, e->len, out);
		fprintf(out, " %llu\n", (unsigned long long)e->count);
	}
	return ferror(out) ? GTT_EIO : 0;
}

void ana_perf_import_stats(const ana_perf_import *pi, ana_perf_stats *st)
{
	*st = pi->st;
	snprintf(st->event, sizeof(st->event), "%s", pi->event);
}

int ana_perf_import_bad(const ana_perf_import *pi, size_t i, uint64_t *lineno, const char **text)
{
	if (i >= MAX_BAD_KEPT || i >= pi->st.bad_lines || !pi->bad_text[i])
		return -1;
	*lineno = pi->bad_lineno[i];
	*text = pi->bad_text[i];
	return 0;
}

/* ---- the command ---- */

static void import_usage(FILE *f)
{
	fputs("usage: gt-analyze import-perf [--pid] [--tid] [--kernel] [--jit] [--all] [--addrs]\n"
	      "                              [--event-filter EVENT] [-o FILE] [PERF_SCRIPT_TEXT|-]\n"
	      "Reads `perf script` output and writes folded stacks (stackcollapse-perf.pl semantics).\n",
	      f);
}

int ana_cmd_import_perf(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"pid", no_argument, NULL, 'p'},   {"tid", no_argument, NULL, 't'},
		{"kernel", no_argument, NULL, 'k'}, {"jit", no_argument, NULL, 'j'},
		{"all", no_argument, NULL, 'a'},   {"addrs", no_argument, NULL, 'A'},
		{"event-filter", required_argument, NULL, 'e'},
		{"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	ana_perf_opts o;
	const char *out_path = NULL, *in_path = NULL;
	FILE *in = NULL, *out = NULL;
	ana_out *of = NULL;
	char oerr[512];
	ana_perf_import *pi = NULL;
	int c, rc, status = GT_EXIT_BROKEN;
	ana_perf_opts_init(&o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'p': o.pid = 1; break;
		case 't': o.tid = 1; break;
		case 'k': o.kernel = 1; break;
		case 'j': o.jit = 1; break;
		case 'a': o.kernel = o.jit = 1; break;
		case 'A': o.addrs = 1; break;
		case 'e': o.event_filter = optarg; break;
		case 'o': out_path = optarg; break;
		case 'h': import_usage(stdout); return GT_EXIT_OK;
		default: return ana_cli_usage_error("import-perf", "unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return ana_cli_usage_error("import-perf", "one input file only");
	in_path = optind < argc ? argv[optind] : "-";
	in = strcmp(in_path, "-") == 0 ? stdin : fopen(in_path, "r");
	if (!in) {
		fprintf(stderr, "gt-analyze import-perf: %s: %s\n", in_path, strerror(errno));
		goto out;
	}
	if (!(pi = ana_perf_import_create(&o))) {
		fprintf(stderr, "gt-analyze import-perf: out of memory\n");
		goto out;
	}
	if ((rc = ana_perf_import_read(pi, in)) < 0 || (rc = ana_perf_import_finish(pi)) < 0) {
		fprintf(stderr, "gt-analyze import-perf: %s: %s\n", in_path,
		        rc == GTT_EIO ? strerror(errno) : rc == GTT_EFORMAT ? ana_perf_import_why(pi) : gtt_strerror(rc));
		goto out;
	}
	ana_perf_stats st;
	ana_perf_import_stats(pi, &st);
	if (st.samples == 0) {
		/* nothing usable: one line that says so, naming the first bad line */
		uint64_t ln = 0;
		const char *text = "";
		if (st.bad_lines && ana_perf_import_bad(pi, 0, &ln, &text) == 0)
			fprintf(stderr, "gt-analyze import-perf: %s: no samples with stacks; %llu unrecognized "
			        "lines, the first at line %llu: %.80s\n", in_path,
			        (unsigned long long)st.bad_lines, (unsigned long long)ln, text);
		else
			fprintf(stderr, "gt-analyze import-perf: %s: no samples with stacks (is it `perf script` "
			        "output of a `perf record -g` recording?)\n", in_path);
		goto out;
	}
	for (size_t i = 0; i < st.bad_lines && i < MAX_BAD_KEPT; i++) {
		uint64_t ln;
		const char *text;
		if (ana_perf_import_bad(pi, i, &ln, &text) == 0)
			fprintf(stderr, "gt-analyze import-perf: %s:%llu: unrecognized line: %s\n", in_path,
			        (unsigned long long)ln, text);
	}
	if (st.bad_lines > MAX_BAD_KEPT)
		fprintf(stderr, "gt-analyze import-perf: %s: %llu more unrecognized lines\n", in_path,
		        (unsigned long long)(st.bad_lines - MAX_BAD_KEPT));
	if (st.samples == 0) {
		fprintf(stderr, "gt-analyze import-perf: %s: no samples with stacks (is it `perf script` output of a `perf record -g` recording?)\n",
		        in_path);
		goto out;
	}
	if (st.filtered)
		fprintf(stderr, "gt-analyze import-perf: kept event %s only; %llu samples of other events (%s) skipped (--event-filter picks one)\n",
		        st.event, (unsigned long long)st.filtered, st.other_event);
	const char *inputs[] = { in_path, NULL };
	if (!(of = ana_out_open(out_path, inputs, oerr, sizeof(oerr)))) {
		fprintf(stderr, "gt-analyze import-perf: %s\n", oerr);
		goto out;
	}
	out = ana_out_stream(of);
	if (ana_perf_import_write(pi, out) < 0 || fflush(out) != 0) {
		fprintf(stderr, "gt-analyze import-perf: writing %s: %s\n", out_path ? out_path : "stdout",
		        strerror(errno));
		goto out;
	}
	status = st.bad_lines ? GT_EXIT_PARTIAL : GT_EXIT_OK;
out:
	if (in && in != stdin)
		fclose(in);
	if (ana_out_close(of, status != GT_EXIT_BROKEN, oerr, sizeof(oerr)) < 0) {
		fprintf(stderr, "gt-analyze import-perf: %s\n", oerr);
		status = GT_EXIT_BROKEN;
	}
	ana_perf_import_destroy(pi);
	return status;
}
