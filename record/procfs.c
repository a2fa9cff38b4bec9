/* procfs.c — the recorder's one reader of /proc (and /sys): thread lists, names, mappings,
 * kernel settings, and the per-thread CPU loop. */
#include "procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf.h"
#include "gt_util.h"
#include "ticker.h"

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	buf[n] = 0;
	return (int)n;
}

int rec_procfs_tids(pid_t pid, pid_t **tids)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	pid_t *v = NULL;
	size_t n = 0, cap = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long t = strtol(de->d_name, &end, 10);
		if (*end || t <= 0)
			continue;
		if (GT_GROW(v, cap, n + 1) < 0) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v[n++] = (pid_t)t;
	}
	closedir(d);
	*tids = v;
	return (int)n;
}

void rec_procfs_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];
	int n, i;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = read_file(path, buf, len);
	if (n <= 0) {
		buf[0] = 0;
		return;
	}
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (i = 0; i < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
	buf[n] = 0;
}

int rec_procfs_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[96];
	int n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	n = read_file(path, buf, len);
	if (n < 0) {
		buf[0] = 0;
		return n;
	}
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

char rec_procfs_state(pid_t pid, pid_t *ppid)
{
	char path[64], buf[1024];
	const char *p;
	int pp = 0;
	char st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d", &st, &pp) < 1)
		return 0;
	if (ppid)
		*ppid = pp;
	return st;
}

int rec_procfs_exe(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, len - 1);
	if (n < 0) {
		buf[0] = 0;
		return -errno;
	}
	buf[n] = 0;
	return 0;
}

int rec_procfs_has_thread(pid_t pid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

void rec_procfs_root_path(pid_t pid, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/root%s", (int)pid, path);
}

void rec_procfs_map_file(pid_t pid, uint64_t start, uint64_t end, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)start,
	         (unsigned long long)end);
}

long long rec_procfs_status_field(pid_t pid, pid_t tid, const char *key, int hex)
{
	char path[96], line[256];
	size_t n = strlen(key);
	long long v = -1;
	FILE *f;

	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/status");
	else if (tid == 0)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtoll(line + n + 1, NULL, hex ? 16 : 10);
			break;
		}
	fclose(f);
	return v;
}

int rec_procfs_ptrace_scope(void)
{
	char buf[32], *end;
	long v;
	int n = read_file("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf));

	if (n <= 0)
		return -1;
	v = strtol(buf, &end, 10);
	return end == buf || v < 0 || v > 3 ? -1 : (int)v;
}

int rec_procfs_maps(pid_t pid, rec_procfs_map_fn fn, void *ctx)
{
	char path[64];
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	int n = 0, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		unsigned long long lo, hi, off, ino;
		char perms[8];
		rec_procfs_map m;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %n", &lo, &hi, perms, &off, m.dev, &ino, &pos) < 6)
			continue;
		m.path = pos > 0 ? line + pos : line + strlen(line);
		m.path[strcspn(m.path, "\n")] = 0;
		m.start = lo;
		m.end = hi;
		m.offset = off;
		m.inode = ino;
		m.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		         (perms[2] == 'x' ? PROT_EXEC : 0);
		rc = fn(ctx, &m);
		n++;
	}
	free(line);
	fclose(f);
	return rc < 0 ? rc : n;
}

int rec_procfs_boot_id(char *buf, size_t len)
{
	int n = read_file("/proc/sys/kernel/random/boot_id", buf, len);

	if (n < 0) {
		buf[0] = 0;
		return n;
	}
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int rec_procfs_timens_monotonic(pid_t pid, int64_t *offset_ns)
{
	char buf[256], path[64], *line;
	int n;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/timens_offsets", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/timens_offsets");
	n = read_file(path, buf, sizeof(buf));

	if (n < 0)
		return n;
	/* "monotonic <secs> <nanosecs>" (the name, or the clock id 1 on older kernels) */
	for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		char name[32];
		long long sec, nsec;
		if (sscanf(line, "%31s %lld %lld", name, &sec, &nsec) == 3 &&
		    (strcmp(name, "monotonic") == 0 || strcmp(name, "1") == 0)) {
			*offset_ns = (int64_t)sec * (int64_t)GT_NS_PER_SEC + (int64_t)nsec;
			return 0;
		}
	}
	return -EINVAL;
}

#define ENVIRON_MAX (256u << 10)

int rec_procfs_environ(pid_t pid, const char *const *keys, size_t n_keys, rec_procfs_env_fn fn, void *ctx)
{
	char path[64], *buf = NULL, *p, *end;
	size_t n = 0, k;
	int fd, found = 0, rc;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (!(buf = malloc(ENVIRON_MAX + 1))) {
		rc = -ENOMEM;
		goto out;
	}
	while (n < ENVIRON_MAX) {
		ssize_t got = read(fd, buf + n, ENVIRON_MAX - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = errno == ESRCH ? -ESRCH : -errno;
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = 0;
	for (p = buf, end = buf + n; p < end; p += strlen(p) + 1) {
		char *eq = strchr(p, '=');
		if (!eq)
			continue;
		for (k = 0; k < n_keys; k++)
			if (strlen(keys[k]) == (size_t)(eq - p) && memcmp(keys[k], p, (size_t)(eq - p)) == 0) {
				fn(ctx, keys[k], eq + 1);
				found++;
				break;
			}
	}
	rc = found;
out:
	free(buf);
	close(fd);
	return rc;
}

int rec_procfs_perf_paranoid(int *level)
{
	char buf[32], *end;
	long v;
	int n = read_file("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf));

	if (n < 0)
		return n;
	v = strtol(buf, &end, 10);
	if (end == buf)
		return -EINVAL;
	*level = (int)v;
	return 0;
}

int rec_procfs_online_cpus(int **cpus)
{
	int max = (int)sysconf(_SC_NPROCESSORS_CONF), n = 0, i;
	char buf[4096];
	int *v;

	if (max < 1)
		max = 1;
	v = calloc((size_t)max, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (read_file("/sys/devices/system/cpu/online", buf, sizeof(buf)) > 0) {
		char *s = buf;
		while (*s && *s != '\n') {
			long a = strtol(s, &s, 10), b = a;
			if (*s == '-')
				b = strtol(s + 1, &s, 10);
			for (i = (int)a; i <= (int)b && n < max; i++)
				v[n++] = i;
			if (*s == ',')
				s++;
			else
				break;
		}
	}
	if (n == 0) /* unreadable: every configured CPU */
		for (n = 0; n < max; n++)
			v[n] = n;
	*cpus = v;
	return n;
}

/* ---- synthesis ---- */

typedef struct bid_cache { char dev[16]; uint64_t ino; size_t len; uint8_t id[GTT_BUILD_ID_MAX]; } bid_cache;

typedef struct synth {
	pid_t pid;
	uint64_t time_ns;
	gtt_writer *w;
	rec_procfs_observer obs;
	void *ctx;
	size_t n_cache;
	bid_cache cache[64];
	int n_maps;
} synth;

static void put(gtt_writer *w, gtt_record *r, rec_procfs_observer obs, void *ctx)
{
	gtt_write(w, r);
	if (obs)
		obs(ctx, r);
}

/* Build-id of a mapped file: through /proc/PID/map_files (deleted files, other mount
 * namespaces), /proc/PID/root, then the path; cached by (device, inode). */
static size_t map_build_id(synth *sy, const rec_procfs_map *mp, uint8_t *out)
{
	char path[PATH_MAX + 64];
	size_t k, len;

	for (k = 0; k < sy->n_cache; k++)
		if (sy->cache[k].ino == mp->inode && strcmp(sy->cache[k].dev, mp->dev) == 0) {
			memcpy(out, sy->cache[k].id, sy->cache[k].len);
			return sy->cache[k].len;
		}
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)sy->pid, (unsigned long long)mp->start,
	         (unsigned long long)mp->end);
	len = rec_elf_build_id_of(path, out, GTT_BUILD_ID_MAX);
	if (len == 0) {
		rec_procfs_root_path(sy->pid, mp->path, path, sizeof(path));
		len = rec_elf_build_id_of(path, out, GTT_BUILD_ID_MAX);
	}
	if (len == 0)
		len = rec_elf_build_id_of(mp->path, out, GTT_BUILD_ID_MAX);
	if (sy->n_cache < sizeof(sy->cache) / sizeof(sy->cache[0])) {
		bid_cache *c = &sy->cache[sy->n_cache++];
		snprintf(c->dev, sizeof(c->dev), "%s", mp->dev);
		c->ino = mp->inode;
		c->len = len;
		memcpy(c->id, out, len);
	}
	return len;
}

/* One MAPPING record per executable mapping. */
static int synth_map(void *ctx, const rec_procfs_map *mp)
{
	synth *sy = ctx;
	gtt_record r;
	gtt_mapping *m = &r.u.mapping;

	if (!(mp->prot & PROT_EXEC))
		return 0;
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_MAPPING;
	m->time_ns = sy->time_ns;
	m->pid = (uint32_t)sy->pid;
	m->prot = (uint32_t)mp->prot;
	m->start = mp->start;
	m->end = mp->end;
	m->pgoff = mp->offset;
	m->path = mp->path;
	if (mp->path[0] == '/' && mp->inode != 0)
		m->build_id_len = (uint32_t)map_build_id(sy, mp, m->build_id);
	put(sy->w, &r, sy->obs, sy->ctx);
	sy->n_maps++;
	return 0;
}

int rec_procfs_synth(pid_t pid, uint64_t time_ns, gtt_writer *w, rec_procfs_observer obs, void *ctx)
{
	char cmd[4096], name[64];
	gtt_record r;
	pid_t *tids = NULL, ppid = 0;
	int n, i, rc = 0;
	synth *sy;

	if (!rec_procfs_state(pid, &ppid))
		return -ESRCH;
	rec_procfs_cmdline(pid, cmd, sizeof(cmd));
	if (!cmd[0])
		rec_procfs_comm(pid, pid, cmd, sizeof(cmd));
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_PROCESS;
	r.u.process.time_ns = time_ns;
	r.u.process.pid = (uint32_t)pid;
	r.u.process.ppid = (uint32_t)ppid;
	r.u.process.event = GTT_PROC_START;
	r.u.process.comm = cmd;
	put(w, &r, obs, ctx);

	n = rec_procfs_tids(pid, &tids);
	for (i = 0; i < n; i++) {
		if (rec_procfs_comm(pid, tids[i], name, sizeof(name)) < 0)
			continue;
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_THREAD;
		r.u.thread.time_ns = time_ns;
		r.u.thread.pid = (uint32_t)pid;
		r.u.thread.tid = (uint32_t)tids[i];
		r.u.thread.event = GTT_THREAD_START;
		r.u.thread.name = name;
		put(w, &r, obs, ctx);
	}
	free(tids);

	sy = calloc(1, sizeof(*sy));
	if (!sy)
		return -ENOMEM;
	*sy = (synth){ .pid = pid, .time_ns = time_ns, .w = w, .obs = obs, .ctx = ctx };
	rc = rec_procfs_maps(pid, synth_map, sy);
	if (rc >= 0)
		rc = sy->n_maps;
	free(sy);
	return rc;
}

/* ---- the per-thread CPU loop ---- */

typedef struct tstat {
	pid_t pid, tid;
	int fd_stat, fd_status;
	uint64_t utime_ns, stime_ns, nvcsw, nivcsw;
	char state;
	char comm[20];
	int seen;               /* generation in which the thread was last listed */
	int written;            /* a record was written for the current numbers */
} tstat;

struct rec_procstat {
	gtt_writer *w;
	rec_ticker *ticker;
	pthread_t thread;
	int started;
	int stop;
	pthread_mutex_t lock;
	pid_t *pids;
	size_t n_pids, cap_pids;
	tstat *ts;
	size_t n_ts, cap_ts;
	uint32_t n_threads;
	uint64_t ns_per_tick;   /* of utime/stime */
	uint32_t status_every;  /* ticks between status reads */
	uint64_t n_ticks;
	int gen;
};

static tstat *ts_find(rec_procstat *s, pid_t pid, pid_t tid)
{
	size_t i;
	for (i = 0; i < s->n_ts; i++)
		if (s->ts[i].tid == tid && s->ts[i].pid == pid)
			return &s->ts[i];
	return NULL;
}

static tstat *ts_add(rec_procstat *s, pid_t pid, pid_t tid)
{
	char path[96];
	tstat *t;

	if (GT_GROW(s->ts, s->cap_ts, s->n_ts + 1) < 0)
		return NULL;
	t = &s->ts[s->n_ts];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	t->fd_stat = open(path, O_RDONLY | O_CLOEXEC);
	if (t->fd_stat < 0)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	t->fd_status = open(path, O_RDONLY | O_CLOEXEC);
	s->n_ts++;
	return t;
}

static uint64_t field_after(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* Read one thread; write a THREAD_CPU record when its numbers changed (or always with force),
 * and a THREAD name record on a rename. Returns 0, or -ESRCH when the thread is gone
 * (-EINVAL: its stat line did not parse). */
static int read_thread(rec_procstat *s, tstat *t, int with_status, int force)
{
	char buf[1024];
	ssize_t n = pread(t->fd_stat, buf, sizeof(buf) - 1, 0);
	const char *open_paren, *close_paren;
	unsigned long long ut = 0, st = 0;
	char state = 0, comm[20];
	uint64_t nv = t->nvcsw, niv = t->nivcsw, now;
	size_t clen;
	gtt_record r;

	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -EINVAL;
	if (sscanf(close_paren + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state, &ut, &st) != 3)
		return -EINVAL;
	clen = (size_t)(close_paren - open_paren - 1);
	if (clen >= sizeof(comm))
		clen = sizeof(comm) - 1;
	memcpy(comm, open_paren + 1, clen);
	comm[clen] = 0;
	if (with_status && t->fd_status >= 0) {
		char sbuf[4096];
		ssize_t k = pread(t->fd_status, sbuf, sizeof(sbuf) - 1, 0);
		if (k > 0) {
			sbuf[k] = 0;
			nv = field_after(sbuf, "\nvoluntary_ctxt_switches:");
			niv = field_after(sbuf, "\nnonvoluntary_ctxt_switches:");
		}
	}
	now = gtt_now_ns();
	if (t->comm[0] && strcmp(comm, t->comm) != 0) {
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_THREAD;
		r.u.thread.time_ns = now;
		r.u.thread.pid = (uint32_t)t->pid;
		r.u.thread.tid = (uint32_t)t->tid;
		r.u.thread.event = GTT_THREAD_NAME;
		r.u.thread.name = comm;
		gtt_write(s->w, &r);
	}
	memcpy(t->comm, comm, sizeof(comm));
	if (!force && t->written && ut * s->ns_per_tick == t->utime_ns && st * s->ns_per_tick == t->stime_ns &&
	    state == t->state && nv == t->nvcsw && niv == t->nivcsw)
		return 0;
	t->utime_ns = ut * s->ns_per_tick;
	t->stime_ns = st * s->ns_per_tick;
	t->state = state;
	t->nvcsw = nv;
	t->nivcsw = niv;
	t->written = 1;
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_THREAD_CPU;
	r.u.thread_cpu.time_ns = now;
	r.u.thread_cpu.pid = (uint32_t)t->pid;
	r.u.thread_cpu.tid = (uint32_t)t->tid;
	r.u.thread_cpu.utime_ns = t->utime_ns;
	r.u.thread_cpu.stime_ns = t->stime_ns;
	r.u.thread_cpu.nvcsw = nv;
	r.u.thread_cpu.nivcsw = niv;
	r.u.thread_cpu.state = (uint32_t)(unsigned char)state;
	gtt_write(s->w, &r);
	return 0;
}

static void close_ts(tstat *t)
{
	if (t->fd_stat >= 0)
		close(t->fd_stat);
	if (t->fd_status >= 0)
		close(t->fd_status);
}

/* One pass over every watched process. */
static void pass(rec_procstat *s, int final)
{
	pid_t *pids = NULL;
	size_t n_pids, i, k;
	int with_status = final || s->n_ticks % s->status_every == 0;

	pthread_mutex_lock(&s->lock);
	n_pids = s->n_pids;
	if (n_pids)
		pids = malloc(n_pids * sizeof(*pids));
	if (pids)
		memcpy(pids, s->pids, n_pids * sizeof(*pids));
	pthread_mutex_unlock(&s->lock);
	if (!pids)
		n_pids = 0;
	s->gen++;
	for (i = 0; i < n_pids; i++) {
		pid_t *tids = NULL;
		int n = rec_procfs_tids(pids[i], &tids), j;
		for (j = 0; j < n; j++) {
			tstat *t = ts_find(s, pids[i], tids[j]);
			int fresh = 0;
			if (!t) {
				t = ts_add(s, pids[i], tids[j]);
				fresh = 1;
			}
			if (!t)
				continue;
			if (read_thread(s, t, with_status || fresh, final) == 0)
				t->seen = s->gen;
		}
		free(tids);
	}
	free(pids);
	/* forget threads that were not listed (exited) */
	for (i = 0, k = 0; i < s->n_ts; i++) {
		if (s->ts[i].seen == s->gen)
			s->ts[k++] = s->ts[i];
		else
			close_ts(&s->ts[i]);
	}
	s->n_ts = k;
	__atomic_store_n(&s->n_threads, (uint32_t)k, __ATOMIC_RELAXED);
}

static void *loop(void *arg)
{
	rec_procstat *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		rec_ticker_wait(s->ticker);
		if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
			break;
		pass(s, 0);
		s->n_ticks++;
	}
	return NULL;
}

rec_procstat *rec_procstat_start(gtt_writer *w, double hz, char *err, size_t errlen)
{
	rec_procstat *s = calloc(1, sizeof(*s));
	long clk = sysconf(_SC_CLK_TCK);
	int rc;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (hz <= 0)
		hz = 10;
	s->w = w;
	s->ns_per_tick = GT_NS_PER_SEC / (uint64_t)(clk > 0 ? clk : 100); /* of utime/stime: USER_HZ */
	s->status_every = hz >= 2 ? (uint32_t)(hz + 0.5) : 1;
	pthread_mutex_init(&s->lock, NULL);
	s->ticker = rec_ticker_create(GTT_SRC_PROCSTAT, gt_hz_to_period_ns(hz), 0, w);
	if (!s->ticker) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rc = pthread_create(&s->thread, NULL, loop, s);
	if (rc != 0) {
		snprintf(err, errlen, "cannot start the /proc stats thread: %s", strerror(rc));
		goto fail;
	}
	s->started = 1;
	return s;
fail:
	rec_ticker_destroy(s->ticker);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

void rec_procstat_add(rec_procstat *s, pid_t pid)
{
	size_t i;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->n_pids; i++)
		if (s->pids[i] == pid)
			goto out;
	if (GT_GROW(s->pids, s->cap_pids, s->n_pids + 1) < 0)
		goto out;
	s->pids[s->n_pids++] = pid;
out:
	pthread_mutex_unlock(&s->lock);
}

void rec_procstat_remove(rec_procstat *s, pid_t pid)
{
	size_t i;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->n_pids; i++) {
		if (s->pids[i] == pid) {
			s->pids[i] = s->pids[--s->n_pids];
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

uint32_t rec_procstat_threads(rec_procstat *s)
{
	return s ? __atomic_load_n(&s->n_threads, __ATOMIC_RELAXED) : 0;
}

uint64_t rec_procstat_late_max_ns(rec_procstat *s)
{
	return s ? rec_ticker_late_max_ns(s->ticker) : 0;
}

void rec_procstat_stop(rec_procstat *s)
{
	size_t i;

	if (!s)
		return;
	if (s->started) {
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
		pthread_join(s->thread, NULL);
	}
	pass(s, 1);
	rec_ticker_finish(s->ticker, 0);
	rec_ticker_destroy(s->ticker);
	for (i = 0; i < s->n_ts; i++)
		close_ts(&s->ts[i]);
	free(s->ts);
	free(s->pids);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
