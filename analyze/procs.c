/* procs.c — the job's processes: identity, CPU, GIL split, GPU work; the per-process tables. */
#include "procs.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "gpu_sum.h"
#include "gt_util.h"
#include "merge.h"
#include "model_priv.h" /* ana_process_parent */
#include "ranks.h"
#include "report.h"

static int proc_cmp(const void *a, const void *b)
{
	const ana_proc *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

const ana_proc *ana_procs_find(const ana_procs *P, uint32_t pid)
{
	ana_proc key = { .pid = pid };
	return P->n ? bsearch(&key, P->v, P->n, sizeof(*P->v), proc_cmp) : NULL;
}

static ana_proc *find_mut(ana_procs *P, uint32_t pid)
{
	return (ana_proc *)ana_procs_find(P, pid);
}

/* Every pid with threads or a process record, once, sorted. */
static int collect(const ana_model *m, ana_procs *P)
{
	size_t n = m->threads.n + m->processes.n, k = 0;
	P->v = calloc(n ? n : 1, sizeof(*P->v));
	if (!P->v)
		return GTT_ENOMEM;
	for (size_t i = 0; i < m->threads.n; i++)
		P->v[k++].pid = m->threads.v[i].pid;
	for (size_t i = 0; i < m->processes.n; i++)
		P->v[k++].pid = m->processes.v[i].pid;
	qsort(P->v, k, sizeof(*P->v), proc_cmp);
	P->n = 0;
	for (size_t i = 0; i < k; i++)
		if (P->v[i].pid && (!P->n || P->v[P->n - 1].pid != P->v[i].pid))
			P->v[P->n++].pid = P->v[i].pid;
	return 0;
}

/* meta process.PID.KEY (the last value wins, as for every meta key) and a merge's hosts */
static void identities(const ana_model *m, ana_procs *P)
{
	const char *space = ana_meta_get(m, "merge.pid_space");
	uint64_t per = space ? strtoull(space, NULL, 10) : 0;

	P->merged = ana_meta_get(m, "merge.traces") != NULL;
	for (size_t i = 0; i < m->meta.n; i++) {
		const ana_kv *kv = &m->meta.v[i];
		unsigned pid;
		int n = 0;
		ana_proc *p;
		if (sscanf(kv->key, "process.%u.%n", &pid, &n) != 1 || n == 0 || !(p = find_mut(P, pid)))
			continue;
		const char *k = kv->key + n;
		if (!strcmp(k, "rank"))
			p->rank = kv->value;
		else if (!strcmp(k, "world_size"))
			p->world_size = kv->value;
		else if (!strcmp(k, "local_rank"))
			p->local_rank = kv->value;
		else if (!strcmp(k, "role"))
			p->role = kv->value;
		else if (!p->rank && (!strcmp(k, "slurm_procid") || !strcmp(k, "ompi_rank") || !strcmp(k, "pmi_rank")))
			p->rank = kv->value; /* RANK, when also set, comes first: it is read above either way */
		else if (!p->role && !strcmp(k, "role_name"))
			p->role = kv->value;
	}
	/* the command line of its last start or exec (an exit record carries only the short comm) */
	for (size_t i = 0; i < m->processes.n; i++) {
		const gtt_process *r = &m->processes.v[i];
		ana_proc *p = find_mut(P, r->pid);
		if (p && r->comm && r->comm[0] &&
		    (r->event == GTT_PROC_START || r->event == GTT_PROC_EXEC || !p->comm))
			p->comm = r->comm;
	}
	for (size_t i = 0; i < P->n; i++) {
		ana_proc *p = &P->v[i];
		P->any_identity |= p->rank || p->role;
		if (!p->comm)
			p->comm = "?";
		const gtt_process *par = ana_process_parent(m, p->pid);
		p->ppid = par ? par->ppid : 0;
		if (!P->merged || !per)
			continue;
		/* the host of the pid's space: merge.I.hostname of a trace I with that pid_base */
		uint64_t base = p->pid - p->pid % per;
		for (int t = 0; t < ANA_MERGE_MAX_TRACES && !p->host; t++) {
			char key[64];
			snprintf(key, sizeof(key), "merge.%d.pid_base", t);
			const char *b = ana_meta_get(m, key);
			if (!b)
				break;
			if (strtoull(b, NULL, 10) != base)
				continue;
			snprintf(key, sizeof(key), "merge.%d.hostname", t);
			p->host = ana_meta_get(m, key);
		}
	}
}

static void threads_into(const ana_model *m, ana_procs *P)
{
	for (size_t i = 0; i < m->threads.n; i++) {
		const ana_thread *t = &m->threads.v[i];
		ana_proc *p = find_mut(P, t->pid);
		/* tid -1: an exiting thread's switches in traces of gt-record before it told them apart */
		if (!p || t->tid == UINT32_MAX)
			continue;
		p->n_threads++;
		p->n_samples += t->n_samples;
		p->sampled_ns += t->sampled_ns;
		/* on-CPU time from context switches runs to the thread's end; /proc readings miss what
		 * it ran after the last reading before it ended */
		if (t->oncpu_known) {
			p->cpu_ns += t->oncpu_ns;
		} else if (t->cpu_known) {
			p->cpu_ns += t->cpu_ns;
		} else if (t->sampled_ns) {
			p->cpu_ns += t->sampled_ns;
			p->cpu_from_samples = 1;
		}
		for (int c = 0; c < ANA_CLASS_COUNT; c++)
			p->n_class[c] += t->n_class[c];
		p->is_python |= t->is_python;
	}
}

/* Kernels and busy time of each process's own work (the union over its devices), and which
 * devices: from the GPU aggregates (gpu_sum.h). */
static int gpu_into(const ana_model *m, ana_procs *P)
{
	if (!ana_gpu_n_records(m))
		return 0;
	const ana_gpu_sum *S = ana_gpu_sum_of(m);
	if (!S)
		return GTT_ENOMEM;
	for (size_t i = 0; i < S->n_procs; i++) {
		ana_proc *p = find_mut(P, S->procs[i].pid);
		if (!p)
			continue;
		p->n_kernels = S->procs[i].n_kernels;
		p->kernel_ns = S->procs[i].kernel_ns;
		p->gpu_busy_ns = S->procs[i].busy_ns;
	}
	for (size_t i = 0; i < S->n_devs; i++) {
		ana_proc *p = find_mut(P, S->devs[i].pid);
		int d = S->devs[i].index, have = 0;
		if (!p)
			continue;
		for (int j = 0; j < p->n_devs; j++)
			have |= p->devs[j] == d;
		if (!have && p->n_devs < ANA_PROC_MAX_DEVS)
			p->devs[p->n_devs++] = d;
	}
	return 0;
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* A process whose parent carries the same identity inherited it (fork, or exec without a new
 * environment): it is one of that rank's workers. */
static void mark_inherited(ana_procs *P)
{
	for (size_t i = 0; i < P->n; i++) {
		ana_proc *p = &P->v[i];
		const ana_proc *par = p->ppid ? ana_procs_find(P, p->ppid) : NULL;
		p->inherited = (p->rank || p->role) && par && same(par->rank, p->rank) && same(par->role, p->role);
	}
}

int ana_procs_build(const ana_model *m, ana_procs *P)
{
	int rc;
	memset(P, 0, sizeof(*P));
	if ((rc = collect(m, P)) < 0)
		return rc;
	identities(m, P);
	mark_inherited(P);
	threads_into(m, P);
	return gpu_into(m, P);
}

void ana_procs_free(ana_procs *P)
{
	free(P->v);
	memset(P, 0, sizeof(*P));
}

void ana_proc_label(const ana_proc *p, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	if (p->rank)
		n += (size_t)snprintf(buf + n, len - n, "rank %s%s%s", p->rank, p->world_size ? "/" : "",
		                      p->world_size ? p->world_size : "");
	if (p->local_rank && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%sL%s", n ? " " : "", p->local_rank);
	if (p->role && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "", p->role);
	if (p->inherited && n < len)
		n += (size_t)snprintf(buf + n, len - n, " (child)");
	if (!buf[0])
		snprintf(buf, len, "-");
}

/* Shown: processes that did something (samples, 0.5% of a CPU, GPU work), and every rank's own
 * process (not its idle children). */
static int active(const ana_proc *p, uint64_t dur)
{
	return p->n_samples || ana_sat_mul(p->cpu_ns, 200) >= dur || p->gpu_busy_ns ||
	       ((p->rank || p->role) && !p->inherited);
}

static int rank_order(const void *a, const void *b)
{
	const ana_proc *x = *(const ana_proc *const *)a, *y = *(const ana_proc *const *)b;
	/* ranked processes first, by rank; then by pid */
	if (!!x->rank != !!y->rank)
		return x->rank ? -1 : 1;
	if (x->rank && y->rank) {
		long rx = strtol(x->rank, NULL, 10), ry = strtol(y->rank, NULL, 10);
		if (rx != ry)
			return rx < ry ? -1 : 1;
		if (x->inherited != y->inherited)
			return x->inherited ? 1 : -1;
	}
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int idx_order(const void *a, const void *b, void *ctx)
{
	const ana_procs *P = ctx;
	const ana_proc *x = &P->v[*(const size_t *)a], *y = &P->v[*(const size_t *)b];
	return rank_order(&x, &y);
}

void ana_procs_sort(const ana_procs *P, size_t *idx, size_t n)
{
	qsort_r(idx, n, sizeof(*idx), idx_order, (void *)P);
}

static void gil_split(const ana_proc *p, char *buf, size_t len)
{
	uint64_t py = p->n_class[ANA_CLASS_PY_GIL] + p->n_class[ANA_CLASS_NATIVE_GIL] + p->n_class[ANA_CLASS_NATIVE_NOGIL] +
	              p->n_class[ANA_CLASS_WAIT_GIL];
	if (!p->is_python || !py) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf, len, "%.0f/%.0f/%.0f/%.0f", 100.0 * (double)p->n_class[ANA_CLASS_PY_GIL] / (double)py,
	         100.0 * (double)p->n_class[ANA_CLASS_NATIVE_GIL] / (double)py,
	         100.0 * (double)p->n_class[ANA_CLASS_NATIVE_NOGIL] / (double)py,
	         100.0 * (double)p->n_class[ANA_CLASS_WAIT_GIL] / (double)py);
}

static void print_procs(const ana_model *m, const ana_procs *P, const ana_proc **order, size_t n, size_t hidden,
                        FILE *out)
{
	uint64_t dur = ana_duration_ns(m);
	fprintf(out, "\nProcesses (CPU_S: CPU seconds from context switches, else /proc, ~ when partly from samples; GIL: %% of its Python"
	             " threads' samples holding it in Python / holding it in C / released / waiting;"
	             " GPU_BUSY: union of its own kernels, copies and memsets)\n");
	fprintf(out, "  %9s %s%-28s %7s %8s %9s %-15s %-8s %10s %6s %8s  %s\n", "PID", P->merged ? "HOST            " : "",
	        "RANK/ROLE", "THREADS", "SAMPLES", "CPU_S", "GIL py/C/rel/wt", "GPUS", "GPU_BUSY_S", "BUSY%",
	        "KERNELS", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		const ana_proc *p = order[i];
		char label[96], gil[32], gpus[48] = "-", cpu[24];
		size_t k = 0;
		ana_proc_label(p, label, sizeof(label));
		gil_split(p, gil, sizeof(gil));
		for (int d = 0; d < p->n_devs && k < sizeof(gpus); d++)
			k += (size_t)snprintf(gpus + k, sizeof(gpus) - k, "%s%d", d ? "," : "", p->devs[d]);
		snprintf(cpu, sizeof(cpu), "%s%.3f", p->cpu_from_samples ? "~" : "", gt_ns_to_s(p->cpu_ns));
		if (P->merged)
			fprintf(out, "  %9u %-15.15s %-28.28s", p->pid, p->host ? p->host : "?", label);
		else
			fprintf(out, "  %9u %-28.28s", p->pid, label);
		fprintf(out, " %7u %8" PRIu64 " %9s %-15s %-8s %10.3f %5.1f%% %8" PRIu64 "  %.60s\n", p->n_threads, p->n_samples,
		        cpu, gil, gpus, gt_ns_to_s(p->gpu_busy_ns), 100.0 * (double)p->gpu_busy_ns / (double)dur,
		        p->n_kernels, p->comm);
	}
	if (hidden)
		fprintf(out, "  (%zu process%s without samples, GPU work or 0.5%% of a CPU not shown)\n", hidden,
		        hidden == 1 ? "" : "es");
}

typedef struct cstat { uint32_t pid, name_id; uint64_t n, last_ns; double last, min, max; } cstat;
static int cstat_cmp(const void *a, const void *b)
{
	const cstat *x = a, *y = b;
	if (x->name_id != y->name_id)
		return x->name_id < y->name_id ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Each counter per process: its last value (what a rank's own telemetry ends with), min, max. */
static void print_counters(const ana_model *m, const ana_procs *P, FILE *out, int top_n)
{
	cstat *c = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < m->counters.n; i++) {
		const gtt_counter *x = &m->counters.v[i];
		size_t j;
		for (j = 0; j < n && (c[j].pid != x->pid || c[j].name_id != x->name_id); j++)
			;
		if (j == n) {
			if (n >= 4096 || GT_GROW(c, cap, n + 1) < 0)
				continue; /* bounded: a table of 4096 (counter, process) rows says enough */
			c[n++] = (cstat){ x->pid, x->name_id, 0, 0, x->value, x->value, x->value };
		}
		c[j].n++;
		if (x->time_ns >= c[j].last_ns) {
			c[j].last_ns = x->time_ns;
			c[j].last = x->value;
		}
		if (x->value < c[j].min)
			c[j].min = x->value;
		if (x->value > c[j].max)
			c[j].max = x->value;
	}
	if (n) {
		qsort(c, n, sizeof(*c), cstat_cmp);
		fprintf(out, "\nCounters per process (last value, min, max, samples)\n");
		fprintf(out, "  %-28s %9s %-28s %14s %14s %14s %8s\n", "COUNTER", "PID", "RANK/ROLE", "LAST", "MIN", "MAX", "N");
		size_t limit = (size_t)(top_n > 0 ? top_n : 20) * 4;
		for (size_t i = 0; i < n && i < limit; i++) {
			const ana_proc *p = ana_procs_find(P, c[i].pid);
			char label[96] = "-";
			if (p)
				ana_proc_label(p, label, sizeof(label));
			char last[32], lo[32], hi[32];
			fprintf(out, "  %-28.28s %9u %-28.28s %14s %14s %14s %8" PRIu64 "\n",
			        ana_string_get(m, c[i].pid, c[i].name_id), c[i].pid, label,
			        ana_fmt_value(c[i].last, last, sizeof(last)), ana_fmt_value(c[i].min, lo, sizeof(lo)),
			        ana_fmt_value(c[i].max, hi, sizeof(hi)), c[i].n);
		}
		if (n > limit)
			fprintf(out, "  (%zu more rows)\n", n - limit);
	}
	free(c);
}

void ana_procs_report(const ana_model *m, FILE *out, int top_n)
{
	ana_procs P;
	const ana_proc **order = NULL;
	size_t n = 0, hidden = 0;
	uint64_t dur = ana_duration_ns(m);

	if (ana_procs_build(m, &P) < 0 || !(order = malloc((P.n ? P.n : 1) * sizeof(*order))))
		goto out;
	for (size_t i = 0; i < P.n; i++) {
		if (active(&P.v[i], dur))
			order[n++] = &P.v[i];
		else
			hidden++;
	}
	if (n < 2 && !P.any_identity && !P.merged)
		goto out; /* one process: the thread table says it all */
	qsort(order, n, sizeof(*order), rank_order);
	print_procs(m, &P, order, n, hidden, out);
	if (P.any_identity || P.merged)
		print_counters(m, &P, out, top_n);
	ana_ranks_report(m, &P, out, top_n);
out:
	free(order);
	ana_procs_free(&P);
}
