/* perf_tree.h — which processes a system-wide recording keeps: the target's process tree,
 * followed through the FORK and exec records of every process as they are decoded in time
 * order. Records of any other process are dropped before anything is written.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno; the
 * membership questions answer 1 or 0. */
#ifndef REC_PERF_TREE_H
#define REC_PERF_TREE_H

#include <stdint.h>
#include <sys/types.h>

typedef struct rec_ptree rec_ptree;

/* An empty tree. NULL on ENOMEM. */
rec_ptree *rec_ptree_create(void);
void rec_ptree_destroy(rec_ptree *t);

/* Make pid a root of the tree. With wait_exec, nothing of it is kept until its first exec
 * (a launched command runs gt-record's own code between fork and exec). 0 or -ENOMEM. */
int rec_ptree_add_root(rec_ptree *t, pid_t pid, int wait_exec);

/* 1 when the records of process pid (a thread group id) belong in the trace. A pid never
 * seen being born is resolved once: not a member, unless records were lost (a FORK record
 * may be among them), then through its parents in /proc. */
int rec_ptree_has(rec_ptree *t, pid_t pid);
/* A FORK record of a new process child of parent: the child is a member exactly when its
 * parent is (a reused pid takes its new parent's side). Returns the child's membership. */
int rec_ptree_fork(rec_ptree *t, pid_t parent, pid_t child);
/* An exec of pid (a COMM record with the exec flag): arms a root waiting for it. Returns
 * pid's membership. */
int rec_ptree_exec(rec_ptree *t, pid_t pid);
/* 1 when pid is already known not to be a member (no lookup, nothing learned): the drain
 * uses it to skip copying records of outsiders before they are sorted. */
int rec_ptree_known_other(const rec_ptree *t, pid_t pid);
/* A member found through /proc (its FORK record lost) since the last call, or 0: the trace
 * has no process record of it yet. Each such pid is handed out once. */
pid_t rec_ptree_take_found(rec_ptree *t);
/* Records were lost: from now on unknown pids are resolved through /proc. */
void rec_ptree_lossy(rec_ptree *t);

/* Counters: member processes, pids known not to be members, /proc resolutions, members
 * found through /proc and handed out, and those not handed out (more than 64 at once). */
typedef struct rec_ptree_stats {
	uint32_t members, others;
	uint32_t resolved;
	uint32_t found, found_dropped;
} rec_ptree_stats;
void rec_ptree_get_stats(const rec_ptree *t, rec_ptree_stats *s);

#endif
