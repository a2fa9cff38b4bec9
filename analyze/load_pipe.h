/* load_pipe.h — a loader pass's records decoded ahead on a thread of their own (load_pipe.c),
 * handed over in file order with what gtt_reader_next returned for each.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects. */
#ifndef ANA_LOAD_PIPE_H
#define ANA_LOAD_PIPE_H

#include <stdint.h>
#include "gtt.h"

/* Which pass reads (what it uses of each record decides what the batches keep). */
enum {
	ANA_PIPE_PASS1_STREAM, /* pass 1 of a streamed model: a sample's or Python read's figures only */
	ANA_PIPE_PASS3,        /* pass 3 (load_stream.c, a reader set to the kinds it merges):
	                        * samples' figures, Python reads' frames, GIL and CUDA records; other
	                        * kinds by their tag only */
	ANA_PIPE_PASS2,        /* pass 2 of a streamed model (a reader set to samples only): samples
	                        * whole (callchain, registers, stack copy) and their positions */
};

typedef struct ana_pipe ana_pipe;
/* Start reading r from where it is. skip_bad: the pass reads on after GTT_ECORRUPT and
 * GTT_EINVAL (else such a result ends the reading, as any other error or the end does). Until
 * ana_pipe_free, only the pipe calls r. NULL when out of memory; without a thread (none could be
 * made, or threaded is 0) the pipe reads r itself on each call. threaded 0 suits a small read,
 * e.g. a --from/--to window: when definitions were handed over one at a time, the thread cost
 * such a read more than it saved (a 10 s window of a 1-hour trace: 6.2 s wall against 3.6 s);
 * with them copied it saves nothing there either (0.69-0.89 s against 0.61-1.44 s, the first
 * runs cold, same output). */
ana_pipe *ana_pipe_start(gtt_reader *r, int mode, int skip_bad, int threaded);
/* Records a pass only folds into state of its own, taken where they are read instead of being
 * handed over: fn(ctx, rec) runs on the pipe's thread (on the pass's own without one), in file
 * order, for every record of the kinds in mask that gtt_reader_next returns; those records never
 * come out of ana_pipe_next. fn must touch nothing the pass's thread uses until ana_pipe_free
 * (which joins the thread). fn's error (< 0) ends the reading: ana_pipe_next returns it there. */
typedef struct ana_pipe_divert {
	uint64_t mask;          /* GTT_KIND_BIT of the kinds */
	int (*fn)(void *ctx, gtt_record *rec); /* rec: the pipe's own, fn may change it */
	void *ctx;
	/* NULL, or called likewise for every record gtt_reader_next returns, diverted or not, before
	 * fn and unchanged */
	void (*see)(void *ctx, const gtt_record *rec);
} ana_pipe_divert;
/* ana_pipe_start with d (NULL: none; copied). */
ana_pipe *ana_pipe_start_divert(gtt_reader *r, int mode, int skip_bad, int threaded, const ana_pipe_divert *d);
/* The next result of gtt_reader_next (1: *rec, valid until the next call; 0 at the end, also
 * when called again after it; or GTT_E*), with gtt_reader_offset after it in *off. */
int ana_pipe_next(ana_pipe *p, gtt_record **rec, uint64_t *off);
/* ANA_PIPE_PASS2: gtt_reader_tell of the record ana_pipe_next returned last (after a call). */
const gtt_pos *ana_pipe_pos(const ana_pipe *p);
/* After the reading ended (ana_pipe_next returned 0 or an error that ends it): how many records
 * the thread handed over on their own and waited for, their pointers being the reader's (one too
 * big for a batch's copies). */
size_t ana_pipe_waits(const ana_pipe *p);
/* Stop the thread (it finishes the record it is decoding) and free the batches. NULL ok. */
void ana_pipe_free(ana_pipe *p);

#endif
