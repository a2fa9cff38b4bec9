/* ring.c — the --ring flight recorder: segment files on disk, the definitions every segment
 * repeats, rotation, and the windows written at the end and on SIGUSR2 (ring_copy.c copies). */
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gt_util.h"
#include "outfile.h"
#include "rec_err.h"

#define MAX_NOTES 1024 /* health notes a segment repeats; more are not kept */

/* ---- the definitions a segment repeats ---- */

/* One definition: its 1.0 payload, keyed by what it defines. */
typedef struct def {
	uint64_t key;
	uint32_t tag, pid;
	uint32_t len;
	int live;
	uint8_t *blob;
} def;

typedef struct deftab {
	def *v;
	size_t n, cap, n_live;
	uint32_t *slot;          /* index + 1 into v; 0 empty; TOMB a removed entry */
	size_t n_slot;
	uint32_t n_notes;
	uint8_t *enc;            /* encoding scratch */
	size_t enc_cap;
} deftab;
#define TOMB UINT32_MAX

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; s && *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t full_key(uint32_t tag, uint64_t key)
{
	uint64_t k = mix((uint64_t)tag << 40, key);
	return k ? k : 1;
}

static size_t probe(const deftab *t, uint64_t k, int for_insert)
{
	size_t j = k & (t->n_slot - 1), tomb = SIZE_MAX;
	for (;; j = (j + 1) & (t->n_slot - 1)) {
		uint32_t s = t->slot[j];
		if (s == 0)
			return for_insert && tomb != SIZE_MAX ? tomb : j;
		if (s == TOMB) {
			if (tomb == SIZE_MAX)
				tomb = j;
			continue;
		}
		if (t->v[s - 1].key == k)
			return j;
	}
}

/* Rebuild the slots (and drop removed entries) when they fill up. */
static int rehash(deftab *t)
{
	size_t n = 0, ns = 64;
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].live)
			t->v[n++] = t->v[i];
		else
			free(t->v[i].blob);
	}
	t->n = n;
	while (ns < 4 * (n + 1))
		ns *= 2;
	uint32_t *sl = calloc(ns, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	free(t->slot);
	t->slot = sl;
	t->n_slot = ns;
	for (size_t i = 0; i < n; i++) {
		size_t j = t->v[i].key & (ns - 1);
		while (sl[j])
			j = (j + 1) & (ns - 1);
		sl[j] = (uint32_t)(i + 1);
	}
	return 0;
}

/* Keep rec as the definition of (tag, key) of pid, replacing an older one. */
static void def_put(deftab *t, uint64_t key, uint32_t pid, const gtt_record *rec)
{
	uint64_t k = full_key(rec->tag, key);
	uint32_t len = 0;

	if (t->n + 1 > t->n_slot / 2 && rehash(t) < 0)
		return;
	if (gtt_encode_payload(rec, &t->enc, &t->enc_cap, &len) < 0)
		return;
	size_t j = probe(t, k, 0);
	def *d = NULL;
	if (t->slot[j] && t->slot[j] != TOMB) {
		d = &t->v[t->slot[j] - 1];
	} else {
		if (GT_GROW(t->v, t->cap, t->n + 1) < 0)
			return;
		j = probe(t, k, 1);
		d = &t->v[t->n];
		memset(d, 0, sizeof(*d));
		t->slot[j] = (uint32_t)++t->n;
		t->n_live++;
	}
	uint8_t *b = realloc(d->blob, len ? len : 1);
	if (!b)
		return; /* keeps the old definition */
	memcpy(b, t->enc, len);
	d->blob = b;
	d->len = len;
	d->key = k;
	d->tag = rec->tag;
	d->pid = pid;
	d->live = 1;
}

static int def_has(const deftab *t, uint32_t tag, uint64_t key)
{
	if (!t->n_slot)
		return 0;
	size_t j = probe(t, full_key(tag, key), 0);
	return t->slot[j] && t->slot[j] != TOMB;
}

static void def_kill(deftab *t, size_t slot_j)
{
	def *d = &t->v[t->slot[slot_j] - 1];
	d->live = 0;
	free(d->blob);
	d->blob = NULL;
	t->slot[slot_j] = TOMB;
	t->n_live--;
}

static void def_del(deftab *t, uint32_t tag, uint64_t key)
{
	if (!t->n_slot)
		return;
	size_t j = probe(t, full_key(tag, key), 0);
	if (t->slot[j] && t->slot[j] != TOMB)
		def_kill(t, j);
}

/* A process is gone (or exec'd: keep_threads): what it defined goes with it. */
static void def_del_pid(deftab *t, uint32_t pid, int exec)
{
	for (size_t j = 0; j < t->n_slot; j++) {
		uint32_t s = t->slot[j];
		if (!s || s == TOMB || t->v[s - 1].pid != pid)
			continue;
		uint32_t tag = t->v[s - 1].tag;
		/* an exec keeps the process and its thread; its address space and code are new */
		if (exec && (tag == GTT_REC_PROCESS || tag == GTT_REC_THREAD || tag == GTT_REC_META))
			continue;
		def_kill(t, j);
	}
}

static void deftab_free(deftab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].blob);
	free(t->v);
	free(t->slot);
	free(t->enc);
}

/* ---- the ring ---- */

struct rec_ring {
	char path[PATH_MAX];
	char ring_path[PATH_MAX + 8];   /* PATH.ring */
	uint64_t seconds_ns;
	rec_capture *cap;
	deftab defs;
	uint64_t run_start_ns, run_start_rt_ns; /* from the meta written */
	uint64_t seg_start_ns;
	uint64_t first_ns;       /* when the ring began */
	int cur_fd;              /* the segment being written (for reading it) */
	int prev_fd;             /* the last complete segment, -1 before the first rotation */
	int cur_at_ring;         /* the current segment is at PATH.ring (else at PATH: the first) */
	int no_rotate;           /* the first segment never reached PATH: rotating would clobber it */
	uint32_t n_segments, n_dumps;
	uint64_t replay_ns;      /* the time the current replay writes (segment start) */
	/* a dump in progress */
	pthread_t thr;
	int dump_running;        /* the thread exists (joined by poll/destroy) */
	int dump_done;           /* set by the thread when finished */
	int dump_rc;
	gtt_writer *dw;
	rec_out *dout;
	uint8_t *dmap[2];
	size_t dlen[2];
	int dn;
	rec_capture_iv *div;
	size_t dn_iv;
	uint64_t dcut, dend, dsamples;
	char dname[PATH_MAX + 32];
	uint64_t win_start, win_end;
	char *nvtx_name;
};

rec_ring *rec_ring_create(const char *path, double seconds, int first_fd, rec_capture *cap, uint64_t start_ns,
                          char *note, size_t notelen, char *err, size_t errlen)
{
	rec_ring *r = calloc(1, sizeof(*r));
	struct stat st;

	note[0] = 0;
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(r->path, sizeof(r->path), "%s", path);
	snprintf(r->ring_path, sizeof(r->ring_path), "%s.ring", path);
	r->seconds_ns = gt_s_to_ns(seconds);
	r->cap = cap;
	r->seg_start_ns = start_ns;
	r->first_ns = start_ns;
	r->prev_fd = -1;
	r->n_segments = 1;
	if (cap && rec_capture_options(cap)->range == REC_CAP_NVTX && rec_capture_options(cap)->nvtx_name)
		r->nvtx_name = strdup(rec_capture_options(cap)->nvtx_name);
	/* the session's descriptor may be write-only: the windows read the segment through one of
	 * their own */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", first_fd);
	r->cur_fd = open(self, O_RDONLY | O_CLOEXEC);
	if (r->cur_fd < 0)
		r->cur_fd = dup(first_fd);
	if (r->cur_fd < 0) {
		snprintf(err, errlen, "--ring: %s", strerror(errno));
		free(r->nvtx_name);
		free(r);
		return NULL;
	}
	/* a segment a killed ring recording left is a trace of its own: kept, never overwritten */
	if (lstat(r->ring_path, &st) == 0) {
		char old[PATH_MAX + 16];
		snprintf(old, sizeof(old), "%s.old", r->ring_path);
		if (S_ISREG(st.st_mode) && rename(r->ring_path, old) == 0) {
			snprintf(note, notelen, "%s (left by a ring recording that was killed) kept as %s", r->ring_path, old);
		} else {
			snprintf(err, errlen, "--ring: %s exists and cannot be moved aside (%s); remove it", r->ring_path,
			         S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
			close(r->cur_fd);
			free(r->nvtx_name);
			free(r);
			return NULL;
		}
	}
	return r;
}

void rec_ring_committed(rec_ring *r, int at_path)
{
	if (r)
		r->no_rotate = !at_path;
}

static void keep_meta_time(rec_ring *r, const gtt_meta *m)
{
	if (strcmp(m->key, "start_ns") == 0 && !r->run_start_ns)
		r->run_start_ns = strtoull(m->value, NULL, 10);
	else if (strcmp(m->key, "start_realtime_ns") == 0 && !r->run_start_rt_ns)
		r->run_start_rt_ns = strtoull(m->value, NULL, 10);
}

void rec_ring_tap(rec_ring *r, const gtt_record *rec)
{
	deftab *t;

	if (!r)
		return;
	t = &r->defs;
	switch (rec->tag) {
	case GTT_REC_META:
		keep_meta_time(r, &rec->u.meta);
		def_put(t, str_hash(rec->u.meta.key), 0, rec);
		break;
	case GTT_REC_PROCESS: {
		const gtt_process *p = &rec->u.process;
		if (p->event == GTT_PROC_EXIT) {
			def_del_pid(t, p->pid, 0);
		} else {
			if (p->event == GTT_PROC_EXEC)
				def_del_pid(t, p->pid, 1);
			def_put(t, p->pid, p->pid, rec);
		}
		break;
	}
	case GTT_REC_THREAD: {
		const gtt_thread *th = &rec->u.thread;
		uint64_t key = (uint64_t)th->pid << 32 | th->tid;
		if (th->event == GTT_THREAD_EXIT)
			def_del(t, GTT_REC_THREAD, key);
		else
			def_put(t, key, th->pid, rec); /* the latest name */
		break;
	}
	case GTT_REC_MAPPING:
		def_put(t, mix(rec->u.mapping.pid, rec->u.mapping.start), rec->u.mapping.pid, rec);
		break;
	case GTT_REC_PY_CODE:
		def_put(t, mix(rec->u.py_code.pid, rec->u.py_code.code_id), rec->u.py_code.pid, rec);
		break;
	case GTT_REC_STRING:
		def_put(t, mix(rec->u.string.pid, rec->u.string.id), rec->u.string.pid, rec);
		break;
	case GTT_REC_CUDA_DEVICE:
		def_put(t, mix(rec->u.cuda_device.pid, rec->u.cuda_device.device), rec->u.cuda_device.pid, rec);
		break;
	case GTT_REC_SWITCH_GATE:
		def_put(t, 1, 0, rec); /* the latest: the gate as the next segment starts */
		break;
	case GTT_REC_HEALTH: {
		const gtt_health *h = &rec->u.health;
		if (h->kind == GTT_HEALTH_CONFIG) {
			def_put(t, mix(mix(h->source, h->pid), str_hash(h->text) >> 48), h->pid, rec);
		} else if (h->kind == GTT_HEALTH_NOTE && t->n_notes < MAX_NOTES && !def_has(t, rec->tag, str_hash(h->text))) {
			t->n_notes++;
			def_put(t, str_hash(h->text), 0, rec);
		}
		break;
	}
	default:
		break;
	}
}

static int replay_meta(rec_ring *r, gtt_writer *w, gtt_writer_put put, const char *key, uint64_t v)
{
	char value[32];
	gtt_record m = { .tag = GTT_REC_META };
	snprintf(value, sizeof(value), "%llu", (unsigned long long)v);
	m.u.meta.key = key;
	m.u.meta.value = value;
	(void)r;
	return put(w, &m);
}

/* gtt_writer_switch's replay: the definitions, with what existed before the segment at time 0,
 * the segment's own clock pair, and the capture state at its start. */
static int replay(void *ctx, gtt_writer *w, gtt_writer_put put)
{
	rec_ring *r = ctx;
	deftab *t = &r->defs;
	void *scratch = NULL;
	size_t scap = 0;
	int rc = 0;

	for (size_t i = 0; i < t->n && rc == 0; i++) {
		gtt_record rec;
		if (!t->v[i].live || gtt_decode(t->v[i].tag, t->v[i].blob, t->v[i].len, &rec, &scratch, &scap) < 0)
			continue;
		if (rec.tag == GTT_REC_META && (!strcmp(rec.u.meta.key, "start_ns") ||
		                                !strcmp(rec.u.meta.key, "start_realtime_ns") ||
		                                !strcmp(rec.u.meta.key, "run_start_ns")))
			continue;
		if (rec.tag == GTT_REC_PROCESS)
			rec.u.process.time_ns = 0;
		if (rec.tag == GTT_REC_THREAD) {
			rec.u.thread.time_ns = 0;
			rec.u.thread.event = GTT_THREAD_START;
		}
		if (rec.tag == GTT_REC_MAPPING)
			rec.u.mapping.time_ns = 0;
		if (rec.tag == GTT_REC_SWITCH_GATE) {
			/* the segment starts in the state the gate is in */
			rec.u.gate.time_ns = r->replay_ns;
			rec.u.gate.reason = GTT_GATE_START;
		}
		rc = put(w, &rec);
	}
	free(scratch);
	if (rc == 0 && r->run_start_ns) {
		rc = replay_meta(r, w, put, "start_ns", r->replay_ns);
		if (rc == 0 && r->run_start_rt_ns)
			rc = replay_meta(r, w, put, "start_realtime_ns", r->run_start_rt_ns + (r->replay_ns - r->run_start_ns));
		if (rc == 0)
			rc = replay_meta(r, w, put, "run_start_ns", r->run_start_ns);
	}
	if (rc == 0) {
		/* what the capture state is as the segment begins */
		gtt_record c = { .tag = GTT_REC_CAPTURE };
		int on = rec_capture_is_on(r->cap);
		c.u.capture.time_ns = r->replay_ns;
		c.u.capture.event = on ? GTT_CAPTURE_START : GTT_CAPTURE_STOP;
		c.u.capture.source = on ? GTT_CAPTURE_RING : rec_capture_source(r->cap);
		c.u.capture.name = c.u.capture.source == GTT_CAPTURE_NVTX && r->nvtx_name ? r->nvtx_name : "";
		rc = put(w, &c);
	}
	return rc;
}

/* A new segment file beside PATH, private and locked: fd and its name in tmp, or -errno. */
static int new_segment_file(rec_ring *r, char *tmp, size_t len)
{
	snprintf(tmp, len, "%s.ring-XXXXXX", r->path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	flock(fd, LOCK_EX | LOCK_NB);
	return fd;
}

static int rotate(rec_ring *r, gtt_writer *w, uint64_t now, char *msg, size_t msglen)
{
	char tmp[PATH_MAX + 32];
	int fd = new_segment_file(r, tmp, sizeof(tmp)), wfd, old = -1, rc;

	if (fd < 0) {
		snprintf(msg, msglen, "--ring: cannot create a segment beside %s: %s", r->path, strerror(-fd));
		return fd;
	}
	if ((wfd = dup(fd)) < 0) {
		rc = -errno;
		goto fail;
	}
	r->replay_ns = now;
	rc = rec_err_from_gtt(gtt_writer_switch(w, wfd, replay, r, &old));
	if (old < 0) {
		close(wfd);
		if (rc == 0)
			rc = -EIO;
		goto fail;
	}
	close(old);
	/* the segment just finished is the last complete window: it goes to PATH (the first one
	 * is there already); a kill from now on leaves it there */
	if (r->cur_at_ring && rename(r->ring_path, r->path) < 0)
		snprintf(msg, msglen, "--ring: cannot move %s to %s: %s", r->ring_path, r->path, strerror(errno));
	if (rename(tmp, r->ring_path) < 0 && !msg[0])
		snprintf(msg, msglen, "--ring: cannot name the new segment %s: %s (it is %s)", r->ring_path,
		         strerror(errno), tmp);
	if (r->prev_fd >= 0)
		close(r->prev_fd);
	r->prev_fd = r->cur_fd;
	r->cur_fd = fd;
	r->cur_at_ring = 1;
	r->seg_start_ns = now;
	r->n_segments++;
	return rc;
fail:
	unlink(tmp);
	close(fd);
	if (rc != -EIO && !msg[0])
		snprintf(msg, msglen, "--ring: new segment: %s", strerror(-rc));
	return rc;
}

static void reap_dump(rec_ring *r, char *msg, size_t msglen)
{
	pthread_join(r->thr, NULL);
	r->dump_running = 0;
	if (r->dump_rc < 0) {
		snprintf(msg, msglen, "--ring: writing the window to %s failed: %s", r->dname, strerror(-r->dump_rc));
		rec_out_discard(r->dout);
	} else {
		char note[PATH_MAX * 2 + 64] = "";
		r->n_dumps++;
		rec_out_commit(r->dout, note, sizeof(note));
		snprintf(msg, msglen, "SIGUSR2: the last %.1f s written to %s (%llu samples)%s%s",
		         gt_ns_to_s(r->dend - r->dcut), rec_out_name(r->dout), (unsigned long long)r->dsamples,
		         note[0] ? "; " : "", note);
	}
	rec_out_close(r->dout);
	r->dout = NULL;
	for (int i = 0; i < r->dn; i++)
		munmap(r->dmap[i], r->dlen[i]);
	r->dn = 0;
	free(r->div);
	r->div = NULL;
}

int rec_ring_poll(rec_ring *r, gtt_writer *w, uint64_t now, char *msg, size_t msglen)
{
	msg[0] = 0;
	if (!r)
		return 0;
	if (r->dump_running && __atomic_load_n(&r->dump_done, __ATOMIC_ACQUIRE))
		reap_dump(r, msg, msglen);
	if (r->no_rotate || now < r->seg_start_ns + r->seconds_ns)
		return 0;
	return rotate(r, w, now, msg[0] ? msg + strlen(msg) : msg, msg[0] ? msglen - strlen(msg) : msglen);
}

/* Map the last two segments (after a flush of w) for a window copy. 0 or -errno. */
static int map_segments(rec_ring *r, uint8_t **map, size_t *len, int *n)
{
	int fds[2] = { r->prev_fd, r->cur_fd };
	*n = 0;
	for (int i = 0; i < 2; i++) {
		struct stat st;
		if (fds[i] < 0)
			continue;
		if (fstat(fds[i], &st) < 0)
			return -errno;
		if (st.st_size == 0)
			continue;
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fds[i], 0);
		if (m == MAP_FAILED)
			return -errno;
		map[*n] = m;
		len[*n] = (size_t)st.st_size;
		(*n)++;
	}
	return 0;
}

static int copy_history(rec_ring *r, rec_capture_iv **iv, size_t *n)
{
	size_t k = 0;
	const rec_capture_iv *h = rec_capture_history(r->cap, &k);
	*iv = NULL;
	*n = 0;
	if (!k)
		return 0;
	if (!(*iv = malloc(k * sizeof(**iv))))
		return -ENOMEM;
	memcpy(*iv, h, k * sizeof(**iv));
	*n = k;
	return 0;
}

/* A writer on fd for a window (1.1 defaults). NULL with errno. */
static gtt_writer *window_writer(int fd)
{
	int werr = 0, d = dup(fd);
	gtt_writer *w = d >= 0 ? gtt_writer_fdopen(d, 0, &werr) : NULL;
	if (!w && d >= 0)
		close(d);
	return w;
}

/* Where the window ending at end begins: SECONDS before, or the recording's start. */
static uint64_t window_cut(const rec_ring *r, uint64_t end)
{
	uint64_t cut = end > r->seconds_ns ? end - r->seconds_ns : 0;
	uint64_t start = r->run_start_ns ? r->run_start_ns : r->first_ns;
	return cut > start ? cut : start;
}

static void dump_name(const rec_ring *r, uint32_t n, char *buf, size_t len)
{
	size_t l = strlen(r->path);
	if (l > 4 && strcmp(r->path + l - 4, ".gtt") == 0)
		snprintf(buf, len, "%.*s.%u.gtt", (int)(l - 4), r->path, n);
	else
		snprintf(buf, len, "%s.%u", r->path, n);
}

gtt_writer *rec_ring_dump_begin(rec_ring *r, gtt_writer *w, uint64_t now, char *err, size_t errlen)
{
	char oerr[PATH_MAX + 200];
	int rc;

	if (r->dump_running) {
		snprintf(err, errlen, "SIGUSR2: the previous window is still being written to %s; try again", r->dname);
		return NULL;
	}
	if (gtt_writer_flush(w) < 0) {
		snprintf(err, errlen, "SIGUSR2: the trace could not be flushed");
		return NULL;
	}
	dump_name(r, r->n_dumps + 1, r->dname, sizeof(r->dname));
	if (!(r->dout = rec_out_open(r->dname, oerr, sizeof(oerr)))) {
		snprintf(err, errlen, "SIGUSR2: %s", oerr);
		return NULL;
	}
	if ((rc = map_segments(r, r->dmap, r->dlen, &r->dn)) < 0 || (rc = copy_history(r, &r->div, &r->dn_iv)) < 0 ||
	    !(r->dw = window_writer(rec_out_fd(r->dout)))) {
		snprintf(err, errlen, "SIGUSR2: cannot write %s: %s", r->dname, strerror(rc < 0 ? -rc : errno));
		for (int i = 0; i < r->dn; i++)
			munmap(r->dmap[i], r->dlen[i]);
		r->dn = 0;
		free(r->div);
		r->div = NULL;
		rec_out_discard(r->dout);
		rec_out_close(r->dout);
		r->dout = NULL;
		return NULL;
	}
	r->dend = now;
	r->dcut = window_cut(r, now);
	return r->dw;
}

static void put_end(gtt_writer *w, uint64_t t, uint32_t reason, uint64_t n_samples)
{
	gtt_record e = { .tag = GTT_REC_END };
	e.u.end.time_ns = t;
	e.u.end.reason = reason;
	e.u.end.n_samples = n_samples;
	e.u.end.n_records = gtt_writer_records(w);
	gtt_write(w, &e);
}

static void *dump_main(void *arg)
{
	rec_ring *r = arg;
	rec_ring_copy_in in = { (const uint8_t *const *)r->dmap, r->dlen, r->dn, r->dcut, r->dend, r->div, r->dn_iv,
	                        r->nvtx_name };
	rec_ring_copy_out out;
	int rc = rec_ring_copy_window(&in, r->dw, &out);

	if (rc == 0)
		put_end(r->dw, r->dend, GTT_END_SNAPSHOT, out.n_samples);
	int crc = gtt_writer_close(r->dw);
	r->dw = NULL;
	r->dsamples = out.n_samples;
	r->dump_rc = rc < 0 ? rc : crc < 0 ? -EIO : 0;
	__atomic_store_n(&r->dump_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int rec_ring_dump_go(rec_ring *r)
{
	sigset_t all, old;
	int rc;

	r->dump_done = 0;
	/* the copier takes no signals: they are the session's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&r->thr, NULL, dump_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		gtt_writer_close(r->dw);
		r->dw = NULL;
		r->dump_rc = -rc;
		r->dump_running = 1;
		r->dump_done = 1;
		return -rc;
	}
	r->dump_running = 1;
	return 0;
}

gtt_writer *rec_ring_final_begin(rec_ring *r, gtt_writer *w, uint64_t end_ns, uint64_t *n_samples,
                                 char *err, size_t errlen)
{
	uint8_t *map[2];
	size_t len[2];
	int n = 0, rc, fd;
	rec_capture_iv *iv = NULL;
	size_t n_iv = 0;
	gtt_writer *fw = NULL;
	char tmp[PATH_MAX + 32];

	*n_samples = 0;
	if (r->dump_running) {
		snprintf(err, errlen, "a SIGUSR2 window is still being written (rec_ring_dump_wait first)");
		return NULL;
	}
	if (gtt_writer_flush(w) < 0) {
		snprintf(err, errlen, "the ring's last segment could not be written");
		return NULL;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", r->path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "cannot create the window file beside %s: %s", r->path, strerror(errno));
		return NULL;
	}
	if ((rc = map_segments(r, map, len, &n)) < 0 || (rc = copy_history(r, &iv, &n_iv)) < 0 ||
	    !(fw = window_writer(fd))) {
		snprintf(err, errlen, "cannot write the window file %s: %s", tmp, strerror(rc < 0 ? -rc : errno));
		goto fail;
	}
	r->win_end = end_ns;
	r->win_start = window_cut(r, end_ns);
	rec_ring_copy_in in = { (const uint8_t *const *)map, len, n, r->win_start, end_ns, iv, n_iv, r->nvtx_name };
	rec_ring_copy_out out;
	if ((rc = rec_ring_copy_window(&in, fw, &out)) < 0) {
		snprintf(err, errlen, "writing the window file %s: %s", tmp, strerror(-rc));
		goto fail;
	}
	*n_samples = out.n_samples;
	snprintf(r->dname, sizeof(r->dname), "%s", tmp);
	goto out;
fail:
	gtt_writer_close(fw);
	fw = NULL;
	unlink(tmp);
out:
	close(fd);
	for (int i = 0; i < n; i++)
		munmap(map[i], len[i]);
	free(iv);
	return fw;
}

int rec_ring_final_commit(rec_ring *r, gtt_writer *fw, char *err, size_t errlen)
{
	int rc = gtt_writer_close(fw);

	if (rc < 0) {
		snprintf(err, errlen, "writing the window file %s failed; the ring's segments stay (%s: the last "
		         "complete window, %s: what came after)", r->dname, r->path, r->ring_path);
		unlink(r->dname);
		return -EIO;
	}
	if (r->no_rotate) {
		/* the first segment never reached PATH (the commit failed): the window stays beside */
		snprintf(err, errlen, "the window is %s", r->dname);
		return -EEXIST;
	}
	if (rename(r->dname, r->path) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot move the window %s to %s: %s", r->dname, r->path, strerror(-rc));
		return rc;
	}
	if (r->cur_at_ring)
		unlink(r->ring_path);
	return 0;
}

int rec_ring_dump_wait(rec_ring *r, char *msg, size_t msglen)
{
	msg[0] = 0;
	if (!r || !r->dump_running)
		return 0;
	while (!__atomic_load_n(&r->dump_done, __ATOMIC_ACQUIRE))
		usleep(10000);
	reap_dump(r, msg, msglen);
	return 1;
}

void rec_ring_get_stats(const rec_ring *r, rec_ring_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!r)
		return;
	st->n_segments = r->n_segments;
	st->n_dumps = r->n_dumps;
	st->window_start_ns = r->win_start;
	st->window_end_ns = r->win_end;
	st->n_defs = r->defs.n_live;
}

void rec_ring_destroy(rec_ring *r)
{
	char msg[PATH_MAX + 200];

	if (!r)
		return;
	if (r->dump_running)
		reap_dump(r, msg, sizeof(msg));
	if (r->cur_fd >= 0)
		close(r->cur_fd);
	if (r->prev_fd >= 0)
		close(r->prev_fd);
	deftab_free(&r->defs);
	free(r->nvtx_name);
	free(r);
}
