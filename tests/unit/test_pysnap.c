/* test_pysnap.c — what the Python reader's passes stand on: record/procmem.c snapshots (noted
 * reads served from the next pass's one system call, ranges merged, the ranges of the first
 * words read before all others and the tail after them, a faulting range not taking the others
 * down), batched reads that go on after a fault, walks looked at in place, prefetched reads,
 * and record/ticker.c pauses (the GIL poll sleeping while the GIL stands still: its ticks are
 * not intended). Real process_vm_readv on a
 * forked child whose memory the test laid out, and the fake backend. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gt_util.h"
#include "gtt.h"
#include "procmem.h"
#include "testhelp.h"
#include "ticker.h"

#define PAGE 4096

/* A child that keeps a copy of our memory: pages[0..8), page 3 unmapped. */
static uint8_t *pages;
static pid_t child;

static void start_child(void)
{
	pages = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 8 * PAGE; i++)
		pages[i] = (uint8_t)(i * 7 + i / PAGE);
	munmap(pages + 3 * PAGE, PAGE);
	child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
}

static uint64_t A(size_t off)
{
	return (uint64_t)(uintptr_t)(pages + off);
}

static void snapshots(void)
{
	rec_procmem *m = rec_procmem_open(child);
	uint8_t buf[256], want[256];
	uint64_t calls, first[1], tailv = 0, tailbad = 0;
	rec_procmem_req tail[2];
	int rc, k;

	/* pass 1: nothing noted yet, every read goes to the process and is noted */
	rc = rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	th_check(rc == 0, "first snapshot reads nothing (%d bytes)", rc);
	calls = rec_procmem_syscalls(m);
	th_check(rec_procmem_read(m, A(100), buf, 16) == 0 && !memcmp(buf, pages + 100, 16), "a miss reads the process");
	rec_procmem_read(m, A(200), buf, 16);                /* merged with the one above (gap < 256) */
	rec_procmem_read_cached(m, A(2 * PAGE + 8), buf, 64); /* another page */
	rec_procmem_read(m, A(5 * PAGE), buf, 32);
	th_check(rec_procmem_syscalls(m) - calls == 4, "4 misses, 4 system calls (%llu)",
	         (unsigned long long)(rec_procmem_syscalls(m) - calls));
	rec_procmem_snap_end(m);

	/* pass 2: the same reads come from one system call, with a tail that brackets it */
	first[0] = A(5 * PAGE);
	tail[0] = (rec_procmem_req){ A(5 * PAGE), &tailv, 8, 0 };
	tail[1] = (rec_procmem_req){ A(3 * PAGE + 8), &tailbad, 8, 0 }; /* unmapped */
	calls = rec_procmem_syscalls(m);
	rc = rec_procmem_snap_begin(m, first, 1, tail, 2);
	th_check(rc == 16 + 100 + 64 + 32, "snapshot of the noted ranges: %d bytes (100..216 merged, 2 others)", rc);
	th_check(rec_procmem_syscalls(m) - calls == 1, "one system call for the snapshot and its tail (%llu)",
	         (unsigned long long)(rec_procmem_syscalls(m) - calls));
	th_check(tail[0].ok && !memcmp(&tailv, pages + 5 * PAGE, 8) && !tail[1].ok,
	         "tail: the readable word read, the unmapped one not");
	calls = rec_procmem_syscalls(m);
	k = rec_procmem_read(m, A(150), buf, 40) == 0 && !memcmp(buf, pages + 150, 40);
	k &= rec_procmem_read_cached(m, A(2 * PAGE + 8), buf, 64) == 0 && !memcmp(buf, pages + 2 * PAGE + 8, 64);
	th_check(k && rec_procmem_syscalls(m) == calls && rec_procmem_served(m) >= 2,
	         "reads inside the snapshot are served without a system call");
	th_check(rec_procmem_read(m, A(6 * PAGE), buf, 8) == 0 && rec_procmem_syscalls(m) == calls + 1,
	         "a read outside it goes to the process");
	rec_procmem_snap_end(m);
	/* after the pass the snapshot is not served any more: fresh reads */
	calls = rec_procmem_syscalls(m);
	rec_procmem_read(m, A(150), buf, 8);
	th_check(rec_procmem_syscalls(m) == calls + 1, "after snap_end reads are fresh");

	/* a noted range that became unreadable: the others are still read, in one more call */
	rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	rec_procmem_read(m, A(100), buf, 16);
	rec_procmem_read(m, A(3 * PAGE + 64), buf, 16);   /* fails now, noted all the same */
	rec_procmem_read(m, A(7 * PAGE), buf, 16);
	rec_procmem_snap_end(m);
	rc = rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	memcpy(want, pages + 7 * PAGE, 16);
	th_check(rc == 32 && rec_procmem_read(m, A(7 * PAGE), buf, 16) == 0 && !memcmp(buf, want, 16),
	         "a faulting range does not take the ranges after it down (%d bytes)", rc);
	th_check(rec_procmem_snap_has(m, A(7 * PAGE), 16) && rec_procmem_snap_has(m, A(100), 16) &&
	         !rec_procmem_snap_has(m, A(3 * PAGE + 64), 16) && !rec_procmem_snap_has(m, A(7 * PAGE), 17) &&
	         !rec_procmem_snap_has(m, A(6 * PAGE), 8),
	         "snap_has: the ranges read whole, not the faulting one, not past a range's end, not an unnoted one");
	rec_procmem_snap_end(m);

	/* garbage pointers (a torn frame read from the target) at the top of the address space:
	 * refused, never served from outside the snapshot (addr + len used to wrap past the check;
	 * gt-record died in memcpy on an H200-sized stack once) */
	rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	rec_procmem_read(m, A(7 * PAGE), buf, 16);
	rec_procmem_read(m, UINT64_MAX - 8, buf, 16);
	rec_procmem_read(m, UINT64_MAX - 4096, buf, 16);
	rec_procmem_snap_end(m);
	rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	th_check(!rec_procmem_snap_has(m, UINT64_MAX - 8, 16) && !rec_procmem_snap_has(m, UINT64_MAX - 4, 8) &&
	         !rec_procmem_snap_has(m, 0xffffffaa8e212d70ull, 64) && !rec_procmem_snap_has(m, A(7 * PAGE) + 8, SIZE_MAX),
	         "snap_has: addresses near 2^64 and lengths that would wrap are not in the snapshot");
	th_check(rec_procmem_read(m, UINT64_MAX - 8, buf, 16) < 0 && rec_procmem_read(m, 0xffffffaa8e212d70ull, buf, 64) < 0,
	         "reads at wrapping addresses fail cleanly while a snapshot is served");
	rec_procmem_snap_end(m);
	rec_procmem_close(m);
}

/* Reads noted in any order (runs up, runs down, scattered, two groups far apart): the snapshot
 * is their ranges in address order, merged, and serves every one of them. */
static void noted_order(void)
{
	rec_procmem *m = rec_procmem_open(child);
	size_t off[200], i, n = 0;
	uint8_t buf[16];
	uint64_t calls, served0;
	int rc, ok = 1;
	unsigned x = 12345;

	for (i = 0; i < 100; i++) /* group 1: 4 pages in, 80 bytes apart (merged: gaps under 256) */
		off[n++] = 4 * PAGE + i * 80;
	for (i = 0; i < 100; i++) /* group 2: 3 pages further, 24 bytes apart */
		off[n++] = 7 * PAGE + i * 24;
	/* the order noted: 0..39 up, 40..79 down, the rest shuffled */
	for (i = 0; i < 20; i++) {
		size_t t = off[40 + i];
		off[40 + i] = off[79 - i];
		off[79 - i] = t;
	}
	for (i = n - 1; i > 80; i--) {
		size_t j = 80 + (x = x * 1103515245u + 12345u) % (i - 80 + 1), t = off[i];
		off[i] = off[j];
		off[j] = t;
	}
	rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	for (i = 0; i < n; i++) {
		rec_procmem_read(m, A(off[i]), buf, 16);
		rec_procmem_read(m, A(i % 2 ? 4 * PAGE : 7 * PAGE + 2392), buf, 8); /* breaks every run of notes */
	}
	rec_procmem_snap_end(m);
	rc = rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	th_check(rc == (99 * 80 + 16) + (99 * 24 + 16 + 8), "snapshot: two merged ranges, %d bytes (want %d)", rc,
	         (99 * 80 + 16) + (99 * 24 + 16 + 8));
	calls = rec_procmem_syscalls(m);
	served0 = rec_procmem_served(m);
	for (i = 0; i < n; i++)
		ok &= rec_procmem_read(m, A(off[i]), buf, 16) == 0 && !memcmp(buf, pages + off[i], 16);
	th_check(ok && rec_procmem_syscalls(m) == calls && rec_procmem_served(m) - served0 == n,
	         "all 200 reads noted out of order served from the snapshot, right bytes (%llu system calls)",
	         (unsigned long long)(rec_procmem_syscalls(m) - calls));
	rec_procmem_snap_end(m);
	rec_procmem_close(m);
}

static void batched(void)
{
	rec_procmem *m = rec_procmem_open(child);
	uint64_t v[5] = { 0 };
	rec_procmem_req req[5] = {
		{ A(0), &v[0], 8, 0 }, { A(3 * PAGE), &v[1], 8, 0 }, { A(4 * PAGE), &v[2], 8, 0 },
		{ 0, &v[3], 8, 0 }, { A(7 * PAGE), &v[4], 8, 0 },
	};
	uint64_t calls = rec_procmem_syscalls(m);
	int n = rec_procmem_readv(m, req, 5);

	th_check(n == 3 && req[0].ok && !req[1].ok && req[2].ok && !req[3].ok && req[4].ok,
	         "readv: a fault and a NULL address fail alone (%d ok)", n);
	th_check(!memcmp(&v[2], pages + 4 * PAGE, 8) && !memcmp(&v[4], pages + 7 * PAGE, 8), "readv: the right bytes");
	th_check(rec_procmem_syscalls(m) - calls == 2, "readv: the call stopped by the fault goes on in one more (%llu)",
	         (unsigned long long)(rec_procmem_syscalls(m) - calls));
	rec_procmem_close(m);
}

/* Walks (a thread's frames): looked at in place in the snapshot, no system call while they
 * stay in it, noted so that the next snapshot reads the same ranges (not more); a peek at bytes
 * the snapshot does not hold reads nothing. */
static void walks(void)
{
	rec_procmem *m = rec_procmem_open(child);
	rec_procmem_walk w;
	uint8_t buf[128];
	const uint8_t *v;
	uint64_t calls, served0, reads0;
	/* 3.10-like frames: 72 bytes each, 600 apart on pages 4 and 5 (merged into one range by
	 * the page rule), then one on page 7 */
	size_t off[] = { 4 * PAGE + 3000, 4 * PAGE + 2400, 4 * PAGE + 1800, 4 * PAGE + 40, 5 * PAGE + 500, 7 * PAGE + 96 };
	size_t n = sizeof(off) / sizeof(off[0]), i;
	int rc, rc1, rc2, ok = 1, inplace = 1;

	rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	rec_procmem_walk_begin(&w);
	calls = rec_procmem_syscalls(m);
	for (i = 0; i < n; i++)
		ok &= (v = rec_procmem_walk_read(m, &w, A(off[i]), buf, 72, &rc)) != NULL && !memcmp(v, pages + off[i], 72);
	rec_procmem_walk_end(m, &w);
	th_check(ok && rec_procmem_syscalls(m) > calls, "walk without a snapshot: read from the process, right bytes");
	rec_procmem_snap_end(m);

	rc1 = rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	calls = rec_procmem_syscalls(m);
	served0 = rec_procmem_served(m);
	reads0 = rec_procmem_reads(m);
	rec_procmem_walk_begin(&w);
	for (i = 0, ok = 1; i < n; i++) {
		v = rec_procmem_walk_read(m, &w, A(off[i]), buf, 72, &rc);
		ok &= v != NULL && rc == 0 && !memcmp(v, pages + off[i], 72);
		inplace &= v != buf;
	}
	th_check(rec_procmem_walk_peek(m, &w, A(6 * PAGE), 8) == NULL && rec_procmem_walk_peek(m, &w, A(3 * PAGE), 8) == NULL,
	         "walk_peek: bytes outside the snapshot (unnoted, unmapped) give NULL");
	rec_procmem_walk_end(m, &w);
	th_check(ok && inplace && rec_procmem_syscalls(m) == calls,
	         "walk in the snapshot: every frame looked at in place, right bytes, no system call (%llu)",
	         (unsigned long long)(rec_procmem_syscalls(m) - calls));
	th_check(rec_procmem_served(m) - served0 == n && rec_procmem_reads(m) - reads0 == n,
	         "walk: each frame counted as a served read (%llu served, %llu reads)",
	         (unsigned long long)(rec_procmem_served(m) - served0), (unsigned long long)(rec_procmem_reads(m) - reads0));
	rec_procmem_snap_end(m);
	rc2 = rec_procmem_snap_begin(m, NULL, 0, NULL, 0);
	th_check(rc1 > 0 && rc2 == rc1, "the walk's notes plan the same snapshot again: %d bytes, then %d", rc1, rc2);
	th_check(rec_procmem_snap_has(m, A(4 * PAGE + 40), 72) && rec_procmem_snap_has(m, A(5 * PAGE + 500), 72) &&
	         rec_procmem_snap_has(m, A(7 * PAGE + 96), 72) && !rec_procmem_snap_has(m, A(6 * PAGE), 8),
	         "the next snapshot holds every frame walked, and not the page between the ranges");
	rec_procmem_snap_end(m);
	rec_procmem_close(m);
}

/* Prefetch: ranges read in one call, then served to the reads that start where they start. */
static void prefetch(void)
{
	rec_procmem *m = rec_procmem_open(child);
	uint64_t addr[4] = { A(100), A(2 * PAGE + 8), A(3 * PAGE + 16), A(6 * PAGE) };
	size_t len[4] = { 64, 128, 32, 16 };
	uint8_t buf[256];
	uint64_t calls = rec_procmem_syscalls(m), reads0 = rec_procmem_reads(m), failed0 = rec_procmem_failures(m);
	int n = rec_procmem_prefetch(m, addr, len, 4), ok;

	th_check(n == 3, "prefetch: 3 of 4 ranges read (one on an unmapped page): %d", n);
	th_check(rec_procmem_syscalls(m) - calls <= 2 && rec_procmem_reads(m) == reads0 && rec_procmem_failures(m) == failed0,
	         "prefetch: one call (and one more after the fault), not counted as reads or failures");
	calls = rec_procmem_syscalls(m);
	ok = rec_procmem_read(m, A(100), buf, 64) == 0 && !memcmp(buf, pages + 100, 64);
	ok &= rec_procmem_read(m, A(2 * PAGE + 8), buf, 40) == 0 && !memcmp(buf, pages + 2 * PAGE + 8, 40);
	ok &= rec_procmem_read_cached(m, A(6 * PAGE), buf, 16) == 0 && !memcmp(buf, pages + 6 * PAGE, 16);
	th_check(ok && rec_procmem_syscalls(m) == calls, "prefetch: reads at the ranges' starts served, right bytes, no call");
	ok = rec_procmem_read(m, A(120), buf, 8) == 0 && !memcmp(buf, pages + 120, 8);
	th_check(ok && rec_procmem_syscalls(m) == calls + 1, "prefetch: a read inside a range, not at its start, goes to the process");
	ok = rec_procmem_read(m, A(100), buf, 65) == 0 && !memcmp(buf, pages + 100, 65);
	th_check(ok && rec_procmem_syscalls(m) == calls + 2, "prefetch: a read longer than its range goes to the process");
	th_check(rec_procmem_read(m, A(3 * PAGE + 16), buf, 32) < 0 && rec_procmem_syscalls(m) == calls + 3,
	         "prefetch: the range that faulted is not served: its read fails on its own");
	rec_procmem_prefetch_drop(m);
	ok = rec_procmem_read(m, A(100), buf, 64) == 0;
	th_check(ok && rec_procmem_syscalls(m) == calls + 4, "prefetch dropped: reads go to the process");
	rec_procmem_close(m);
}

/* The ticks of a paused stretch are neither intended nor done. */
static void ticker_pause(void)
{
	char path[] = "/tmp/gt-pysnap-XXXXXX";
	int fd = mkstemp(path), err = 0;
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
	uint64_t period = GT_NS_PER_MS, t0 = 1000 * GT_NS_PER_SEC;
	rec_ticker *tk = w ? rec_ticker_create(GTT_SRC_GIL, period, t0, w) : NULL;
	gtt_reader *r;
	gtt_record rec;
	uint64_t whole_int = 0, whole_done = 0, sum_int = 0;
	int i;

	if (!tk) {
		th_check(0, "ticker: set up");
		return;
	}
	for (i = 0; i < 100; i++)              /* 0..99 ms: every tick */
		rec_ticker_tick(tk, t0 + (uint64_t)i * period);
	rec_ticker_pause(tk, t0 + 100 * period);
	rec_ticker_resume(tk, t0 + 1500 * period); /* 1.4 s paused, across an interval's end */
	for (i = 1500; i < 1600; i++)
		rec_ticker_tick(tk, t0 + (uint64_t)i * period);
	rec_ticker_pause(tk, t0 + 1600 * period);  /* paused until the end */
	rec_ticker_finish(tk, t0 + 2000 * period);
	rec_ticker_destroy(tk);
	gtt_writer_close(w);
	r = gtt_reader_open(path, &err);
	while (r && gtt_reader_next(r, &rec) > 0) {
		if (rec.tag != GTT_REC_TICKS)
			continue;
		if (rec.u.ticks.flags & GTT_TICKS_WHOLE) {
			whole_int = rec.u.ticks.intended;
			whole_done = rec.u.ticks.done;
		} else {
			sum_int += rec.u.ticks.intended;
		}
	}
	gtt_reader_close(r);
	unlink(path);
	th_check(whole_done == 200 && whole_int == 200, "ticker: 200 ticks done, 200 intended over the recording (%llu, %llu)",
	         (unsigned long long)whole_done, (unsigned long long)whole_int);
	th_check(sum_int == 200, "ticker: the 1 s intervals add up to the same (%llu)", (unsigned long long)sum_int);
}

int main(void)
{
	start_child();
	snapshots();
	noted_order();
	batched();
	walks();
	prefetch();
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ticker_pause();
	return th_report();
}
