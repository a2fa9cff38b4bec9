/* test_rec_tree.c — system-wide sampling's filter: the process tree (record/perf_tree.c) from
 * fork and exec records, pid reuse, a root waiting for its exec, resolution through /proc
 * after a loss (real processes); and the decoder (record/perf_decode.c) fed hand-made perf
 * records of the tree and of other processes: only the tree's reach the trace. */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtt.h"
#include "perf_decode.h"
#include "perf_tree.h"
#include "testhelp.h"

static void test_tree(void)
{
	rec_ptree *t = rec_ptree_create();
	rec_ptree_stats st;

	rec_ptree_add_root(t, 1000, 1);
	th_check(!rec_ptree_has(t, 1000), "a launched root is not kept before its exec");
	th_check(rec_ptree_exec(t, 1000) && rec_ptree_has(t, 1000), "its exec arms it");
	th_check(rec_ptree_fork(t, 1000, 1001) && rec_ptree_has(t, 1001), "a child of the root is in the tree");
	th_check(rec_ptree_fork(t, 1001, 1002) && rec_ptree_has(t, 1002), "a grandchild is in the tree");
	th_check(!rec_ptree_has(t, 2000), "a process never seen born (running before) is not");
	th_check(!rec_ptree_fork(t, 2000, 2001) && !rec_ptree_has(t, 2001), "a child of an outsider is not");
	th_check(!rec_ptree_exec(t, 2001), "an outsider's exec does not make it a member");
	/* the kernel reuses a pid: the new process takes its new parent's side */
	th_check(!rec_ptree_fork(t, 2000, 1002) && !rec_ptree_has(t, 1002), "a member's pid reused by an outsider's child: out");
	th_check(rec_ptree_fork(t, 1001, 2001) && rec_ptree_has(t, 2001), "an outsider's pid reused by a member's child: in");
	rec_ptree_add_root(t, 3000, 0);
	th_check(rec_ptree_has(t, 3000), "an attached root is kept at once");
	/* many pids: the table grows and keeps every answer */
	{
		int bad = 0, i;
		for (i = 0; i < 50000; i++)
			rec_ptree_fork(t, (i & 1) ? 1000 : 2000, 100000 + i);
		for (i = 0; i < 50000; i++)
			bad += rec_ptree_has(t, 100000 + i) != (i & 1);
		th_check(bad == 0, "50000 forks, half of them members: every answer right (%d wrong)", bad);
	}
	rec_ptree_get_stats(t, &st);
	th_check(st.members >= 25000 + 4 && st.others >= 25000 && st.resolved == 0,
	         "stats: %u members, %u others, %u resolved through /proc", st.members, st.others, st.resolved);
	rec_ptree_destroy(t);
}

/* A real process tree (this process, a child, a grandchild) for the /proc resolution after a
 * loss: without a loss an unknown pid is an outsider, after one its parents are looked up. */
/* A child of ours and its child, the grandchild waiting for family_end: real pids a tree can
 * find through /proc. 0, or -1 (checked as a failure under what's name). */
typedef struct family { pid_t child, grand; int up[2], down[2]; } family;
static int family_start(family *f, const char *what)
{
	char c;

	f->grand = 0;
	if (pipe(f->up) < 0 || pipe(f->down) < 0) {
		th_check(0, "%s: pipes", what);
		return -1;
	}
	f->child = fork();
	if (f->child == 0) {
		pid_t g = fork();
		if (g == 0) {
			if (read(f->down[0], &c, 1) < 0)
				_exit(1);
			_exit(0);
		}
		if (write(f->up[1], &g, sizeof(g)) < 0)
			_exit(1);
		waitpid(g, NULL, 0);
		_exit(0);
	}
	if (f->child < 0 || read(f->up[0], &f->grand, sizeof(f->grand)) != (ssize_t)sizeof(f->grand)) {
		th_check(0, "%s: a child and a grandchild started", what);
		return -1;
	}
	return 0;
}

static void family_end(family *f)
{
	if (write(f->down[1], "x", 1) < 0)
		kill(f->grand, SIGKILL);
	waitpid(f->child, NULL, 0);
	close(f->up[0]);
	close(f->up[1]);
	close(f->down[0]);
	close(f->down[1]);
}

static void test_lossy(void)
{
	family fam;

	if (family_start(&fam, "lossy") < 0)
		return;
	pid_t grand = fam.grand;
	{
		rec_ptree *t = rec_ptree_create();
		rec_ptree_stats st;
		rec_ptree_add_root(t, getpid(), 0);
		th_check(!rec_ptree_has(t, grand), "no loss: an unknown pid (a grandchild whose fork was not seen) is an outsider");
		rec_ptree_destroy(t);
		t = rec_ptree_create();
		rec_ptree_add_root(t, getpid(), 0);
		rec_ptree_lossy(t);
		th_check(rec_ptree_has(t, grand), "after a loss: the grandchild is found a member through /proc");
		th_check(!rec_ptree_has(t, getppid()), "after a loss: our own parent is not");
		rec_ptree_get_stats(t, &st);
		th_check(st.resolved == 2, "after a loss: each unknown pid resolved once (%u)", st.resolved);
		th_check(rec_ptree_has(t, grand) && st.resolved == 2, "the answer is kept");
		th_check(rec_ptree_take_found(t) == grand && rec_ptree_take_found(t) == 0,
		         "the grandchild found through /proc is handed out once (its fork record was lost), our parent never");
		rec_ptree_destroy(t);
	}
	family_end(&fam);
}

/* ---- hand-made perf records (sample_type TID|TIME|CPU|PERIOD|CALLCHAIN, sample_id_all) ---- */

typedef struct buf { uint8_t b[512]; size_t n; } buf;

static void put64(buf *b, uint64_t v) { memcpy(b->b + b->n, &v, 8); b->n += 8; }
static void put32x2(buf *b, uint32_t x, uint32_t y) { put64(b, (uint64_t)x | (uint64_t)y << 32); }
static void begin(buf *b) { b->n = sizeof(struct perf_event_header); }
static void trailer(buf *b, uint32_t pid, uint32_t tid, uint64_t t) { put32x2(b, pid, tid); put64(b, t); put32x2(b, 0, 0); }
static void finish(buf *b, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { type, misc, (uint16_t)b->n };
	memcpy(b->b, &h, sizeof(h));
}

static void feed(rec_perf_decoder *d, rec_perf_ring_state *rs, buf *b) { rec_perf_decode(d, rs, b->b, (uint32_t)b->n); }

static void sample(rec_perf_decoder *d, rec_perf_ring_state *rs, uint32_t pid, uint64_t t)
{
	buf b;
	begin(&b);
	put32x2(&b, pid, pid);
	put64(&b, t);
	put32x2(&b, 0, 0);       /* cpu, res */
	put64(&b, 10101010);     /* period */
	put64(&b, 2);            /* callchain: user marker, one ip */
	put64(&b, (uint64_t)PERF_CONTEXT_USER);
	put64(&b, 0x401000);
	finish(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	feed(d, rs, &b);
}

static void task(rec_perf_decoder *d, rec_perf_ring_state *rs, uint32_t type, uint32_t pid, uint32_t ppid, uint64_t t)
{
	buf b;
	begin(&b);
	put32x2(&b, pid, ppid);
	put32x2(&b, pid, ppid);  /* tid, ptid */
	put64(&b, t);
	trailer(&b, pid, pid, t);
	finish(&b, type, 0);
	feed(d, rs, &b);
}

static void comm(rec_perf_decoder *d, rec_perf_ring_state *rs, uint32_t pid, const char *name, uint64_t t)
{
	buf b;
	begin(&b);
	put32x2(&b, pid, pid);
	memset(b.b + b.n, 0, 16);
	snprintf((char *)b.b + b.n, 16, "%s", name);
	b.n += 16;
	trailer(&b, pid, pid, t);
	finish(&b, PERF_RECORD_COMM, 0);
	feed(d, rs, &b);
}

static void switch_cw(rec_perf_decoder *d, rec_perf_ring_state *rs, uint32_t pid, uint32_t other, int out, uint64_t t)
{
	buf b;
	begin(&b);
	put32x2(&b, other, other); /* next_prev pid/tid */
	trailer(&b, pid, pid, t);
	finish(&b, PERF_RECORD_SWITCH_CPU_WIDE, out ? PERF_RECORD_MISC_SWITCH_OUT : 0);
	feed(d, rs, &b);
}

static void mmap2(rec_perf_decoder *d, rec_perf_ring_state *rs, uint32_t pid, const char *path, uint64_t t)
{
	buf b;
	begin(&b);
	put32x2(&b, pid, pid);
	put64(&b, 0x400000);
	put64(&b, 0x1000);
	put64(&b, 0);
	memset(b.b + b.n, 0, 24);   /* maj, min, ino, ino_generation */
	b.n += 24;
	put32x2(&b, 5, 2);          /* prot, flags */
	memset(b.b + b.n, 0, 32);
	snprintf((char *)b.b + b.n, 32, "%s", path);
	b.n += 32;
	trailer(&b, pid, pid, t);
	finish(&b, PERF_RECORD_MMAP2, 0);
	feed(d, rs, &b);
}

static void test_decode(void)
{
	char path[] = "/tmp/gt-tree-XXXXXX";
	int fd = mkstemp(path), err = 0, rc;
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
	rec_ptree *t = rec_ptree_create();
	rec_perf_decoder *d;
	rec_perf_ring_state rs = { .cpu = 0 };
	rec_perf_stats st = { 0 };
	gtt_reader *r;
	gtt_record rec;
	const uint32_t R = 500, C = 501, X = 900, Y = 901;
	int n_samples = 0, n_switch = 0, n_maps = 0, n_names = 0, bad = 0;

	if (!w || !t) {
		th_check(0, "decode: a trace to write to");
		return;
	}
	d = rec_perf_decoder_create(w, NULL, NULL,
	                            PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
	                                PERF_SAMPLE_CALLCHAIN, 0);
	rec_ptree_add_root(t, R, 1);
	rec_perf_decoder_set_tree(d, t);
	sample(d, &rs, R, 10);             /* before the exec: gt-record's own code in the child */
	comm(d, &rs, R, "target", 20);     /* not an exec: still waiting */
	{
		buf b;
		begin(&b);
		put32x2(&b, R, R);
		memset(b.b + b.n, 0, 16);
		strcpy((char *)b.b + b.n, "target");
		b.n += 16;
		trailer(&b, R, R, 30);
		finish(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
		feed(d, &rs, &b);                /* the exec: kept from here */
	}
	mmap2(d, &rs, R, "//anon-target", 40);
	sample(d, &rs, R, 50);
	sample(d, &rs, X, 51);             /* another process on the CPU */
	mmap2(d, &rs, X, "//anon-other", 52);
	comm(d, &rs, X, "otherproc", 53);
	switch_cw(d, &rs, R, X, 1, 60);    /* R out, X next: kept as R's */
	switch_cw(d, &rs, X, R, 0, 61);    /* X in: dropped */
	task(d, &rs, PERF_RECORD_FORK, C, R, 70);
	sample(d, &rs, C, 80);
	task(d, &rs, PERF_RECORD_FORK, Y, X, 90);
	sample(d, &rs, Y, 91);
	task(d, &rs, PERF_RECORD_EXIT, Y, X, 95);
	task(d, &rs, PERF_RECORD_EXIT, C, R, 100);
	{
		/* the drain's early skip: only records of pids already known to be outsiders */
		buf b;
		int skip_x, skip_r, skip_new, skip_fork;
		begin(&b);
		put32x2(&b, X, X);
		put64(&b, 200);
		finish(&b, PERF_RECORD_SAMPLE, 0);
		skip_x = rec_perf_decoder_skip(d, &rs, b.b, (uint32_t)b.n);
		memcpy(b.b + sizeof(struct perf_event_header), &(uint64_t){ (uint64_t)R | (uint64_t)R << 32 }, 8);
		skip_r = rec_perf_decoder_skip(d, &rs, b.b, (uint32_t)b.n);
		memcpy(b.b + sizeof(struct perf_event_header), &(uint64_t){ 7777 | (uint64_t)7777 << 32 }, 8);
		skip_new = rec_perf_decoder_skip(d, &rs, b.b, (uint32_t)b.n);
		begin(&b);
		put32x2(&b, 7778, X);
		put32x2(&b, 7778, X);
		put64(&b, 201);
		trailer(&b, X, X, 201);
		finish(&b, PERF_RECORD_FORK, 0);
		skip_fork = rec_perf_decoder_skip(d, &rs, b.b, (uint32_t)b.n);
		th_check(skip_x && !skip_r && !skip_new && !skip_fork,
		         "skip: an outsider's sample yes (%d), the root's no (%d), an unknown pid's no (%d), "
		         "an outsider's fork no (%d)", skip_x, skip_r, skip_new, skip_fork);
	}
	rec_perf_decoder_stats(d, &st);
	rec_perf_decoder_destroy(d);
	rc = gtt_writer_close(w);
	th_check(rc == 0, "decode: trace written");
	th_check(st.foreign == 10 && st.samples == 2,
	         "decode: 9 records of others (and the root before its exec) dropped, 1 skipped (%" PRIu64 "), %" PRIu64 " samples kept",
	         st.foreign, st.samples);
	r = gtt_reader_open(path, &err);
	while (r && (rc = gtt_reader_next(r, &rec)) > 0) {
		uint32_t pid = 0, tid = 0;
		switch (rec.tag) {
		case GTT_REC_SAMPLE: pid = rec.u.sample.pid; tid = rec.u.sample.tid; n_samples++; break;
		case GTT_REC_SWITCH: pid = rec.u.sw.pid; tid = rec.u.sw.tid; n_switch++; break;
		case GTT_REC_MAPPING: pid = rec.u.mapping.pid; tid = pid; n_maps++;
			bad += strstr(rec.u.mapping.path, "other") != NULL; break;
		case GTT_REC_THREAD: pid = rec.u.thread.pid; tid = rec.u.thread.tid; n_names++;
			bad += strstr(rec.u.thread.name, "other") != NULL; break;
		case GTT_REC_PROCESS: pid = rec.u.process.pid; tid = pid; break;
		default: continue;
		}
		bad += (pid != R && pid != C) || (tid != R && tid != C);
	}
	gtt_reader_close(r);
	unlink(path);
	th_check(bad == 0, "decode: every record written is about the tree (%d about others)", bad);
	th_check(n_samples == 2, "decode: the root's sample after its exec and the child's (%d)", n_samples);
	th_check(n_switch == 1, "decode: one switch, the tree's side of it (%d)", n_switch);
	th_check(n_maps == 1, "decode: the root's mapping only (%d)", n_maps);
	th_check(n_names >= 3, "decode: the tree's thread records: exec name, fork, exit (%d)", n_names);
	rec_ptree_destroy(t);
}

/* The lean side-band event's fork record, and a mapping and a name (sample_id: the time). */
static void task_lean(rec_perf_decoder *d, rec_perf_ring_state *rs, uint32_t pid, uint32_t ppid, uint64_t t)
{
	buf b;
	begin(&b);
	put32x2(&b, pid, ppid);
	put32x2(&b, pid, ppid);
	put64(&b, t);
	put64(&b, t);
	finish(&b, PERF_RECORD_FORK, 0);
	feed(d, rs, &b);
}

static void side_lean(rec_perf_decoder *d, rec_perf_ring_state *rs, uint32_t pid, uint64_t t)
{
	buf b;
	begin(&b);
	put32x2(&b, pid, pid);
	memset(b.b + b.n, 0, 16);
	snprintf((char *)b.b + b.n, 16, "leanname");
	b.n += 16;
	put64(&b, t);
	finish(&b, PERF_RECORD_COMM, 0);
	feed(d, rs, &b);
	begin(&b);
	put32x2(&b, pid, pid);
	put64(&b, 0x400000);
	put64(&b, 0x1000);
	put64(&b, 0);
	memset(b.b + b.n, 0, 24);
	b.n += 24;
	put32x2(&b, 5, 2);
	memset(b.b + b.n, 0, 32);
	snprintf((char *)b.b + b.n, 32, "//anon-lean");
	b.n += 32;
	put64(&b, t + 1);
	finish(&b, PERF_RECORD_MMAP2, 0);
	feed(d, rs, &b);
}

/* A lean CPU-wide switch record (the switch event's: next_prev pid/tid, then the time). */
static void lean(rec_perf_decoder *d, rec_perf_ring_state *rs, uint32_t other, uint16_t misc, uint64_t t, int *skipped)
{
	buf b;
	begin(&b);
	put32x2(&b, other, other);
	put64(&b, t);
	int skip;
	finish(&b, PERF_RECORD_SWITCH_CPU_WIDE, misc);
	skip = rec_perf_decoder_skip(d, rs, b.b, (uint32_t)b.n); /* as the drain: every record, in order */
	if (skipped)
		*skipped = skip;
	if (!skip)
		feed(d, rs, &b);
}

/* System-wide switches from the lean event: the pairs on one CPU become the tree's in and out
 * records, with the same times and kinds as the full trailer gave; outsiders' halves dropped;
 * the state starts again after a loss; pairs of two outsiders skipped at the read. */
static void test_lean(void)
{
	char path[] = "/tmp/gt-lean-XXXXXX";
	int fd = mkstemp(path), err = 0, rc, sk[4] = { 0 };
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
	rec_ptree *t = rec_ptree_create();
	rec_perf_decoder *d;
	rec_perf_ring_state rs = { .cpu = 3 };
	const uint32_t R = 600, C = 601, X = 950, Y = 951;
	const uint16_t OUT = PERF_RECORD_MISC_SWITCH_OUT, PRE = PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
	struct { uint64_t t; uint32_t tid, kind; } want[] = {
		{ 11, R, GTT_SWITCH_IN }, { 20, R, GTT_SWITCH_OUT_PREEMPT }, { 31, C, GTT_SWITCH_IN },
		{ 40, C, GTT_SWITCH_OUT }, { 61, C, GTT_SWITCH_OUT }, { 61, R, GTT_SWITCH_IN },
	}, got[16];
	size_t n_got = 0, i;
	int same, n_side = 0;
	gtt_reader *r;
	gtt_record rec;

	if (!w || !t) {
		th_check(0, "lean: a trace to write to");
		return;
	}
	d = rec_perf_decoder_create(w, NULL, NULL,
	                            PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
	                                PERF_SAMPLE_CALLCHAIN, 0);
	rec_perf_decoder_set_lean(d);
	rec_ptree_add_root(t, R, 0);
	rec_perf_decoder_set_tree(d, t);
	task_lean(d, &rs, C, R, 5);
	side_lean(d, &rs, R, 7);             /* a name at 7, a mapping at 8 */
	lean(d, &rs, R, OUT, 10, NULL);      /* who goes out is not known yet: X, says the in */
	lean(d, &rs, X, 0, 11, NULL);        /* X out (an outsider: dropped), R in */
	lean(d, &rs, X, OUT | PRE, 20, NULL); /* R out, preempted */
	lean(d, &rs, R, 0, 21, NULL);        /* X in: dropped */
	lean(d, &rs, C, OUT, 30, NULL);      /* X out: dropped */
	lean(d, &rs, X, 0, 31, NULL);        /* C in */
	lean(d, &rs, 0, OUT, 40, NULL);      /* C out, the idle task next */
	lean(d, &rs, C, 0, 41, NULL);        /* the idle task in: nobody's */
	{
		buf b;                       /* a loss (a LOST record of the lean event) */
		begin(&b);
		put64(&b, 1);
		put64(&b, 5);
		put64(&b, 45);
		finish(&b, PERF_RECORD_LOST, 0);
		rec_perf_decoder_skip(d, &rs, b.b, (uint32_t)b.n);
		feed(d, &rs, &b);
	}
	lean(d, &rs, 0, 0, 50, NULL);        /* an in without its out: who came in is unknown */
	lean(d, &rs, R, OUT, 60, NULL);      /* unknown out ... */
	lean(d, &rs, C, 0, 61, NULL);        /* ... C, dated at the in; R in */
	/* read-side skip: a pair of two outsiders (X out, Y in) goes unread; pairs with the
	 * tree's task do not */
	lean(d, &rs, X, OUT, 70, &sk[0]);     /* R out, X in (dropped) */
	lean(d, &rs, R, 0, 71, &sk[1]);
	task_lean(d, &rs, Y, X, 72);
	lean(d, &rs, Y, OUT, 80, &sk[2]);     /* X out, Y in: both outsiders */
	lean(d, &rs, X, 0, 81, &sk[3]);
	th_check(!sk[0] && !sk[1] && sk[2] && sk[3],
	         "lean: skipped at the read only the pair of two outsiders (%d %d %d %d)", sk[0], sk[1], sk[2], sk[3]);
	rec_perf_decoder_destroy(d);
	rc = gtt_writer_close(w);
	th_check(rc == 0, "lean: trace written");
	r = gtt_reader_open(path, &err);
	while (r && gtt_reader_next(r, &rec) > 0) {
		if (rec.tag == GTT_REC_THREAD && rec.u.thread.event == GTT_THREAD_NAME)
			n_side += rec.u.thread.time_ns == 7 && rec.u.thread.pid == R && !strcmp(rec.u.thread.name, "leanname");
		if (rec.tag == GTT_REC_MAPPING)
			n_side += rec.u.mapping.time_ns == 8 && rec.u.mapping.pid == R;
		if (rec.tag == GTT_REC_THREAD && rec.u.thread.event == GTT_THREAD_START)
			n_side += rec.u.thread.time_ns == 5 && rec.u.thread.tid == C;
		if (rec.tag == GTT_REC_SWITCH && n_got < 16) {
			got[n_got].t = rec.u.sw.time_ns;
			got[n_got].tid = rec.u.sw.tid;
			got[n_got].kind = rec.u.sw.kind;
			n_got++;
			th_check(rec.u.sw.cpu == 3 && rec.u.sw.pid == rec.u.sw.tid, "lean: switch at %" PRIu64 " on cpu 3 (%u), pid %u",
			         rec.u.sw.time_ns, rec.u.sw.cpu, rec.u.sw.pid);
		}
	}
	th_check(n_side == 3, "lean: the side band's name, mapping and fork at their times (%d of 3)", n_side);
	gtt_reader_close(r);
	unlink(path);
	same = n_got == 7;
	for (i = 0; same && i < 6; i++)
		same = got[i].t == want[i].t && got[i].tid == want[i].tid && got[i].kind == want[i].kind;
	/* then R out at 70 (X, coming in at 71, is an outsider) */
	same = same && got[6].t == 70 && got[6].tid == R && got[6].kind == GTT_SWITCH_OUT;
	th_check(same, "lean: the tree's ins and outs, at their times and kinds (%zu records)", n_got);
	for (i = 0; !same && i < n_got; i++)
		fprintf(stderr, "  got t=%" PRIu64 " tid=%u kind=%u\n", got[i].t, got[i].tid, got[i].kind);
	rec_ptree_destroy(t);
}

/* The switch gate: switch events closed (a pair cut in two by the close), then opened again.
 * The pair state from before the gap must not name the task on the CPU after it, on the decode
 * side (no "in" for the task the cut pair named) and on the read side (no skip on the old
 * task); the first whole pair after the opening is written as usual. */
static void test_gate_epoch(int64_t off)
{
	char path[] = "/tmp/gt-gate-XXXXXX";
	int fd = mkstemp(path), err = 0, sk = -1;
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
	rec_ptree *t = rec_ptree_create();
	rec_perf_ring_state rs = { .cpu = 1 }, rs2 = { .cpu = 2 };
	const uint32_t R = 700, C = 701, X = 960, Y = 961;
	const uint16_t OUT = PERF_RECORD_MISC_SWITCH_OUT;
	gtt_reader *r;
	gtt_record rec;
	struct { uint64_t t; uint32_t tid, kind; } got[16];
	size_t n_got = 0;

	if (!w || !t) {
		th_check(0, "gate: a trace to write to");
		return;
	}
	rec_perf_decoder *d = rec_perf_decoder_create(w, NULL, NULL,
	                                              PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
	                                                  PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN, 0);
	rec_perf_decoder_set_lean(d);
	rec_ptree_add_root(t, R, 0);
	rec_perf_decoder_set_tree(d, t);
	if (off) {
		/* a time namespace: gt-record's first opening (at its start) is noted before the
		 * clock offset is known; the records' times are perf's (trace = perf + off) */
		th_check(rec_perf_decoder_switches_opened(d, (uint64_t)off + 1) == 0, "gate: the first opening noted");
		rec_perf_decoder_set_clock_offset(d, off);
	}
	task_lean(d, &rs, C, R, 5);
	lean(d, &rs, R, OUT, 10, NULL);  /* X (unknown yet) out, R in */
	lean(d, &rs, X, 0, 11, NULL);    /* R in at 11 */
	lean(d, &rs, C, OUT, 50, NULL);  /* R out at 50, C coming in ... and the gate closes: no in */
	task_lean(d, &rs2, X, 1, 55);    /* X and Y: processes known to be outside the tree */
	task_lean(d, &rs2, Y, 1, 56);
	lean(d, &rs2, X, OUT, 60, NULL); /* another CPU: X coming in, and the gate closes */
	th_check(rec_perf_decoder_switches_opened(d, 100 + (uint64_t)off) == 0, "gate: an opening noted");
	lean(d, &rs, Y, 0, 105, NULL);   /* an in whose out came before the opening: who came in is unknown */
	lean(d, &rs2, Y, 0, 106, &sk);   /* the same on the other CPU: X is not known to be on it */
	th_check(sk == 0, "gate: not skipped at the read on the task the state knew before the gap");
	lean(d, &rs, R, OUT, 110, NULL); /* unknown out (C, says the in), R in */
	lean(d, &rs, C, 0, 111, NULL);
	rec_perf_decoder_destroy(d);
	th_check(gtt_writer_close(w) == 0, "gate: trace written");
	r = gtt_reader_open(path, &err);
	while (r && gtt_reader_next(r, &rec) > 0)
		if (rec.tag == GTT_REC_SWITCH && n_got < 16) {
			got[n_got].t = rec.u.sw.time_ns;
			got[n_got].tid = rec.u.sw.tid;
			got[n_got].kind = rec.u.sw.kind;
			n_got++;
		}
	gtt_reader_close(r);
	unlink(path);
	uint64_t o = (uint64_t)off;
	int ok = n_got == 4 && got[0].t == 11 + o && got[0].tid == R && got[0].kind == GTT_SWITCH_IN &&
	         got[1].t == 50 + o && got[1].tid == R && got[1].kind == GTT_SWITCH_OUT && got[2].t == 111 + o &&
	         got[2].tid == C && got[2].kind == GTT_SWITCH_OUT && got[3].t == 111 + o && got[3].tid == R &&
	         got[3].kind == GTT_SWITCH_IN;
	th_check(ok, "gate (clock offset %lld): R in at 11 and out at 50, nothing at 105 (C never came in as far as "
	             "the trace knows), C out and R in at 111 (%zu records)", (long long)off, n_got);
	for (size_t i = 0; !ok && i < n_got; i++)
		fprintf(stderr, "  got t=%" PRIu64 " tid=%u kind=%u\n", got[i].t, got[i].tid, got[i].kind);
	rec_ptree_destroy(t);
}

/* The switch gate: a window's events open CPU by CPU; a CPU opened early writes switches before
 * the last is open (the window's switch_gate record is dated then). Those follow the pair state but
 * are not written: the trace has every switch from the record's time on and none before. */
static void test_gate_ready(void)
{
	char path[] = "/tmp/gt-gateready-XXXXXX";
	int fd = mkstemp(path), err = 0;
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
	rec_ptree *t = rec_ptree_create();
	rec_perf_ring_state rs = { .cpu = 1 };
	const uint32_t R = 700, C = 701;
	const uint16_t OUT = PERF_RECORD_MISC_SWITCH_OUT;
	gtt_reader *r;
	gtt_record rec;
	struct { uint64_t t; uint32_t tid, kind; } got[16];
	size_t n_got = 0;

	if (!w || !t) {
		th_check(0, "ready: a trace to write to");
		return;
	}
	rec_perf_decoder *d = rec_perf_decoder_create(w, NULL, NULL,
	                                              PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
	                                                  PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN, 0);
	rec_perf_decoder_set_lean(d);
	rec_ptree_add_root(t, R, 0);
	rec_perf_decoder_set_tree(d, t);
	task_lean(d, &rs, C, R, 5);
	rec_perf_decoder_switches_opened(d, 100);
	rec_perf_decoder_switches_ready(d, 120);
	lean(d, &rs, C, OUT, 105, NULL); /* R out (not known yet), C in: before the opening is whole */
	lean(d, &rs, R, 0, 106, NULL);
	lean(d, &rs, R, OUT, 125, NULL); /* C out at 125 (the state knows it came in at 106), R in */
	lean(d, &rs, C, 0, 126, NULL);
	rec_perf_decoder_destroy(d);
	th_check(gtt_writer_close(w) == 0, "ready: trace written");
	r = gtt_reader_open(path, &err);
	while (r && gtt_reader_next(r, &rec) > 0)
		if (rec.tag == GTT_REC_SWITCH && n_got < 16) {
			got[n_got].t = rec.u.sw.time_ns;
			got[n_got].tid = rec.u.sw.tid;
			got[n_got].kind = rec.u.sw.kind;
			n_got++;
		}
	gtt_reader_close(r);
	unlink(path);
	int ok = n_got == 2 && got[0].t == 125 && got[0].tid == C && got[0].kind == GTT_SWITCH_OUT && got[1].t == 126 &&
	         got[1].tid == R && got[1].kind == GTT_SWITCH_IN;
	th_check(ok, "ready: nothing before 120, C out at 125 and R in at 126 (%zu records)", n_got);
	for (size_t i = 0; !ok && i < n_got; i++)
		fprintf(stderr, "  got t=%" PRIu64 " tid=%u kind=%u\n", got[i].t, got[i].tid, got[i].kind);
	rec_ptree_destroy(t);
}

/* Found after a loss: the session's callback is called once per such process, before the
 * record that revealed it is decoded, with the writer and the record's time on the trace clock. */
typedef struct found_log { int n; pid_t pid; uint64_t t; int samples_before; } found_log;
static int n_samples_written;
static void count_samples(void *ctx, const gtt_record *r)
{
	(void)ctx;
	n_samples_written += r->tag == GTT_REC_SAMPLE;
}
static void on_found(void *ctx, gtt_writer *w, pid_t pid, uint64_t t)
{
	found_log *f = ctx;
	f->n++;
	f->pid = pid;
	f->t = t;
	f->samples_before = n_samples_written;
	th_check(w != NULL, "found: the decoder's writer is handed over");
}

static void test_found(void)
{
	char path[] = "/tmp/gt-found-XXXXXX";
	int fd = mkstemp(path), err = 0;
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
	rec_ptree *t = rec_ptree_create();
	rec_perf_decoder *d;
	rec_perf_ring_state rs = { .cpu = 0 };
	found_log f = { 0 };
	family fam;

	if (!w || !t) {
		th_check(0, "found: a trace to write to");
		return;
	}
	if (family_start(&fam, "found") < 0)
		return;
	pid_t child = fam.child, grand = fam.grand;
	d = rec_perf_decoder_create(w, count_samples, NULL,
	                            PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
	                                PERF_SAMPLE_CALLCHAIN, 0);
	rec_ptree_add_root(t, getpid(), 0);
	rec_perf_decoder_set_tree(d, t);
	rec_perf_decoder_set_clock_offset(d, 1000);
	rec_perf_decoder_set_found(d, on_found, &f);
	sample(d, &rs, (uint32_t)grand, 30);
	th_check(f.n == 0 && n_samples_written == 0, "found: before any loss an unknown pid is an outsider (%d calls)", f.n);
	{
		buf b;                       /* a loss */
		begin(&b);
		put64(&b, 1);
		put64(&b, 5);
		trailer(&b, 0, 0, 45);
		finish(&b, PERF_RECORD_LOST, 0);
		feed(d, &rs, &b);
	}
	/* the grandchild was an outsider before the loss; a pid learned once is kept, so use one
	 * the tree has not met: the child itself */
	sample(d, &rs, (uint32_t)child, 50);
	th_check(f.n == 1 && f.pid == child && f.t == 1050,
	         "found: after a loss the tree's unknown child is handed to the callback once (%d calls, pid %d, t %llu)",
	         f.n, (int)f.pid, (unsigned long long)f.t);
	th_check(f.samples_before == 0 && n_samples_written == 1,
	         "found: the callback runs before the sample that revealed the process is written");
	sample(d, &rs, (uint32_t)child, 60);
	sample(d, &rs, (uint32_t)getppid(), 70);
	th_check(f.n == 1 && n_samples_written == 2, "found: not again for its next sample, nor for an outsider (%d calls)", f.n);
	{
		/* a thread of a member sampled in its exit path: perf says tid -1; not written */
		buf b;
		begin(&b);
		put32x2(&b, (uint32_t)child, UINT32_MAX);
		put64(&b, 80);
		put32x2(&b, 0, 0);
		put64(&b, 10101010);
		put64(&b, 2);
		put64(&b, (uint64_t)PERF_CONTEXT_KERNEL);
		put64(&b, 0xffffffff81000000ull);
		finish(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
		feed(d, &rs, &b);
		th_check(n_samples_written == 2, "a member's sample of tid -1 (an exiting thread) is not written (%d samples)",
		         n_samples_written);
	}
	rec_perf_decoder_destroy(d);
	rec_ptree_destroy(t);
	gtt_writer_close(w);
	unlink(path);
	family_end(&fam);
}

int main(void)
{
	test_tree();
	test_lossy();
	test_found();
	test_decode();
	test_lean();
	test_gate_epoch(0);
	test_gate_epoch(1000 * 1000000000ll); /* a time namespace 1000 s ahead of the host's clock */
	test_gate_ready();
	return th_report();
}
