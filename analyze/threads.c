/* threads.c — per-thread figures derived once a trace is read (load.c calls these after its
 * passes): names of threads never named, which threads are Python threads, CPU time from /proc
 * readings, on-CPU time from context switches, the weight of samples without a period; and the
 * process command names by pid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "model.h"
#include "captured.h"
#include "model_priv.h"
#include "oncpu.h"

typedef struct proc_comm { uint32_t pid; uint32_t idx; } proc_comm;

static int proc_comm_cmp(const void *a, const void *b)
{
	const proc_comm *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The processes' records with a command (comms) and with a parent (parents), by (pid, record
 * order): lookups per thread or per stack cost a search, not a scan of every process record. */
static int index_by_pid(const ana_model *m, proc_comm **v, size_t *n, int parents)
{
	size_t k = 0;
	free(*v);
	*v = malloc((m->processes.n ? m->processes.n : 1) * sizeof(**v));
	if (!*v)
		return GTT_ENOMEM;
	for (size_t i = 0; i < m->processes.n; i++) {
		const gtt_process *pr = &m->processes.v[i];
		if (parents ? pr->ppid != 0 : pr->comm && pr->comm[0])
			(*v)[k++] = (proc_comm){ pr->pid, (uint32_t)i };
	}
	if (k > 1)
		qsort(*v, k, sizeof(**v), proc_comm_cmp);
	*n = k;
	return 0;
}

int ana_index_processes(ana_model *m)
{
	ana_priv *p = ana_priv_get(m);
	if (!p || index_by_pid(m, &p->comms, &p->n_comms, 0) < 0 || index_by_pid(m, &p->parents, &p->n_parents, 1) < 0)
		return GTT_ENOMEM;
	p->procs_indexed = 1;
	return 0;
}

/* The record of pid last in the index v[0..n), or NULL. */
static const gtt_process *last_of(const ana_model *m, const proc_comm *v, size_t n, uint32_t pid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].pid <= pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && v[lo - 1].pid == pid ? &m->processes.v[v[lo - 1].idx] : NULL;
}

/* A model built by hand (tests) has no index: the last matching record, by a scan. */
static const gtt_process *last_scan(const ana_model *m, uint32_t pid, int parents)
{
	const gtt_process *found = NULL;
	for (size_t i = 0; i < m->processes.n; i++) {
		const gtt_process *pr = &m->processes.v[i];
		if (pr->pid == pid && (parents ? pr->ppid != 0 : pr->comm && pr->comm[0]))
			found = pr;
	}
	return found;
}

const char *ana_process_comm(const ana_model *m, uint32_t pid)
{
	const ana_priv *p = m->priv;
	const gtt_process *pr = p && p->procs_indexed ? last_of(m, p->comms, p->n_comms, pid) : last_scan(m, pid, 0);
	return pr ? pr->comm : NULL;
}

const gtt_process *ana_process_parent(const ana_model *m, uint32_t pid)
{
	const ana_priv *p = m->priv;
	return p && p->procs_indexed ? last_of(m, p->parents, p->n_parents, pid) : last_scan(m, pid, 1);
}

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

/* (pid, tid, time) order for switches and thread_cpu, as an index. */
typedef struct keyed { uint32_t pid, tid; uint64_t time; size_t idx; } keyed;
static int keyed_cmp(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	int c = cmp_u64(x->time, y->time);
	return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

/* by pid, then time (then record order) */
static int keyed_cmp_time(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	int c = cmp_u64(x->time, y->time);
	return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

/* A pid that a new process took after an earlier one with it exited (long recordings of
 * programs that fork many short children): the model keys threads, names and address spaces by
 * pid, so the later process's samples are counted under the earlier one's threads and named
 * with its binaries. The tool cannot tell them apart, so it says so. tid holds the event. */
static int check_pid_reuse(ana_model *m)
{
	size_t n = 0, reused = 0;
	uint32_t first = 0;
	keyed *k = malloc((m->processes.n + 1) * sizeof(*k));
	if (!k)
		return GTT_ENOMEM;
	for (size_t i = 0; i < m->processes.n; i++) {
		const gtt_process *pr = &m->processes.v[i];
		if (pr->event == GTT_PROC_START || pr->event == GTT_PROC_FORK || pr->event == GTT_PROC_EXIT)
			k[n++] = (keyed){ pr->pid, pr->event, pr->time_ns, i };
	}
	qsort(k, n, sizeof(*k), keyed_cmp_time);
	for (size_t i = 1; i < n; i++)
		if (k[i].pid == k[i - 1].pid && k[i - 1].tid == GTT_PROC_EXIT && k[i].tid != GTT_PROC_EXIT &&
		    k[i].time > k[i - 1].time && reused++ == 0)
			first = k[i].pid;
	free(k);
	if (reused)
		ana_warn(m, "%s: %zu process start(s) took a pid that an exited process of the recording had (pid "
		            "%u first): their samples are counted under the earlier process's threads and named "
		            "with its binaries", m->path, reused, first);
	return 0;
}

int ana_threads_finish(ana_model *m)
{
	if (check_pid_reuse(m) < 0)
		return GTT_ENOMEM;
	for (size_t i = 0; i < m->pystacks.n; i++)
		ana_thread_find(m, m->pystacks.v[i].pid, m->pystacks.v[i].tid)->is_python = 1;
	for (size_t i = 0; i < m->threads.n; i++) {
		ana_thread *t = &m->threads.v[i];
		if (t->name)
			continue;
		/* a thread never named: the main thread takes its process's command name */
		const char *comm = t->tid == t->pid ? ana_process_comm(m, t->pid) : NULL;
		char buf[256];
		if (comm) {
			const char *sp = strchr(comm, ' ');
			size_t len = sp ? (size_t)(sp - comm) : strlen(comm);
			const char *base = memrchr(comm, '/', len);
			base = base ? base + 1 : comm;
			snprintf(buf, sizeof(buf), "%.*s", (int)(len - (size_t)(base - comm)), base);
		} else {
			snprintf(buf, sizeof(buf), "?");
		}
		t->name = strdup(buf);
		if (!t->name)
			return GTT_ENOMEM;
	}
	return ana_thread_names(m); /* Python's names for its threads (py_thread records) */
}

/* utime+stime growth over the recording. A thread created while the /proc loop was already
 * running started from zero; one that existed before started from its first reading. */
int ana_threads_cpu(ana_model *m)
{
	size_t n = m->thread_cpu.n;
	if (!n)
		return 0;
	keyed *k = malloc(n * sizeof(*k));
	if (!k)
		return GTT_ENOMEM;
	uint64_t loop_start = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		const gtt_thread_cpu *c = &m->thread_cpu.v[i];
		k[i] = (keyed){ c->pid, c->tid, c->time_ns, i };
		if (c->time_ns < loop_start)
			loop_start = c->time_ns;
	}
	qsort(k, n, sizeof(*k), keyed_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && k[j].pid == k[i].pid && k[j].tid == k[i].tid)
			j++;
		const gtt_thread_cpu *first = &m->thread_cpu.v[k[i].idx], *last = &m->thread_cpu.v[k[j - 1].idx];
		ana_thread *t = ana_thread_find(m, k[i].pid, k[i].tid);
		uint64_t base = ana_sat_add(first->utime_ns, first->stime_ns), end = ana_sat_add(last->utime_ns, last->stime_ns);
		int born_later = t && t->start_ns > loop_start;
		if (born_later)
			base = 0;
		uint64_t csw0 = ana_sat_add(first->nvcsw, first->nivcsw), csw1 = ana_sat_add(last->nvcsw, last->nivcsw);
		if (t)
			t->n_csw = csw1 > csw0 ? csw1 - csw0 : 0;
		if (t && ana_capture_controlled(m)) {
			/* only growth between two readings of one captured interval: the loop is paused
			 * outside capture, so a reading pair across a gap holds uncaptured time */
			t->cpu_ns = 0;
			for (size_t x = i + 1; x < j; x++) {
				const gtt_thread_cpu *a = &m->thread_cpu.v[k[x - 1].idx], *b = &m->thread_cpu.v[k[x].idx];
				size_t ia = ana_capture_index(m, a->time_ns);
				uint64_t ca = ana_sat_add(a->utime_ns, a->stime_ns), cb = ana_sat_add(b->utime_ns, b->stime_ns);
				if (ia < m->captured.n && ia == ana_capture_index(m, b->time_ns) &&
				    m->captured.v[ia].start_ns <= a->time_ns && cb > ca)
					t->cpu_ns = ana_sat_add(t->cpu_ns, cb - ca);
			}
			t->cpu_known = 1;
		} else if (t) {
			t->cpu_ns = end > base ? end - base : 0;
			/* the recorder writes a reading when the numbers change: one reading means no
			 * growth after it */
			t->cpu_known = 1;
		}
		i = j;
	}
	free(k);
	return 0;
}

/* On-CPU time from the model's switch records (a model that keeps them): every switch put in
 * time order first, then folded like the loader folds them as it reads (oncpu.c). */
int ana_threads_oncpu(ana_model *m)
{
	if (!m->switches.n)
		return 0;
	ana_oncpu *o = ana_oncpu_new(1, UINT64_MAX);
	int rc = o ? 0 : GTT_ENOMEM;
	for (size_t i = 0; i < m->switches.n && rc == 0; i++)
		rc = ana_oncpu_add(o, m, &m->switches.v[i]);
	if (rc == 0)
		rc = ana_oncpu_finish(o, m);
	ana_oncpu_free(o);
	return rc;
}

uint64_t ana_fill_period_ns(const ana_model *m)
{
	uint64_t period = 0;
	for (size_t i = 0; i < m->health.n; i++)
		if (m->health.v[i].kind == GTT_HEALTH_CONFIG && m->health.v[i].source == GTT_SRC_PERF)
			period = m->health.v[i].value[1];
	const char *hz = ana_meta_get(m, "frequency_hz");
	if (!period && hz && atof(hz) > 0)
		period = gt_hz_to_period_ns(atof(hz));
	return period;
}

/* Samples without a period stand for the configured one. */
void ana_fill_weights(ana_model *m)
{
	uint64_t period = ana_fill_period_ns(m);
	if (!period)
		return;
	for (size_t i = 0; i < m->samples.n; i++)
		if (!m->samples.v[i].weight_ns)
			m->samples.v[i].weight_ns = period;
}
