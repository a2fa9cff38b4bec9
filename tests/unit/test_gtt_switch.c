/* test_gtt_switch.c — the writer's support for gt-record's capture control: capture records
 * (tag 32) through both formats, the writer tap, and gtt_writer_switch (segment files that each
 * stand alone: index, callchains defined again, the replayed definitions first), including
 * switches while other threads keep writing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gtt.h"
#include "testhelp.h"

static int mfd(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		abort();
	return fd;
}

/* What a file holds, read back whole. */
typedef struct facts {
	int ok;                 /* opened, no error while reading */
	int truncated, indexed; /* cut off; its index came from the file */
	uint64_t samples, captures, metas, threads, bad;
	uint64_t sample_sum;    /* sum of the first ip of every sample (which chains came back) */
	char first_meta[64];
	uint32_t cap_event, cap_source;
	char cap_name[32];
} facts;

static facts read_fd(int fd)
{
	facts f;
	memset(&f, 0, sizeof(f));
	off_t n = lseek(fd, 0, SEEK_END);
	uint8_t *p = malloc((size_t)n + 1);
	if (!p || pread(fd, p, (size_t)n, 0) != n)
		abort();
	int err = 0;
	gtt_reader *r = gtt_reader_open_mem(p, (size_t)n, &err);
	if (!r) {
		free(p);
		return f;
	}
	gtt_record rec;
	int rc;
	f.ok = 1;
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0) {
			f.bad++;
			f.ok = 0;
			continue;
		}
		switch (rec.tag) {
		case GTT_REC_SAMPLE:
			f.samples++;
			if (rec.u.sample.n_user)
				f.sample_sum += rec.u.sample.ips[rec.u.sample.n_kernel];
			break;
		case GTT_REC_CAPTURE:
			f.captures++;
			f.cap_event = rec.u.capture.event;
			f.cap_source = rec.u.capture.source;
			snprintf(f.cap_name, sizeof(f.cap_name), "%s", rec.u.capture.name);
			break;
		case GTT_REC_META:
			if (!f.metas++)
				snprintf(f.first_meta, sizeof(f.first_meta), "%s", rec.u.meta.key);
			break;
		case GTT_REC_THREAD:
			f.threads++;
			break;
		}
	}
	f.truncated = gtt_reader_truncated(r);
	const gtt_index_entry *e;
	size_t ne;
	f.indexed = gtt_reader_index(r, &e, &ne) == 1;
	gtt_reader_close(r);
	free(p);
	return f;
}

static int put_sample(gtt_writer *w, uint64_t t, uint64_t leaf)
{
	uint64_t ips[3] = { leaf, 0x401000, 0x400500 };
	gtt_record r = { .tag = GTT_REC_SAMPLE };
	r.u.sample.time_ns = t;
	r.u.sample.pid = 7;
	r.u.sample.tid = 8;
	r.u.sample.period_ns = 1000;
	r.u.sample.n_user = 3;
	r.u.sample.ips = ips;
	return gtt_write(w, &r);
}

static void test_capture_record(void)
{
	gtt_record in = { .tag = GTT_REC_CAPTURE }, out;
	in.u.capture.time_ns = 123456789;
	in.u.capture.pid = 42;
	in.u.capture.tid = 43;
	in.u.capture.event = GTT_CAPTURE_START;
	in.u.capture.source = GTT_CAPTURE_NVTX;
	in.u.capture.name = "train_step";
	uint8_t *b = NULL;
	size_t cap = 0;
	uint32_t len = 0;
	void *scratch = NULL;
	size_t scap = 0;
	th_check(gtt_encode_payload(&in, &b, &cap, &len) == 0 && len == 8 + 4 * 4 + 4 + 10,
	         "capture: 1.0 payload is u64 time, u32 pid, tid, event, source, str name (%u bytes)", len);
	th_check(gtt_decode(GTT_REC_CAPTURE, b, len, &out, &scratch, &scap) == 0 && out.u.capture.time_ns == 123456789 &&
	         out.u.capture.pid == 42 && out.u.capture.tid == 43 && out.u.capture.event == 1 &&
	         out.u.capture.source == 2 && strcmp(out.u.capture.name, "train_step") == 0,
	         "capture: payload decodes to the same fields");
	th_check(gtt_decode(GTT_REC_CAPTURE, b, len - 3, &out, &scratch, &scap) == GTT_EINVAL,
	         "capture: a cut payload does not decode");
	th_check(strcmp(gtt_tag_name(GTT_REC_CAPTURE), "capture") == 0, "capture: tag name");
	/* through a packed trace, and a 1.0 one */
	for (uint32_t minor = 0; minor <= 1; minor++) {
		int fd = mfd("cap"), err = 0;
		gtt_writer_opts o;
		gtt_writer_opts_init(&o);
		o.minor = minor;
		gtt_writer *w = gtt_writer_fdopen_opts(dup(fd), 0, &o, &err);
		th_check(w && gtt_write(w, &in) == 0 && gtt_write_raw(w, GTT_REC_CAPTURE, b, len) == 0 &&
		         gtt_writer_close(w) == 0, "capture: written in format 1.%u (decoded and raw)", minor);
		facts f = read_fd(fd);
		th_check(f.ok && f.captures == 2 && f.cap_event == 1 && f.cap_source == 2 &&
		         strcmp(f.cap_name, "train_step") == 0, "capture: both read back from format 1.%u", minor);
		close(fd);
	}
	free(b);
	free(scratch);
}

/* ---- the tap ---- */

typedef struct tapped {
	uint64_t n, samples, metas, captures;
	char last_meta[64];
} tapped;

static void tap_fn(void *ctx, const gtt_record *rec)
{
	tapped *t = ctx;
	t->n++;
	if (rec->tag == GTT_REC_SAMPLE)
		t->samples++;
	if (rec->tag == GTT_REC_CAPTURE)
		t->captures++;
	if (rec->tag == GTT_REC_META) {
		t->metas++;
		snprintf(t->last_meta, sizeof(t->last_meta), "%s", rec->u.meta.key);
	}
}

/* Replay: a meta record and a thread, as gt-record's ring writes its definitions. */
static int replay_fn(void *ctx, gtt_writer *w, gtt_writer_put put)
{
	int *n_calls = ctx;
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta.key = "replayed";
	r.u.meta.value = "yes";
	(*n_calls)++;
	int rc = put(w, &r);
	gtt_record t = { .tag = GTT_REC_THREAD };
	t.u.thread.pid = 7;
	t.u.thread.tid = 8;
	t.u.thread.event = GTT_THREAD_START;
	t.u.thread.name = "worker";
	return rc ? rc : put(w, &t);
}

static void test_switch(void)
{
	int fa = mfd("a"), fb = mfd("b"), err = 0, old = -1, n_replays = 0;
	tapped tp;
	memset(&tp, 0, sizeof(tp));
	gtt_writer *w = gtt_writer_fdopen(dup(fa), 0, &err);
	gtt_writer_set_tap(w, tap_fn, &tp);
	gtt_record m = { .tag = GTT_REC_META };
	m.u.meta.key = "command";
	m.u.meta.value = "x";
	gtt_write(w, &m);
	uint64_t sum_a = 0, sum_b = 0;
	for (int i = 0; i < 300; i++) {
		put_sample(w, 1000 + (uint64_t)i, 0x500000 + (uint64_t)(i % 10) * 16);
		sum_a += 0x500000 + (uint64_t)(i % 10) * 16;
	}
	th_check(tp.samples == 300 && tp.metas == 1 && strcmp(tp.last_meta, "command") == 0,
	         "tap: saw the 300 samples and the meta, not the writer's own 'compression' (%llu, %llu)",
	         (unsigned long long)tp.samples, (unsigned long long)tp.metas);
	int nb = dup(fb);
	int rc = gtt_writer_switch(w, nb, replay_fn, &n_replays, &old);
	th_check(rc == 0 && old >= 0 && n_replays == 1, "switch: returns the old fd, replay called once");
	th_check(tp.metas == 1 && tp.n == 301, "tap: the switch's own meta and replay are not tapped");
	for (int i = 0; i < 200; i++) {
		/* the same chains again, and a new one */
		put_sample(w, 5000 + (uint64_t)i, 0x500000 + (uint64_t)(i % 11) * 16);
		sum_b += 0x500000 + (uint64_t)(i % 11) * 16;
	}
	gtt_record c = { .tag = GTT_REC_CAPTURE };
	c.u.capture.event = GTT_CAPTURE_STOP;
	c.u.capture.source = GTT_CAPTURE_RING;
	c.u.capture.name = "";
	gtt_write(w, &c);
	th_check(gtt_writer_close(w) == 0, "switch: the writer closes the second file cleanly");
	facts a = read_fd(old), b = read_fd(fb);
	th_check(a.ok && !a.truncated && a.indexed && a.samples == 300 && a.sample_sum == sum_a,
	         "switch: the first file is whole (its own index, every sample's chain) (%llu samples)",
	         (unsigned long long)a.samples);
	th_check(b.ok && b.indexed && b.samples == 200 && b.sample_sum == sum_b,
	         "switch: the second file stands alone: every sample decodes to its chain (%llu samples)",
	         (unsigned long long)b.samples);
	th_check(b.metas == 2 && strcmp(b.first_meta, "compression") == 0 && b.threads == 1,
	         "switch: the second file starts with the writer's meta, then the replayed meta and thread");
	th_check(b.captures == 1 && b.cap_event == GTT_CAPTURE_STOP && b.cap_source == GTT_CAPTURE_RING,
	         "switch: records after the switch go to the second file");
	close(old);
	close(fa);
	close(fb);
	/* a 1.0 (plain) writer cannot switch */
	int fc = mfd("c");
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = 0;
	w = gtt_writer_fdopen_opts(dup(fc), 0, &o, &err);
	int nfd = dup(fc);
	th_check(gtt_writer_switch(w, nfd, NULL, NULL, &old) == GTT_EINVAL && old == -1,
	         "switch: refused by a 1.0 writer, the new fd still the caller's");
	close(nfd);
	gtt_writer_close(w);
	close(fc);
}

/* ---- switching while other threads write ---- */

typedef struct stress {
	gtt_writer *w;
	int stop;
	uint64_t written;
	uint64_t sum;
	int id;
} stress;

static void *writer_thread(void *arg)
{
	stress *s = arg;
	uint64_t i = 0;
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		uint64_t leaf = 0x600000 + (uint64_t)s->id * 0x10000 + (i % 97) * 16;
		if (put_sample(s->w, 10000 + i, leaf) == 0) {
			s->written++;
			s->sum += leaf;
		}
		i++;
	}
	return NULL;
}

static void test_switch_concurrent(void)
{
	enum { N_FILES = 12, N_THREADS = 3 };
	int fds[N_FILES], err = 0, ok = 1;
	fds[0] = mfd("s0");
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.block_bytes = 4096; /* many blocks: switches land between and inside them */
	gtt_writer *w = gtt_writer_fdopen_opts(dup(fds[0]), 0, &o, &err);
	stress st[N_THREADS];
	pthread_t thr[N_THREADS];
	for (int i = 0; i < N_THREADS; i++) {
		memset(&st[i], 0, sizeof(st[i]));
		st[i].w = w;
		st[i].id = i;
		pthread_create(&thr[i], NULL, writer_thread, &st[i]);
	}
	int olds[N_FILES];
	for (int k = 1; k < N_FILES; k++) {
		usleep(3000);
		fds[k] = mfd("sk");
		int n_replays = 0;
		if (gtt_writer_switch(w, dup(fds[k]), replay_fn, &n_replays, &olds[k - 1]) != 0)
			ok = 0;
		close(olds[k - 1]);
	}
	usleep(3000);
	uint64_t written = 0, sum = 0;
	for (int i = 0; i < N_THREADS; i++) {
		__atomic_store_n(&st[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(thr[i], NULL);
		written += st[i].written;
		sum += st[i].sum;
	}
	th_check(ok && gtt_writer_close(w) == 0, "concurrent: 11 switches while 3 threads write, no error");
	uint64_t got = 0, got_sum = 0, bad = 0;
	int all_indexed = 1;
	for (int k = 0; k < N_FILES; k++) {
		facts f = read_fd(fds[k]);
		got += f.samples;
		got_sum += f.sample_sum;
		bad += f.bad + !f.ok;
		all_indexed &= f.indexed;
		close(fds[k]);
	}
	th_check(bad == 0 && all_indexed, "concurrent: every file reads without an error and has its index");
	th_check(got == written && got_sum == sum,
	         "concurrent: every sample is in exactly one file, with its own chain (%llu of %llu)",
	         (unsigned long long)got, (unsigned long long)written);
}

int main(void)
{
	test_capture_record();
	test_switch();
	test_switch_concurrent();
	return th_report();
}
