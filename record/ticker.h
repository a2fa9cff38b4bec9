/* ticker.h — an absolute tick schedule for a sampling loop, with lateness statistics:
 * TICKS records per 1 s interval, one whole-recording summary, and LAG_WINDOW health records.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_TICKER_H
#define REC_TICKER_H

#include <stdint.h>
#include "gtt.h"

typedef struct rec_ticker rec_ticker;

/* A schedule of ticks every period_ns from start_ns (0 = now), reporting as source (GTT_SRC_*)
 * into w (may be NULL: statistics only). The first tick is due at start_ns. NULL on ENOMEM. */
rec_ticker *rec_ticker_create(uint32_t source, uint64_t period_ns, uint64_t start_ns, gtt_writer *w);
/* Sleep until the next due tick (returns at once when the loop is behind) and take it.
 * Lateness of the taken tick = now - the oldest due tick not yet taken; ticks that fell due
 * while the loop was behind by more than a period are skipped (intended, never done).
 * Returns the time the tick was taken (CLOCK_MONOTONIC ns). */
uint64_t rec_ticker_wait(rec_ticker *t);
/* Take a tick at now_ns without sleeping (for loops that wait by other means, e.g. poll). */
void rec_ticker_tick(rec_ticker *t, uint64_t now_ns);
/* A loop that has nothing to do for a while (the GIL poll while the GIL state stands still)
 * pauses its schedule: ticks that fall due while paused are not intended (TICKS count them in
 * neither intended nor done) and resuming takes up the schedule at the next tick due. Both
 * are idempotent. */
void rec_ticker_pause(rec_ticker *t, uint64_t now_ns);
void rec_ticker_resume(rec_ticker *t, uint64_t now_ns);
/* The capture gate, one for the process (gt-record's --delay and --capture-range): while it
 * is closed, rec_ticker_wait of every gated ticker blocks with its schedule paused, so the loops
 * that read the target (the Python reader, the /proc loop) cost nothing outside capture and their
 * TICKS count only captured time. Open at start; every ticker is gated unless set otherwise
 * (the drain loop, which keeps running). */
void rec_ticker_gate_close(void);
void rec_ticker_gate_open(void);
void rec_ticker_set_gated(rec_ticker *t, int gated);
/* Ticks taken so far / worst lateness so far (for live status). */
uint64_t rec_ticker_done(const rec_ticker *t);
uint64_t rec_ticker_late_max_ns(const rec_ticker *t);
/* Lateness of the most recent tick, ns. */
uint64_t rec_ticker_last_late_ns(const rec_ticker *t);
/* Close the schedule at end_ns (0 = now): write the last interval, any open lag window and the
 * GTT_TICKS_WHOLE summary (exact p50/p99/max over every tick). Idempotent. Returns 0, or -EIO
 * when a record of the schedule could not be written. */
int rec_ticker_finish(rec_ticker *t, uint64_t end_ns);
/* Free (finishes first when not yet finished). NULL ok. */
void rec_ticker_destroy(rec_ticker *t);

#endif
