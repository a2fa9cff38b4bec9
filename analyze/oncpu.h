/* oncpu.h — on-CPU time per thread from context switches, folded in as they are read: memory
 * follows threads (and a short reorder window), never the number of switches, so the loader
 * keeps no switch records unless asked (ana_opts.keep_switches).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_ONCPU_H
#define ANA_ONCPU_H

#include <stdint.h>
#include "gtt.h"
#include "model.h"

/* How far out of time order a switch may arrive (after a later one of any thread) and still be
 * put in its place: perf's per-CPU buffers are drained one after the other, so a thread that
 * moved between CPUs can have its switches written out of order by about one drain period. */
#define ANA_ONCPU_HORIZON_NS (1000000000ull)

typedef struct ana_oncpu ana_oncpu;

/* A folder of switches. final = 0 while the trace is being read (the model's span, threads and
 * captured intervals are not known yet; fine for a trace without capture control); final = 1
 * when they are (a second read of a capture-controlled trace, or the switches of a model).
 * horizon_ns: how late a switch may come (ANA_ONCPU_HORIZON_NS while reading; UINT64_MAX puts
 * every switch in order, holding them all until the end). NULL on ENOMEM. */
ana_oncpu *ana_oncpu_new(int final, uint64_t horizon_ns);
/* Take one switch (in any order within the horizon). 0 or GTT_ENOMEM. */
int ana_oncpu_add(ana_oncpu *o, const ana_model *m, const gtt_switch *s);
/* Call fn for every (pid, tid) seen (the loader makes their threads); stops at fn's first
 * negative return and returns it, else 0. */
int ana_oncpu_each_thread(const ana_oncpu *o, int (*fn)(void *ctx, uint32_t pid, uint32_t tid), void *ctx);
/* Finish: every thread of the model that had switches gets oncpu_ns and oncpu_known (the
 * model's threads sorted, its span, processes and captured intervals final). A switch that came
 * later than the horizon allows is counted in a model warning. 0 or GTT_ENOMEM. */
int ana_oncpu_finish(ana_oncpu *o, ana_model *m);
void ana_oncpu_free(ana_oncpu *o);

#endif
