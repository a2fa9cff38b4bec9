/* procid.h — who each process of a job is: rank and role from its environment (RANK,
 * LOCAL_RANK, WORLD_SIZE, ..., GT_ROLE), written as meta keys process.PID.KEY when the process
 * joins the recorded tree (docs/JOBS.md, docs/FORMAT.md).
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PROCID_H
#define REC_PROCID_H

#include <stdint.h>
#include "gtt.h"

typedef struct rec_procid rec_procid;

/* NULL on ENOMEM. destroy accepts NULL. */
rec_procid *rec_procid_create(void);
void rec_procid_destroy(rec_procid *p);
/* A process record was written (start, fork, exec): read the process's identity variables and
 * write a meta record for each one found whose value is new for that pid. The number written,
 * 0 when none (no variables, process gone or unreadable), or -EIO/-ENOMEM. */
int rec_procid_observe(rec_procid *p, gtt_writer *w, const gtt_record *rec);

/* Our CLOCK_MONOTONIC minus pid's, as read when pid joined (a process in another time
 * namespace: its CUDA agent stamps its records on its own clock). 0, or -ENOENT when pid was
 * not seen or its namespace could not be read. */
int rec_procid_clock_shift(const rec_procid *p, uint32_t pid, int64_t *shift_ns);

/* The environment variables read and the meta key each becomes (process.PID.<key>). */
typedef struct rec_procid_var {
	const char *env, *key;
} rec_procid_var;
extern const rec_procid_var rec_procid_vars[];
extern const unsigned rec_procid_n_vars;

#endif
