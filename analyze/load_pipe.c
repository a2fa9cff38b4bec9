/* load_pipe.c — a pass of the loader with its records decoded on a thread of their own: the
 * thread runs gtt_reader_next into batches, the loader's thread takes them in file order, so a
 * pass sees exactly the records (and results) it would have read itself. Pointers a record
 * carries live only until the reader's next call, so what a pass uses of them is copied into the
 * batch (a Python read's frames) or, for the kinds whose pointers it needs (definitions), the
 * thread hands the batch over and waits until the pass is done with that record before it reads
 * on. Bounded: PIPE_BATCHES batches of PIPE_BATCH records. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gt_ring.h"
#include "load_pipe.h"

#define PIPE_BATCH 512
#define PIPE_BATCHES 16
#define PIPE_FRAMES 2048 /* Python frames a batch holds (a read that does not fit ends it) */
#define PIPE_BYTES (256u << 10) /* pass 2: bytes of samples' callchains, registers and stack copies */

typedef struct pipe_rec {
	gtt_record rec;
	uint64_t off;            /* gtt_reader_offset after the call */
	gtt_pos pos;             /* gtt_reader_tell after it (pass 2 only) */
	int rc;                  /* what gtt_reader_next returned */
} pipe_rec;

typedef struct pipe_batch {
	pipe_rec *r;             /* PIPE_BATCH */
	gtt_py_frame *frames;    /* PIPE_FRAMES */
	uint8_t *bytes;          /* PIPE_BYTES (pass 2 only) */
	size_t n, n_frames, n_bytes;
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
	pthread_t th;
};

/* n bytes of the batch's arena, 8-aligned: NULL when they do not fit. */
static void *take_bytes(pipe_batch *b, size_t n)
{
	size_t at = (b->n_bytes + 7) & ~(size_t)7;
	if (at > PIPE_BYTES || n > PIPE_BYTES - at)
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
	if (need > PIPE_BYTES)
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
		return 1; /* no pointers */
	default:
		/* pass 3 takes none of the other kinds (load_stream.c, take): their tag is enough */
		return p->mode == ANA_PIPE_PASS3 ? 1 : 0;
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
		if (b->last || (wait && gt_ring_drain(&p->ring) < 0))
			break;
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
		p->b[i].bytes = mode == ANA_PIPE_PASS2 ? malloc(PIPE_BYTES) : NULL;
		if (!p->b[i].r || !p->b[i].frames || (mode == ANA_PIPE_PASS2 && !p->b[i].bytes))
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
