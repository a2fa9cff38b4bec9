/* unwind_check.c — the agent's fast native stack walk (record/cupti_cfi.c) against libgcc's, on the
 * same stacks: frames of every shape (tests/gpu/unwind_deep.c: rsp-based frames with pushes and a
 * 16 KiB frame, rbp-based alloca frames, libc's qsort calling back; tests/gpu/unwind_cxx.cc:
 * std::sort and std::function), with the walker itself in a shared library whose frames are left
 * out like the agent's, a stop object, the depth cap, a signal handler (the fast walk must decline
 * and libgcc take over), and four threads walking at once. Prints PASS:/FAIL: lines and the time
 * per stack of both walks (INFO:).
 * usage: unwind_check WALKER.so DEEP.so [CXX.so] */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void (*leaf_fn)(void *arg);
typedef int (*unwind_fn)(int, uint64_t *, int, int *, int *);
typedef int (*obj_fn)(const void *);
typedef int (*deep_fn)(int, leaf_fn, void *);
typedef int (*qsort_fn)(leaf_fn, void *);
typedef int (*cxx_fn)(leaf_fn, void *, int);
typedef struct stats { uint64_t walks, fallback, misses, full, bad; } stats;
typedef void (*stats_fn)(stats *);

static unwind_fn unwind;
static stats_fn cfi_stats;
static int failures;

static void check(int ok, const char *fmt, const char *what, long a, long b)
{
	printf("%s: ", ok ? "PASS" : "FAIL");
	printf(fmt, what, a, b);
	printf("\n");
	failures += !ok;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Both walks of one stack, compared; filled in at the leaf. */
typedef struct take {
	int cap;
	int n[2], trunc[2], stop[2];
	uint64_t ips[2][256];
	int times;                  /* walks per mode, for timing */
	uint64_t ns[2];
	int done;                   /* qsort calls back many times: the first one walks */
} take;

/* The leaf: the fast walk then libgcc's, from the same frame. Modes alternate so both see the
 * same cache state. */
static __attribute__((noinline)) void leaf(void *arg)
{
	take *t = arg;
	if (t->done++)
		return;
	for (int m = 0; m < 2; m++) {
		t->n[m] = unwind(m, t->ips[m], t->cap, &t->trunc[m], &t->stop[m]);
		uint64_t t0 = now_ns();
		for (int i = 0; i < t->times; i++) {
			uint64_t scratch[256];
			int tr, st;
			unwind(m, scratch, t->cap, &tr, &st);
		}
		t->ns[m] += now_ns() - t0;
	}
}

static int same(const take *t)
{
	return t->n[0] > 0 && t->n[0] == t->n[1] && t->trunc[0] == t->trunc[1] && t->stop[0] == t->stop[1] &&
	       memcmp(t->ips[0], t->ips[1], (size_t)t->n[0] * 8) == 0;
}

static deep_fn deep_big, deep_alloca, deep_mixed;
static qsort_fn deep_qsort;
static cxx_fn cxx_sort;

static void run_shape(const char *what, int shape, int cap, int times, take *out)
{
	memset(out, 0, sizeof(*out));
	out->cap = cap;
	out->times = times;
	switch (shape) {
	case 0: deep_big(12, leaf, out); break;
	case 1: deep_alloca(12, leaf, out); break;
	case 2: deep_qsort(leaf, out); break;
	case 3: deep_mixed(30, leaf, out); break;
	case 4: if (cxx_sort) cxx_sort(leaf, out, 6); break;
	}
	(void)what;
}

static const char *const shapes[] = { "16 KiB frames (CFA from rsp)", "alloca frames (CFA from rbp)",
                                      "libc qsort calling back", "rsp and rbp frames mixed, then qsort",
                                      "C++: std::sort and std::function" };

static void *thread_main(void *arg)
{
	int *bad = arg;
	for (int i = 0; i < 200; i++) {
		take t;
		run_shape("", i % 5, 64, 0, &t);
		if ((i % 5 != 4 || cxx_sort) && !same(&t))
			(*bad)++;
	}
	return NULL;
}

static volatile sig_atomic_t sig_done;
static take sig_take;

static void on_signal(int sig)
{
	(void)sig;
	leaf(&sig_take);
	sig_done = 1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: unwind_check WALKER.so DEEP.so [CXX.so]\n");
		return 64;
	}
	void *w = dlopen(argv[1], RTLD_NOW), *d = dlopen(argv[2], RTLD_NOW);
	void *x = argc > 3 ? dlopen(argv[3], RTLD_NOW) : NULL;
	if (!w || !d) {
		fprintf(stderr, "unwind_check: %s\n", dlerror());
		return 2;
	}
	unwind = (unwind_fn)dlsym(w, "ag_unwind_using");
	cfi_stats = (stats_fn)dlsym(w, "ag_cfi_stats_get");
	int (*init)(void) = (int (*)(void))dlsym(w, "ag_unwind_init");
	obj_fn skip = (obj_fn)dlsym(w, "ag_unwind_skip_object"), stop = (obj_fn)dlsym(w, "ag_unwind_stop_object");
	deep_big = (deep_fn)dlsym(d, "deep_big");
	deep_alloca = (deep_fn)dlsym(d, "deep_alloca");
	deep_mixed = (deep_fn)dlsym(d, "deep_mixed");
	deep_qsort = (qsort_fn)dlsym(d, "deep_qsort");
	cxx_sort = x ? (cxx_fn)dlsym(x, "cxx_sort") : NULL;
	if (!unwind || !init || !skip || !stop || !cfi_stats || !deep_big || !deep_mixed || init() != 0) {
		fprintf(stderr, "unwind_check: the walker or the deep library lacks a symbol\n");
		return 2;
	}
	skip((const void *)unwind);    /* the walker's own frames, as the agent skips itself */
	if (argc > 3 && !cxx_sort)
		printf("SKIP: no C++ library (%s)\n", dlerror());

	for (int s = 0; s < 5; s++) {
		if (s == 4 && !cxx_sort)
			continue;
		take t;
		run_shape(shapes[s], s, 256, 0, &t);
		check(same(&t), "%s: the fast walk gives libgcc's frames (%ld frames, libgcc %ld)", shapes[s], t.n[0], t.n[1]);
		run_shape(shapes[s], s, 7, 0, &t);
		check(same(&t) && t.trunc[0] && t.n[0] == 7, "%s: cut at the depth cap alike (%ld, %ld)", shapes[s], t.n[0],
		      t.n[1]);
	}
	/* a stop object: the walk ends at the first frame inside libc (qsort), alike */
	stop((const void *)qsort);
	take t;
	run_shape("", 2, 256, 0, &t);
	check(same(&t) && t.stop[0], "%s: both end at the stop object (%ld, %ld)", "libc as stop object", t.n[0], t.n[1]);
	stop(NULL);    /* no stop object any more */

	/* inside a signal handler: the signal frame is one the fast walk declines */
	stats before, after;
	cfi_stats(&before);
	signal(SIGUSR1, on_signal);
	sig_take.cap = 256;
	raise(SIGUSR1);
	cfi_stats(&after);
	check(sig_done && same(&sig_take) && after.fallback > before.fallback,
	      "%s: the fast walk declines the signal frame, libgcc gives the frames (%ld frames, %ld declined)",
	      "in a signal handler", sig_take.n[1], (long)(after.fallback - before.fallback));

	/* four threads at once, sharing the rule cache */
	pthread_t th[4];
	int bad[4] = { 0 };
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_main, &bad[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	check(!bad[0] && !bad[1] && !bad[2] && !bad[3], "%s: 800 stacks on 4 threads, every one the same (%ld differ)%ld",
	      "threads", bad[0] + bad[1] + bad[2] + bad[3], 0);

	/* time per stack, cache warm */
	take tm;
	run_shape("", 3, 64, 2000, &tm);
	cfi_stats(&after);
	printf("INFO: deep mixed stack of %d frames: fast walk %.2f us, libgcc %.2f us per stack; %llu rules computed, "
	       "%llu walks declined, %llu cache full\n", tm.n[0], (double)tm.ns[0] / 2000 / 1000, (double)tm.ns[1] / 2000 / 1000,
	       (unsigned long long)after.misses, (unsigned long long)after.fallback, (unsigned long long)after.full);
	check(after.bad == 0, "%s: no walk left the stack (%ld)%ld", "bounds", (long)after.bad, 0);
	return failures ? 1 : 0;
}
