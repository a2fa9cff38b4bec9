/* cupti_unwind.c — the CUDA agent's native stack walk on the calling thread: frames come from the
 * cached-rule walk of cupti_cfi.c, or from libgcc's _Unwind_Backtrace (found with dlopen so the
 * agent links nothing but libc and libcupti) when that one declines; both follow .eh_frame, since
 * frame pointers are absent in most of libcuda and torch. This file decides which frames are kept:
 * the leading ones of skipped objects out, the walk ends at the stop object or the depth cap. */
#include "cupti_unwind.h"

#include <stdlib.h>
#include "cupti_cfi.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unwind.h>

#define MAX_SKIP 8

typedef _Unwind_Reason_Code (*backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*getipinfo_fn)(struct _Unwind_Context *, int *);

static struct {
	pthread_once_t once;
	backtrace_fn backtrace;
	getipinfo_fn get_ip_info;
	int n_skip;
	uint64_t skip_lo[MAX_SKIP], skip_hi[MAX_SKIP];  /* executable ranges of skipped objects */
	uint64_t stop_lo, stop_hi;                       /* ... of the object that ends a walk */
	int mode;                                        /* AG_UNWIND_* */
	pthread_mutex_t lock;
} U = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

static void load(void)
{
	const char *m = getenv("GT_CUPTI_UNWIND");
	U.mode = m && strcmp(m, "libgcc") == 0 ? AG_UNWIND_LIBGCC : AG_UNWIND_FAST;
	/* any C++ process (torch, libcuda's users) has libgcc_s loaded already; NOLOAD first so a
	 * pure C program only pays for the dlopen when stacks are actually taken */
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	U.get_ip_info = (getipinfo_fn)dlsym(h, "_Unwind_GetIPInfo");
	U.backtrace = (backtrace_fn)dlsym(h, "_Unwind_Backtrace");
	if (!U.get_ip_info)
		U.backtrace = NULL;
}

int ag_unwind_init(void)
{
	pthread_once(&U.once, load);
#if defined(__x86_64__)
	return 0;    /* the fast walk needs nothing; libgcc only for what it declines */
#else
	return U.backtrace ? 0 : -1;
#endif
}

typedef struct range_find {
	uint64_t addr, lo, hi;
} range_find;

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	range_find *f = arg;
	uint64_t lo = UINT64_MAX, hi = 0;
	int hit = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		if (f->addr >= a && f->addr < b)
			hit = 1;
		if (a < lo)
			lo = a;
		if (b > hi)
			hi = b;
	}
	if (!hit)
		return 0;
	f->lo = lo;
	f->hi = hi;
	return 1;
}

int ag_unwind_stop_object(const void *addr)
{
	range_find f = { (uint64_t)(uintptr_t)addr, 0, 0 };
	if (addr && !dl_iterate_phdr(find_object, &f))
		return -1;
	pthread_mutex_lock(&U.lock);
	U.stop_lo = f.lo;
	__atomic_store_n(&U.stop_hi, f.hi, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&U.lock);
	return 0;
}

int ag_unwind_skip_object(const void *addr)
{
	range_find f = { (uint64_t)(uintptr_t)addr, 0, 0 };
	int rc = -1;
	if (!addr || !dl_iterate_phdr(find_object, &f))
		return -1;
	pthread_mutex_lock(&U.lock);
	for (int i = 0; i < U.n_skip; i++)
		if (U.skip_lo[i] == f.lo) {
			rc = 0;
			goto out;
		}
	if (U.n_skip < MAX_SKIP) {
		U.skip_lo[U.n_skip] = f.lo;
		U.skip_hi[U.n_skip] = f.hi;
		__atomic_store_n(&U.n_skip, U.n_skip + 1, __ATOMIC_RELEASE);
		rc = 0;
	}
out:
	pthread_mutex_unlock(&U.lock);
	return rc;
}

typedef struct name_find {
	const char *part;
	int n;
	const void *addrs[MAX_SKIP];
} name_find;

static int find_named(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	name_find *f = arg;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	if (!base || !strstr(base, f->part) || f->n == MAX_SKIP)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
			f->addrs[f->n++] = (const void *)(uintptr_t)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
			break;
		}
	return 0;
}

int ag_unwind_skip_named(const char *part)
{
	name_find f = { part, 0, { 0 } };
	int n = 0;
	dl_iterate_phdr(find_named, &f);
	for (int i = 0; i < f.n; i++)
		n += ag_unwind_skip_object(f.addrs[i]) == 0;
	return n;
}

typedef struct walk {
	uint64_t *ips;
	int cap, n, leading, truncated, n_skip, stopped;
	uint64_t stop_lo, stop_hi;
} walk;

/* One return address: 0 to go on, 1 when the walk is done. */
static int keep(walk *w, uint64_t ip)
{
	if (w->leading) {
		/* the agent's own frames and CUPTI's callback dispatch say nothing about the caller */
		int skip = 0;
		for (int i = 0; i < w->n_skip; i++)
			skip |= ip >= U.skip_lo[i] && ip < U.skip_hi[i];
		if (skip)
			return 0;
		w->leading = 0;
	}
	if (ip >= w->stop_lo && ip < w->stop_hi) {
		w->stopped = 1;
		return 1;
	}
	if (w->n == w->cap) {
		w->truncated = 1;
		return 1;
	}
	w->ips[w->n++] = ip;
	return 0;
}

static int visit(void *arg, uint64_t ip)
{
	return keep(arg, ip);
}

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	int before = 0;
	uint64_t ip = (uint64_t)U.get_ip_info(ctx, &before);
	if (!ip)
		return _URC_END_OF_STACK;
	/* a signal frame's IP is the interrupted instruction itself; make it look like a return
	 * address (the convention of every other frame, and of perf callchains) */
	return keep(arg, before ? ip + 1 : ip) ? _URC_END_OF_STACK : _URC_NO_REASON;
}

int ag_unwind_set_mode(int mode)
{
	pthread_once(&U.once, load);
	int old = U.mode;
	__atomic_store_n(&U.mode, mode, __ATOMIC_RELAXED);
	return old;
}

int ag_unwind(uint64_t *ips, int cap, int *truncated, int *stopped)
{
	return ag_unwind_using(__atomic_load_n(&U.mode, __ATOMIC_RELAXED), ips, cap, truncated, stopped);
}

int ag_unwind_using(int mode, uint64_t *ips, int cap, int *truncated, int *stopped)
{
	walk w = { .ips = ips, .cap = cap, .leading = 1, .n_skip = __atomic_load_n(&U.n_skip, __ATOMIC_ACQUIRE),
	           .stop_hi = __atomic_load_n(&U.stop_hi, __ATOMIC_ACQUIRE), .stop_lo = U.stop_lo };
	*truncated = *stopped = 0;
	if (cap <= 0)
		return -1;
	if (mode == AG_UNWIND_FAST && ag_cfi_walk(visit, &w) == 0)
		goto done;
	if (!U.backtrace)
		return -1;
	w.n = w.truncated = w.stopped = 0;    /* the fast walk declined: libgcc from the start */
	w.leading = 1;
	U.backtrace(step, &w);
done:
	*truncated = w.truncated;
	*stopped = w.stopped;
	return w.n;
}
