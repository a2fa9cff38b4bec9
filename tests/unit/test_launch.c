/* test_launch.c — analyze/launch.c with hand-made records: the correlation join (API call, launch
 * stack, work), work whose call has no stack, the sampling estimator (first K exact, 1 in N
 * sharing the rest), a stack taken at the exit of a long call after its work started, work
 * without an API record, the runtime and driver records of one call, the call window, and
 * fold --weight gpu-time on a model built from them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "launch.h"
#include "testhelp.h"

#define MS 1000000ull

static ana_launch_acc *A;

static void api(uint32_t tid, uint64_t s, uint64_t e, uint32_t corr, uint32_t name, uint32_t domain)
{
	gtt_cuda_api a = { .start_ns = s, .end_ns = e, .pid = 7, .tid = tid, .correlation = corr, .name_id = name,
	                   .domain = domain };
	th_check(ana_launch_acc_api(A, &a) == 0, "api record %u taken", corr);
}

static void stack(uint32_t tid, uint64_t t, uint32_t corr, uint32_t flags, uint32_t stack_id)
{
	ana_callstack c = { .time_ns = t, .pid = 7, .tid = tid, .correlation = corr, .name_id = 1, .flags = flags,
	                    .stack_id = stack_id };
	th_check(ana_launch_acc_stack(A, &c) == 0, "stack of call %u taken", corr);
}

static void kernel(uint64_t s, uint64_t e, uint32_t corr, uint32_t name)
{
	th_check(ana_launch_acc_work(A, ANA_WORK_KERNEL, 7, corr, name, s, e) == 0, "kernel of call %u taken", corr);
}

static const ana_launch_group *group(const ana_launches *L, uint32_t tid, uint32_t name)
{
	for (size_t i = 0; i < L->n_groups; i++)
		if (L->groups[i].tid == tid && L->groups[i].name_id == name && L->groups[i].kind == ANA_WORK_KERNEL)
			return &L->groups[i];
	return NULL;
}

static const ana_launch_site *site(const ana_launches *L, const ana_launch_group *g, uint32_t stack_id)
{
	for (size_t i = 0; g && i < g->n_sites; i++)
		if (L->sites[g->first_site + i].stack_id == stack_id)
			return &L->sites[g->first_site + i];
	return NULL;
}

static int near(double a, double b)
{
	return fabs(a - b) < 1e-6 * (fabs(b) > 1 ? fabs(b) : 1);
}

/* 12 launches of kernel 100 on thread 1: calls 1-4 first K (stack 10 for 1-3, stack 11 for 4), then
 * 8 more of which calls 6 and 10 have a 1-in-N stack (11 and 10); 2 ms each, call 10's 4 ms. */
static void sampling(void)
{
	A = ana_launch_acc_new();
	for (uint32_t c = 1; c <= 12; c++) {
		uint64_t t = c * 10 * MS;
		api(1, t, t + MS / 10, c, 1, GTT_API_RUNTIME);
		if (c <= 4)
			stack(1, t + 1000, c, GTT_CALLSTACK_FIRST, c == 4 ? 11 : 10);
		if (c == 6)
			stack(1, t + 1000, c, GTT_CALLSTACK_NTH, 11);
		if (c == 10)
			stack(1, t + 1000, c, GTT_CALLSTACK_NTH | GTT_CALLSTACK_LONG, 10);
		kernel(t + MS, t + MS + (c == 10 ? 4 : 2) * MS, c, 100);
	}
	ana_launches L;
	th_check(ana_launch_acc_finish(A, &L) == 0, "finish");
	const ana_launch_group *g = group(&L, 1, 100);
	th_check(g && g->n == 12 && g->ns == 26 * MS, "group: 12 launches, 26 ms");
	th_check(g && g->n_exact == 4 && g->ns_exact == 8 * MS && g->n_nth == 2 && g->ns_nth == 6 * MS,
	         "4 exact (first K), 2 one-in-N (a long call sampled 1 in N counts as 1 in N)");
	th_check(g && g->none_n == 0 && g->none_ns == 0, "1-in-N stacks exist: nothing is 'no stack'");
	const ana_launch_site *s10 = site(&L, g, 10), *s11 = site(&L, g, 11);
	/* rest: 8 launches, 18 ms; stack 10 has 1 of 2 nth launches and 4 of 6 nth ms */
	th_check(s10 && s10->n_exact == 3 && s10->n_nth == 1 && near(s10->est_n, 3 + 8 * 0.5) &&
	         near(s10->est_ns, 6 * MS + 18.0 * MS * 4 / 6), "stack 10: 3 exact + half the rest by count, 4/6 by time");
	th_check(s11 && s11->n_exact == 1 && s11->n_nth == 1 && near(s11->est_n, 1 + 8 * 0.5) &&
	         near(s11->est_ns, 2 * MS + 18.0 * MS * 2 / 6), "stack 11: 1 exact + its share");
	th_check(s10 && s11 && near(s10->est_n + s11->est_n, 12) && near(s10->est_ns + s11->est_ns, 26.0 * MS),
	         "the sites add up to the group exactly");
	th_check(g && L.sites[g->first_site].stack_id == 10, "sites ordered by estimated GPU time");
	th_check(L.n_stacks == 6 && L.n_stacks_joined == 6 && L.n_work_no_api == 0, "every stack joined its work");
	ana_launches_free(&L);
}

/* First K only (no 1-in-N stack yet): the rest is "no stack captured", never spread. */
static void no_nth(void)
{
	A = ana_launch_acc_new();
	for (uint32_t c = 1; c <= 6; c++) {
		api(2, c * MS, c * MS + 1000, c, 1, GTT_API_RUNTIME);
		if (c <= 2)
			stack(2, c * MS + 10, c, GTT_CALLSTACK_FIRST, 20);
		kernel(c * MS + 2000, c * MS + 3000, c, 200);
	}
	/* a long call without a 1-in-N stack: exact, for itself only */
	api(2, 10 * MS, 20 * MS, 7, 1, GTT_API_RUNTIME);
	kernel(10 * MS + 5000, 10 * MS + 6000, 7, 200);
	stack(2, 20 * MS, 7, GTT_CALLSTACK_LONG | GTT_CALLSTACK_AT_EXIT, 21);
	ana_launches L;
	th_check(ana_launch_acc_finish(A, &L) == 0, "finish");
	const ana_launch_group *g = group(&L, 2, 200);
	th_check(g && g->n == 7 && g->n_exact == 3 && g->n_nth == 0, "7 launches, 3 with a stack of their own");
	th_check(g && near(g->none_n, 4) && near(g->none_ns, 4000), "4 launches (4 us) with no stack captured");
	const ana_launch_site *s20 = site(&L, g, 20), *s21 = site(&L, g, 21);
	th_check(s20 && near(s20->est_n, 2) && near(s20->est_ns, 2000), "first-K stack stands for its 2 launches only");
	th_check(s21 && near(s21->est_n, 1) && near(s21->est_ns, 1000),
	         "a stack taken at a long call's exit, after its kernel started, still joins it");
	ana_launches_free(&L);
}

/* Joins: runtime + driver record of one call, work without an API record, a stack without an
 * API record, a graph launch with two kernels, and a call closed by the window. */
static void joins(void)
{
	A = ana_launch_acc_new();
	api(3, 1 * MS, 2 * MS, 1, 5, GTT_API_RUNTIME);
	api(3, 1 * MS + 10, 2 * MS - 10, 1, 6, GTT_API_DRIVER);
	stack(3, 1 * MS + 5, 1, GTT_CALLSTACK_FIRST, 30);
	kernel(3 * MS, 4 * MS, 1, 300);
	kernel(4 * MS, 5 * MS, 1, 301);   /* a second kernel of the same call (graph launch) */
	kernel(6 * MS, 7 * MS, 99, 300);  /* no API record of correlation 99 */
	api(3, 6 * MS, 6 * MS + 10, 0, 5, GTT_API_RUNTIME); /* correlation 0 links nothing */
	kernel(6 * MS + 20, 6 * MS + 30, 0, 303);
	stack(4, 8 * MS, 2, GTT_CALLSTACK_FIRST, 31); /* API record lost: the stack names thread and API */
	kernel(9 * MS, 10 * MS, 2, 300);
	/* a call whose kernel comes after the window: the call is closed by then */
	api(3, 20 * MS, 21 * MS, 3, 5, GTT_API_RUNTIME);
	stack(3, 20 * MS + 5, 3, GTT_CALLSTACK_FIRST, 32);
	int bad = 0;
	for (uint32_t c = 1000; c < 6000; c++) { /* enough traffic to make the accumulator sweep */
		gtt_cuda_api a = { .start_ns = 21 * MS + ANA_LAUNCH_WINDOW_NS + c, .end_ns = 21 * MS + ANA_LAUNCH_WINDOW_NS + c + 1,
		                   .pid = 7, .tid = 5, .correlation = c, .name_id = 5, .domain = GTT_API_RUNTIME };
		bad += ana_launch_acc_api(A, &a) != 0;
	}
	th_check(!bad, "5000 more calls taken");
	kernel(22 * MS + ANA_LAUNCH_WINDOW_NS, 23 * MS + ANA_LAUNCH_WINDOW_NS, 3, 302);
	ana_launches L;
	th_check(ana_launch_acc_finish(A, &L) == 0, "finish");
	const ana_launch_group *g = group(&L, 3, 300), *g1 = group(&L, 3, 301), *g0 = group(&L, 0, 300),
	                       *g4 = group(&L, 4, 300), *gw = group(&L, 0, 302);
	th_check(g && g->api_name_id == 5 && g->n == 1 && site(&L, g, 30), "runtime record names the call, not the "
	         "driver record inside it");
	th_check(g1 && g1->n == 1 && site(&L, g1, 30), "both kernels of one call get its stack");
	th_check(g0 && g0->n == 1 && g0->n_sites == 0 && near(g0->none_n, 1) && L.n_work_no_api >= 1,
	         "work without an API record: no thread, no stack");
	th_check(g4 && g4->api_name_id == 1 && site(&L, g4, 31), "a stack without its API record still joins");
	th_check(gw && gw->n_sites == 0 && L.n_work_no_api == 3, "work after its call's window is not joined");
	th_check(group(&L, 0, 303) != NULL, "work of correlation 0 is not joined to a call of correlation 0");
	th_check(L.n_stacks == 3 && L.n_stacks_joined == 2, "stacks fed and stacks that found work");
	ana_launches_free(&L);
}

/* fold --weight gpu-time over a model: launch stack + [kernel NAME], [no launch stack]. */
static void fold_gpu(void)
{
	ana_model *m = calloc(1, sizeof(*m));
	ana_string *s = ana_vec_push(m->strings);
	*s = (ana_string){ 7, 1, strdup("cudaLaunchKernel") };
	s = ana_vec_push(m->strings);
	*s = (ana_string){ 7, 2, strdup("_Z4gemmPfi") };
	ana_thread *t = ana_vec_push(m->threads);
	t->pid = 7;
	t->tid = 7;
	t->name = strdup("main");
	ana_frame f1 = { .name = "train", .module = "a.py", .file = "a.py", .line = 3, .kind = ANA_FRAME_PYTHON };
	ana_frame f2 = { .name = "at::mm", .module = "libtorch.so" };
	uint32_t fr[2] = { ana_frame_intern(m, &f1), ana_frame_intern(m, &f2) };
	uint32_t sid = ana_stack_intern(m, fr, 2);
	for (uint32_t c = 1; c <= 3; c++) {
		gtt_cuda_api *a = ana_vec_push(m->apis);
		*a = (gtt_cuda_api){ .start_ns = c * MS, .end_ns = c * MS + 100, .pid = 7, .tid = 7, .correlation = c,
		                     .name_id = 1, .domain = GTT_API_RUNTIME };
		gtt_cuda_kernel *k = ana_vec_push(m->kernels);
		*k = (gtt_cuda_kernel){ .start_ns = c * MS + 200, .end_ns = c * MS + 200 + 1000 * c, .pid = 7,
		                        .correlation = c, .name_id = 2 };
	}
	ana_callstack *cs = ana_vec_push(m->callstacks);
	*cs = (ana_callstack){ .time_ns = MS + 10, .pid = 7, .tid = 7, .correlation = 1, .name_id = 1,
	                       .flags = GTT_CALLSTACK_FIRST, .stack_id = sid };
	m->start_ns = MS;
	m->end_ns = 4 * MS;
	ana_fold_opts o;
	ana_fold_opts_init(&o);
	o.weight = ANA_WEIGHT_GPU_TIME;
	ana_folded fd;
	th_check(ana_fold(m, &o, &fd) == 0, "fold --weight gpu-time");
	th_check(fd.n == 2 && fd.total == 6000, "two lines, 6 us of GPU time in all");
	th_check(fd.n == 2 && strcmp(fd.lines[0].stack, "[no launch stack];[kernel gemm]") == 0 &&
	         fd.lines[0].count == 5000, "launches without a stack under [no launch stack] (%s)",
	         fd.n ? fd.lines[0].stack : "-");
	th_check(fd.n == 2 && strcmp(fd.lines[1].stack, "train;at::mm;[kernel gemm]") == 0 && fd.lines[1].count == 1000,
	         "the sampled launch under its stack, kernel leaf without parameters (%s)", fd.n > 1 ? fd.lines[1].stack : "-");
	ana_folded_free(&fd);
	o.threads = 1;
	o.python_only = 1;
	th_check(ana_fold(m, &o, &fd) == 0 && fd.n == 2 && strcmp(fd.lines[1].stack, "main 7;main 7;train;[kernel gemm]") == 0,
	         "--threads roots name the launching thread, --python-only keeps Python frames (%s)",
	         fd.n > 1 ? fd.lines[1].stack : "-");
	ana_folded_free(&fd);
	o.threads = o.python_only = 0;
	o.from_ns = 2 * MS; /* work starting from 3 ms on: call 3 only */
	th_check(ana_fold(m, &o, &fd) == 0 && fd.n == 1 && fd.total == 3000, "the window selects work by its start");
	ana_folded_free(&fd);
	ana_model_free(m);
}

/* The agent's sampling simulated: 20 000 launches of one kernel from two sites (70 % from site
 * 40 at 2 us, 30 % from site 41 at 5 us, in random order), first 4 with a stack, then 1 in 16
 * with gaps uniform in 1..31: the estimate lands near the truth (a fixed seed: deterministic). */
static void simulated(void)
{
	A = ana_launch_acc_new();
	uint64_t seed = 0x9e3779b97f4a7c15ull, n_site[2] = { 0 }, ns_site[2] = { 0 };
	int countdown = 0, bad = 0;
	for (uint32_t c = 1; c <= 20000; c++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int site = (seed >> 33) % 100 < 70 ? 0 : 1;
		uint64_t t = (uint64_t)c * 10000, dur = site ? 5000 : 2000;
		gtt_cuda_api a = { .start_ns = t, .end_ns = t + 1000, .pid = 7, .tid = 9, .correlation = c, .name_id = 1,
		                   .domain = GTT_API_RUNTIME };
		bad += ana_launch_acc_api(A, &a) != 0;
		uint32_t flags = 0;
		if (c <= 4) {
			flags = GTT_CALLSTACK_FIRST;
		} else if (--countdown <= 0) {
			flags = GTT_CALLSTACK_NTH;
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			countdown = 1 + (int)((seed >> 33) % 31);
		}
		if (c == 4)
			countdown = 1 + (int)((seed >> 40) % 31);
		if (flags) {
			ana_callstack cs = { .time_ns = t + 10, .pid = 7, .tid = 9, .correlation = c, .name_id = 1, .flags = flags,
			                     .stack_id = 40 + (uint32_t)site };
			bad += ana_launch_acc_stack(A, &cs) != 0;
		}
		bad += ana_launch_acc_work(A, ANA_WORK_KERNEL, 7, c, 500, t + 2000, t + 2000 + dur) != 0;
		n_site[site]++;
		ns_site[site] += dur;
	}
	ana_launches L;
	th_check(!bad && ana_launch_acc_finish(A, &L) == 0, "20000 simulated launches taken");
	const ana_launch_group *g = group(&L, 9, 500);
	const ana_launch_site *s0 = site(&L, g, 40), *s1 = site(&L, g, 41);
	th_check(g && s0 && s1, "both sites found");
	if (g && s0 && s1) {
		double e0 = fabs(s0->est_n - (double)n_site[0]) / (double)n_site[0];
		double e1 = fabs(s1->est_ns - (double)ns_site[1]) / (double)ns_site[1];
		th_check(g->n_nth > 1000 && g->n_nth < 1500, "about 1 in 16 sampled (%llu)", (unsigned long long)g->n_nth);
		th_check(e0 < 0.05, "site 40: ~%.0f launches estimated, %llu true (%.1f %% off)", s0->est_n,
		         (unsigned long long)n_site[0], 100 * e0);
		th_check(e1 < 0.05, "site 41: ~%.0f us estimated, %llu true (%.1f %% off)", s1->est_ns / 1000,
		         (unsigned long long)ns_site[1] / 1000, 100 * e1);
		th_check(near(s0->est_n + s1->est_n, 20000) && g->none_n == 0, "the sites add up to every launch");
	}
	ana_launches_free(&L);
}

int main(void)
{
	simulated();
	sampling();
	no_nth();
	joins();
	fold_gpu();
	return th_report();
}
