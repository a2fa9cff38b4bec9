/* counters.c — program-emitted counters: GT_COUNTERS_DIR/counters.PID text lines into
 * STRING + COUNTER records, read incrementally and strictly (a bad line is counted, never
 * trusted). Line format: docs/COUNTERS.md. */
#include "counters.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_util.h"

#define FILE_PREFIX "counters."
#define MAX_LINE 256              /* longer lines are malformed (the emitter never writes one) */
#define MAX_NAME 128
#define READ_PER_MERGE (4u << 20) /* bytes read from one file per merge; the rest waits */
#define MAX_NAMES_PER_FILE 4096   /* distinct counter names per process; more are refused */

typedef struct cname {
	char *text;
	uint32_t id;
} cname;

typedef struct cfile {
	uint32_t pid;
	uint64_t off;                 /* bytes consumed */
	char part[MAX_LINE + 1];      /* an incomplete last line, kept for the next merge */
	size_t n_part;
	int skipping;                 /* inside an over-long line: drop up to the next newline */
	cname *names;
	size_t n_names, cap_names;
	uint64_t n_bad, first_bad_line, n_lines;
	const char *first_bad_why;
} cfile;

struct rec_counters {
	char dir[PATH_MAX];
	cfile *files;
	size_t n_files, cap_files;
	uint32_t next_id;             /* per recording; ids are unique even across pids */
	char buf[64 << 10];
};

rec_counters *rec_counters_create(int *err)
{
	rec_counters *c = calloc(1, sizeof(*c));
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (snprintf(c->dir, sizeof(c->dir), "%s/gt-counters.XXXXXX", tmp) >= (int)sizeof(c->dir) ||
	    !mkdtemp(c->dir)) {
		*err = errno ? -errno : -ENAMETOOLONG;
		free(c);
		return NULL;
	}
	c->next_id = REC_COUNTER_ID_BASE;
	return c;
}

const char *rec_counters_dir(const rec_counters *c)
{
	return c->dir;
}

void rec_counters_child_env(const rec_counters *c)
{
	if (c)
		setenv("GT_COUNTERS_DIR", c->dir, 1);
}

static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n > MAX_NAME)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_' || ch == '.' || ch == ':' || ch == '/' || ch == '-'))
			return 0;
	}
	return 1;
}

/* Next space-separated field of [*p, end); NULL at the end. */
static const char *field(const char **p, const char *end, size_t *len)
{
	const char *s = *p;
	if (s >= end || *s == ' ')
		return NULL;
	const char *e = s;
	while (e < end && *e != ' ')
		e++;
	*len = (size_t)(e - s);
	*p = e < end ? e + 1 : e;
	return s;
}

int rec_counters_parse_line(const char *line, size_t len, char *kind, uint64_t *t_ns,
                            const char **name, size_t *name_len, double *value, const char **why)
{
	const char *p = line, *end = line + len, *f;
	size_t n;
	char num[64];

	if (len < 2 || (line[0] != 'c' && line[0] != 'w') || line[1] != ' ') {
		*why = "not a 'c' or 'w' line";
		return -1;
	}
	*kind = line[0];
	p += 2;
	if (!(f = field(&p, end, &n)) || n >= sizeof(num)) {
		*why = "bad time";
		return -1;
	}
	uint64_t t = 0;
	for (size_t i = 0; i < n; i++) {
		if (f[i] < '0' || f[i] > '9' || t > (UINT64_MAX - 9) / 10) {
			*why = "bad time";
			return -1;
		}
		t = t * 10 + (uint64_t)(f[i] - '0');
	}
	if (!(f = field(&p, end, &n)) || !name_ok(f, n)) {
		*why = "bad name (1..128 of A-Z a-z 0-9 _ . : / -)";
		return -1;
	}
	*name = f;
	*name_len = n;
	if (!(f = field(&p, end, &n)) || n >= sizeof(num) || p != end) {
		*why = "bad value or trailing text";
		return -1;
	}
	memcpy(num, f, n);
	num[n] = '\0';
	char *ep;
	errno = 0;
	double v = strtod(num, &ep);
	if (ep != num + n || errno == ERANGE || !isfinite(v)) {
		*why = "bad value (a finite decimal number)";
		return -1;
	}
	*t_ns = t;
	*value = v;
	return 0;
}

static cfile *file_for(rec_counters *c, uint32_t pid)
{
	for (size_t i = 0; i < c->n_files; i++)
		if (c->files[i].pid == pid)
			return &c->files[i];
	if (GT_GROW(c->files, c->cap_files, c->n_files + 1) < 0)
		return NULL;
	cfile *f = &c->files[c->n_files++];
	memset(f, 0, sizeof(*f));
	f->pid = pid;
	return f;
}

/* The string id of name in f's process, writing its STRING record the first time. */
static int name_id(rec_counters *c, cfile *f, gtt_writer *w, const char *name, size_t len,
                   const char *suffix, uint32_t *id)
{
	char full[MAX_NAME + sizeof(REC_COUNTER_WATERMARK_SUFFIX)];
	snprintf(full, sizeof(full), "%.*s%s", (int)len, name, suffix);
	for (size_t i = 0; i < f->n_names; i++)
		if (strcmp(f->names[i].text, full) == 0) {
			*id = f->names[i].id;
			return 0;
		}
	if (f->n_names >= MAX_NAMES_PER_FILE || c->next_id == UINT32_MAX)
		return -ENOSPC;
	if (GT_GROW(f->names, f->cap_names, f->n_names + 1) < 0)
		return -ENOMEM;
	char *text = strdup(full);
	if (!text)
		return -ENOMEM;
	cname *cn = &f->names[f->n_names++];
	cn->text = text;
	cn->id = c->next_id++;
	gtt_record r = { .tag = GTT_REC_STRING };
	r.u.string.pid = f->pid;
	r.u.string.id = cn->id;
	r.u.string.text = text;
	int rc = gtt_write(w, &r);
	if (rc < 0)
		return -EIO;
	*id = cn->id;
	return 0;
}

static void bad_line(cfile *f, const char *why)
{
	if (f->n_bad++ == 0) {
		f->first_bad_line = f->n_lines;
		f->first_bad_why = why;
	}
}

/* One complete line of f. Returns 1 when a record was written, 0 when not, <0 on a write error. */
static int take_line(rec_counters *c, cfile *f, gtt_writer *w, const char *line, size_t len)
{
	char kind;
	uint64_t t;
	const char *name, *why = NULL;
	size_t name_len;
	double v;
	uint32_t id;

	f->n_lines++;
	if (rec_counters_parse_line(line, len, &kind, &t, &name, &name_len, &v, &why) < 0) {
		bad_line(f, why);
		return 0;
	}
	int rc = name_id(c, f, w, name, name_len, kind == 'w' ? REC_COUNTER_WATERMARK_SUFFIX : "", &id);
	if (rc == -ENOSPC) {
		bad_line(f, "too many distinct counter names in one process");
		return 0;
	}
	if (rc < 0)
		return rc;
	gtt_record r = { .tag = GTT_REC_COUNTER };
	r.u.counter.time_ns = t;
	r.u.counter.pid = f->pid;
	r.u.counter.name_id = id;
	r.u.counter.value = v;
	return gtt_write(w, &r) < 0 ? -EIO : 1;
}

/* Feed n bytes of f's data; complete lines become records. Returns records written or <0. */
static int feed(rec_counters *c, cfile *f, gtt_writer *w, const char *p, size_t n)
{
	int total = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = p[i];
		if (ch != '\n') {
			if (f->skipping)
				continue;
			if (f->n_part == MAX_LINE) { /* over-long: malformed, drop through the newline */
				f->n_lines++;
				bad_line(f, "line longer than 256 bytes");
				f->skipping = 1;
				f->n_part = 0;
				continue;
			}
			f->part[f->n_part++] = ch;
			continue;
		}
		if (f->skipping) {
			f->skipping = 0;
			continue;
		}
		int rc = take_line(c, f, w, f->part, f->n_part);
		f->n_part = 0;
		if (rc < 0)
			return rc;
		total += rc;
	}
	return total;
}

static int merge_file(rec_counters *c, cfile *f, const char *path, gtt_writer *w)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int total = 0;
	size_t budget = READ_PER_MERGE;
	while (budget > 0) {
		size_t want = sizeof(c->buf) < budget ? sizeof(c->buf) : budget;
		ssize_t got = pread(fd, c->buf, want, (off_t)f->off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		f->off += (uint64_t)got;
		budget -= (size_t)got;
		int rc = feed(c, f, w, c->buf, (size_t)got);
		if (rc < 0) {
			total = rc;
			break;
		}
		total += rc;
	}
	close(fd);
	return total;
}

int rec_counters_merge(rec_counters *c, gtt_writer *w)
{
	DIR *d = opendir(c->dir);
	if (!d)
		return -errno;
	int total = 0;
	struct dirent *de;
	char path[PATH_MAX + 256];
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		if (strncmp(s, FILE_PREFIX, sizeof(FILE_PREFIX) - 1) != 0)
			continue;
		char *e;
		errno = 0;
		unsigned long pid = strtoul(s + sizeof(FILE_PREFIX) - 1, &e, 10);
		if (*e || errno || pid == 0 || pid > UINT32_MAX)
			continue;
		cfile *f = file_for(c, (uint32_t)pid);
		if (!f) {
			total = -ENOMEM;
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", c->dir, s);
		int rc = merge_file(c, f, path, w);
		if (rc < 0) {
			total = rc;
			break;
		}
		total += rc;
	}
	closedir(d);
	return total;
}

int rec_counters_finish(rec_counters *c, gtt_writer *w)
{
	if (!c)
		return 0;
	int rc = w ? rec_counters_merge(c, w) : 0;
	char path[PATH_MAX + 256];
	for (size_t i = 0; i < c->n_files; i++) {
		cfile *f = &c->files[i];
		if (f->n_part || f->skipping) { /* the program died mid-line */
			f->n_lines++;
			bad_line(f, "incomplete last line");
		}
		if (w && f->n_bad) {
			char note[256];
			snprintf(note, sizeof(note),
			         "counters: %llu of %llu lines from process %u were malformed and dropped "
			         "(first: line %llu, %s)", (unsigned long long)f->n_bad,
			         (unsigned long long)f->n_lines, f->pid, (unsigned long long)f->first_bad_line,
			         f->first_bad_why);
			gtt_write_note(w, GTT_SRC_WRITER, gtt_now_ns(), f->pid, 0, note);
		}
		snprintf(path, sizeof(path), "%s/" FILE_PREFIX "%u", c->dir, f->pid);
		unlink(path);
		for (size_t k = 0; k < f->n_names; k++)
			free(f->names[k].text);
		free(f->names);
	}
	/* files of processes that never wrote a whole line were not opened above */
	DIR *d = opendir(c->dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (strncmp(de->d_name, FILE_PREFIX, sizeof(FILE_PREFIX) - 1) == 0) {
				snprintf(path, sizeof(path), "%s/%s", c->dir, de->d_name);
				unlink(path);
			}
		closedir(d);
	}
	rmdir(c->dir);
	free(c->files);
	free(c);
	return rc;
}
