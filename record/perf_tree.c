/* perf_tree.c — the target's process tree for system-wide sampling: a pid -> membership
 * table (open addressing) fed by FORK and exec records in time order. */
#include "perf_tree.h"

#include <errno.h>
#include <stdlib.h>

#include "procfs.h"

#define MIN_SLOTS 1024
#define MAX_ANCESTORS 64 /* a /proc walk up the parents gives up after this many */
#define MAX_FOUND 64     /* members found through /proc, waiting for rec_ptree_take_found */

enum { EMPTY = 0, MEMBER = 1, OTHER = 2, WAITING = 3 /* a root before its exec */ };

typedef struct slot {
	int32_t pid;
	uint8_t state;
} slot;

struct rec_ptree {
	slot *v;
	size_t cap, n;
	int lossy;
	int32_t found[MAX_FOUND]; /* members found through /proc since the last take */
	unsigned n_found;
	rec_ptree_stats st;
};

rec_ptree *rec_ptree_create(void)
{
	rec_ptree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->v = calloc(MIN_SLOTS, sizeof(*t->v));
	if (!t->v) {
		free(t);
		return NULL;
	}
	t->cap = MIN_SLOTS;
	return t;
}

void rec_ptree_destroy(rec_ptree *t)
{
	if (!t)
		return;
	free(t->v);
	free(t);
}

static slot *find(const rec_ptree *t, int32_t pid)
{
	size_t mask = t->cap - 1, i = ((uint32_t)pid * 2654435761u) & mask;

	while (t->v[i].state != EMPTY && t->v[i].pid != pid)
		i = (i + 1) & mask;
	return &t->v[i];
}

static int grow(rec_ptree *t)
{
	slot *old = t->v;
	size_t old_cap = t->cap, i;

	t->v = calloc(old_cap * 2, sizeof(*t->v));
	if (!t->v) {
		t->v = old;
		return -ENOMEM;
	}
	t->cap = old_cap * 2;
	for (i = 0; i < old_cap; i++)
		if (old[i].state != EMPTY)
			*find(t, old[i].pid) = old[i];
	free(old);
	return 0;
}

static void count(rec_ptree *t, uint8_t was, uint8_t now)
{
	if (was == MEMBER)
		t->st.members--;
	else if (was == OTHER)
		t->st.others--;
	if (now == MEMBER)
		t->st.members++;
	else if (now == OTHER)
		t->st.others++;
}

/* Set pid's state. When the table cannot grow, a member is still recorded (dropping its
 * records would lose data) and an outsider is forgotten (it is looked up again). */
static void set(rec_ptree *t, int32_t pid, uint8_t state)
{
	slot *s;

	if ((t->n + 1) * 2 > t->cap && grow(t) < 0 && state == OTHER)
		return;
	s = find(t, pid);
	if (s->state == EMPTY) {
		if ((t->n + 1) >= t->cap)
			return; /* full, could not grow */
		t->n++;
	}
	count(t, s->state, state);
	s->pid = pid;
	s->state = state;
}

int rec_ptree_add_root(rec_ptree *t, pid_t pid, int wait_exec)
{
	if ((t->n + 1) * 2 > t->cap && grow(t) < 0)
		return -ENOMEM;
	set(t, (int32_t)pid, wait_exec ? WAITING : MEMBER);
	return 0;
}

/* After a loss: is pid a descendant of a member? Walks up its parents in /proc. */
static int resolve(rec_ptree *t, int32_t pid)
{
	int32_t at = pid;
	int depth;

	t->st.resolved++;
	for (depth = 0; depth < MAX_ANCESTORS; depth++) {
		pid_t ppid = 0;
		slot *s;

		if (!rec_procfs_state(at, &ppid) || ppid <= 1)
			return 0;
		s = find(t, (int32_t)ppid);
		if (s->state == MEMBER)
			return 1;
		if (s->state != EMPTY)
			return 0;
		at = (int32_t)ppid;
	}
	return 0;
}

int rec_ptree_has(rec_ptree *t, pid_t pid)
{
	slot *s = find(t, (int32_t)pid);
	int member;

	if (s->state != EMPTY)
		return s->state == MEMBER;
	/* never seen being born: it was running before the recording began (then it is not a
	 * descendant of a launched command, nor one of an attached process born since), unless
	 * its FORK record was lost */
	member = t->lossy && pid > 0 ? resolve(t, (int32_t)pid) : 0;
	set(t, (int32_t)pid, member ? MEMBER : OTHER);
	if (member) {
		/* its FORK record was lost: whoever writes the trace says what the process is */
		if (t->n_found < MAX_FOUND)
			t->found[t->n_found++] = (int32_t)pid;
		else
			t->st.found_dropped++;
	}
	return member;
}

int rec_ptree_fork(rec_ptree *t, pid_t parent, pid_t child)
{
	int member = rec_ptree_has(t, parent);

	set(t, (int32_t)child, member ? MEMBER : OTHER);
	return member;
}

int rec_ptree_exec(rec_ptree *t, pid_t pid)
{
	slot *s = find(t, (int32_t)pid);

	if (s->state == WAITING)
		set(t, (int32_t)pid, MEMBER);
	return rec_ptree_has(t, pid);
}

int rec_ptree_known_other(const rec_ptree *t, pid_t pid)
{
	return find(t, (int32_t)pid)->state == OTHER;
}

pid_t rec_ptree_take_found(rec_ptree *t)
{
	if (!t->n_found)
		return 0;
	t->n_found--;
	t->st.found++;
	return (pid_t)t->found[t->n_found];
}

void rec_ptree_lossy(rec_ptree *t)
{
	t->lossy = 1;
}

void rec_ptree_get_stats(const rec_ptree *t, rec_ptree_stats *s)
{
	*s = t->st;
}
