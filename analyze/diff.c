/* diff.c — profile summaries (functions, GIL classes, kernel times) from traces or folded
 * stacks, and their comparison with a two-proportion z-test per function. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diff.h"
#include "demangle.h"
#include "gpu_sum.h"
#include "sample_sum.h"
#include "export.h"
#include "gt_util.h"
#include "gtt.h"
#include "json.h"
#include "outfile.h"
#include "gt_termsafe.h"
#include "source.h"

typedef struct pfunc { char *name; uint64_t self, total, mark; } pfunc;
typedef struct pkern { char *name; uint64_t ns; } pkern;

struct ana_profile {
	char *path;
	char *program;
	uint64_t n;
	ana_keymap *fmap;
	ANA_VEC(pfunc) funcs;
	int has_gil;
	uint64_t cls[ANA_CLASS_COUNT];
	ana_keymap *kmap;
	ANA_VEC(pkern) kernels;
	uint64_t kernel_ns;
	ANA_VEC(char *) warnings;  /* the trace's load warnings */
	int partial;               /* the trace disagrees with its END record */
};

static ana_profile *profile_new(const char *path)
{
	ana_profile *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->path = strdup(path ? path : "");
	p->fmap = ana_keymap_create();
	p->kmap = ana_keymap_create();
	if (!p->path || !p->fmap || !p->kmap) {
		ana_profile_free(p);
		return NULL;
	}
	return p;
}

void ana_profile_free(ana_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->funcs.n; i++)
		free(p->funcs.v[i].name);
	for (size_t i = 0; i < p->kernels.n; i++)
		free(p->kernels.v[i].name);
	free(p->funcs.v);
	free(p->kernels.v);
	for (size_t i = 0; i < p->warnings.n; i++)
		free(p->warnings.v[i]);
	free(p->warnings.v);
	ana_keymap_destroy(p->fmap);
	ana_keymap_destroy(p->kmap);
	free(p->path);
	free(p->program);
	free(p);
}

/* The id of name's entry (created with zero counts); -1 on ENOMEM. Ids, not pointers:
 * the array moves as it grows. */
static int64_t func_get(ana_profile *p, const char *name)
{
	int is_new = 0;
	int64_t id = ana_keymap_str(p->fmap, name, &is_new);
	if (id < 0)
		return -1;
	if (is_new) {
		pfunc *f = ana_vec_push(p->funcs);
		if (!f || !(f->name = strdup(name)))
			return -1;
	}
	return id;
}

/* Count c samples of one stack: total once per distinct function on it, self at the leaf. */
static int count_stack(ana_profile *p, const int64_t *ids, size_t n, uint64_t c, uint64_t mark)
{
	int64_t leaf = -1;
	for (size_t k = 0; k < n; k++) {
		pfunc *f = &p->funcs.v[ids[k]];
		if (f->mark != mark) {
			f->mark = mark;
			f->total += c;
		}
		leaf = ids[k];
	}
	if (leaf < 0) {
		if ((leaf = func_get(p, "[no frames]")) < 0)
			return -1;
		p->funcs.v[leaf].total += c;
	}
	p->funcs.v[leaf].self += c;
	return 0;
}

/* "gt-pipeline" for "/path/gt-pipeline --x", "python3 gilmix.py" for an interpreter. */
static char *program_of(const char *command)
{
	if (!command)
		return NULL;
	char *copy = strdup(command), *save = NULL, *res = NULL;
	if (!copy)
		return NULL;
	char *tok = strtok_r(copy, " ", &save);
	if (tok) {
		const char *base = strrchr(tok, '/') ? strrchr(tok, '/') + 1 : tok;
		if (strncmp(base, "python", 6) == 0) {
			char *arg;
			while ((arg = strtok_r(NULL, " ", &save)) && arg[0] == '-' && strcmp(arg, "-m") != 0)
				;
			if (arg && strcmp(arg, "-m") == 0)
				arg = strtok_r(NULL, " ", &save);
			const char *abase = arg ? (strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg) : NULL;
			size_t len = strlen(base) + (abase ? strlen(abase) + 1 : 0) + 1;
			if ((res = malloc(len)))
				snprintf(res, len, "%s%s%s", base, abase ? " " : "", abase ? abase : "");
		} else {
			res = strdup(base);
		}
	}
	free(copy);
	return res;
}

static int cmp_row_first(const void *x, const void *y)
{
	uint64_t a = (*(const ana_gpu_row *const *)x)->first_seq, b = (*(const ana_gpu_row *const *)y)->first_seq;
	return a < b ? -1 : a > b;
}

/* Kernel time by shown name from the streamed aggregates (report's loading path): the rows in
 * the order their names first came in the file, as the loop over the kept records meets them. */
static int kernels_from_sum(const ana_model *m, ana_profile *p)
{
	const ana_gpu_sum *S = ana_gpu_sum_of(m);
	if (!S)
		return GTT_ENOMEM;
	const ana_gpu_row **rows = malloc((S->n_kernel_rows ? S->n_kernel_rows : 1) * sizeof(*rows));
	if (!rows)
		return GTT_ENOMEM;
	for (size_t i = 0; i < S->n_kernel_rows; i++)
		rows[i] = &S->kernels[i];
	qsort(rows, S->n_kernel_rows, sizeof(*rows), cmp_row_first);
	int rc = 0;
	for (size_t i = 0; i < S->n_kernel_rows && rc == 0; i++) {
		const char *name = ana_display_name(m, rows[i]->name);
		int is_new = 0;
		int64_t id = ana_keymap_str(p->kmap, name, &is_new);
		if (id >= 0 && is_new) {
			pkern *pk = ana_vec_push(p->kernels);
			if (pk)
				pk->name = strdup(name);
			if (!pk || !pk->name)
				id = -1;
		}
		if (id < 0) {
			rc = GTT_ENOMEM;
			break;
		}
		p->kernels.v[id].ns += rows[i]->total_ns;
		p->kernel_ns += rows[i]->total_ns;
	}
	free(rows);
	return rc;
}

/* n samples of stack stack_id and class cls into p (cnt: per stack). */
static void count_sample(const ana_model *m, ana_profile *p, uint64_t *cnt, uint32_t stack_id, uint32_t cls,
                         uint64_t n)
{
	if (stack_id >= m->stacks.n)
		return;
	cnt[stack_id] += n;
	if (cls < ANA_CLASS_COUNT)
		p->cls[cls] += n;
	if (cls != ANA_CLASS_NONPY)
		p->has_gil = 1;
	p->n += n;
}

ana_profile *ana_profile_from_model(const ana_model *m)
{
	ana_profile *p = profile_new(m->path);
	uint64_t *cnt = NULL;
	int64_t *ids = NULL;
	if (!p)
		return NULL;
	if (!(cnt = calloc(m->stacks.n + 1, sizeof(*cnt))))
		goto fail;
	p->program = program_of(ana_meta_get(m, "command"));
	/* the samples, or (a model that streamed them) their counts by thread, stack and class */
	const ana_sample_sum *ss = m->samples_streamed ? ana_sample_sum_of(m) : NULL;
	if (m->samples_streamed && !ss)
		goto fail;
	for (size_t i = 0; ss && i < ss->rows.n; i++)
		count_sample(m, p, cnt, ss->rows.v[i].stack_id, ss->rows.v[i].cls, ss->rows.v[i].n);
	for (size_t i = 0; i < m->samples.n; i++)
		count_sample(m, p, cnt, m->samples.v[i].stack_id, m->samples.v[i].cls, 1);
	for (size_t t = 0; t < m->threads.n; t++)
		if (m->threads.v[t].is_python)
			p->has_gil = 1;
	/* Per distinct stack: the leaf gets self, every distinct name on it gets total once. */
	size_t max_n = 1;
	for (size_t i = 0; i < m->stacks.n; i++)
		if (m->stacks.v[i].n > max_n)
			max_n = m->stacks.v[i].n;
	if (!(ids = malloc(max_n * sizeof(*ids))))
		goto fail;
	for (size_t i = 0; i < m->stacks.n; i++) {
		if (!cnt[i])
			continue;
		const ana_stack *st = &m->stacks.v[i];
		size_t n = 0;
		for (uint32_t k = 0; k < st->n; k++) {
			const ana_frame *fr = &m->frames.v[st->frames[k]];
			if (fr->kind == ANA_FRAME_ROOT)
				continue;
			if ((ids[n++] = func_get(p, fr->name ? fr->name : "?")) < 0)
				goto fail;
		}
		if (count_stack(p, ids, n, cnt[i], i + 1) < 0)
			goto fail;
	}
	if (m->cuda_streamed) {
		if (kernels_from_sum(m, p) < 0)
			goto fail;
		goto done;
	}
	for (size_t i = 0; i < m->kernels.n; i++) {
		const gtt_cuda_kernel *k = &m->kernels.v[i];
		const char *name = ana_kernel_name(m, k->pid, k->name_id);
		int is_new = 0;
		int64_t id = ana_keymap_str(p->kmap, name, &is_new);
		if (id >= 0 && is_new) {
			pkern *pk = ana_vec_push(p->kernels);
			if (pk)
				pk->name = strdup(name);
			if (!pk || !pk->name)
				id = -1;
		}
		if (id < 0)
			goto fail;
		uint64_t ns = k->end_ns > k->start_ns ? k->end_ns - k->start_ns : 0;
		p->kernels.v[id].ns += ns;
		p->kernel_ns += ns;
	}
done:
	free(cnt);
	free(ids);
	return p;
fail:
	free(cnt);
	free(ids);
	ana_profile_free(p);
	return NULL;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

ana_profile *ana_profile_from_folded(const ana_folded *fd, const char *path)
{
	ana_profile *p = profile_new(path);
	char *buf = NULL;
	size_t cap = 0, ids_cap = 0;
	int64_t *ids = NULL;
	if (!p)
		return NULL;
	uint64_t g = 0;
	for (size_t i = 0; i < fd->n; i++)
		g = gcd_u64(g, fd->lines[i].count);
	/* Only a period-sized factor (perf's cpu-clock periods are 10^4..10^8 ns) is taken for one:
	 * real sample counts all divisible by 1000 do not happen outside toy inputs. */
	if (g < 1000)
		g = 1;
	for (size_t i = 0; i < fd->n; i++) {
		uint64_t c = fd->lines[i].count / g;
		if (!c)
			continue;
		size_t len = strlen(fd->lines[i].stack);
		if (GT_GROW(buf, cap, len + 1) < 0)
			goto fail;
		memcpy(buf, fd->lines[i].stack, len + 1);
		size_t n = 0;
		char *save = NULL;
		for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			if (GT_GROW(ids, ids_cap, n + 1) < 0)
				goto fail;
			if ((ids[n++] = func_get(p, tok)) < 0)
				goto fail;
		}
		if (count_stack(p, ids, n, c, i + 1) < 0)
			goto fail;
		p->n += c;
	}
	free(buf);
	free(ids);
	return p;
fail:
	free(buf);
	free(ids);
	ana_profile_free(p);
	return NULL;
}

/* The model's warnings and END consistency, for the command to print and weigh. */
static int keep_warnings(ana_profile *p, const ana_model *m)
{
	size_t n;
	const char *const *w = ana_model_warnings(m, &n);
	for (size_t i = 0; i < n; i++) {
		char **e = ana_vec_push(p->warnings);
		if (!e || !(*e = strdup(w[i])))
			return -1;
	}
	p->partial = m->end_mismatch;
	return 0;
}

const char *const *ana_profile_warnings(const ana_profile *p, size_t *n)
{
	*n = p->warnings.n;
	return (const char *const *)p->warnings.v;
}

int ana_profile_partial(const ana_profile *p)
{
	return p->partial;
}

void ana_profile_print_warnings(const ana_profile *p, const char *cmd)
{
	size_t n;
	const char *const *w = ana_profile_warnings(p, &n);
	for (size_t i = 0; i < n && i < 8; i++)
		fprintf(stderr, "gt-analyze %s: warning: %s\n", cmd, w[i]);
	if (n > 8)
		fprintf(stderr, "gt-analyze %s: warning: %zu more warnings\n", cmd, n - 8);
}

ana_profile *ana_profile_load(const char *path, ana_opts *o, char *err, size_t errlen)
{
	ana_source src;
	ana_profile *p = NULL;
	if (ana_source_open(&src, path, o, err, errlen) < 0)
		return NULL;
	if (src.model) {
		if (ana_model_n_samples(src.model) == 0 && !ana_gpu_sum_kernels(src.model))
			snprintf(err, errlen, "%s: the trace has no samples%s", path,
			         src.model->window.on ? " in the window (--from/--to)" : "");
		else if (!(p = ana_profile_from_model(src.model)) || keep_warnings(p, src.model) < 0) {
			snprintf(err, errlen, "%s: out of memory", path);
			ana_profile_free(p);
			p = NULL;
		}
		goto out;
	}
	if (o && (o->has_from || o->has_to)) {
		snprintf(err, errlen, "%s: folded stacks have no times: --from/--to apply to traces only", path);
		goto out;
	}
	if (src.info.n_bad) {
		snprintf(err, errlen, "%s:%zu: not a \"stack count\" line (%zu such lines)", path, src.info.first_bad_line,
		         src.info.n_bad);
		goto out;
	}
	if (src.folded.two_counts) {
		snprintf(err, errlen, "%s: FlameGraph's difference format (two counts per line, a comparison already): "
		         "give diff the two profiles it was made from", path);
		goto out;
	}
	if (!(p = ana_profile_from_folded(&src.folded, path)))
		snprintf(err, errlen, "%s: out of memory", path);
	else if (p->n == 0) {
		snprintf(err, errlen, "%s: no samples", path);
		ana_profile_free(p);
		p = NULL;
	}
out:
	ana_source_close(&src);
	return p;
}

struct load_job {
	const char *path;
	ana_opts o;
	ana_profile *p;
	char err[600];
};

static void *load_job_run(void *arg)
{
	struct load_job *j = arg;
	j->p = ana_profile_load(j->path, &j->o, j->err, sizeof(j->err));
	return NULL;
}

int ana_profile_load2(const char *pa, const char *pb, ana_opts *o, ana_profile **a, ana_profile **b, char *err,
                      size_t errlen)
{
	struct load_job *jb = calloc(1, sizeof(*jb));
	pthread_t th;
	int threaded = 0;
	*a = *b = NULL;
	if (!jb) {
		snprintf(err, errlen, "out of memory");
		return GTT_ENOMEM;
	}
	jb->path = pb;
	jb->o = *o;
	jb->o.progress = 0; /* one progress line on the terminal: BASE's */
	/* stdin can be read once: a "-" side loads alone */
	if (strcmp(pa, "-") != 0 && strcmp(pb, "-") != 0)
		threaded = pthread_create(&th, NULL, load_job_run, jb) == 0;
	*a = ana_profile_load(pa, o, err, errlen);
	if (threaded)
		pthread_join(th, NULL);
	else if (*a)
		load_job_run(jb);
	*b = jb->p;
	if (*a && !*b)
		snprintf(err, errlen, "%s", jb->err);
	free(jb);
	if (*a && *b)
		return 0;
	ana_profile_free(*a);
	ana_profile_free(*b);
	*a = *b = NULL;
	return -1;
}

uint64_t ana_profile_samples(const ana_profile *p) { return p->n; }
const char *ana_profile_program(const ana_profile *p) { return p->program; }
int ana_profile_has_gil(const ana_profile *p) { return p->has_gil; }
int ana_profile_has_gpu(const ana_profile *p) { return p->kernel_ns > 0; }

double ana_prop_z(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2)
{
	if (!n1 || !n2)
		return 0;
	double p1 = (double)x1 / (double)n1, p2 = (double)x2 / (double)n2;
	double pool = ((double)x1 + (double)x2) / ((double)n1 + (double)n2); /* sums of counts may pass 2^64 */
	double se = sqrt(pool * (1 - pool) * (1.0 / (double)n1 + 1.0 / (double)n2));
	if (se <= 0)
		return 0;
	return (p2 - p1) / se;
}

double ana_z_critical(double alpha)
{
	/* Solve erfc(z / sqrt 2) = alpha by bisection: monotone, 60 steps reach double precision. */
	if (alpha <= 0)
		return INFINITY;
	if (alpha >= 1)
		return 0;
	double lo = 0, hi = 40;
	for (int i = 0; i < 100; i++) {
		double mid = (lo + hi) / 2;
		if (erfc(mid / M_SQRT2) > alpha)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

static double pct(uint64_t x, uint64_t n)
{
	return n ? 100.0 * (double)x / (double)n : 0;
}

static int row_cmp(const void *a, const void *b)
{
	const ana_diff_row *x = a, *y = b;
	double dx = fmax(fabs(x->d_self), fabs(x->d_total)), dy = fmax(fabs(y->d_self), fabs(y->d_total));
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->name, y->name);
}

int ana_diff_compute(const ana_profile *base, const ana_profile *cur, double alpha, ana_diff *out)
{
	memset(out, 0, sizeof(*out));
	ana_keymap *u = ana_keymap_create();
	size_t cap = base->funcs.n + cur->funcs.n + 1;
	out->rows = calloc(cap, sizeof(*out->rows));
	out->names = calloc(cap, sizeof(*out->names));
	if (!u || !out->rows || !out->names)
		goto fail;
	for (int side = 0; side < 2; side++) {
		const ana_profile *p = side ? cur : base;
		for (size_t i = 0; i < p->funcs.n; i++) {
			const pfunc *f = &p->funcs.v[i];
			int is_new = 0;
			int64_t id = ana_keymap_str(u, f->name, &is_new);
			if (id < 0)
				goto fail;
			ana_diff_row *r = &out->rows[id];
			if (is_new) {
				if (!(out->names[id] = strdup(f->name)))
					goto fail;
				r->name = out->names[id];
				out->n++;
			}
			if (side) {
				r->new_self = f->self;
				r->new_total = f->total;
			} else {
				r->base_self = f->self;
				r->base_total = f->total;
			}
		}
	}
	out->base_n = base->n;
	out->new_n = cur->n;
	out->alpha = alpha > 0 ? alpha : 0.001;
	out->z_crit = ana_z_critical(out->alpha / (double)(2 * (out->n ? out->n : 1)));
	for (size_t i = 0; i < out->n; i++) {
		ana_diff_row *r = &out->rows[i];
		r->base_self_pct = pct(r->base_self, base->n);
		r->new_self_pct = pct(r->new_self, cur->n);
		r->d_self = r->new_self_pct - r->base_self_pct;
		r->base_total_pct = pct(r->base_total, base->n);
		r->new_total_pct = pct(r->new_total, cur->n);
		r->d_total = r->new_total_pct - r->base_total_pct;
		r->z_self = ana_prop_z(r->base_self, base->n, r->new_self, cur->n);
		r->z_total = ana_prop_z(r->base_total, base->n, r->new_total, cur->n);
		r->sig_self = fabs(r->z_self) > out->z_crit;
		r->sig_total = fabs(r->z_total) > out->z_crit;
	}
	qsort(out->rows, out->n, sizeof(*out->rows), row_cmp);
	ana_keymap_destroy(u);
	return 0;
fail:
	ana_keymap_destroy(u);
	ana_diff_free(out);
	return GTT_ENOMEM;
}

void ana_diff_free(ana_diff *d)
{
	if (d->names)
		for (size_t i = 0; i < d->n; i++)
			free(d->names[i]);
	free(d->names);
	free(d->rows);
	memset(d, 0, sizeof(*d));
}

void ana_diff_gil(const ana_profile *base, const ana_profile *cur, double z_crit, ana_share_row *rows)
{
	for (int c = 0; c < ANA_CLASS_COUNT; c++) {
		ana_share_row *r = &rows[c];
		r->name = ana_class_name(c);
		r->base_pct = pct(base->cls[c], base->n);
		r->new_pct = pct(cur->cls[c], cur->n);
		r->d = r->new_pct - r->base_pct;
		r->z = ana_prop_z(base->cls[c], base->n, cur->cls[c], cur->n);
		r->sig = fabs(r->z) > z_crit;
	}
}

static int share_cmp(const void *a, const void *b)
{
	const ana_share_row *x = a, *y = b;
	if (fabs(x->d) != fabs(y->d))
		return fabs(x->d) > fabs(y->d) ? -1 : 1;
	return strcmp(x->name, y->name);
}

int ana_diff_kernels(const ana_profile *base, const ana_profile *cur, ana_share_row **rows, size_t *n)
{
	*n = 0;
	*rows = calloc(base->kernels.n + cur->kernels.n + 1, sizeof(**rows));
	ana_keymap *u = ana_keymap_create();
	if (!*rows || !u) {
		free(*rows);
		*rows = NULL;
		ana_keymap_destroy(u);
		return GTT_ENOMEM;
	}
	for (int side = 0; side < 2; side++) {
		const ana_profile *p = side ? cur : base;
		for (size_t i = 0; i < p->kernels.n; i++) {
			int is_new = 0;
			int64_t id = ana_keymap_str(u, p->kernels.v[i].name, &is_new);
			if (id < 0) {
				free(*rows);
				*rows = NULL;
				ana_keymap_destroy(u);
				return GTT_ENOMEM;
			}
			ana_share_row *r = &(*rows)[id];
			if (is_new) {
				r->name = p->kernels.v[i].name;
				(*n)++;
			}
			double v = pct(p->kernels.v[i].ns, p->kernel_ns);
			if (side)
				r->new_pct = v;
			else
				r->base_pct = v;
		}
	}
	for (size_t i = 0; i < *n; i++)
		(*rows)[i].d = (*rows)[i].new_pct - (*rows)[i].base_pct;
	qsort(*rows, *n, sizeof(**rows), share_cmp);
	ana_keymap_destroy(u);
	return 0;
}

int ana_diff_write_text(const ana_diff *d, const char *base_path, const char *new_path, int top, FILE *out)
{
	size_t n_sig = 0;
	for (size_t i = 0; i < d->n; i++)
		n_sig += d->rows[i].sig_self || d->rows[i].sig_total;
	fprintf(out, "base: %s (%llu samples)\nnew:  %s (%llu samples)\n", base_path, (unsigned long long)d->base_n,
	        new_path, (unsigned long long)d->new_n);
	fprintf(out, "%zu functions, %zu changed significantly (* : two-proportion z-test, |z| > %.2f, "
	             "family-wide alpha %g)\n\n", d->n, n_sig, d->z_crit, d->alpha);
	fprintf(out, "  SELF%%  base     new   change    TOTAL%% base     new   change    FUNCTION\n");
	size_t lim = top > 0 && (size_t)top < d->n ? (size_t)top : d->n;
	for (size_t i = 0; i < lim; i++) {
		const ana_diff_row *r = &d->rows[i];
		fprintf(out, "       %6.2f  %6.2f  %+6.2f %c         %6.2f  %6.2f  %+6.2f %c  %s\n", r->base_self_pct,
		        r->new_self_pct, r->d_self, r->sig_self ? '*' : ' ', r->base_total_pct, r->new_total_pct,
		        r->d_total, r->sig_total ? '*' : ' ', r->name);
	}
	if (lim < d->n)
		fprintf(out, "(%zu more; --top 0 shows all)\n", d->n - lim);
	return ferror(out) ? GTT_EIO : 0;
}

/* Percentages rounded to 1e-6 points, so JSON stays stable across libm versions. */
static double round6(double v)
{
	return round(v * 1e6) / 1e6;
}

int ana_diff_write_json(const ana_diff *d, const char *base_path, const char *new_path, FILE *out)
{
	ana_json *j = ana_json_create(out);
	if (!j)
		return GTT_ENOMEM;
	ana_json_obj_begin(j);
	ana_json_key(j, "base");
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "path", base_path);
	ana_json_kv_u64(j, "samples", d->base_n);
	ana_json_obj_end(j);
	ana_json_key(j, "new");
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "path", new_path);
	ana_json_kv_u64(j, "samples", d->new_n);
	ana_json_obj_end(j);
	ana_json_kv_double(j, "alpha", d->alpha);
	ana_json_kv_double(j, "z_critical", round6(d->z_crit));
	ana_json_key(j, "functions");
	ana_json_arr_begin(j);
	for (size_t i = 0; i < d->n; i++) {
		const ana_diff_row *r = &d->rows[i];
		ana_json_newline(j);
		ana_json_obj_begin(j);
		ana_json_kv_str(j, "name", r->name);
		ana_json_kv_u64(j, "base_self", r->base_self);
		ana_json_kv_u64(j, "new_self", r->new_self);
		ana_json_kv_double(j, "base_self_pct", round6(r->base_self_pct));
		ana_json_kv_double(j, "new_self_pct", round6(r->new_self_pct));
		ana_json_kv_double(j, "self_change_pts", round6(r->d_self));
		ana_json_kv_double(j, "self_z", round6(r->z_self));
		ana_json_key(j, "self_significant");
		ana_json_bool(j, r->sig_self);
		ana_json_kv_u64(j, "base_total", r->base_total);
		ana_json_kv_u64(j, "new_total", r->new_total);
		ana_json_kv_double(j, "base_total_pct", round6(r->base_total_pct));
		ana_json_kv_double(j, "new_total_pct", round6(r->new_total_pct));
		ana_json_kv_double(j, "total_change_pts", round6(r->d_total));
		ana_json_kv_double(j, "total_z", round6(r->z_total));
		ana_json_key(j, "total_significant");
		ana_json_bool(j, r->sig_total);
		ana_json_obj_end(j);
	}
	ana_json_arr_end(j);
	ana_json_obj_end(j);
	ana_json_newline(j);
	int rc = ana_json_error(j) < 0 ? GTT_EIO : 0;
	ana_json_destroy(j);
	return rc;
}

int ana_profile_match(const ana_profile *a, const ana_profile *b, char *msg, size_t len)
{
	if (!a->program || !b->program || strcmp(a->program, b->program) == 0)
		return 0;
	snprintf(msg, len, "different programs: %s profiles '%s', %s profiles '%s' (--force compares anyway)",
	         a->path, a->program, b->path, b->program);
	return -1;
}

/* ---- the command ---- */

static void diff_usage(FILE *f)
{
	fputs("usage: gt-analyze diff [OPTIONS] BASE NEW\n\n"
	      "Per function: self and total share of the samples in BASE and NEW, the change in points,\n"
	      "and whether it is significant given the sample counts (two-proportion z-test, Bonferroni\n"
	      "over all functions). BASE and NEW are .gtt traces or folded stacks (fold, import-perf).\n\n"
	      "  --json           the whole comparison as JSON\n"
	      "  --top N          rows in the table (default 30, 0 = all)\n"
	      "  --alpha A        family-wide significance level (default 0.001)\n"
	      "  --force          compare even when the traces are of different programs\n"
	      "  -o FILE          write to FILE instead of stdout\n" ANA_CLI_OPTS_HELP
	      "  -h, --help       this help\n", f);
}

int ana_cmd_diff(int argc, char **argv)
{
	enum { O_JSON = 1, O_TOP, O_ALPHA, O_FORCE };
	static const struct option lopts[] = {
		{"json", no_argument, NULL, O_JSON}, {"top", required_argument, NULL, O_TOP},
		{"alpha", required_argument, NULL, O_ALPHA}, {"force", no_argument, NULL, O_FORCE},
		{"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
		ANA_CLI_LONGOPTS, {NULL, 0, NULL, 0},
	};
	ana_opts ao;
	int c, rc, json = 0, top = 30, force = 0, status = GT_EXIT_BROKEN;
	double alpha = 0.001;
	const char *out_path = NULL;
	char err[600], *end;
	ana_profile *a = NULL, *b = NULL;
	ana_diff d = {0};
	FILE *out = NULL;
	ana_out *of = NULL;
	char oerr[512];
	ana_opts_init(&ao);
	ao.stream_cuda = ANA_STREAM_CUDA_TABLES; /* kernel time by name: all diff reads of the CUDA records */
	ao.stream_samples = 1; /* and samples counted by stack and class: none kept */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", lopts, NULL)) != -1) {
		if ((rc = ana_cli_opt("diff", c, optarg, &ao)) != 0) {
			if (rc < 0)
				return GT_EXIT_USAGE;
			continue;
		}
		switch (c) {
		case O_JSON: json = 1; break;
		case O_FORCE: force = 1; break;
		case O_TOP:
			top = (int)strtol(optarg, &end, 10);
			if (*end || end == optarg || top < 0)
				return ana_cli_usage_error("diff", "--top wants a number >= 0, not '%s'", optarg);
			break;
		case O_ALPHA:
			alpha = strtod(optarg, &end);
			if (*end || end == optarg || !(alpha > 0 && alpha < 1))
				return ana_cli_usage_error("diff", "--alpha wants a level between 0 and 1, not '%s'", optarg);
			break;
		case 'o': out_path = optarg; break;
		case 'h': diff_usage(stdout); return GT_EXIT_OK;
		default: return ana_cli_usage_error("diff", "unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return ana_cli_usage_error("diff", "wants BASE and NEW");
	const char *pa = argv[optind], *pb = argv[optind + 1];
	if (ana_profile_load2(pa, pb, &ao, &a, &b, err, sizeof(err)) < 0) {
		fprintf(stderr, "gt-analyze diff: %s\n", err);
		goto out;
	}
	ana_profile_print_warnings(a, "diff");
	ana_profile_print_warnings(b, "diff");
	if (!force && ana_profile_match(a, b, err, sizeof(err)) < 0) {
		fprintf(stderr, "gt-analyze diff: %s\n", err);
		goto out;
	}
	if (ana_diff_compute(a, b, alpha, &d) < 0) {
		fprintf(stderr, "gt-analyze diff: out of memory\n");
		goto out;
	}
	const char *inputs[] = { pa, pb, NULL };
	if (!(of = ana_out_open(out_path, inputs, oerr, sizeof(oerr)))) {
		fprintf(stderr, "gt-analyze diff: %s\n", oerr);
		goto out;
	}
	out = ana_out_stream(of);
	FILE *text = json ? NULL : gt_termsafe_open(out); /* function names come from the target */
	rc = json ? ana_diff_write_json(&d, pa, pb, out) : ana_diff_write_text(&d, pa, pb, top, text ? text : out);
	if (gt_termsafe_close(text) < 0)
		rc = GTT_EIO;
	if (rc < 0 || fflush(out) != 0) {
		fprintf(stderr, "gt-analyze diff: writing: %s\n", strerror(errno));
		goto out;
	}
	status = ana_profile_partial(a) || ana_profile_partial(b) ? GT_EXIT_PARTIAL : GT_EXIT_OK;
out:
	if (ana_out_close(of, status != GT_EXIT_BROKEN, oerr, sizeof(oerr)) < 0) {
		fprintf(stderr, "gt-analyze diff: %s\n", oerr);
		status = GT_EXIT_BROKEN;
	}
	ana_diff_free(&d);
	ana_profile_free(a);
	ana_profile_free(b);
	return status;
}
