/* perf_decode.h — turning perf ring-buffer records (our sample_type) into trace records; used
 * by perf_sampler.c only. Keeps the small tables decoding needs: thread names for new threads,
 * build-ids of mapped files, the tids seen being born.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PERF_DECODE_H
#define REC_PERF_DECODE_H

#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"
#include "perf_sampler.h"
#include "perf_tree.h"

typedef struct rec_perf_decoder rec_perf_decoder;

/* Per ring buffer state that decoding carries from record to record. */
typedef struct rec_perf_ring_state {
	int cpu;
	uint64_t last_time_ns;      /* time of the last record decoded (start of a loss gap) */
	uint64_t throttle_start_ns; /* open THROTTLE, 0 when none */
	/* time-only CPU-wide switches (rec_perf_decoder_set_lean): the pair being read */
	int cur_known;              /* cur is the task on this CPU (switched in last) */
	uint32_t cur_pid, cur_tid;
	int in_known;               /* a switch-out named in_pid/in_tid as the task coming in */
	uint32_t in_pid, in_tid;
	int out_pending;            /* a switch-out of a task not known yet: the switch-in names it */
	uint16_t out_misc;
	int rd_known;               /* read side (skip): rd_pid is the task switched in last */
	uint32_t rd_pid;
	uint32_t epoch, rd_epoch;   /* the switch gate: openings of the switch events seen (decode, read) */
} rec_perf_ring_state;

/* A decoder writing to w and calling obs after each record. sample_type and regs_mask are
 * the events' attr values. NULL on ENOMEM. */
rec_perf_decoder *rec_perf_decoder_create(gtt_writer *w, rec_perf_observer obs, void *ctx,
                                          uint64_t sample_type, uint64_t regs_mask);
void rec_perf_decoder_destroy(rec_perf_decoder *d);
/* Decode one whole, contiguous perf record of size bytes from the ring rs. */
void rec_perf_decode(rec_perf_decoder *d, rec_perf_ring_state *rs, const uint8_t *rec, uint32_t size);
/* Time of a record (its sample time or its sample_id trailer), 0 when it has none. */
uint64_t rec_perf_record_time(const rec_perf_decoder *d, const uint8_t *rec, uint32_t size);
/* System-wide: the side band (mmap2, comm, fork, exit) and the context switches come from an
 * event of their own whose sample_id is the time alone (perf_sampler.c says why); the
 * switches as PERF_RECORD_SWITCH_CPU_WIDE pairs on each CPU: the switch-out names the task
 * coming in, the switch-in the task that went out; the decoder pairs them per ring into the
 * same `switch` records as before. */
void rec_perf_decoder_set_lean(rec_perf_decoder *d);
/* Lean: the switch events were opened again at trace time trace_ns (after a stretch closed by the
 * switch gate); each ring's pair state starts afresh at its first switch record from then on.
 * Trace time, not perf's: the first opening comes before the clock offset is known (a time
 * namespace), and records are compared with it through the offset in force when they are
 * decoded. Not lean: nothing to do. 0 or -ENOMEM. */
int rec_perf_decoder_switches_opened(rec_perf_decoder *d, uint64_t trace_ns);
/* Lean: the last opening was whole (every CPU's event open) at trace_ns, the time its switch_gate
 * record gives: switch records before it, from CPUs opened earlier, update the pair state but are
 * not written (the trace says every switch is written from that time on, none before). */
void rec_perf_decoder_switches_ready(rec_perf_decoder *d, uint64_t trace_ns);
/* Remember a thread's name; 1 when a FORK record for tid has been decoded. */
void rec_perf_decoder_note_name(rec_perf_decoder *d, pid_t tid, const char *name);
int rec_perf_decoder_saw_fork(const rec_perf_decoder *d, pid_t tid);
/* Add the decoder's counters (samples, lost, throttled, switches, bytes, foreign) to s. */
void rec_perf_decoder_stats(const rec_perf_decoder *d, rec_perf_stats *s);
/* System-wide sampling: keep only the records of t's processes (t is updated from the FORK
 * and exec records decoded; it outlives the decoder). NULL (the default): keep everything. */
void rec_perf_decoder_set_tree(rec_perf_decoder *d, rec_ptree *t);
/* System-wide: 1 when a record read from a ring is a sample, mapping or switch of a process
 * already known to be outside the tree, so that it need not be copied and sorted at all (the
 * decoder would drop it; records that change the tree are never skipped). Counted as foreign. */
int rec_perf_decoder_skip(rec_perf_decoder *d, rec_perf_ring_state *rs, const uint8_t *rec, uint32_t size);
/* Write every time as perf's plus offset_ns (the trace clock is ours: clock.h). */
void rec_perf_decoder_set_clock_offset(rec_perf_decoder *d, int64_t offset_ns);
/* Cut DWARF stack copies to what fn says is used (see rec_perf_set_stack_trim). */
void rec_perf_decoder_set_trim(rec_perf_decoder *d, rec_perf_stack_trim fn, void *ctx);
/* System-wide: call fn for each process found in the tree through /proc (rec_ptree_take_found). */
void rec_perf_decoder_set_found(rec_perf_decoder *d, rec_perf_found_fn fn, void *ctx);
/* First write error (-EIO), 0 when none. */
int rec_perf_decoder_write_rc(const rec_perf_decoder *d);

/* Small tid sets (forked threads, attached threads): append x (0, or -ENOMEM), and
 * whether x is among v[0..n). */
int rec_i32_push(int32_t **v, size_t *n, size_t *cap, int32_t x);
int rec_i32_has(const int32_t *v, size_t n, int32_t x);

#endif
