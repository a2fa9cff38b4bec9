/* test_job_views.c — analyze/procs.c and analyze/ranks.c on a hand-built job of known numbers:
 * three ranks (two on one GPU, one on another) and a rank's forked child; each rank's identity,
 * devices and the busy time of its own GPU work; the straggler view on NVTX ranges (rank 1 is 3 ms
 * slower every step; a second thread's ranges of the same name are not mixed in) and on a step
 * counter; the GPU busy spread across devices in the report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procs.h"
#include "ranks.h"
#include "testhelp.h"

#define MS 1000000ull
#define T0 1000000000ull

static ana_model *M;

static void meta(const char *k, const char *v)
{
	ana_kv *e = ana_vec_push(M->meta);
	e->key = strdup(k);
	e->value = strdup(v);
}

static void thread(uint32_t pid, uint32_t tid)
{
	ana_thread *t = ana_vec_push(M->threads);
	t->pid = pid;
	t->tid = tid;
	t->name = strdup("worker");
	t->n_samples = 10;
	t->sampled_ns = 10 * MS;
}

static void process(uint32_t pid, uint32_t ppid, uint32_t event, const char *comm)
{
	gtt_process *p = ana_vec_push(M->processes);
	p->pid = pid;
	p->ppid = ppid;
	p->event = event;
	p->time_ns = T0;
	p->comm = ana_intern_str(M, comm);
}

static void device(uint32_t pid, const char *uuid)
{
	gtt_cuda_device *d = ana_vec_push(M->cuda_devices);
	d->pid = pid;
	d->name = ana_intern_str(M, "TestGPU");
	d->uuid = ana_intern_str(M, uuid);
}

static void kernel(uint32_t pid, uint64_t s_ms, uint64_t e_ms)
{
	gtt_cuda_kernel *k = ana_vec_push(M->kernels);
	k->pid = pid;
	k->start_ns = T0 + s_ms * MS;
	k->end_ns = T0 + e_ms * MS;
}

static void string(uint32_t pid, uint32_t id, const char *text)
{
	ana_string *s = ana_vec_push(M->strings);
	s->pid = pid;
	s->id = id;
	s->text = strdup(text);
}

static void range(uint32_t pid, uint32_t tid, uint64_t s_ms, uint64_t e_ms)
{
	gtt_nvtx *r = ana_vec_push(M->nvtx);
	r->pid = pid;
	r->tid = tid;
	r->kind = GTT_NVTX_RANGE;
	r->name_id = 7;
	r->start_ns = T0 + s_ms * MS;
	r->end_ns = T0 + e_ms * MS;
}

static void counter(uint32_t pid, uint64_t t_ms, double v)
{
	gtt_counter *c = ana_vec_push(M->counters);
	c->pid = pid;
	c->name_id = 8;
	c->time_ns = T0 + t_ms * MS;
	c->value = v;
}

static void build(void)
{
	M = calloc(1, sizeof(*M));
	M->start_ns = T0;
	M->end_ns = T0 + 100 * MS;
	/* threads sorted by (pid, tid), as the loader leaves them */
	thread(100, 100);
	thread(100, 101);
	thread(200, 200);
	thread(300, 300);
	thread(400, 400);
	process(100, 1, GTT_PROC_EXEC, "python train.py");
	process(200, 1, GTT_PROC_EXEC, "python train.py");
	process(300, 1, GTT_PROC_EXEC, "python train.py");
	process(400, 100, GTT_PROC_FORK, "python train.py");
	meta("process.100.rank", "0");
	meta("process.100.world_size", "3");
	meta("process.200.rank", "1");
	meta("process.200.world_size", "3");
	meta("process.300.rank", "2");
	meta("process.300.world_size", "3");
	meta("process.400.rank", "0"); /* a DataLoader worker: its parent's environment */
	meta("process.400.world_size", "3");
	device(100, "GPU-A");
	device(200, "GPU-A");
	device(300, "GPU-B");
	kernel(100, 0, 10);
	kernel(100, 5, 15);  /* overlapping: 15 ms of busy for rank 0 */
	kernel(200, 0, 10);  /* same device: rank 1 busy 10 ms, the device 15 ms */
	kernel(300, 20, 24); /* the other device: 4 ms */
	for (uint32_t pid = 100; pid <= 300; pid += 100) {
		string(pid, 7, "train_step");
		string(pid, 8, "step");
	}
	for (uint64_t k = 0; k < 5; k++) {
		range(100, 100, 20 * k, 20 * k + 10);
		range(200, 200, 20 * k, 20 * k + 13); /* 3 ms slower every step */
		range(300, 300, 20 * k, 20 * k + 10);
		counter(100, 20 * k + 10, (double)k + 1);
		counter(200, 20 * k + 13, (double)k + 1);
		counter(300, 20 * k + 10, (double)k + 1);
	}
	/* rank 0's other thread names its own ranges the same, much longer: not rank 0's steps */
	for (uint64_t k = 0; k < 3; k++)
		range(100, 101, 20 * k, 20 * k + 19);
}

int main(void)
{
	ana_procs P;
	build();
	th_check(ana_procs_build(M, &P) == 0 && P.n == 4, "4 processes (%zu)", P.n);
	const ana_proc *r0 = ana_procs_find(&P, 100), *r1 = ana_procs_find(&P, 200), *r2 = ana_procs_find(&P, 300),
	               *w = ana_procs_find(&P, 400);
	th_check(r0 && r1 && r2 && w, "each found by pid");
	if (!(r0 && r1 && r2 && w))
		return th_report();
	char label[96];
	ana_proc_label(r1, label, sizeof(label));
	th_check(strcmp(label, "rank 1/3") == 0, "rank 1 labelled '%s'", label);
	ana_proc_label(w, label, sizeof(label));
	th_check(w->inherited && strcmp(label, "rank 0/3 (child)") == 0, "the forked worker is rank 0's child: '%s'", label);
	th_check(!r0->inherited && r0->n_threads == 2 && r0->n_samples == 20, "rank 0: 2 threads, 20 samples");
	th_check(r0->gpu_busy_ns == 15 * MS && r1->gpu_busy_ns == 10 * MS && r2->gpu_busy_ns == 4 * MS,
	         "busy of each rank's own work: 15, 10, 4 ms (%.1f %.1f %.1f)", (double)r0->gpu_busy_ns / MS,
	         (double)r1->gpu_busy_ns / MS, (double)r2->gpu_busy_ns / MS);
	th_check(r0->n_devs == 1 && r1->n_devs == 1 && r2->n_devs == 1 && r0->devs[0] == r1->devs[0] &&
	         r2->devs[0] != r0->devs[0], "ranks 0 and 1 on one physical GPU (same UUID), rank 2 on another");
	th_check(r0->n_kernels == 2 && r0->kernel_ns == 20 * MS, "rank 0: 2 kernels, 20 ms of kernel time");

	size_t order[4] = { 3, 2, 1, 0 };
	ana_procs_sort(&P, order, 4);
	th_check(P.v[order[0]].pid == 100 && P.v[order[1]].pid == 400 && P.v[order[2]].pid == 200 &&
	         P.v[order[3]].pid == 300, "job order: rank 0, its child, rank 1, rank 2");

	ana_straggle *S = NULL;
	size_t n = 0;
	th_check(ana_ranks_stragglers(M, &P, &S, &n) == 0 && n == 2, "two step series: the range and the counter (%zu)", n);
	for (size_t i = 0; i < n; i++) {
		const ana_straggle *s = &S[i];
		if (!s->is_counter) {
			th_check(!strcmp(s->name, "train_step") && s->n_procs == 3 && s->n_steps == 5,
			         "NVTX train_step: 3 ranks, 5 steps (rank 0's second thread left out) (%zu, %zu)", s->n_procs,
			         s->n_steps);
			th_check(s->worst_pid == 200 && s->worst_times == 5, "rank 1 slowest in every step");
			th_check(s->median_excess_ns == 3 * MS && s->max_excess_ns == 3 * MS && s->max_median_ns == 10 * MS,
			         "3 ms over the median of 10 ms (%.3f ms)", (double)s->median_excess_ns / MS);
		} else {
			/* intervals between changes: rank 1's are 20 ms like the others' after the first */
			th_check(!strcmp(s->name, "step") && s->n_steps == 4 && s->median_excess_ns == 0,
			         "counter step: 4 intervals compared, no straggler in the intervals (%zu, %.3f ms)", s->n_steps,
			         (double)s->median_excess_ns / MS);
		}
	}
	free(S);

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ana_procs_report(M, f, 10);
	fclose(f);
	th_check(buf && strstr(buf, "Processes (") && strstr(buf, "Across ranks"), "the report has both sections");
	th_check(buf && strstr(buf, "min 4.0%, median 15.0%, max 15.0%; spread 11.0 points"),
	         "GPU busy across 2 devices: 4%% and 15%%, spread 11 points");
	th_check(buf && strstr(buf, "rank 0/3 (pid 100) 15.0%; rank 1/3 (pid 200) 10.0%"),
	         "the shared device lists both ranks with their own busy");
	if (th_failed && buf)
		fputs(buf, stdout);
	free(buf);
	ana_procs_free(&P);
	ana_model_free(M);
	return th_report();
}
