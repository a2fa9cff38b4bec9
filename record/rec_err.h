/* rec_err.h — record/'s one error rule, and lib/'s codes turned into it.
 * Every record/ function returns 0 (or a count, a length, a descriptor), or a negative errno
 * value (-EIO, -ESRCH, ...); functions that return a pointer give NULL on failure, with a
 * reason in their err buffer or in errno as their header says; predicates return 1 or 0.
 * A trace write error (lib/'s GTT_EIO) is -EIO: the writer keeps the system's errno
 * (gtt_writer_errno) for the message. Only gt-record's main and session turn codes into
 * words and exit statuses (lib/gt_util.h GT_EXIT_*). */
#ifndef REC_ERR_H
#define REC_ERR_H

#include <errno.h>
#include "gtt.h"

/* A lib/ result (0, a count, or a GTT_E* code) under record/'s rule. */
static inline int rec_err_from_gtt(int rc)
{
	if (rc >= 0)
		return rc;
	if (rc == GTT_ENOMEM)
		return -ENOMEM;
	if (rc == GTT_EINVAL)
		return -EINVAL;
	return -EIO;
}

#endif
