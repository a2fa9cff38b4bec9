/* swgate.h — the switch gate of --switch-events=auto: when the recorded tree switches faster than
 * a limit, context-switch records stop but for short windows (docs/RECORD.md, "Context
 * switches"). The kernel writes two records at every switch in the switching task's own time;
 * on a GIL-contended process handing the GIL over ~100 000 times a second that is the largest
 * cost a recorder puts on it, while the figures that need switches (on-CPU time, intended
 * samples) have a cheaper source in the /proc readings. This module only decides: the caller
 * counts, opens and closes the events, and writes the `switch_gate` records (tag 33).
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno; create gives
 * NULL on ENOMEM. */
#ifndef REC_SWGATE_H
#define REC_SWGATE_H

#include <stdint.h>

/* --switch-events */
typedef enum { REC_SW_AUTO = 0, REC_SW_ON = 1, REC_SW_OFF = 2 } rec_sw_mode;

#define REC_SWGATE_LIMIT 10000u                    /* switches per second per CPU the tree keeps busy */
#define REC_SWGATE_JUDGE_NS (250ull * 1000 * 1000)  /* open: the rate is judged over this long */
#define REC_SWGATE_WINDOW_NS (200ull * 1000 * 1000) /* closed: a window of switches this long ... */
#define REC_SWGATE_PERIOD_NS (4000ull * 1000 * 1000) /* ... every this long (5 % of the time) */

typedef struct rec_swgate_opts {
	uint64_t limit_per_cpu;  /* switches a second per busy CPU above which the gate closes */
	double sample_hz;        /* the sampling rate: samples / rate / seconds = busy CPUs */
	uint64_t judge_ns, window_ns, period_ns; /* 0: the defaults above */
} rec_swgate_opts;

/* What a step decided. moved = 0: nothing to do. Else the caller opens (event GTT_GATE_OPEN,
 * unless it is open already: reason GTT_GATE_UNDER keeps it open for good) or closes the
 * switch events and writes a switch_gate record with these fields. */
typedef struct rec_swgate_move {
	int moved;
	uint32_t event;          /* GTT_GATE_OPEN / CLOSED */
	uint32_t reason;         /* GTT_GATE_OVER, WINDOW or UNDER */
	uint64_t rate_per_s;     /* the tree's switches per second over the interval judged */
	uint64_t limit_per_s;    /* limit_per_cpu x the busy CPUs of that interval */
} rec_swgate_move;

typedef struct rec_swgate_stats {
	uint64_t open_ns;        /* time the gate was open so far */
	uint64_t closes;         /* times it closed for being over the limit (OVER) */
	uint64_t windows;        /* windows opened while over */
	uint64_t max_rate_per_s; /* highest rate judged */
	uint64_t last_limit_per_s;
	int open;
} rec_swgate_stats;

typedef struct rec_swgate rec_swgate;

/* A gate that starts open at now_ns. NULL on ENOMEM. */
rec_swgate *rec_swgate_create(const rec_swgate_opts *o, uint64_t now_ns);
/* What the caller has counted at a step: the tree's switches written so far (switch-outs,
 * cumulative), its samples so far (cumulative), and the time up to which the records counted are
 * complete (the drain decodes a little behind real time, and a starved drain further: rates are
 * judged over the counted time, never over time whose records are still in the rings). */
typedef struct rec_swgate_counts { uint64_t n_switches, n_samples, upto_ns; } rec_swgate_counts;
/* One step at now_ns (the drain loop's, every 25 ms or so). Fills mv; 1 when the gate moved,
 * else 0. A rate is judged only over at least half the interval it is meant for (an open
 * stretch's judging interval, a window): a window lasts longer while the records are late. */
int rec_swgate_step(rec_swgate *g, uint64_t now_ns, const rec_swgate_counts *c, rec_swgate_move *mv);
/* The caller opened the switch events for a window the last step asked for, and they were all
 * open at open_ns (opening can take a while on a loaded machine): the window's rate counts from
 * then, and it lasts its full length from then. c: the counts at open_ns. */
void rec_swgate_opened(rec_swgate *g, uint64_t open_ns, const rec_swgate_counts *c);
/* The gate as it stands at now_ns (open time counted up to it). */
void rec_swgate_get_stats(const rec_swgate *g, uint64_t now_ns, rec_swgate_stats *st);
void rec_swgate_destroy(rec_swgate *g);

#endif
