/* load_priv.h — what analyze/load.c (reading, derived figures) and analyze/load_unwind.c
 * (pass 2: every sample's stack) share: the loader's state. Not for use elsewhere.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_LOAD_PRIV_H
#define ANA_LOAD_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "dwfl.h"
#include "gtt.h"
#include "launch.h"
#include "model.h"
#include "model_priv.h"
#include "oncpu.h"

#define MAX_DEPTH 2048

/* An embedded binary being assembled from its archive pieces. */
typedef struct pending_archive {
	uint8_t build_id[GTT_BUILD_ID_MAX];
	uint32_t build_id_len;
	char *path;
	uint64_t total, got;
	uint8_t *data;
	int bad;
} pending_archive;

/* A distinct callchain of samples without registers (frame-pointer callchains): pass 1
 * interns them, pass 2 symbolizes each once per address space. */
typedef struct chain {
	uint32_t pid, n_kernel, n_user;
	uint32_t space;        /* address space of the cached result + 1, 0 none yet */
	uint32_t stack_id;     /* cached result */
	uint8_t unwind;        /* its enum ana_unwind */
	size_t off;            /* ips in loader.chain_ips */
} chain;

/* Where pass 2 finds a sample it has to decode again (registers and stack copies): its
 * position in the trace (a record of a packed chunk lives only until the next read), checked
 * in pass 1. */
typedef struct raw_sample {
	gtt_pos pos;
} raw_sample;

/* A sample stitched up to a thread entry before any complete stack showed the entry's
 * callers: unwound again at the end of pass 2. */
typedef struct deferred {
	size_t sample, raw;
	uint32_t uw_id;        /* its unwind kept by ana_sym_collect (streamed samples), 0: read raw again */
	uint8_t unwind;        /* how it ended the first time */
} deferred;
#define MAX_DEFERRED 65536

/* Direct-mapped cache of threads by (pid, tid), for per-sample thread lookups. */
enum { TCACHE = 256 };
#define TCACHE_SLOT(pid, tid) (((tid) * 31u + (pid)) & (TCACHE - 1))

/* A streamed sample's native stack as pass 2 left it for the merge (ana_opts.stream_samples):
 * its stack id (below ANA_SSTACK_ID_MASK + 1), how its unwind ended (enum ana_unwind, 4 bits from
 * ANA_SSTACK_UNWIND_SHIFT) and ANA_SSTACK_OK when it reached its root (ana_sample.unwind_ok). */
#define ANA_SSTACK_OK 0x80000000u
#define ANA_SSTACK_UNWIND_SHIFT 27
#define ANA_SSTACK_ID_MASK 0x07ffffffu

/* At most this many callchain words are kept for interning (the rest is decoded again). */
#define MAX_CHAIN_WORDS (16u << 20)

typedef struct loader {
	ana_model *m;
	const ana_opts *o;
	gtt_reader *r;
	ana_sym *sym;
	ana_oncpu *oncpu;          /* switches folded into on-CPU time as they are read */
	ANA_VEC(pending_archive) archives;
	ANA_VEC(chain) chains;
	ANA_VEC(uint64_t) chain_ips;
	ana_idtable chain_table;
	ANA_VEC(raw_sample) raws;
	ana_idtable thread_table;  /* (pid, tid) -> index in m->threads, kept unsorted until sort_threads */
	ANA_VEC(deferred) deferred;
	ana_idtable trunc_table;
	struct { uint32_t pid, tid, idx, used; } tc[TCACHE]; /* (pid, tid) -> thread index, pass 2 */
	size_t next_raw;           /* pass 2: the next of raws */
	uint32_t *uw_ids;          /* pass 2 (arrays): each raw sample's unwind kept by collect_pass, 0 none */
	size_t n_uw_ids;
	/* ana_opts.stream_samples: */
	int stream;
	ANA_VEC(uint32_t) sstack;  /* each sample's native stack in file order (ANA_SSTACK_OK) */
	struct ana_pipe *pipe;     /* pass 2's reading while it runs (load_pipe.h): a sample's position
	                            * is the pipe's, not the reader's */
	struct ana_sample_sum *ssum;
	uint64_t n_pyreads, n_gil; /* in the window */
	ana_launch_loader *launch; /* launch stacks, symbolized after pass 2 (launch.c) */
	struct ana_gpu_tables *gpu_tables; /* ANA_STREAM_CUDA_TABLES: CUDA records counted by name */
	ANA_VEC(gtt_gil) gil_carry; /* per process, its last GIL record before the window */
	ANA_VEC(gtt_thread_cpu) cpu_carry; /* per thread, its last /proc reading before the window */
	uint64_t n_samples_seen;
	uint64_t cut_off;          /* a cut-off trace: where its last, incomplete chunk begins (pass 1's end) */
	int p1_bare;               /* pass 1 read samples bare (gtt_reader_skip_stacks): what only their
	                            * stack copies' frames could show wrong is pass 2's to report, and
	                            * the passes after it read bare too (not under --skip-corrupt: a read
	                            * whole skips such a chunk, a bare one would not) */
	uint64_t n_streamed;       /* CUDA records not kept (ana_opts.stream_cuda) */
	int cuda_summed;           /* pass 1 took the CUDA chunks' headers only (gtt_reader_summarize) */
	uint64_t p1_late_ns;       /* how late a record came in pass 1, in file order (ana_load_horizon) */
	int p1_late_ok;            /* pass 1 decoded every data record: p1_late_ns holds for the trace */
	uint64_t t0_ns, last_progress_ns;
	int progress_shown;
	uint32_t frames[MAX_DEPTH];
} loader;

/* A CUDA record not kept, counted by name when the tables are all that is made of them
 * (ANA_STREAM_CUDA_TABLES; else nothing). 0 or GTT_ENOMEM. */
int ana_load_count_cuda(loader *L, const gtt_record *rec);
/* load_pass1.c: pass 1, every record into the model (ana_load_take_record). 0 or <0 with words
 * in errbuf. */
int ana_load_pass1(loader *L, char *errbuf, size_t errlen);
/* A read error of a pass (rc, at the reader's offset off) in words, as pass 1 gives them; rc. */
int ana_load_read_error(loader *L, int rc, uint64_t off, char *errbuf, size_t errlen);
/* load.c: one record of pass 1 into the model (or the loader's accumulators). 0 or <0. */
int ana_load_take_record(loader *L, const gtt_record *rec);
/* A time seen: the model's bounds grow to it (0, and in a window a time outside it, do not). */
void ana_load_see_time(ana_model *m, uint64_t t);
/* Progress on stderr for long loads (--progress): phase and done of total. */
void ana_load_progress(loader *L, const char *phase, uint64_t done, uint64_t total);
/* Pass 2: symbolize and unwind every sample read in pass 1 and intern its stack; count it for
 * its thread (all threads exist, weights filled in) and, when truncated, for the health
 * section. 0, or GTT_ENOMEM with a one-line reason in errbuf. */
int ana_load_pass2(loader *L, char *errbuf, size_t errlen);
/* Pass 2's work for one sample e (file order; idx its number): its thread's counts, its native
 * stack (e->stack_id on entry: its interned callchain, ANA_NO_ID for one to unwind: the unwind
 * ana_sym_collect kept as uw_id when not 0, else from smp, the record just read, or when NULL
 * from the next of L->raws), truncation counted. Then ana_load_unwind_done once every sample is
 * through (deferred ones unwound again). 0 or <0. */
int ana_load_unwind_one(loader *L, ana_sample *e, const gtt_sample *smp, uint32_t uw_id, size_t idx);
int ana_load_unwind_done(loader *L);
/* Before pass 2: show the symbolizer a sample's interned callchain (once per address space)
 * or, with ana_sym_collect, its stack copy; then ana_load_collect_done symbolizes what was
 * shown binary by binary (one binary's DWARF in memory at a time). 0 or GTT_ENOMEM. */
int ana_load_collect_chain(loader *L, uint32_t chain_id, uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t time_ns);
int ana_load_collect_done(loader *L);
/* load.c: a sample's callchain interned for pass 2 (L->chains): 1 with its id in *chain, 0 when
 * it is to be unwound from its record (registers and stack copy, or the chain table is full). */
int ana_load_intern_chain(loader *L, const gtt_sample *s, uint32_t *chain);

/* load_stream.c (ana_opts.stream_samples): pass 2 as a read of the samples, and pass 3: samples,
 * Python reads, GIL records and CUDA records read once more, merged in time order into
 * m->ssum, m->gpu and the threads' class counts. 0 or <0, with words in errbuf. */
int ana_load_stream_pass2(loader *L, char *errbuf, size_t errlen);
int ana_load_stream_pass3(loader *L, char *errbuf, size_t errlen);

/* load_window.c: a GIL record / a /proc reading before the window, kept as the state when it
 * begins (the latest of each process / thread). 0 or GTT_ENOMEM. */
int ana_load_carry_gil(loader *L, const gtt_gil *g);
int ana_load_carry_cpu(loader *L, const gtt_thread_cpu *c);
/* The window of L->o (has_from/has_to) in trace time, and the reader set to read only its
 * chunks (and one second before). 0, or GTT_E* with a one-line reason in errbuf. */
int ana_load_window_open(loader *L, char *errbuf, size_t errlen);
/* After pass 1 of a window: its bounds become the model's, the carried state is added.
 * GTT_EINVAL (words in errbuf) for a window after the recording's end, GTT_ENOMEM. */
int ana_load_window_finish(loader *L, char *errbuf, size_t errlen);
/* Captured intervals cut to the window (after ana_capture_build). */
void ana_load_window_captured(ana_model *m);
/* Per-thread on-CPU time into the model: from the switches folded in pass 1, or, under
 * capture control, from a second read of them. 0 or GTT_ENOMEM. */
int ana_load_finish_oncpu(loader *L);

/* load_gpu.c: with ana_opts.stream_cuda, the CUDA work, sync and API records read again into
 * m->gpu (after the Python merge: the sweep needs classified samples). 0 or GTT_ENOMEM. */
int ana_load_gpu(loader *L);
/* load_launch.c: with ANA_STREAM_CUDA_LAUNCHES, the CUDA work, sync and API records read again and
 * joined to the launch stacks in time order into m->gpu->launches (after m->gpu's tables and the
 * launch stacks are made). 0, or GTT_ENOMEM with words in errbuf. */
int ana_load_launches(loader *L, char *errbuf, size_t errlen);
/* How far behind the latest record a record of the trace can come, read in file order: from the
 * chunk index, max over chunks of (the latest end of it and every chunk before it - its earliest
 * start). Where a chunk's times are unknown (format 1.0: plain chunks), the same over records as
 * pass 1 met them, when it decoded every data record (p1_late_ok); else UINT64_MAX, and everything
 * is held. */
uint64_t ana_load_horizon(const loader *L);
/* Pass 1's record rec into p1_late_ns's figure (*latest_end: the latest end met so far). */
void ana_load_see_late(loader *L, uint64_t *latest_end, const gtt_record *rec);
/* A classified sample counted for its thread. */
static inline void ana_count_class(ana_model *m, const ana_sample *s)
{
	if (s->cls < ANA_CLASS_COUNT)
		m->threads.v[s->thread_idx].n_class[s->cls]++;
}
/* The record kinds stream_cuda does not keep. */
static inline int ana_load_streamed(uint32_t tag)
{
	return tag == GTT_REC_CUDA_KERNEL || tag == GTT_REC_CUDA_MEMCPY || tag == GTT_REC_CUDA_MEMSET ||
	       tag == GTT_REC_CUDA_SYNC || tag == GTT_REC_CUDA_API;
}

#endif
