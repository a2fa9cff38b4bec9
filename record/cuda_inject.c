/* cuda_inject.c — gt-record's side of CUDA tracing: finds libgtcupti.so, injects it into launched
 * programs, switches prepared programs on/off (attach mode) and merges the agent's side files.
 *
 * No CUDA headers here: gt-record builds and runs where CUDA is absent. The agent
 * (record/cupti_agent.c) writes header-less .gtt chunks to DIR/cupti-PID-GEN.gtt; we copy whole
 * chunks with a valid CRC into the trace, keeping one offset per file so nothing is merged twice
 * and a chunk still being written waits for the next merge. Protocol: docs/CUDA.md. */
#include "cuda_inject.h"
#include "gt_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"

#define SIDE_PREFIX "cupti-"
#define SIDE_SUFFIX ".gtt"
#define DONE_SUFFIX ".done"
#define READ_WINDOW (4u << 20)
#define BAD_CRC_RETRIES 3      /* a whole chunk with a bad CRC is skipped after this many merges */
#define FINISH_WAIT_MS 3000    /* how long finish waits for live agents to close their files */

typedef struct side_file {
	char *name;                /* file name inside dir */
	uint32_t pid;
	uint64_t off;              /* bytes merged so far */
	int bad_tries;             /* merges that stopped at the same bad chunk */
	int broken;                /* impossible chunk length: nothing more is read */
	uint64_t n_merged, n_corrupt;
	int clock_known;           /* clock_shift_ns was looked up */
	int64_t clock_shift_ns;    /* our clock minus the process's: another time namespace's
	                            * agent stamps on its clock (docs/JOBS.md) */
} side_file;

struct rec_cuda {
	rec_cuda_clock_fn clock_fn; /* our clock against an agent process's (time namespaces) */
	void *clock_ctx;
	char agent[PATH_MAX];
	char dir[PATH_MAX];        /* side files; "" when dormant */
	char ctl_dir[PATH_MAX];    /* where control files gt-cupti.PID.ctl live */
	int dormant;
	int capture_set;           /* rec_cuda_capture_nvtx was called */
	char capture[520];         /* its rule ("" = none) */
	side_file *files;
	size_t n_files, cap_files;
	pid_t *attached;           /* pids switched on by rec_cuda_attach */
	size_t n_attached, cap_attached;
	uint8_t *buf;
	size_t buf_cap;
	rec_cuda_observer observe;  /* sees launch stacks as they are merged; NULL none */
	void *observe_ctx;
	void *scratch;              /* decoding them */
	size_t scratch_cap;
};

void rec_cuda_set_clock(rec_cuda *c, rec_cuda_clock_fn fn, void *ctx)
{
	if (!c)
		return;
	c->clock_fn = fn;
	c->clock_ctx = ctx;
}

void rec_cuda_set_observer(rec_cuda *c, rec_cuda_observer fn, void *ctx)
{
	if (!c)
		return;
	c->observe = fn;
	c->observe_ctx = ctx;
}

/* A launch stack names return addresses in the target's binaries: the observer (the symbol
 * archive) must see them, or binaries that only launch stacks hit would not be embedded. A
 * capture record tells gt-record where an NVTX capture range of the process began or ended. */
static void observe_chunk(rec_cuda *c, uint32_t tag, const uint8_t *payload, uint32_t len, int64_t shift_ns)
{
	gtt_record rec;
	if (c->observe && (tag == GTT_REC_CUDA_CALLSTACK || tag == GTT_REC_CAPTURE) &&
	    gtt_decode(tag, payload, len, &rec, &c->scratch, &c->scratch_cap) >= 0) {
		gtt_rec_shift(&rec, shift_ns); /* on our clock, as written */
		c->observe(c->observe_ctx, &rec);
	}
}

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Look next to the gt-record binary: ../lib/libgtcupti.so (build tree) or
 * ../lib/groundtruth/libgtcupti.so (installed). */
static int find_agent(const char *argv0, char *out, size_t outlen, char *err, size_t errlen)
{
	const char *env = getenv("GT_CUPTI_AGENT");
	if (env && *env) {
		if (!file_exists(env)) {
			snprintf(err, errlen, "GT_CUPTI_AGENT=%s: no such file", env);
			return -1;
		}
		if (!realpath(env, out))
			snprintf(out, outlen, "%s", env);
		return 0;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
	} else if (!argv0 || !realpath(argv0, exe)) {
		snprintf(err, errlen, "cannot locate gt-record's own directory; set GT_CUPTI_AGENT");
		return -1;
	}
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	static const char *const rel[] = { "/../lib/libgtcupti.so", "/../lib/groundtruth/libgtcupti.so",
	                                   "/libgtcupti.so" };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char cand[PATH_MAX + 64];
		snprintf(cand, sizeof(cand), "%s%s", exe, rel[i]);
		if (file_exists(cand) && realpath(cand, out))
			return 0;
	}
	snprintf(err, errlen, "CUDA agent libgtcupti.so not found next to %s (built only where CUDA "
	         "is installed; set GT_CUPTI_AGENT=PATH)", exe);
	return -1;
}

rec_cuda *rec_cuda_prepare(const char *argv0, int dormant, char *err, size_t errlen)
{
	rec_cuda *c = NULL;
	const char *off = getenv("GT_CUDA");
	if (off && strcmp(off, "0") == 0) {
		snprintf(err, errlen, "CUDA tracing off (GT_CUDA=0)");
		goto fail;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (find_agent(argv0, c->agent, sizeof(c->agent), err, errlen) < 0)
		goto fail;
	c->dormant = dormant;
	const char *ctl = getenv("GT_CUPTI_CTL_DIR");
	snprintf(c->ctl_dir, sizeof(c->ctl_dir), "%s", ctl && *ctl ? ctl : "/tmp");
	if (!dormant) {
		const char *tmp = getenv("TMPDIR");
		snprintf(c->dir, sizeof(c->dir), "%s/gt-cuda.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(c->dir)) {
			snprintf(err, errlen, "cannot create a directory for CUDA side files (%s): %s", c->dir,
			         strerror(errno));
			goto fail;
		}
	}
	return c;
fail:
	free(c);
	return NULL;
}

/* Same rule as the agent's (record/cupti_nvtx.c): NAME, NAME@DOMAIN or NAME@*, each part 1-255
 * bytes, one line. */
int rec_cuda_capture_nvtx(rec_cuda *c, const char *spec, char *err, size_t errlen)
{
	if (!c)
		return GTT_EINVAL;
	if (spec && *spec) {
		const char *at = strrchr(spec, '@');
		size_t nl = at ? (size_t)(at - spec) : strlen(spec);
		if (nl == 0 || nl > 255 || (at && (!at[1] || strlen(at + 1) > 255)) || strpbrk(spec, "\n\r")) {
			snprintf(err, errlen, "capture range nvtx:%s: expected nvtx:NAME, nvtx:NAME@DOMAIN or nvtx:NAME@* "
			         "(NAME and DOMAIN 1-255 bytes)", spec);
			return GTT_EINVAL;
		}
	}
	snprintf(c->capture, sizeof(c->capture), "%s", spec ? spec : "");
	c->capture_set = 1;
	return 0;
}

void rec_cuda_child_env(const rec_cuda *c)
{
	if (!c)
		return;
	if (c->capture_set && c->capture[0])
		setenv("GT_CUPTI_CAPTURE_NVTX", c->capture, 1);
	else if (c->capture_set)
		unsetenv("GT_CUPTI_CAPTURE_NVTX");
	setenv("CUDA_INJECTION64_PATH", c->agent, 1);
	setenv("NVTX_INJECTION64_PATH", c->agent, 1);
	setenv("GT_CUPTI_CTL_DIR", c->ctl_dir, 1);
	if (c->dormant) {
		setenv("GT_CUPTI_DORMANT", "1", 1);
		unsetenv("GT_CUPTI_DIR");
	} else {
		setenv("GT_CUPTI_DIR", c->dir, 1);
		unsetenv("GT_CUPTI_DORMANT");
	}
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static side_file *side_find_or_add(rec_cuda *c, const char *name)
{
	for (size_t i = 0; i < c->n_files; i++)
		if (strcmp(c->files[i].name, name) == 0)
			return &c->files[i];
	unsigned pid = 0, gen = 0;
	if (sscanf(name, SIDE_PREFIX "%u-%u", &pid, &gen) != 2)
		return NULL;
	if (GT_GROW(c->files, c->cap_files, c->n_files + 1) < 0)
		return NULL;
	side_file *f = &c->files[c->n_files];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name)
		return NULL;
	f->pid = pid;
	c->n_files++;
	return f;
}

static int grow_buf(rec_cuda *c, size_t need)
{
	if (need <= c->buf_cap)
		return 0;
	size_t cap = c->buf_cap ? c->buf_cap : READ_WINDOW;
	while (cap < need)
		cap *= 2;
	uint8_t *nb = realloc(c->buf, cap);
	if (!nb)
		return GTT_ENOMEM;
	c->buf = nb;
	c->buf_cap = cap;
	return 0;
}

/* Our CLOCK_MONOTONIC minus the agent's process's: 0 unless it lives in another time
 * namespace (an attach from outside it, or a command that unshared one). Looked up once, while
 * the process is alive; a process already gone is taken to share our clock. */
static void side_clock(rec_cuda *c, side_file *f)
{
	int64_t ours = 0, theirs = 0;
	if (f->clock_known)
		return;
	f->clock_known = 1;
	if (c->clock_fn && c->clock_fn(c->clock_ctx, f->pid, &f->clock_shift_ns) == 0)
		return;
	if (rec_procfs_timens_monotonic((pid_t)f->pid, &theirs) == 0 && rec_procfs_timens_monotonic(0, &ours) == 0)
		f->clock_shift_ns = ours - theirs;
}

/* A chunk onto our clock: decoded, its times moved, written (only when the clocks differ). */
static int write_shifted(rec_cuda *c, gtt_writer *w, const side_file *f, uint32_t tag, const uint8_t *p, uint32_t len)
{
	gtt_record rec;
	if (!strcmp(gtt_tag_name(tag), "unknown") || gtt_decode(tag, p, len, &rec, &c->scratch, &c->scratch_cap) < 0)
		return gtt_write_raw(w, tag, p, len);
	gtt_rec_shift(&rec, f->clock_shift_ns);
	return gtt_write(w, &rec);
}

/* Copy every whole, valid chunk past f->off into w. final: the writer is gone, so a bad chunk is
 * skipped at once and an unfinished tail is dropped. Returns records merged or <0. */
static int merge_file(rec_cuda *c, side_file *f, gtt_writer *w, int final)
{
	int merged = 0, rc = 0, fd = -1;
	char path[PATH_MAX + 256];
	if (f->broken)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", c->dir, f->name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;    /* removed under us: nothing to do */
	struct stat st;
	if (fstat(fd, &st) < 0)
		goto out;
	uint64_t size = (uint64_t)st.st_size;
	side_clock(c, f);
	while (f->off + GTT_CHUNK_HEADER_LEN <= size) {
		uint64_t avail = size - f->off;
		size_t want = avail < READ_WINDOW ? (size_t)avail : READ_WINDOW;
		if ((rc = grow_buf(c, want)) < 0)
			goto out;
		ssize_t got = pread(fd, c->buf, want, (off_t)f->off);
		if (got < GTT_CHUNK_HEADER_LEN)
			break;
		size_t pos = 0;
		while (pos + GTT_CHUNK_HEADER_LEN <= (size_t)got) {
			const uint8_t *h = c->buf + pos;
			uint32_t tag = rd32(h), len = rd32(h + 4), crc = rd32(h + 8);
			if (len > GTT_MAX_PAYLOAD) {
				f->broken = 1;
				f->n_corrupt++;
				goto out;
			}
			size_t whole = GTT_CHUNK_HEADER_LEN + (size_t)len;
			if (pos + whole > (size_t)got) {
				if (pos == 0 && f->off + whole <= size) {
					/* one chunk larger than the window: read it whole */
					if ((rc = grow_buf(c, whole)) < 0)
						goto out;
					got = pread(fd, c->buf, whole, (off_t)f->off);
					if (got < (ssize_t)whole)
						goto out;
					continue;
				}
				break;    /* unfinished (or past this window): next round */
			}
			if (gtt_crc32c(gtt_crc32c(0, h, 8), h + GTT_CHUNK_HEADER_LEN, len) != crc) {
				/* Normally a write still in flight; skip only when it stays bad. */
				if (!final && ++f->bad_tries < BAD_CRC_RETRIES)
					goto out;
				f->n_corrupt++;
			} else if ((rc = f->clock_shift_ns ? write_shifted(c, w, f, tag, h + GTT_CHUNK_HEADER_LEN, len)
			                                    : gtt_write_raw(w, tag, h + GTT_CHUNK_HEADER_LEN, len)) < 0) {
				goto out;
			} else {
				observe_chunk(c, tag, h + GTT_CHUNK_HEADER_LEN, len, f->clock_shift_ns);
				merged++;
				f->n_merged++;
			}
			f->bad_tries = 0;
			pos += whole;
			f->off += whole;
		}
		if (pos == 0)
			break;
	}
out:
	if (fd >= 0)
		close(fd);
	return rc < 0 ? rc : merged;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Side files in name order, so merges are deterministic. */
static int scan_dir(rec_cuda *c)
{
	DIR *d = opendir(c->dir);
	if (!d)
		return 0;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, SIDE_PREFIX, strlen(SIDE_PREFIX)) != 0 || l < strlen(SIDE_SUFFIX) ||
		    strcmp(e->d_name + l - strlen(SIDE_SUFFIX), SIDE_SUFFIX) != 0)
			continue;
		if (GT_GROW(names, cap, n + 1) < 0) {
			rc = GTT_ENOMEM;
			goto out;
		}
		if (!(names[n] = strdup(e->d_name))) {
			rc = GTT_ENOMEM;
			goto out;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++)
		if (!side_find_or_add(c, names[i])) {
			rc = GTT_ENOMEM;
			goto out;
		}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

static int merge_all(rec_cuda *c, gtt_writer *w, int final)
{
	if (!c || !w || !c->dir[0])
		return 0;
	int rc = scan_dir(c), total = 0;
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < c->n_files; i++) {
		rc = merge_file(c, &c->files[i], w, final);
		if (rc < 0)
			return rc;
		total += rc;
	}
	return total;
}

int rec_cuda_merge(rec_cuda *c, gtt_writer *w)
{
	return merge_all(c, w, 0);
}

static void ctl_path(const rec_cuda *c, const char *ctl_dir, pid_t pid, char *out, size_t len)
{
	snprintf(out, len, "%s/gt-cupti.%d.ctl", ctl_dir ? ctl_dir : c->ctl_dir, (int)pid);
}

/* Read /proc/PID/environ and return the value of key (malloc'd) or NULL. */
static char *proc_env(pid_t pid, const char *key)
{
	char path[64], *buf = NULL, *val = NULL;
	size_t n = 0, cap = 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (n + 4096 > cap) {
			cap = cap ? cap * 2 : 16384;
			char *nb = realloc(buf, cap);
			if (!nb)
				goto out;
			buf = nb;
		}
		ssize_t k = read(fd, buf + n, cap - n - 1);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	if (!buf)
		goto out;
	buf[n] = 0;
	size_t kl = strlen(key);
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (strncmp(buf + i, key, kl) == 0 && buf[i + kl] == '=') {
			val = strdup(buf + i + kl + 1);
			break;
		}
out:
	free(buf);
	close(fd);
	return val;
}

static int maps_have_agent(pid_t pid)
{
	char path[64], line[4096];
	int found = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "libgtcupti") != NULL;
	fclose(f);
	return found;
}

static int proc_uid(pid_t pid, uid_t *uid)
{
	char path[64], line[256];
	int rc = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned u;
		if (sscanf(line, "Uid: %*u %u", &u) == 1) {
			*uid = u;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* Replace the control file atomically (write a temp file, rename) so the agent never reads half. */
static int write_ctl(const char *path, const char *text)
{
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	int ok = write(fd, text, len) == (ssize_t)len;
	ok &= close(fd) == 0;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Launch-stack settings from our own environment (--cuda-stacks sets GT_CUPTI_STACKS) go to an
 * attached agent as "set NAME=VALUE" lines: its environment was fixed at --prepare. */
static void append_settings(char *text, size_t cap)
{
	static const char *const keys[] = { "GT_CUPTI_STACKS", "GT_CUPTI_STACK_PYTHON", "GT_CUPTI_STACK_FIRST",
	                                    "GT_CUPTI_STACK_EVERY", "GT_CUPTI_STACK_LONG_US", "GT_CUPTI_STACK_BUDGET",
	                                    "GT_CUPTI_STACK_BUDGET_NS", "GT_CUPTI_STACK_BURST_MS" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = getenv(keys[i]);
		size_t used = strlen(text);
		if (!v || !*v || strlen(v) > 32 || strpbrk(v, "\n\r"))
			continue;
		snprintf(text + used, cap - used, "set %s=%s\n", keys[i], v);
	}
}

int rec_cuda_attach(rec_cuda *c, pid_t pid, int on, char *err, size_t errlen)
{
	int rc = 0;
	char *inj = NULL, *ctl_dir = NULL;
	if (!c || pid <= 0 || (on && !c->dir[0])) {
		snprintf(err, errlen, "rec_cuda_attach: bad arguments");
		return GTT_EINVAL;
	}
	int loaded = maps_have_agent(pid);
	inj = proc_env(pid, "CUDA_INJECTION64_PATH");
	if (!loaded && (!inj || !strstr(inj, "libgtcupti"))) {
		snprintf(err, errlen, "process %d was not started under `gt-record --prepare`: no CUDA "
		         "agent, recording CPU data only", (int)pid);
		rc = 0;
		goto out;
	}
	ctl_dir = proc_env(pid, "GT_CUPTI_CTL_DIR");
	char path[PATH_MAX + 64], text[PATH_MAX + 2048];
	ctl_path(c, ctl_dir, pid, path, sizeof(path));
	if (on) {
		uid_t uid;
		/* The agent runs as the target's user: let it write into our directory. */
		if (geteuid() == 0 && proc_uid(pid, &uid) == 0 && uid != 0 && chown(c->dir, uid, (gid_t)-1) != 0) {
			snprintf(err, errlen, "cannot hand %s to uid %u: %s", c->dir, (unsigned)uid, strerror(errno));
			rc = -1;
			goto out;
		}
		snprintf(text, sizeof(text), "on %s\n", c->dir);
		append_settings(text, sizeof(text));
		/* always a capture line: an empty one clears the rule an earlier attach left */
		const char *cap = c->capture_set ? c->capture : getenv("GT_CUPTI_CAPTURE_NVTX");
		size_t used = strlen(text);
		snprintf(text + used, sizeof(text) - used, "set GT_CUPTI_CAPTURE_NVTX=%s\n",
		         cap && !strpbrk(cap, "\n\r") ? cap : "");
	} else {
		snprintf(text, sizeof(text), "off\n");
	}
	if (write_ctl(path, text) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		rc = -1;
		goto out;
	}
	if (on) {
		size_t i;
		for (i = 0; i < c->n_attached && c->attached[i] != pid; i++)
			;
		if (i == c->n_attached) {
			if (c->n_attached == c->cap_attached) {
				size_t cap = c->cap_attached ? c->cap_attached * 2 : 4;
				pid_t *na = realloc(c->attached, cap * sizeof(*na));
				if (!na) {
					snprintf(err, errlen, "out of memory");
					rc = GTT_ENOMEM;
					goto out;
				}
				c->attached = na;
				c->cap_attached = cap;
			}
			c->attached[c->n_attached++] = pid;
		}
	}
	if (!loaded)
		snprintf(err, errlen, "process %d has the CUDA agent injected but has not started CUDA yet; "
		         "tracing starts when it does", (int)pid);
	rc = 1;
out:
	free(inj);
	free(ctl_dir);
	return rc;
}

static int pid_alive(uint32_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	int alive = 1;
	if (fgets(line, sizeof(line), f)) {
		char *p = strrchr(line, ')');
		if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
			alive = 0;
	}
	fclose(f);
	return alive;
}

static int side_done(const rec_cuda *c, const side_file *f)
{
	char path[PATH_MAX + 256];
	size_t l = strlen(f->name) - strlen(SIDE_SUFFIX);
	snprintf(path, sizeof(path), "%s/%.*s%s", c->dir, (int)l, f->name, DONE_SUFFIX);
	return file_exists(path);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Ask every agent that still runs to flush and close its file, and wait for it a little. */
static void switch_off_live(rec_cuda *c)
{
	char path[PATH_MAX + 64];
	int any = 0;
	scan_dir(c);
	for (size_t i = 0; i < c->n_files; i++) {
		side_file *f = &c->files[i];
		if (side_done(c, f) || !pid_alive(f->pid))
			continue;
		ctl_path(c, NULL, (pid_t)f->pid, path, sizeof(path));
		write_ctl(path, "off\n");
		any = 1;
	}
	for (size_t i = 0; i < c->n_attached; i++) {
		char *ctl_dir = proc_env(c->attached[i], "GT_CUPTI_CTL_DIR");
		ctl_path(c, ctl_dir, c->attached[i], path, sizeof(path));
		free(ctl_dir);
		if (pid_alive((uint32_t)c->attached[i])) {
			write_ctl(path, "off\n");
			any = 1;
		}
	}
	for (int waited = 0; any && waited < FINISH_WAIT_MS; waited += 50) {
		any = 0;
		scan_dir(c);
		for (size_t i = 0; i < c->n_files && !any; i++)
			any = !side_done(c, &c->files[i]) && pid_alive(c->files[i].pid);
		if (any)
			sleep_ms(50);
	}
}

void rec_cuda_switch_off(rec_cuda *c)
{
	if (c && c->dir[0])
		switch_off_live(c);
}

static void remove_ctl_files(rec_cuda *c)
{
	char path[PATH_MAX + 64];
	for (size_t i = 0; i < c->n_files; i++) {
		ctl_path(c, NULL, (pid_t)c->files[i].pid, path, sizeof(path));
		unlink(path);
	}
	for (size_t i = 0; i < c->n_attached; i++) {
		char *ctl_dir = proc_env(c->attached[i], "GT_CUPTI_CTL_DIR");
		ctl_path(c, ctl_dir, c->attached[i], path, sizeof(path));
		free(ctl_dir);
		unlink(path);
	}
}

static void remove_dir(rec_cuda *c)
{
	DIR *d = opendir(c->dir);
	if (d) {
		struct dirent *e;
		char path[PATH_MAX + 256];
		while ((e = readdir(d))) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", c->dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(c->dir);
}

int rec_cuda_finish(rec_cuda *c, gtt_writer *w)
{
	if (!c)
		return 0;
	int rc = 0;
	if (c->dir[0]) {
		switch_off_live(c);
		rc = merge_all(c, w, 1);
		for (size_t i = 0; w && i < c->n_files; i++) {
			side_file *f = &c->files[i];
			char path[PATH_MAX + 256];
			struct stat st;
			snprintf(path, sizeof(path), "%s/%s", c->dir, f->name);
			uint64_t tail = stat(path, &st) == 0 && (uint64_t)st.st_size > f->off ?
			                (uint64_t)st.st_size - f->off : 0;
			if (!f->n_corrupt && !tail && !f->broken)
				continue;
			char text[512];
			snprintf(text, sizeof(text), "CUDA side file %s: %llu chunk(s) with a bad checksum skipped, "
			         "%llu byte(s) of an unfinished chunk dropped%s", f->name,
			         (unsigned long long)f->n_corrupt, (unsigned long long)tail,
			         f->broken ? ", rest unreadable (impossible chunk length)" : "");
			uint64_t now = gtt_now_ns();
			gtt_health h = { .time_ns = now, .end_ns = now, .source = GTT_SRC_CUPTI, .kind = GTT_HEALTH_NOTE,
			                 .pid = f->pid, .count = f->n_corrupt, .value = { tail }, .text = text };
			gtt_write_health(w, &h);
		}
		remove_ctl_files(c);
		if (!getenv("GT_CUPTI_KEEP"))
			remove_dir(c);
	}
	for (size_t i = 0; i < c->n_files; i++)
		free(c->files[i].name);
	free(c->files);
	free(c->attached);
	free(c->buf);
	free(c->scratch);
	free(c);
	return rc;
}
