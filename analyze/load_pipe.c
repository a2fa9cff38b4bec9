/* load_pipe.c — a pass of the loader with its records decoded on a thread of their own: the
 * thread runs gtt_reader_next into batches, the loader's thread takes them in file order, so a
 * pass sees exactly the records (and results) it would have read itself. Pointers a record
 * carries live only until the reader's next call, so what a pass uses of them is copied into the
 * batch (a Python read's frames, definitions' names, pass 2's stack copies); for a record whose
 * pointers it needs and that does not fit an empty batch, the thread hands the batch over and
 * waits until the pass is done with that record before it reads on (a wait for each record made
 * a trace of many renames or code objects a thread hand-off per record). Bounded: PIPE_BATCHES
 * batches of PIPE_BATCH records. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gt_ring.h"
#include "load_pipe.h"

#define PIPE_BATCH 512
#define PIPE_BATCHES 16
#define PIPE_FRAMES 2048 /* Python frames a batch holds (a read that does not fit ends it) */
#define PIPE_BYTES (256u << 10) /* pass 2: bytes of samples' callchains, registers and stack copies */
#define PIPE_NAME_BYTES (64u << 10) /* other passes: bytes of definitions' names and CUDA call stacks */

typedef struct pipe_rec {
	gtt_record rec;
	uint64_t off;            /* gtt_reader_offset after the call */
	gtt_pos pos;             /* gtt_reader_tell after it (pass 2 only) */
	int rc;                  /* what gtt_reader_next returned */
} pipe_rec;

typedef struct pipe_batch {
	pipe_rec *r;             /* PIPE_BATCH */
	gtt_py_frame *frames;    /* PIPE_FRAMES */
	uint8_t *bytes;          /* cap bytes: names, stacks and (pass 2) samples' data */
	size_t n, n_frames, n_bytes, cap;
	int last;                /* the reader stopped after these */
} pipe_batch;

struct ana_pipe {
	gtt_reader *r;
	int mode;                /* ANA_PIPE_* */
	int skip_bad;            /* read on after a corrupt chunk or a record that does not decode */
	int threaded;            /* 0: no thread could be made, the pass reads itself */
	ana_pipe_divert divert;  /* mask 0: none */
	pipe_batch b[PIPE_BATCHES];
	gt_ring ring;            /* of the batches: the thread fills, the pass takes */
	pipe_batch *cur;         /* the batch being taken, NULL none */
	size_t pos;              /* its next record */
	pipe_rec one;            /* the record of a pipe without thread */
	const pipe_rec *last;    /* the record ana_pipe_next returned last */
	size_t waits;            /* records the thread waited on the pass for (the thread's own) */
	pthread_t th;
};

/* n bytes of the batch's arena, 8-aligned: NULL when they do not fit. */
static void *take_bytes(pipe_batch *b, size_t n)
{
	size_t at = (b->n_bytes + 7) & ~(size_t)7;
	if (at > b->cap || n > b->cap - at)
		return NULL;
	b->n_bytes = at + n;
	return b->bytes + at;
}

/* Pass 2 unwinds a sample: its callchain, registers and stack copy into the batch (as fits
 * below says). */
static int copy_sample(pipe_batch *b, gtt_sample *s)
{
	size_t n_ips = (size_t)s->n_kernel + s->n_user, n_regs = s->regs ? s->n_regs : 0;
	size_t need = n_ips * 8 + n_regs * 8 + s->stack_len + 24;
	if (need > b->cap)
		return 0;
	size_t mark = b->n_bytes;
	uint64_t *ips = n_ips && s->ips ? take_bytes(b, n_ips * 8) : NULL;
	uint64_t *regs = n_regs ? take_bytes(b, n_regs * 8) : NULL;
	uint8_t *stack = s->stack_len && s->stack ? take_bytes(b, s->stack_len) : NULL;
	if ((n_ips && s->ips && !ips) || (n_regs && !regs) || (s->stack_len && s->stack && !stack)) {
		b->n_bytes = mark;
		return -1;
	}
	if (ips)
		s->ips = memcpy(ips, s->ips, n_ips * 8);
	if (regs)
		s->regs = memcpy(regs, s->regs, n_regs * 8);
	if (stack)
		s->stack = memcpy(stack, s->stack, s->stack_len);
	return 1;
}

/* The pieces a record points to, copied into the batch (strings with their NUL): 1, with dst
 * set; -1 when they do not fit what is left of it, 0 when they would not fit an empty one. All
 * or none: a record that does not fit keeps the reader's pointers. */
typedef struct piece {
	const void *src;         /* NULL: nothing */
	size_t len;              /* 0: a string */
	const void *dst;
} piece;

static int copy_pieces(pipe_batch *b, piece *pc, int n)
{
	size_t need = 0;
	for (int i = 0; i < n; i++) {
		if (!pc[i].src)
			pc[i].len = 0;
		else if (!pc[i].len)
			pc[i].len = strlen(pc[i].src) + 1;
		need += (pc[i].len + 7) & ~(size_t)7;
	}
	if (need > b->cap)
		return 0;
	if (((b->n_bytes + 7) & ~(size_t)7) + need > b->cap)
		return -1;
	for (int i = 0; i < n; i++)
		pc[i].dst = pc[i].len ? memcpy(take_bytes(b, pc[i].len), pc[i].src, pc[i].len) : NULL;
	return 1;
}

/* What the kinds with pointers not named in fits point to (names, texts, the stacks taken in
 * CUDA calls, an archive piece), into the batch: copy_pieces' result; 0 (the pass needs the
 * reader's pointers) for a kind this does not know. */
static int copy_named(pipe_batch *b, gtt_record *rec)
{
	piece pc[3] = { { 0 } };
	int n = 0, f;
	switch (rec->tag) {
	case GTT_REC_META:
		pc[n++].src = rec->u.meta.key;
		pc[n++].src = rec->u.meta.value;
		break;
	case GTT_REC_PROCESS: pc[n++].src = rec->u.process.comm; break;
	case GTT_REC_THREAD: pc[n++].src = rec->u.thread.name; break;
	case GTT_REC_MAPPING: pc[n++].src = rec->u.mapping.path; break;
	case GTT_REC_STRING: pc[n++].src = rec->u.string.text; break;
	case GTT_REC_PY_CODE:
		pc[n++].src = rec->u.py_code.name;
		pc[n++].src = rec->u.py_code.qualname;
		pc[n++].src = rec->u.py_code.filename;
		break;
	case GTT_REC_PY_THREAD: pc[n++].src = rec->u.py_thread.name; break;
	case GTT_REC_HEALTH: pc[n++].src = rec->u.health.text; break;
	case GTT_REC_CAPTURE: pc[n++].src = rec->u.capture.name; break;
	case GTT_REC_CUDA_DEVICE:
		pc[n++].src = rec->u.cuda_device.name;
		pc[n++].src = rec->u.cuda_device.uuid;
		break;
	case GTT_REC_CLOCK:
		pc[n++].src = rec->u.clock.hostname;
		pc[n++].src = rec->u.clock.boot_id;
		break;
	case GTT_REC_ARCHIVE:
		pc[n++].src = rec->u.archive.path;
		pc[n++] = (piece){ rec->u.archive.len ? rec->u.archive.data : NULL, rec->u.archive.len, NULL };
		break;
	case GTT_REC_CUDA_CALLSTACK: {
		const gtt_cuda_callstack *c = &rec->u.callstack;
		pc[n++] = (piece){ c->n_native ? c->ips : NULL, (size_t)c->n_native * sizeof(*c->ips), NULL };
		pc[n++] = (piece){ c->n_py ? c->py : NULL, (size_t)c->n_py * sizeof(*c->py), NULL };
		break;
	}
	default:
		return 0;
	}
	if ((f = copy_pieces(b, pc, n)) != 1)
		return f;
	switch (rec->tag) {
	case GTT_REC_META:
		rec->u.meta.key = pc[0].dst;
		rec->u.meta.value = pc[1].dst;
		break;
	case GTT_REC_PROCESS: rec->u.process.comm = pc[0].dst; break;
	case GTT_REC_THREAD: rec->u.thread.name = pc[0].dst; break;
	case GTT_REC_MAPPING: rec->u.mapping.path = pc[0].dst; break;
	case GTT_REC_STRING: rec->u.string.text = pc[0].dst; break;
	case GTT_REC_PY_CODE:
		rec->u.py_code.name = pc[0].dst;
		rec->u.py_code.qualname = pc[1].dst;
		rec->u.py_code.filename = pc[2].dst;
		break;
	case GTT_REC_PY_THREAD: rec->u.py_thread.name = pc[0].dst; break;
	case GTT_REC_HEALTH: rec->u.health.text = pc[0].dst; break;
	case GTT_REC_CAPTURE: rec->u.capture.name = pc[0].dst; break;
	case GTT_REC_CUDA_DEVICE:
		rec->u.cuda_device.name = pc[0].dst;
		rec->u.cuda_device.uuid = pc[1].dst;
		break;
	case GTT_REC_CLOCK:
		rec->u.clock.hostname = pc[0].dst;
		rec->u.clock.boot_id = pc[1].dst;
		break;
	case GTT_REC_ARCHIVE:
		rec->u.archive.path = pc[0].dst;
		rec->u.archive.data = pc[1].dst;
		break;
	default: /* GTT_REC_CUDA_CALLSTACK */
		rec->u.callstack.ips = pc[0].dst;
		rec->u.callstack.py = pc[1].dst;
		break;
	}
	return 1;
}

/* What a pass needs of a record: 1 when the batch holds all of it (pointers it does not use
 * cleared, a Python read's frames or a pass-2 sample's data copied into b), 0 when it needs the
 * record's own pointers (the thread waits until the pass is done with it), -1 when what it
 * copies does not fit into b (it goes into the next batch). */
static int fits(ana_pipe *p, pipe_batch *b, gtt_record *rec)
{
	rec->raw = NULL;
	switch (rec->tag) {
	case GTT_REC_SAMPLE:
		if (p->mode == ANA_PIPE_PASS2)
			return copy_sample(b, &rec->u.sample);
		if (p->mode == ANA_PIPE_PASS1_STREAM || p->mode == ANA_PIPE_PASS3) {
			/* both take its figures only; its stack is pass 2's */
			rec->u.sample.ips = NULL;
			rec->u.sample.regs = NULL;
			rec->u.sample.stack = NULL;
			return 1;
		}
		return 0;
	case GTT_REC_PY_STACK: {
		gtt_py_stack *s = &rec->u.py_stack;
		if (p->mode == ANA_PIPE_PASS1_STREAM) {
			s->frames = NULL; /* counted only */
			return 1;
		}
		if (s->n_frames > PIPE_FRAMES - b->n_frames)
			return s->n_frames > PIPE_FRAMES ? 0 : -1;
		if (s->n_frames)
			memcpy(b->frames + b->n_frames, s->frames, s->n_frames * sizeof(*s->frames));
		s->frames = s->n_frames ? b->frames + b->n_frames : NULL;
		b->n_frames += s->n_frames;
		return 1;
	}
	case GTT_REC_CALLCHAIN:
		/* the reader keeps the chains for the samples; no pass takes the definition itself */
		rec->u.callchain.ips = NULL;
		return 1;
	case GTT_REC_SWITCH:
	case GTT_REC_THREAD_CPU:
	case GTT_REC_TICKS:
	case GTT_REC_GIL:
	case GTT_REC_CUDA_KERNEL:
	case GTT_REC_CUDA_MEMCPY:
	case GTT_REC_CUDA_MEMSET:
	case GTT_REC_CUDA_SYNC:
	case GTT_REC_CUDA_API:
	case GTT_REC_CUDA_ALLOC:
	case GTT_REC_NVTX:
	case GTT_REC_COUNTER:
	case GTT_REC_SWITCH_GATE:
	case GTT_REC_END:
		return 1; /* no pointers */
	default:
		/* pass 3 takes none of the other kinds (load_stream.c, take): their tag is enough */
		return p->mode == ANA_PIPE_PASS3 ? 1 : copy_named(b, rec);
	}
}

/* 1 when the pass reads on after gtt_reader_next returned rc (the thread does too). */
static int goes_on(const ana_pipe *p, int rc)
{
	return rc > 0 || (p->skip_bad && (rc == GTT_ECORRUPT || rc == GTT_EINVAL));
}

/* gtt_reader_next for the pass, into e: the records diverted (ana_pipe_divert) are given to
 * their function on the way; e gets the next other result, or the function's error. */
static void read_one(ana_pipe *p, pipe_rec *e)
{
	for (;;) {
		e->rc = gtt_reader_next(p->r, &e->rec);
		if (e->rc > 0 && p->divert.see)
			p->divert.see(p->divert.ctx, &e->rec);
		if (e->rc > 0 && e->rec.tag < 64 && (p->divert.mask >> e->rec.tag & 1)) {
			int rc = p->divert.fn(p->divert.ctx, &e->rec);
			if (rc >= 0)
				continue;
			e->rc = rc;
		}
		break;
	}
	e->off = gtt_reader_offset(p->r);
	if (p->mode == ANA_PIPE_PASS2)
		gtt_reader_tell(p->r, &e->pos);
}

static void *reader_main(void *arg)
{
	ana_pipe *p = arg;
	pipe_rec carry;
	int have_carry = 0;
	for (;;) {
		long slot = gt_ring_produce(&p->ring);
		if (slot < 0)
			break; /* the pass ended early */
		pipe_batch *b = &p->b[slot];
		int wait = 0;
		b->n = b->n_frames = b->n_bytes = 0;
		b->last = 0;
		if (have_carry) {
			/* a Python read or a pass-2 sample that did not fit the batch before: its
			 * pointers are still the reader's, which has not been called since */
			b->r[b->n] = carry;
			wait = fits(p, b, &b->r[b->n].rec) == 0;
			b->n++;
			have_carry = 0;
		}
		while (!wait && b->n < PIPE_BATCH) {
			pipe_rec *e = &b->r[b->n];
			read_one(p, e);
			if (!goes_on(p, e->rc)) {
				b->n++;
				b->last = 1;
				break;
			}
			int f = e->rc > 0 ? fits(p, b, &e->rec) : 1;
			if (f < 0) {
				carry = *e;
				have_carry = 1;
				break;
			}
			b->n++;
			wait = f == 0;
		}
		gt_ring_publish(&p->ring, b->last);
		/* a record whose pointers the pass uses: nothing is read until it is done with it */
		if (b->last)
			break;
		if (wait) {
			p->waits++;
			if (gt_ring_drain(&p->ring) < 0)
				break;
		}
	}
	return NULL;
}

ana_pipe *ana_pipe_start(gtt_reader *r, int mode, int skip_bad, int threaded)
{
	return ana_pipe_start_divert(r, mode, skip_bad, threaded, NULL);
}

ana_pipe *ana_pipe_start_divert(gtt_reader *r, int mode, int skip_bad, int threaded, const ana_pipe_divert *d)
{
	ana_pipe *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->r = r;
	p->mode = mode;
	p->skip_bad = skip_bad;
	if (d && (d->fn || d->see))
		p->divert = *d;
	if (!threaded)
		return p; /* the pass reads itself (p->threaded 0) */
	for (size_t i = 0; i < PIPE_BATCHES; i++) {
		p->b[i].r = malloc(PIPE_BATCH * sizeof(*p->b[i].r));
		p->b[i].frames = malloc(PIPE_FRAMES * sizeof(*p->b[i].frames));
		p->b[i].cap = mode == ANA_PIPE_PASS2 ? PIPE_BYTES : mode == ANA_PIPE_PASS3 ? 0 : PIPE_NAME_BYTES;
		p->b[i].bytes = p->b[i].cap ? malloc(p->b[i].cap) : NULL;
		if (!p->b[i].r || !p->b[i].frames || (p->b[i].cap && !p->b[i].bytes))
			goto alone;
	}
	/* both sides woken for half the batches, not for each one */
	if (gt_ring_init(&p->ring, PIPE_BATCHES, PIPE_BATCHES / 2) < 0)
		goto alone;
	if (pthread_create(&p->th, NULL, reader_main, p) != 0) {
		gt_ring_destroy(&p->ring);
		goto alone;
	}
	p->threaded = 1;
	return p;
alone:
	/* no memory or thread for the batches: the pass reads itself, as without a pipe */
	for (size_t i = 0; i < PIPE_BATCHES; i++) {
		free(p->b[i].r);
		free(p->b[i].frames);
		free(p->b[i].bytes);
		p->b[i].r = NULL;
		p->b[i].frames = NULL;
		p->b[i].bytes = NULL;
	}
	return p;
}

int ana_pipe_next(ana_pipe *p, gtt_record **rec, uint64_t *off)
{
	pipe_rec *e;
	if (!p->threaded) {
		e = &p->one;
		read_one(p, e);
	} else {
		if (p->cur && p->pos == p->cur->n) {
			if (p->cur->last)
				return 0; /* called again after the end */
			gt_ring_release(&p->ring);
			p->cur = NULL;
		}
		if (!p->cur) {
			/* a batch the thread published: it publishes one more after every batch until
			 * the last, so one comes */
			long slot = gt_ring_consume(&p->ring);
			if (slot < 0)
				return 0;
			p->cur = &p->b[slot];
			p->pos = 0;
		}
		e = &p->cur->r[p->pos++];
	}
	p->last = e;
	*rec = &e->rec;
	*off = e->off;
	return e->rc;
}

const gtt_pos *ana_pipe_pos(const ana_pipe *p)
{
	return &p->last->pos;
}

size_t ana_pipe_waits(const ana_pipe *p)
{
	return p->waits;
}

void ana_pipe_free(ana_pipe *p)
{
	if (!p)
		return;
	if (p->threaded) {
		gt_ring_stop(&p->ring);
		pthread_join(p->th, NULL);
		gt_ring_destroy(&p->ring);
	}
	for (size_t i = 0; i < PIPE_BATCHES; i++) {
		free(p->b[i].r);
		free(p->b[i].frames);
		free(p->b[i].bytes);
	}
	free(p);
}
