/* merge.h — `gt-analyze merge A.gtt B.gtt ... -o job.gtt`: the traces of a job's hosts (or of
 * several recordings on one host) into one trace on one clock, with each host's processes kept
 * apart (docs/JOBS.md says how and with what error).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, words in err. */
#ifndef ANA_MERGE_H
#define ANA_MERGE_H

#include <stdint.h>

/* Processes of the k-th pid space of a merge get pid + k * ANA_PID_SPACE (k = 0 keeps its
 * pids): above the kernel's largest pid_max (2^22), readable in decimal. */
#define ANA_PID_SPACE 10000000u
#define ANA_MERGE_MAX_TRACES 400 /* u32 pids hold 429 spaces */

/* The subcommand (analyze/main.c). */
int ana_cmd_merge(int argc, char **argv);

#endif
