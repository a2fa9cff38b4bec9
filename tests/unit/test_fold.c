/* test_fold.c — ana_fold() over a model built by hand (filters, thread roots, class suffixes,
 * Python-only, sorting and merging), and the folded text round trip through ana_fold_parse(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "model.h"
#include "testhelp.h"

static uint32_t frame(ana_model *m, const char *name, int kind)
{
	ana_frame f = { .name = name, .module = kind == ANA_FRAME_PYTHON ? "app.py" : "prog", .kind = (uint8_t)kind };
	return ana_frame_intern(m, &f);
}

static void add_thread(ana_model *m, uint32_t pid, uint32_t tid, const char *name)
{
	ana_thread *t = ana_vec_push(m->threads);
	t->pid = pid;
	t->tid = tid;
	t->name = strdup(name);
}

static void add_samples(ana_model *m, int n, uint64_t t0, uint32_t tid, uint32_t thread_idx, int cls,
                        const uint32_t *frames, uint32_t nf)
{
	uint32_t sid = ana_stack_intern(m, frames, nf);
	for (int i = 0; i < n; i++) {
		ana_sample *s = ana_vec_push(m->samples);
		s->time_ns = t0 + (uint64_t)i * 1000;
		s->weight_ns = 1000000;
		s->pid = 10;
		s->tid = tid;
		s->stack_id = sid;
		s->thread_idx = thread_idx;
		s->cls = (uint8_t)cls;
	}
}

/* Folded text of the model with o, in one string. */
static char *fold_text(const ana_model *m, const ana_fold_opts *o)
{
	ana_folded fd;
	if (ana_fold(m, o, &fd) < 0)
		return strdup("(error)");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ana_fold_write(&fd, f);
	fclose(f);
	ana_folded_free(&fd);
	return buf;
}

static void check_text(const ana_model *m, const ana_fold_opts *o, const char *want, const char *what)
{
	char *got = fold_text(m, o);
	th_check(strcmp(got, want) == 0, "%s", what);
	if (strcmp(got, want) != 0)
		printf("  got:\n%s  want:\n%s", got, want);
	free(got);
}

/* parse: first-appearance order, equal stacks merged, bad lines counted, zero counts and blanks
 * skipped; then sort */
static void check_parse(void)
{
	ana_folded fd;
	const char *text = "b;c 2\na 1\n\nb;c 3\nno_count_here\n x y z \t4 \r\nneg -1\r\nzero 0\n1.5x 2.5\n";
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	ana_fold_parse_info info;
	int rc = ana_fold_parse(f, &fd, &info);
	fclose(f);
	th_check(rc == 0, "parse ok");
	th_check(info.n_bad == 3 && info.first_bad_line == 5, "three bad lines, first at line 5 (bad=%zu first=%zu)",
	         info.n_bad, info.first_bad_line);
	th_check(fd.n == 3 && strcmp(fd.lines[0].stack, "b;c") == 0 && fd.lines[0].count == 5 &&
	             strcmp(fd.lines[1].stack, "a") == 0 && strcmp(fd.lines[2].stack, " x y z") == 0 &&
	             fd.lines[2].count == 4 && fd.total == 10,
	         "parsed in order of first appearance, equal stacks merged as read, spaces inside the stack kept, "
	         "blanks around the count dropped");
	ana_fold_sort_merge(&fd);
	th_check(fd.n == 3 && strcmp(fd.lines[0].stack, " x y z") == 0 && strcmp(fd.lines[1].stack, "a") == 0 &&
	             strcmp(fd.lines[2].stack, "b;c") == 0 && fd.lines[2].count == 5 && fd.total == 10,
	         "sort + merge: byte order, duplicates summed");
	ana_folded_free(&fd);

}

static void check_gil_words(void)
{
	/* the one --gil vocabulary of fold, export and gt-render */
	int py = 1 << ANA_CLASS_PY_GIL, ng = 1 << ANA_CLASS_NATIVE_GIL, no = 1 << ANA_CLASS_NATIVE_NOGIL,
	    wt = 1 << ANA_CLASS_WAIT_GIL, np = 1 << ANA_CLASS_NONPY;
	th_check(ana_gil_parse("held") == (py | ng) && ana_gil_parse("released") == (no | wt) &&
	             ana_gil_parse("native") == (ng | no) && ana_gil_parse("python") == py && ana_gil_parse("nopy") == np,
	         "--gil groups: held = python,native-gil; released = nogil,wait; native = native-gil,nogil");
	th_check(ana_gil_parse("wait,nopy") == (wt | np) && ana_gil_parse("any") == -1 && ana_gil_parse("held,released,nopy") == -1,
	         "--gil comma lists; every class is 'any'");
	th_check(ana_gil_parse("sometimes") == -2 && ana_gil_parse("held,") == -2 && ana_gil_parse("") == -2,
	         "--gil refuses unknown words and empty items");
}

int main(void)
{
	ana_model *m = calloc(1, sizeof(*m));
	m->start_ns = 1000000000;
	m->end_ns = 5000000000;
	gtt_process *p = ana_vec_push(m->processes);
	p->pid = 10;
	p->comm = ana_intern_str(m, "/usr/bin/python3 train.py");
	add_thread(m, 10, 10, "python3");
	add_thread(m, 10, 11, "worker;x");

	uint32_t main_ = frame(m, "main", ANA_FRAME_NATIVE), run = frame(m, "run", ANA_FRAME_NATIVE);
	uint32_t hot = frame(m, "hot", ANA_FRAME_NATIVE), cold = frame(m, "cold", ANA_FRAME_NATIVE);
	uint32_t pyf = frame(m, "train_step", ANA_FRAME_PYTHON), odd = frame(m, "a;b\nc", ANA_FRAME_NATIVE);
	/* the same name from another module is another frame, but prints the same */
	ana_frame other = { .name = "hot", .module = "libother.so", .kind = ANA_FRAME_NATIVE };
	uint32_t hot2 = ana_frame_intern(m, &other);
	th_check(hot2 != hot && frame(m, "hot", ANA_FRAME_NATIVE) == hot, "frames interned by name and module");

	uint32_t s1[] = { main_, run, hot }, s2[] = { main_, run, cold }, s3[] = { main_, pyf, hot2 }, s4[] = { main_, odd };
	add_samples(m, 6, 1100000000, 10, 0, ANA_CLASS_PY_GIL, s1, 3);        /* t = 0.1 s */
	add_samples(m, 3, 2100000000, 11, 1, ANA_CLASS_NONPY, s2, 2 + 1);     /* t = 1.1 s */
	add_samples(m, 2, 3100000000, 10, 0, ANA_CLASS_NATIVE_NOGIL, s3, 3);  /* t = 2.1 s */
	add_samples(m, 1, 4100000000, 11, 1, ANA_CLASS_NONPY, s4, 2);         /* t = 3.1 s */
	th_check(m->stacks.n == 4, "four distinct stacks interned (%zu)", m->stacks.n);
	th_check(ana_stack_intern(m, s1, 3) == m->samples.v[0].stack_id, "equal stacks share an id");

	ana_fold_opts o;
	ana_fold_opts_init(&o);
	check_text(m, &o,
	           "main;a:b c 1\n"
	           "main;run;cold 3\n"
	           "main;run;hot 6\n"
	           "main;train_step;hot 2\n",
	           "plain fold: sorted by stack, ';' and newlines in names replaced");

	ana_folded fd;
	ana_fold(m, &o, &fd);
	th_check(fd.total == 12 && fd.n == 4, "total counts every sample once");
	th_check(fd.lines[2].weight_ns == 6000000, "weights summed per line");
	ana_folded_free(&fd);

	o.threads = 1;
	check_text(m, &o,
	           "python3 10;python3 10;main;run;hot 6\n"
	           "python3 10;python3 10;main;train_step;hot 2\n"
	           "python3 10;worker:x 11;main;a:b c 1\n"
	           "python3 10;worker:x 11;main;run;cold 3\n",
	           "--threads: process and thread roots");
	o.threads = 0;

	o.gil = (1 << ANA_CLASS_PY_GIL) | (1 << ANA_CLASS_NATIVE_GIL);
	check_text(m, &o, "main;run;hot 6\n", "--gil held keeps GIL-holding samples");
	o.gil = (1 << ANA_CLASS_NATIVE_NOGIL) | (1 << ANA_CLASS_WAIT_GIL);
	check_text(m, &o, "main;train_step;hot 2\n", "--gil released keeps samples without the GIL");
	o.gil = -1;

	o.tid_filter = "11";
	check_text(m, &o, "main;a:b c 1\nmain;run;cold 3\n", "--tid filters threads");
	o.tid_filter = "12,10";
	check_text(m, &o, "main;run;hot 6\nmain;train_step;hot 2\n", "--tid list");
	o.tid_filter = "1x";
	th_check(ana_fold(m, &o, &fd) < 0, "bad --tid list is an error");
	o.tid_filter = NULL;

	o.from_ns = 1000000000;
	o.to_ns = 3000000000;
	check_text(m, &o, "main;run;cold 3\nmain;train_step;hot 2\n", "--from/--to window relative to the start");
	o.from_ns = o.to_ns = 0;

	o.annotate_class = 1;
	check_text(m, &o,
	           "main;a:b c 1\n"
	           "main;run;cold 3\n"
	           "main;run;hot_[py] 6\n"
	           "main;train_step;hot_[nogil] 2\n",
	           "class suffix on leaf frames");
	o.annotate_class = 0;

	o.python_only = 1;
	check_text(m, &o, "train_step 2\n", "--python-only keeps Python frames, drops stacks without any");
	o.python_only = 0;

	/* truncated stacks: under [truncated], or after the Python frames that stand in for the
	 * missing root side; a truncated and a complete sample of one stack are two lines */
	uint32_t s5[] = { pyf, hot }, s6[] = { run, cold };
	add_samples(m, 4, 4200000000, 11, 1, ANA_CLASS_NONPY, s6, 2);
	add_samples(m, 2, 4300000000, 10, 0, ANA_CLASS_NATIVE_NOGIL, s5, 2);
	add_samples(m, 1, 4400000000, 11, 1, ANA_CLASS_NONPY, s6, 2);
	for (size_t i = m->samples.n - 7; i < m->samples.n - 1; i++)
		m->samples.v[i].unwind = ANA_UNWIND_STACK_END;
	o.from_ns = 3200000000;
	check_text(m, &o,
	           "[truncated];run;cold 4\n"
	           "run;cold 1\n"
	           "train_step;[truncated];hot 2\n",
	           "truncated stacks hang under [truncated], after leading Python frames");
	o.threads = 1;
	check_text(m, &o,
	           "python3 10;python3 10;train_step;[truncated];hot 2\n"
	           "python3 10;worker:x 11;[truncated];run;cold 4\n"
	           "python3 10;worker:x 11;run;cold 1\n",
	           "--threads: [truncated] under the thread root");
	o.threads = 0;
	o.python_only = 1;
	check_text(m, &o, "train_step 2\n", "--python-only: no [truncated] frame");
	o.python_only = 0;
	o.from_ns = 0;

	char *round = fold_text(m, &o);
	ana_fold_parse_info info;
	FILE *f = fmemopen(round, strlen(round), "r");
	int rc = ana_fold_parse(f, &fd, &info);
	fclose(f);
	char *again = NULL;
	size_t len = 0;
	FILE *w = open_memstream(&again, &len);
	ana_fold_write(&fd, w);
	fclose(w);
	th_check(rc == 0 && info.n_bad == 0 && strcmp(round, again) == 0, "fold -> parse -> write is the identity");
	free(round);
	free(again);
	ana_folded_free(&fd);

	check_parse();
	check_gil_words();
	ana_model_free(m);
	return th_report();
}
