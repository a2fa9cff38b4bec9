/* merge_priv.h — what merge.c (inputs, clocks, pid spaces) and merge_write.c (the merged trace)
 * share. Return rule: analyze/'s (model.h). */
#ifndef ANA_MERGE_PRIV_H
#define ANA_MERGE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "clockfit.h"
#include "gtt.h"
#include "merge.h"

/* What the first pass learns of one input. */
typedef struct ana_merge_in {
	const char *path;
	uint32_t major, minor;
	char host[256], boot_id[64];
	uint64_t start_ns, start_rt_ns, end_ns;
	int64_t timens_ns;       /* its time namespace's offset against the host's clock */
	ana_clock_pair *pairs;
	size_t n_pairs, cap_pairs;
	uint32_t *pids;          /* sorted, distinct: pids and tids it names */
	size_t n_pids, cap_pids;
	int truncated;
	/* decided */
	ana_clockfit fit;
	uint32_t space;          /* pid space: pids + space * ANA_PID_SPACE */
	int64_t delta0_ns;       /* the shift at its start (shown; records use the shift at their time) */
	int same_boot;           /* aligned through the one kernel clock of the reference's boot */
	int boot_disagrees;      /* same boot, but the pairs say otherwise by more than 1 ms: an
	                          * unrecorded time namespace offset; the pairs are used */
	uint64_t err_ns;         /* the error the pairs vouch for (realtime alignment) */
	int64_t rt_delta0_ns;    /* what realtime pairs say at its start (shown beside same_boot's) */
	/* second pass */
	uint64_t n_samples, n_dropped, n_written;
} ana_merge_in;

typedef struct ana_merge {
	ana_merge_in *in;
	int n;
	int by_realtime;         /* --by-realtime: align by pairs even within one boot */
	uint64_t base_ns;        /* added to every time so that none comes near 0 */
	uint64_t end_ns;
	gtt_writer *w;
	char (*archives)[2 * GTT_BUILD_ID_MAX + 1]; /* build-ids already copied */
	int *archive_owner;
	size_t n_archives, cap_archives;
} ana_merge;


/* The shift of input `in` at its time t onto the reference's clock (merge.base_ns not included). */
int64_t ana_merge_delta_at(const ana_merge *M, const ana_merge_in *in, uint64_t t);
/* Write the merged trace to out (refused when it exists, unless force): a private file beside
 * it, moved into place when whole. GT_EXIT_OK, GT_EXIT_PARTIAL (records left out), or
 * GT_EXIT_BROKEN with words in err (nothing is left at out then). */
int ana_merge_write(ana_merge *M, const char *out, int force, char *err, size_t errlen);

#endif
