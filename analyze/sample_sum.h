/* sample_sum.h — analyze/-internal: what the report reads of samples, Python stack reads and GIL
 * records, as aggregates whose memory follows distinct threads, stacks and processes: samples
 * counted by (thread, merged stack, class), by how their native stack ended, a bounded pick of
 * their weights; reads counted and their first processes; per process the GIL figures. Made by
 * the loader as the records stream by (ana_opts.stream_samples: `report` keeps none of them), or
 * from a model's arrays on first use, through the same functions (docs/ANALYZE.md, "What the
 * loader's memory follows").
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects. */
#ifndef ANA_SAMPLE_SUM_H
#define ANA_SAMPLE_SUM_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "model_priv.h"

/* Samples of one thread with one merged stack and class, whose native stack did or did not reach
 * its root (ANA_UNWIND_TRUNCATED: fold shows a [truncated] root); their weights summed. */
typedef struct ana_ssum_row {
	uint32_t thread_idx, stack_id;
	uint32_t cls;
	uint32_t truncated;
	uint64_t n, weight_ns;
} ana_ssum_row;

/* Python stack reads of one thread with one stack (interned frames: equal stacks share them) and
 * GIL state at the read (ana_opts.sum_reads: fold --weight wall folds these). */
typedef struct ana_ssum_read_row {
	const gtt_py_frame *frames;
	uint32_t n_frames, pid, tid;
	uint32_t held;         /* the thread held the GIL at the read (ana_pystack.flags bit 0) */
	uint64_t n;
} ana_ssum_read_row;

/* One process's GIL records folded in time order (python_report.c prints them). */
typedef struct ana_gil_fig {
	uint32_t pid;
	uint64_t first_ns, first_switches;
	uint64_t prev_ns;
	int prev_locked;
	uint32_t last_holder;
	uint64_t held_ns, handoffs, switches;
	int have_switches;
} ana_gil_fig;

/* The processes of the first Python reads (in time order) that the report lists. */
#define ANA_SSUM_PY_PIDS 64
/* At most this many sample weights are kept for the median period. */
#define ANA_SSUM_PICKS 100001

typedef struct ana_sample_sum {
	uint64_t n_samples;
	ANA_VEC(ana_ssum_row) rows;  /* in the order first met */
	ana_idtable row_table;
	uint64_t n_unwind[ANA_UNWIND_COUNT];
	/* the weights of samples number k * pick_step (time order), k < ANA_SSUM_PICKS, when the
	 * trace states no sampling period (pick_step 0: none kept) */
	uint64_t pick_step, n_seen;
	ANA_VEC(uint64_t) picks;
	uint64_t n_reads, n_gil;
	ANA_VEC(ana_ssum_read_row) read_rows; /* ana_ssum_read_stack's: reads with frames, first met first */
	ana_idtable read_table;
	uint32_t py_pids[ANA_SSUM_PY_PIDS];
	size_t n_py_pids;
	ANA_VEC(ana_gil_fig) figs;
	/* the loader's stream (load_stream.c): the most samples, reads and GIL records in its reorder
	 * queue at once, and in the Python merge's window */
	uint64_t peak_queued, peak_merge;
} ana_sample_sum;

/* An empty sum for model m whose samples will number n_samples (the weights picked for the
 * median period depend on it). NULL on ENOMEM. */
ana_sample_sum *ana_ssum_new(const ana_model *m, uint64_t n_samples);
void ana_ssum_free(ana_sample_sum *s); /* NULL ok */
/* One classified sample with its merged stack, in time order. 0 or GTT_ENOMEM. */
int ana_ssum_sample(ana_sample_sum *s, const ana_sample *smp);
/* How one sample's native stack ended (enum ana_unwind). */
void ana_ssum_unwind(ana_sample_sum *s, int unwind);
/* One Python stack read / one GIL record, each kind in time order. 0 or GTT_ENOMEM. */
void ana_ssum_read(ana_sample_sum *s, const ana_pystack *p);
int ana_ssum_gil(ana_sample_sum *s, const gtt_gil *g);
/* One Python stack read counted in read_rows by (frames, thread, GIL held); a read without a
 * frame (an idle thread) is not. 0 or GTT_ENOMEM. */
int ana_ssum_read_stack(ana_sample_sum *s, const ana_pystack *p);
/* The GIL figures of pid up to end_ns: the span from its first record, the time held, hand-offs
 * seen, the interpreter's switches (have_switches 0: none recorded). 0 when pid has no record. */
int ana_ssum_gil_figures(const ana_sample_sum *s, uint32_t pid, uint64_t end_ns, uint64_t *span_ns,
                         uint64_t *held_ns, uint64_t *handoffs, uint64_t *switches, int *have_switches);

/* The sums of m: those the loader streamed (ana_opts.stream_samples), else made once from the
 * model's arrays and kept with it. NULL on ENOMEM. */
const ana_sample_sum *ana_sample_sum_of(const ana_model *m);
/* Drop sums made from the arrays (a caller that changed them wants them made again); streamed
 * ones stay. */
void ana_sample_sum_forget(const ana_model *m);
/* The number of samples of m, streamed or kept. */
uint64_t ana_model_n_samples(const ana_model *m);
/* The sampling period the trace states (perf's config health record, else the frequency_hz
 * meta key), 0 when it states none. */
uint64_t ana_config_period_ns(const ana_model *m);

#endif
