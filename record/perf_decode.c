/* perf_decode.c — perf ring-buffer records (sample, mmap2, comm, fork/exit, switch, lost,
 * throttle) into trace records, with the name and build-id tables that needs. */
#include "perf_decode.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf.h"
#include "perf_tree.h"
#include "gt_util.h"
#include "procfs.h"
#include "rec_err.h"

#define MAX_IPS 1024
#define NAME_SLOTS 4096   /* tid -> comm table (open addressing, power of two) */
#define BUILD_ID_SLOTS 256

typedef struct name_slot { int32_t tid; char name[16]; } name_slot;
typedef struct bid_slot { uint32_t maj, min; uint64_t ino; uint8_t len; uint8_t id[20]; int used; } bid_slot;

struct rec_perf_decoder {
	gtt_writer *w;
	rec_perf_observer obs;
	void *ctx;
	struct { uint64_t sample_type, sample_regs_user; } attr;
	int32_t *forked;        /* tids seen in FORK records */
	size_t n_forked, cap_forked;
	name_slot *names;
	bid_slot bids[BUILD_ID_SLOTS];
	uint64_t ips[MAX_IPS];
	rec_perf_stats st;      /* only the counters are used */
	int write_rc;
	rec_perf_stack_trim trim;
	void *trim_ctx;
	rec_perf_found_fn found;
	void *found_ctx;
	rec_ptree *tree;        /* system-wide: the processes to keep; NULL: keep everything */
	int64_t clock_off_ns;   /* trace clock minus perf's (a time namespace; clock.h) */
	struct { uint32_t pid, tid; } *on_cpu; /* per CPU: the task last switched in */
	size_t cap_on_cpu;
	int lean;               /* side band and CPU-wide switches with the time alone as sample_id */
	uint64_t *opens;        /* trace times the switch events were (re)opened (the switch gate) */
	uint64_t *ready;        /* ... and when every CPU's was open (its switch_gate record's time) */
	size_t n_opens, cap_opens, cap_ready;
};

rec_perf_decoder *rec_perf_decoder_create(gtt_writer *w, rec_perf_observer obs, void *ctx,
                                          uint64_t sample_type, uint64_t regs_mask)
{
	rec_perf_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->names = calloc(NAME_SLOTS, sizeof(*d->names));
	if (!d->names) {
		free(d);
		return NULL;
	}
	d->w = w;
	d->obs = obs;
	d->ctx = ctx;
	d->attr.sample_type = sample_type;
	d->attr.sample_regs_user = regs_mask;
	return d;
}

void rec_perf_decoder_destroy(rec_perf_decoder *d)
{
	if (!d)
		return;
	free(d->names);
	free(d->forked);
	free(d->on_cpu);
	free(d->opens);
	free(d->ready);
	free(d);
}


int rec_i32_push(int32_t **v, size_t *n, size_t *cap, int32_t x)
{
	if (GT_GROW(*v, *cap, *n + 1) < 0)
		return -ENOMEM;
	(*v)[(*n)++] = x;
	return 0;
}

int rec_i32_has(const int32_t *v, size_t n, int32_t x)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static name_slot *name_find(rec_perf_decoder *p, int32_t tid, int create)
{
	uint32_t h = ((uint32_t)tid * 2654435761u) & (NAME_SLOTS - 1), i;

	for (i = 0; i < NAME_SLOTS; i++) {
		name_slot *s = &p->names[(h + i) & (NAME_SLOTS - 1)];
		if (s->tid == tid)
			return s;
		if (s->tid == 0) {
			if (!create)
				return NULL;
			s->tid = tid;
			return s;
		}
	}
	/* full: recycle the home slot (names are a convenience, not data) */
	if (create) {
		p->names[h].tid = tid;
		p->names[h].name[0] = 0;
		return &p->names[h];
	}
	return NULL;
}

static void name_set(rec_perf_decoder *p, int32_t tid, const char *name)
{
	name_slot *s = name_find(p, tid, 1);
	if (s)
		snprintf(s->name, sizeof(s->name), "%s", name);
}

/* Build-id of a mapped file, cached by (device, inode). */
static size_t file_build_id(rec_perf_decoder *p, uint32_t pid, uint32_t maj, uint32_t min, uint64_t ino,
                            const char *path, uint8_t *out)
{
	uint32_t h = (uint32_t)((ino * 0x9E3779B97F4A7C15ull) >> 56) % BUILD_ID_SLOTS;
	bid_slot *s = &p->bids[h];
	char root_path[4200];
	size_t n;

	if (s->used && s->maj == maj && s->min == min && s->ino == ino) {
		memcpy(out, s->id, s->len);
		return s->len;
	}
	if (path[0] != '/')
		return 0;
	rec_procfs_root_path((pid_t)pid, path, root_path, sizeof(root_path));
	n = rec_elf_build_id_of(root_path, out, 20);
	if (n == 0)
		n = rec_elf_build_id_of(path, out, 20);
	if (ino != 0) {
		s->used = 1;
		s->maj = maj;
		s->min = min;
		s->ino = ino;
		s->len = (uint8_t)n;
		memcpy(s->id, out, n);
	}
	return n;
}

/* ---- decoding ---- */

typedef struct cursor { const uint8_t *p, *end; int bad; } cursor;

static uint64_t get_u64(cursor *c)
{
	uint64_t v = 0;
	if (c->end - c->p < 8) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

static void get_pair(cursor *c, uint32_t *a, uint32_t *b)
{
	uint64_t v = get_u64(c);
	*a = (uint32_t)v;
	*b = (uint32_t)(v >> 32);
}

/* The sample_id trailer of a non-sample record: pid, tid, time, cpu (our sample_type), or the
 * time alone for the lean side-band event's records (rec_perf_decoder_set_lean): its switches,
 * mappings, names, forks and exits, and a LOST record it happened to write (told by its size:
 * 32 bytes, not 48). pid and tid are then 0: those records carry their tasks in their bodies. */
typedef struct sample_id { uint32_t pid, tid, cpu; uint64_t time_ns; } sample_id;
static sample_id trailer(const rec_perf_decoder *p, const uint8_t *rec, uint32_t size)
{
	sample_id s = { 0, 0, 0, 0 };
	cursor c;
	uint32_t res;
	struct perf_event_header h;
	int lean = 0;

	if (size < sizeof(struct perf_event_header) + 8)
		return s;
	memcpy(&h, rec, sizeof(h));
	if (p->lean) {
		switch (h.type) {
		case PERF_RECORD_SWITCH_CPU_WIDE:
		case PERF_RECORD_MMAP2:
		case PERF_RECORD_COMM:
		case PERF_RECORD_FORK:
		case PERF_RECORD_EXIT:
			lean = 1;
			break;
		case PERF_RECORD_LOST:
			lean = size == sizeof(h) + 24;
			break;
		default:
			break;
		}
	}
	if (lean) {
		memcpy(&s.time_ns, rec + size - 8, 8);
		return s;
	}
	if (size < sizeof(struct perf_event_header) + 24)
		return s;
	c.p = rec + size - 24;
	c.end = rec + size;
	c.bad = 0;
	get_pair(&c, &s.pid, &s.tid);
	s.time_ns = get_u64(&c);
	get_pair(&c, &s.cpu, &res);
	return s;
}

static void emit(rec_perf_decoder *p, gtt_record *r)
{
	int rc;

	if (p->clock_off_ns)
		gtt_rec_shift(r, p->clock_off_ns);
	rc = gtt_write(p->w, r);
	if (rc < 0 && p->write_rc == 0)
		p->write_rc = rec_err_from_gtt(rc);
	if (p->obs)
		p->obs(p->ctx, r);
}

static void do_sample(rec_perf_decoder *p, const uint8_t *rec, uint32_t size, uint16_t misc)
{
	cursor c = { rec + sizeof(struct perf_event_header), rec + size, 0 };
	gtt_record r;
	gtt_sample *s = &r.u.sample;
	uint64_t nr, i, res_cpu;
	uint32_t n_k = 0, n_u = 0, ctx = 0;
	uint64_t regs_buf[64];

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_SAMPLE;
	get_pair(&c, &s->pid, &s->tid);
	s->time_ns = get_u64(&c);
	res_cpu = get_u64(&c);
	s->cpu = (uint32_t)res_cpu;
	s->period_ns = get_u64(&c);
	nr = get_u64(&c);
	if (c.bad || nr > (uint64_t)(c.end - c.p) / 8)
		return;
	/* a thread sampled in its exit path after the kernel unhashed its tid: perf writes tid -1
	 * (its process's pid still stands). Whose it was cannot be told for sure (with the switch
	 * gate closed the last switch-in on that CPU is stale), so it is not written: microseconds
	 * of an exit, where the report otherwise grew a thread "4294967295" */
	if (s->tid == UINT32_MAX)
		return;
	/* split the chain at the context markers: kernel frames first, then user frames */
	for (i = 0; i < nr; i++) {
		uint64_t ip;
		memcpy(&ip, c.p + 8 * i, 8);
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip == (uint64_t)PERF_CONTEXT_KERNEL ? 1 : ip == (uint64_t)PERF_CONTEXT_USER ? 2 : 3;
			continue;
		}
		if (ctx == 1 && n_k + n_u < MAX_IPS && n_u == 0)
			p->ips[n_k++] = ip;
		else if (ctx == 2 && n_k + n_u < MAX_IPS)
			p->ips[n_k + n_u++] = ip;
	}
	c.p += 8 * nr;
	s->n_kernel = n_k;
	s->n_user = n_u;
	s->ips = p->ips;
	if ((misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
		s->flags |= GTT_SAMPLE_KERNEL;
	if (p->attr.sample_type & PERF_SAMPLE_REGS_USER) {
		uint64_t abi = get_u64(&c);
		if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
			uint32_t n = (uint32_t)__builtin_popcountll(p->attr.sample_regs_user);
			if (n > 64 || (uint64_t)(c.end - c.p) < 8ull * n)
				return;
			memcpy(regs_buf, c.p, 8ull * n);
			c.p += 8ull * n;
			s->flags |= GTT_SAMPLE_REGS;
			s->regs_abi = (uint32_t)abi;
			s->regs_mask = p->attr.sample_regs_user;
			s->n_regs = n;
			s->regs = regs_buf;
		}
	}
	if (p->attr.sample_type & PERF_SAMPLE_STACK_USER) {
		uint64_t sz = get_u64(&c);
		if (sz > 0) {
			const uint8_t *data = c.p;
			uint64_t dyn;
			if (sz > (uint64_t)(c.end - c.p))
				return;
			c.p += sz;
			dyn = get_u64(&c);
			if (dyn > sz)
				dyn = sz;
			if (dyn > 0 && !c.bad) {
				s->flags |= GTT_SAMPLE_STACK;
				s->stack = data;
				s->stack_len = (uint32_t)dyn;
				if (p->trim)
					s->stack_len = p->trim(p->trim_ctx, s->pid, data, s->stack_len);
				p->st.stack_bytes += s->stack_len;
			}
		}
	}
	if (c.bad)
		return;
	p->st.samples++;
	p->st.sample_bytes += size;
	emit(p, &r);
}

static void do_mmap2(rec_perf_decoder *p, const uint8_t *rec, uint32_t size, uint16_t misc)
{
	cursor c = { rec + sizeof(struct perf_event_header), rec + size, 0 };
	gtt_record r;
	gtt_mapping *m = &r.u.mapping;
	uint32_t maj, min, prot, flags;
	uint64_t ino;
	uint8_t raw[24];
	sample_id sid = trailer(p, rec, size);
	const char *path;
	size_t maxlen;

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_MAPPING;
	get_pair(&c, &m->pid, &flags); /* pid, tid */
	m->start = get_u64(&c);
	m->end = m->start + get_u64(&c);
	m->pgoff = get_u64(&c);
	if (c.end - c.p < 24 + 8)
		return;
	memcpy(raw, c.p, 24);
	c.p += 24;
	get_pair(&c, &prot, &flags);
	path = (const char *)c.p;
	maxlen = (size_t)(c.end - c.p);
	if (strnlen(path, maxlen) == maxlen)
		return;
	m->prot = prot;
	m->path = path;
	m->time_ns = sid.time_ns;
	memcpy(&maj, raw, 4);
	memcpy(&min, raw + 4, 4);
	memcpy(&ino, raw + 8, 8);
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		uint8_t n = raw[0] > 20 ? 20 : raw[0];
		memcpy(m->build_id, raw + 4, n);
		m->build_id_len = n;
	} else if (path[0] == '/') {
		m->build_id_len = (uint32_t)file_build_id(p, m->pid, maj, min, ino, path, m->build_id);
	}
	emit(p, &r);
}

static void do_comm(rec_perf_decoder *p, const uint8_t *rec, uint32_t size, uint16_t misc)
{
	cursor c = { rec + sizeof(struct perf_event_header), rec + size, 0 };
	gtt_record r;
	uint32_t pid, tid;
	const char *name;
	size_t maxlen;
	sample_id sid = trailer(p, rec, size);

	get_pair(&c, &pid, &tid);
	if (c.bad)
		return;
	name = (const char *)c.p;
	maxlen = (size_t)(c.end - c.p);
	if (strnlen(name, maxlen) == maxlen)
		return;
	name_set(p, (int32_t)tid, name);
	if (misc & PERF_RECORD_MISC_COMM_EXEC) {
		char cmd[4096];

		/* the command line as it is now (right after exec, normally the new one) */
		rec_procfs_cmdline((pid_t)pid, cmd, sizeof(cmd));
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_PROCESS;
		r.u.process.time_ns = sid.time_ns;
		r.u.process.pid = pid;
		r.u.process.event = GTT_PROC_EXEC;
		r.u.process.comm = cmd[0] ? cmd : name;
		emit(p, &r);
	}
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_THREAD;
	r.u.thread.time_ns = sid.time_ns;
	r.u.thread.pid = pid;
	r.u.thread.tid = tid;
	r.u.thread.event = GTT_THREAD_NAME;
	r.u.thread.name = name;
	emit(p, &r);
}

static void do_task(rec_perf_decoder *p, const uint8_t *rec, uint32_t size, int is_fork)
{
	cursor c = { rec + sizeof(struct perf_event_header), rec + size, 0 };
	gtt_record r;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time_ns;
	name_slot *parent;
	const char *name = "";

	get_pair(&c, &pid, &ppid);
	get_pair(&c, &tid, &ptid);
	time_ns = get_u64(&c);
	if (c.bad)
		return;
	if (is_fork) {
		rec_i32_push(&p->forked, &p->n_forked, &p->cap_forked, (int32_t)tid);
		parent = name_find(p, (int32_t)ptid, 0);
		if (parent && tid != ptid) {
			char copy[16];
			memcpy(copy, parent->name, sizeof(copy));
			name_set(p, (int32_t)tid, copy);
		}
		if ((parent = name_find(p, (int32_t)tid, 0)) != NULL)
			name = parent->name;
	} else {
		name_slot *s = name_find(p, (int32_t)tid, 0);
		if (s)
			name = s->name;
	}
	if (pid == tid && (!is_fork || pid != ppid)) {
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_PROCESS;
		r.u.process.time_ns = time_ns;
		r.u.process.pid = pid;
		r.u.process.ppid = ppid;
		r.u.process.event = is_fork ? GTT_PROC_FORK : GTT_PROC_EXIT;
		r.u.process.status = -1; /* perf does not know the exit status */
		r.u.process.comm = name;
		emit(p, &r);
	}
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_THREAD;
	r.u.thread.time_ns = time_ns;
	r.u.thread.pid = pid;
	r.u.thread.tid = tid;
	r.u.thread.event = is_fork ? GTT_THREAD_START : GTT_THREAD_EXIT;
	r.u.thread.name = name;
	emit(p, &r);
}

static void health(rec_perf_decoder *p, uint64_t t0, uint64_t t1, uint32_t kind, uint64_t count, uint32_t cpu,
                   uint32_t pid, uint32_t tid)
{
	gtt_health h = { .time_ns = t0, .end_ns = t1, .source = GTT_SRC_PERF, .kind = kind, .pid = pid,
	                 .tid = tid, .count = count, .value = { cpu } };
	int rc;

	if (p->clock_off_ns) {
		gtt_record r = { .tag = GTT_REC_HEALTH, .u.health = h };
		gtt_rec_shift(&r, p->clock_off_ns);
		h = r.u.health;
	}
	rc = gtt_write_health(p->w, &h);

	if (rc < 0 && p->write_rc == 0)
		p->write_rc = rec_err_from_gtt(rc);
}

/* Processes of the tree whose FORK record was lost, found through /proc by the record being
 * decoded (at perf time t): described before it (rec_perf_found_fn). */
static void describe_found(rec_perf_decoder *p, uint64_t t)
{
	pid_t found;

	while ((found = rec_ptree_take_found(p->tree)) > 0)
		if (p->found)
			p->found(p->found_ctx, p->w, found, t + (uint64_t)p->clock_off_ns);
}

/* One half of a lean pair as a `switch` record: only the tree's tasks, never tid -1 (an
 * exiting thread the kernel already unhashed: microseconds of an exit path). */
static void put_switch(rec_perf_decoder *p, uint64_t time_ns, uint32_t cpu, uint32_t pid, uint32_t tid,
                       uint32_t kind)
{
	gtt_record r;

	if (tid == UINT32_MAX || pid == UINT32_MAX)
		return;
	if (p->tree ? !rec_ptree_has(p->tree, (pid_t)pid) : pid == 0) { /* pid 0: the idle task */
		p->st.foreign++;
		return;
	}
	if (p->tree)
		describe_found(p, time_ns); /* the task a lean pair named may be one of those */
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_SWITCH;
	r.u.sw.time_ns = time_ns;
	r.u.sw.pid = pid;
	r.u.sw.tid = tid;
	r.u.sw.cpu = cpu;
	r.u.sw.kind = kind;
	p->st.switches++;
	p->st.switch_outs += kind != GTT_SWITCH_IN;
	emit(p, &r);
}

/* The switch events were opened again at opens[k] (the switch gate): a ring's pair state from
 * before the gap says nothing about the CPU after it. The first switch record at or after an
 * opening starts the state afresh, on the read side (skip) and the decode side alike. */
static int reopened(const rec_perf_decoder *p, uint32_t *epoch, uint64_t t)
{
	int again = 0;
	t += (uint64_t)p->clock_off_ns; /* perf's time on the trace clock, as the openings are */
	while (*epoch < p->n_opens && t >= p->opens[*epoch]) {
		(*epoch)++;
		again = 1;
	}
	return again;
}

static void lean_reset(rec_perf_ring_state *rg);
static void hide_lean_switch(rec_perf_ring_state *rg, uint32_t pid, uint32_t tid, uint16_t misc);

/* A lean CPU-wide switch record: header, next_prev pid and tid, time. On one CPU they come
 * in pairs, a switch-out (in the task going out; next_prev = the task coming in) and a
 * switch-in right after (in the task coming in; next_prev = the one that went out), so the
 * ring's state knows who is on the CPU: the out is written at the switch-out's time for the
 * task switched in before (or, when that is not known — the first pair, after a loss — for
 * the switch-in's next_prev), the in at the switch-in's time for the switch-out's next_prev.
 * The same records as the full trailer gave, from 24 bytes instead of 40 per record and
 * without the kernel's pid lookups at every switch. */
static void do_lean_switch(rec_perf_decoder *p, rec_perf_ring_state *rg, const uint8_t *rec, uint32_t size,
                           uint16_t misc)
{
	uint32_t pid, tid, cpu = (uint32_t)rg->cpu;
	uint64_t t;

	if (size != sizeof(struct perf_event_header) + 16)
		return;
	memcpy(&pid, rec + sizeof(struct perf_event_header), 4);
	memcpy(&tid, rec + sizeof(struct perf_event_header) + 4, 4);
	memcpy(&t, rec + size - 8, 8);
	if (reopened(p, &rg->epoch, t))
		lean_reset(rg);
	if (rg->epoch && t + (uint64_t)p->clock_off_ns < p->ready[rg->epoch - 1]) {
		/* a CPU whose event opened before the others': the state follows, but nothing is
		 * written before the opening's switch_gate record (from its time on, every switch is) */
		hide_lean_switch(rg, pid, tid, misc);
		return;
	}
	if (misc & PERF_RECORD_MISC_SWITCH_OUT) {
		uint32_t kind = (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? GTT_SWITCH_OUT_PREEMPT : GTT_SWITCH_OUT;
		if (rg->cur_known) {
			put_switch(p, t, cpu, rg->cur_pid, rg->cur_tid, kind);
			rg->out_pending = 0;
		} else {
			rg->out_pending = 1;
			rg->out_misc = misc;
		}
		rg->in_known = 1;
		rg->in_pid = pid;
		rg->in_tid = tid;
		rg->cur_known = 0;
		return;
	}
	if (rg->out_pending) {
		/* dated at this switch-in, microseconds after the switch-out, so that the records
		 * still leave in time order (only a CPU's first pair, or the first after a loss) */
		uint32_t kind = (rg->out_misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? GTT_SWITCH_OUT_PREEMPT : GTT_SWITCH_OUT;
		put_switch(p, t, cpu, pid, tid, kind);
		rg->out_pending = 0;
	}
	if (rg->in_known) {
		put_switch(p, t, cpu, rg->in_pid, rg->in_tid, GTT_SWITCH_IN);
		rg->cur_known = rg->in_tid != UINT32_MAX;
		rg->cur_pid = rg->in_pid;
		rg->cur_tid = rg->in_tid;
	} else {
		rg->cur_known = 0; /* a switch-in without its switch-out: who came in is not known */
	}
	rg->in_known = 0;
}

/* A lean record not written (before its opening was whole): the pair state as do_lean_switch
 * would leave it. */
static void hide_lean_switch(rec_perf_ring_state *rg, uint32_t pid, uint32_t tid, uint16_t misc)
{
	if (misc & PERF_RECORD_MISC_SWITCH_OUT) {
		rg->out_pending = 0;
		rg->in_known = 1;
		rg->in_pid = pid;
		rg->in_tid = tid;
		rg->cur_known = 0;
		return;
	}
	rg->out_pending = 0;
	if (rg->in_known) {
		rg->cur_known = rg->in_tid != UINT32_MAX;
		rg->cur_pid = rg->in_pid;
		rg->cur_tid = rg->in_tid;
	} else {
		rg->cur_known = 0;
	}
	rg->in_known = 0;
}

/* The pair state starts again after records were lost on that ring. */
static void lean_reset(rec_perf_ring_state *rg)
{
	rg->cur_known = rg->in_known = rg->out_pending = 0;
}

static void do_switch(rec_perf_decoder *p, const uint8_t *rec, uint32_t size, uint16_t misc)
{
	gtt_record r;
	sample_id sid = trailer(p, rec, size);

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_SWITCH;
	r.u.sw.time_ns = sid.time_ns;
	r.u.sw.pid = sid.pid;
	r.u.sw.tid = sid.tid;
	r.u.sw.cpu = sid.cpu;
	if (misc & PERF_RECORD_MISC_SWITCH_OUT)
		r.u.sw.kind = (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? GTT_SWITCH_OUT_PREEMPT : GTT_SWITCH_OUT;
	else
		r.u.sw.kind = GTT_SWITCH_IN;
	/* An exiting thread's last switches come after the kernel unhashed its tid: perf writes tid
	 * -1. A switch-out is the thread switched in last on that CPU; a switch-in (and the
	 * switch-out after it) of a thread that cannot be told is not written: microseconds of an
	 * exit path, where a job's timeline otherwise grew a thread "4294967295" per process,
	 * on-CPU from its first such record to the end. */
	size_t had = p->cap_on_cpu;
	if (sid.cpu < (1u << 16) && GT_GROW(p->on_cpu, p->cap_on_cpu, (size_t)sid.cpu + 1) == 0) {
		if (p->cap_on_cpu > had) /* gt_grow leaves the new slots as they come */
			memset(&p->on_cpu[had], 0, (p->cap_on_cpu - had) * sizeof(*p->on_cpu));
		if (r.u.sw.kind == GTT_SWITCH_IN) {
			p->on_cpu[sid.cpu].pid = sid.pid;
			p->on_cpu[sid.cpu].tid = sid.tid == UINT32_MAX ? 0 : sid.tid;
			if (sid.tid == UINT32_MAX)
				return;
		} else if (sid.tid == UINT32_MAX) {
			if (p->on_cpu[sid.cpu].pid != sid.pid || !p->on_cpu[sid.cpu].tid)
				return; /* whose it was is unknown: a switch of nobody is not written */
			r.u.sw.tid = p->on_cpu[sid.cpu].tid;
		}
	} else if (sid.tid == UINT32_MAX) {
		return;
	}
	p->st.switches++;
	p->st.switch_outs += r.u.sw.kind != GTT_SWITCH_IN;
	emit(p, &r);
}

/* System-wide sampling: does this record belong to the target's tree? Updates the tree from
 * FORK and exec records (they arrive in time order). Records that are not about one process
 * (lost, throttle) are kept; *foreign is set when their pid/tid must not be written. */
static int member(rec_perf_decoder *p, const struct perf_event_header *h, const uint8_t *rec, uint32_t size,
                  int *foreign)
{
	uint32_t pid = 0, ppid = 0;

	*foreign = 0;
	if (size >= sizeof(*h) + 8) {
		memcpy(&pid, rec + sizeof(*h), 4);
		memcpy(&ppid, rec + sizeof(*h) + 4, 4);
	}
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_EXIT:
		return rec_ptree_has(p->tree, (pid_t)pid);
	case PERF_RECORD_COMM:
		if (h->misc & PERF_RECORD_MISC_COMM_EXEC)
			return rec_ptree_exec(p->tree, (pid_t)pid);
		return rec_ptree_has(p->tree, (pid_t)pid);
	case PERF_RECORD_FORK:
		/* a new thread (pid == ppid) follows its process; a new process its parent */
		if (pid == ppid)
			return rec_ptree_has(p->tree, (pid_t)pid);
		return rec_ptree_fork(p->tree, (pid_t)ppid, (pid_t)pid);
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (p->lean)
			return 1; /* both halves of the pair are needed: put_switch filters each task */
		/* fall through */
	case PERF_RECORD_SWITCH:
		/* the switching task is in the trailer; the other one (next_prev) is never written */
		return rec_ptree_has(p->tree, (pid_t)trailer(p, rec, size).pid);
	case PERF_RECORD_LOST:
		rec_ptree_lossy(p->tree);
		return 1;
	case PERF_RECORD_LOST_SAMPLES:
		rec_ptree_lossy(p->tree);
		/* fall through */
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		*foreign = !rec_ptree_has(p->tree, (pid_t)trailer(p, rec, size).pid);
		return 1;
	default:
		return 0;
	}
}

void rec_perf_decode(rec_perf_decoder *p, rec_perf_ring_state *rg, const uint8_t *rec, uint32_t size)
{
	struct perf_event_header h;
	sample_id sid;
	cursor c = { rec + sizeof(h), rec + size, 0 };
	int foreign = 0;

	memcpy(&h, rec, sizeof(h));
	if (p->tree) {
		int in = member(p, &h, rec, size, &foreign);
		describe_found(p, h.type == PERF_RECORD_SAMPLE ? rec_perf_record_time(p, rec, size)
		                                               : trailer(p, rec, size).time_ns);
		if (!in) {
			p->st.foreign++;
			sid = h.type == PERF_RECORD_SAMPLE ? (sample_id){ 0, 0, 0, rec_perf_record_time(p, rec, size) }
			                                   : trailer(p, rec, size);
			if (sid.time_ns)
				rg->last_time_ns = sid.time_ns;
			return;
		}
	}
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		do_sample(p, rec, size, h.misc);
		{
			uint64_t t;
			memcpy(&t, rec + sizeof(h) + 8, 8);
			rg->last_time_ns = t;
		}
		return;
	case PERF_RECORD_MMAP2:
		do_mmap2(p, rec, size, h.misc);
		break;
	case PERF_RECORD_COMM:
		do_comm(p, rec, size, h.misc);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		do_task(p, rec, size, h.type == PERF_RECORD_FORK);
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (p->lean) {
			do_lean_switch(p, rg, rec, size, h.misc);
			break;
		}
		/* fall through */
	case PERF_RECORD_SWITCH:
		do_switch(p, rec, size, h.misc);
		break;
	case PERF_RECORD_LOST: {
		uint64_t n;
		lean_reset(rg);
		get_u64(&c); /* id */
		n = get_u64(&c);
		sid = trailer(p, rec, size);
		p->st.lost += n;
		/* the kernel writes LOST when space returns: the gap began after the last record read */
		health(p, rg->last_time_ns ? rg->last_time_ns : sid.time_ns, sid.time_ns, GTT_HEALTH_LOST, n,
		       (uint32_t)rg->cpu, 0, 0);
		break;
	}
	case PERF_RECORD_LOST_SAMPLES: {
		uint64_t n = get_u64(&c);
		lean_reset(rg);
		sid = trailer(p, rec, size);
		p->st.lost += n;
		health(p, rg->last_time_ns ? rg->last_time_ns : sid.time_ns, sid.time_ns, GTT_HEALTH_LOST, n,
		       (uint32_t)rg->cpu, foreign ? 0 : sid.pid, foreign ? 0 : sid.tid);
		break;
	}
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE: {
		uint64_t t = get_u64(&c);
		sid = trailer(p, rec, size);
		if (h.type == PERF_RECORD_THROTTLE) {
			p->st.throttled++;
			rg->throttle_start_ns = t;
		} else {
			health(p, rg->throttle_start_ns ? rg->throttle_start_ns : t, t, GTT_HEALTH_THROTTLE, 1,
			       (uint32_t)rg->cpu, foreign ? 0 : sid.pid, foreign ? 0 : sid.tid);
			rg->throttle_start_ns = 0;
		}
		break;
	}
	default:
		break;
	}
	sid = trailer(p, rec, size);
	if (sid.time_ns)
		rg->last_time_ns = sid.time_ns;
}

uint64_t rec_perf_record_time(const rec_perf_decoder *p, const uint8_t *rec, uint32_t size)
{
	struct perf_event_header h;
	uint64_t t = 0;

	if (size < sizeof(h))
		return 0;
	memcpy(&h, rec, sizeof(h));
	if (h.type == PERF_RECORD_SAMPLE) {
		if (size >= sizeof(h) + 16)
			memcpy(&t, rec + sizeof(h) + 8, 8);
		return t;
	}
	return trailer(p, rec, size).time_ns;
}

void rec_perf_decoder_set_clock_offset(rec_perf_decoder *d, int64_t offset_ns)
{
	if (d)
		d->clock_off_ns = offset_ns;
}

void rec_perf_decoder_note_name(rec_perf_decoder *d, pid_t tid, const char *name)
{
	if (d && name)
		name_set(d, (int32_t)tid, name);
}

int rec_perf_decoder_saw_fork(const rec_perf_decoder *d, pid_t tid)
{
	return d ? rec_i32_has(d->forked, d->n_forked, tid) : 0;
}

void rec_perf_decoder_stats(const rec_perf_decoder *d, rec_perf_stats *s)
{
	if (!d)
		return;
	s->samples += d->st.samples;
	s->lost += d->st.lost;
	s->throttled += d->st.throttled;
	s->switches += d->st.switches;
	s->switch_outs += d->st.switch_outs;
	s->sample_bytes += d->st.sample_bytes;
	s->stack_bytes += d->st.stack_bytes;
	s->foreign += d->st.foreign;
}

int rec_perf_decoder_skip(rec_perf_decoder *d, rec_perf_ring_state *rs, const uint8_t *rec, uint32_t size)
{
	struct perf_event_header h;
	uint32_t pid;

	if (!d->tree || size < sizeof(h) + 8)
		return 0;
	memcpy(&h, rec, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_MMAP2:
		memcpy(&pid, rec + sizeof(h), 4);
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		rs->rd_known = 0; /* switches went missing: who is on the CPU is not known */
		return 0;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (d->lean) {
			/* a pair's record names one task; the other is the one on the CPU as read so
			 * far (a switch-out's next_prev comes in): skip it when both are outsiders
			 * (its partner then is skipped too, and nothing of the tree is lost); never
			 * while the one on the CPU is not known (the start, after a loss) */
			uint64_t t;
			memcpy(&t, rec + size - 8, 8);
			if (reopened(d, &rs->rd_epoch, t))
				rs->rd_known = 0;
			uint32_t other = rs->rd_pid;
			int known = rs->rd_known;
			memcpy(&pid, rec + sizeof(h), 4);
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
				rs->rd_pid = pid;
				rs->rd_known = 1;
			}
			if (!known || !rec_ptree_known_other(d->tree, (pid_t)pid) ||
			    !rec_ptree_known_other(d->tree, (pid_t)other))
				return 0;
			d->st.foreign++;
			return 1;
		}
		/* fall through */
	case PERF_RECORD_SWITCH:
		pid = trailer(d, rec, size).pid;
		break;
	default:
		return 0;
	}
	if (!rec_ptree_known_other(d->tree, (pid_t)pid))
		return 0;
	d->st.foreign++;
	return 1;
}

int rec_perf_decoder_switches_opened(rec_perf_decoder *d, uint64_t trace_ns)
{
	if (!d->lean)
		return 0; /* full sample_id: each switch record names its task, no pair state to reset */
	if (GT_GROW(d->opens, d->cap_opens, d->n_opens + 1) < 0 || GT_GROW(d->ready, d->cap_ready, d->n_opens + 1) < 0)
		return -ENOMEM;
	d->ready[d->n_opens] = trace_ns;
	d->opens[d->n_opens++] = trace_ns;
	return 0;
}

void rec_perf_decoder_switches_ready(rec_perf_decoder *d, uint64_t trace_ns)
{
	if (d && d->n_opens && trace_ns > d->ready[d->n_opens - 1])
		d->ready[d->n_opens - 1] = trace_ns;
}

void rec_perf_decoder_set_lean(rec_perf_decoder *d)
{
	if (d)
		d->lean = 1;
}

void rec_perf_decoder_set_tree(rec_perf_decoder *d, rec_ptree *t)
{
	d->tree = t;
}

void rec_perf_decoder_set_found(rec_perf_decoder *d, rec_perf_found_fn fn, void *ctx)
{
	d->found = fn;
	d->found_ctx = ctx;
}

void rec_perf_decoder_set_trim(rec_perf_decoder *d, rec_perf_stack_trim fn, void *ctx)
{
	d->trim = fn;
	d->trim_ctx = ctx;
}

int rec_perf_decoder_write_rc(const rec_perf_decoder *d)
{
	return d ? d->write_rc : 0;
}
