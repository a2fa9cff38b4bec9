/* load_pass1.c — pass 1 of the loader: every record of the trace into the model (load.c's
 * ana_load_take_record), errors in words; on a streamed model (report) its records decoded on a
 * thread of their own (load_pipe.c), which takes the context switches and CUDA records itself
 * (ana_pipe_divert) and passes over the CUDA chunks with their headers read (gtt_reader_summarize),
 * so that the loader's thread gets only what it keeps. */
#include <inttypes.h>
#include <stdio.h>

#include "load_pipe.h"
#include "load_priv.h"
#include "window.h"

int ana_load_read_error(loader *L, int rc, uint64_t off, char *errbuf, size_t errlen)
{
	if (rc == GTT_ECORRUPT)
		snprintf(errbuf, errlen, "%s: corrupt chunk at byte %" PRIu64 " (checksum mismatch or impossible length)",
		         L->m->path, off);
	else if (rc == GTT_EINVAL)
		snprintf(errbuf, errlen, "%s: record at byte %" PRIu64 " does not decode", L->m->path, off);
	else
		snprintf(errbuf, errlen, "%s: %s", L->m->path, gtt_strerror(rc));
	return rc;
}


/* Pass 1's context switches and CUDA work, sync and API records on a streamed model, on the
 * pipe's thread (ana_pipe_divert): switches folded into on-CPU time there (the fold reads nothing
 * the loader's thread changes meanwhile), the CUDA records counted (pass 3 reads them for the GPU
 * report), and the times of both kept for the bounds, which the loader takes once the pass is
 * over. They are nearly all of a GIL-contended GPU trace's records: they need not cross to the
 * loader's thread one by one. */
typedef struct pass1_divert {
	loader *L;
	uint64_t t_min, t_max; /* the earliest and latest time see_time would have taken (0: none) */
	uint64_t n_streamed;
	int late;              /* the chunk index has no horizon: pass 1 measures it (ana_load_horizon) */
	uint64_t latest_end;
} pass1_divert;

/* see_time's test, on the pipe's thread: the window does not change during pass 1. */
static void divert_see(pass1_divert *pd, uint64_t t)
{
	const ana_window *w = &pd->L->m->window;
	if (!t || (w->on && (t < w->from_ns || t >= w->to_ns)))
		return;
	if (!pd->t_min || t < pd->t_min)
		pd->t_min = t;
	if (t > pd->t_max)
		pd->t_max = t;
}

static int pass1_divert_fn(void *ctx, gtt_record *rec)
{
	pass1_divert *pd = ctx;
	ana_model *m = pd->L->m;
	/* as pass1 and take_record take them: the window's own (no such record is carried into a
	 * window), an interval cut at its edges */
	if (!ana_window_keep(&m->window, rec))
		return 0;
	switch (rec->tag) {
	case GTT_REC_SWITCH:
		divert_see(pd, rec->u.sw.time_ns);
		return ana_oncpu_add(pd->L->oncpu, m, &rec->u.sw);
	case GTT_REC_CUDA_KERNEL: divert_see(pd, rec->u.kernel.start_ns); divert_see(pd, rec->u.kernel.end_ns); break;
	case GTT_REC_CUDA_MEMCPY: divert_see(pd, rec->u.memcpy.start_ns); divert_see(pd, rec->u.memcpy.end_ns); break;
	case GTT_REC_CUDA_MEMSET: divert_see(pd, rec->u.memset.start_ns); divert_see(pd, rec->u.memset.end_ns); break;
	case GTT_REC_CUDA_SYNC: divert_see(pd, rec->u.sync.start_ns); divert_see(pd, rec->u.sync.end_ns); break;
	default: divert_see(pd, rec->u.api.start_ns); divert_see(pd, rec->u.api.end_ns); break;
	}
	pd->n_streamed++; /* take_streamed's count; the report's tables are pass 3's */
	return ana_load_count_cuda(pd->L, rec); /* the tables' (diff, fold): counted by name now */
}

/* Every record pass 1 reads, diverted or not, in file order: how late records come. */
static void pass1_see(void *ctx, const gtt_record *rec)
{
	pass1_divert *pd = ctx;
	ana_load_see_late(pd->L, &pd->latest_end, rec);
}

/* The next record of pass 1: from the pipe (a streamed model: decoded on a thread of its own),
 * else read here (and seen, as the pipe sees the records it reads). gtt_reader_next's result;
 * *off the reader's offset after it. */
static int pass1_next(loader *L, ana_pipe *pp, pass1_divert *pd, gtt_record *buf, gtt_record **rec, uint64_t *off)
{
	if (pp)
		return ana_pipe_next(pp, rec, off);
	int rc = gtt_reader_next(L->r, buf);
	if (rc > 0 && pd->late)
		ana_load_see_late(L, &pd->latest_end, buf);
	*rec = buf;
	*off = gtt_reader_offset(L->r);
	return rc;
}

#define PASS1_DIVERTED                                                                                    \
	(GTT_KIND_BIT(GTT_REC_SWITCH) | GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_MEMCPY) |   \
	 GTT_KIND_BIT(GTT_REC_CUDA_MEMSET) | GTT_KIND_BIT(GTT_REC_CUDA_SYNC) | GTT_KIND_BIT(GTT_REC_CUDA_API))

int ana_load_pass1(loader *L, char *errbuf, size_t errlen)
{
	gtt_record buf, *rec;
	int rc = 0;
	uint64_t n = 0, off = 0, size = gtt_reader_size(L->r);
	pass1_divert pd = { .L = L };
	gtt_summary sum;
	/* the CUDA records' chunks, for the report: their headers say all that pass 1 takes of them
	 * (how many, and the earliest and latest time), so they are not expanded; pass 3 reads them,
	 * and reports what only their records could show wrong (load_stream.c). (The tables' mode
	 * counts them by name here: they are read) */
	L->cuda_summed = L->stream && !L->m->window.on && L->o->stream_cuda == ANA_STREAM_CUDA_REPORT;
	gtt_reader_summarize(L->r, L->cuda_summed ? 1u << GTT_STREAM_CUDA : 0);
	/* nor does it unwind a sample: the samples come bare, and in a 1.2 trace their stack copies
	 * (most of a DWARF recording's bytes) are not expanded. Pass 2 expands them and reports in
	 * pass 1's words what they show wrong; under --skip-corrupt pass 1 reads them whole, to skip
	 * such a chunk and count it as it skips any other */
	L->p1_bare = L->stream && !L->o->skip_corrupt;
	gtt_reader_skip_stacks(L->r, L->p1_bare);
	/* (a model that keeps its switches takes them here: gt-render's) */
	/* a trace whose chunk index has no time ranges (format 1.0) would have the passes that merge
	 * in time order (pass 3, the GPU sweep) hold every record to the end: pass 1 measures how
	 * late they come instead */
	L->p1_late_ns = 0;
	L->p1_late_ok = 0;
	pd.late = (L->stream || L->o->stream_cuda == ANA_STREAM_CUDA_REPORT || L->o->stream_cuda == ANA_STREAM_CUDA_LAUNCHES) &&
	          ana_load_horizon(L) == UINT64_MAX;
	ana_pipe_divert d = { .mask = PASS1_DIVERTED & ~(L->o->keep_switches ? GTT_KIND_BIT(GTT_REC_SWITCH) : 0),
	                      .fn = pass1_divert_fn, .ctx = &pd, .see = pd.late ? pass1_see : NULL };
	/* a streamed model's pass 1 uses no record's stack or frames: decoded ahead, off this thread */
	ana_pipe *pp = L->stream ? ana_pipe_start_divert(L->r, ANA_PIPE_PASS1_STREAM, L->o->skip_corrupt, !L->m->window.on, &d)
	                         : NULL;
	if (L->stream && !pp) {
		snprintf(errbuf, errlen, "%s: out of memory", L->m->path);
		return GTT_ENOMEM;
	}
	while ((rc = pass1_next(L, pp, &pd, &buf, &rec, &off)) != 0) {
		if (rc < 0) {
			if ((rc == GTT_ECORRUPT || rc == GTT_EINVAL) && L->o->skip_corrupt) {
				L->m->n_corrupt++;
				continue;
			}
			ana_load_read_error(L, rc, off, errbuf, errlen);
			goto out;
		}
		if (!ana_window_keep(&L->m->window, rec)) {
			/* before the window: what it says about the state when the window begins */
			uint64_t from = L->m->window.from_ns;
			if ((rec->tag == GTT_REC_GIL && rec->u.gil.time_ns < from && (rc = ana_load_carry_gil(L, &rec->u.gil)) < 0) ||
			    (rec->tag == GTT_REC_THREAD_CPU && rec->u.thread_cpu.time_ns < from &&
			     (rc = ana_load_carry_cpu(L, &rec->u.thread_cpu)) < 0)) {
				snprintf(errbuf, errlen, "%s: out of memory", L->m->path);
				goto out;
			}
			continue;
		}
		if ((rc = ana_load_take_record(L, rec)) < 0) {
			snprintf(errbuf, errlen, "%s: out of memory", L->m->path);
			goto out;
		}
		if ((++n & 0xffff) == 0)
			ana_load_progress(L, "reading", off, size);
	}
out:
	ana_pipe_free(pp); /* the reader is this thread's again, the switches' fold this one's */
	gtt_reader_skip_stacks(L->r, 0);
	ana_load_see_time(L->m, pd.t_min);
	ana_load_see_time(L->m, pd.t_max);
	L->n_streamed += pd.n_streamed;
	gtt_reader_summary(L->r, &sum);
	gtt_reader_summarize(L->r, 0);
	if (sum.first_ns <= sum.last_ns) { /* (their times are not 0: see gtt_reader_summarize) */
		ana_load_see_time(L->m, sum.first_ns);
		ana_load_see_time(L->m, sum.last_ns);
	}
	L->n_streamed += sum.n_records;
	/* the measure holds when every data record was decoded: none summarized, none cut short */
	L->p1_late_ok = pd.late && rc == 0 && sum.n_records == 0;
	return rc;
}
