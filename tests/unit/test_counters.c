/* test_counters.c — program-emitted counters: the line parser, the C emitter (lib/gt_counters.h)
 * from threads and a forked child, and the recorder's merge into STRING + COUNTER records. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counters.h"
#include "gt_counters.h"
#include "gtt.h"
#include "testhelp.h"

static void test_parse(void)
{
	char kind;
	uint64_t t;
	const char *name, *why;
	size_t nl;
	double v;
	const char *ok = "c 123456789 queue.ready 7";
	th_check(rec_counters_parse_line(ok, strlen(ok), &kind, &t, &name, &nl, &v, &why) == 0 &&
	         kind == 'c' && t == 123456789 && nl == 11 && !strncmp(name, "queue.ready", nl) && v == 7,
	         "a value line parses into its fields");
	const char *wm = "w 5 queue.ready 9.5";
	th_check(rec_counters_parse_line(wm, strlen(wm), &kind, &t, &name, &nl, &v, &why) == 0 &&
	         kind == 'w' && v == 9.5, "a watermark line parses");
	const char *bad[] = {
		"", "c", "x 1 a 1", "c  1 a 1", "c 1 a", "c 1 a 1 extra", "c -1 a 1", "c 1a a 1",
		"c 99999999999999999999999 a 1", "c 1 a nan", "c 1 a inf", "c 1 a 1e999", "c 1 a@b 1",
		"c 1 a\tb 1", "c 1 a 1x", "c 1  1",
	};
	int all = 1;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (rec_counters_parse_line(bad[i], strlen(bad[i]), &kind, &t, &name, &nl, &v, &why) == 0 || !why) {
			all = 0;
			printf("  accepted: '%s'\n", bad[i]);
		}
	}
	th_check(all, "%zu malformed lines are refused with a reason", sizeof(bad) / sizeof(bad[0]));
	char longname[200];
	memset(longname, 'a', sizeof(longname));
	char line[300];
	int n = snprintf(line, sizeof(line), "c 1 %.*s 1", 129, longname);
	th_check(rec_counters_parse_line(line, (size_t)n, &kind, &t, &name, &nl, &v, &why) < 0,
	         "a name of 129 bytes is refused");
	n = snprintf(line, sizeof(line), "c 1 %.*s 1", 128, longname);
	th_check(rec_counters_parse_line(line, (size_t)n, &kind, &t, &name, &nl, &v, &why) == 0,
	         "a name of 128 bytes is accepted");
}

static void *emit_thread(void *arg)
{
	int k = (int)(intptr_t)arg;
	for (int i = 0; i < 500; i++)
		gt_counter_at("thr.value", (uint64_t)(k * 1000 + i), (double)i);
	return NULL;
}

typedef struct seen {
	uint64_t n_counter, n_string, n_note;
	uint64_t n_thr, n_child, n_queue, n_wm;
	double last_queue, wm_value;
	uint32_t child_pid;
	int ids_ok;
} seen;

static void scan(const char *path, seen *s, uint32_t child)
{
	int err = 0;
	gtt_reader *r = gtt_reader_open(path, &err);
	memset(s, 0, sizeof(*s));
	s->ids_ok = 1;
	if (!r)
		return;
	struct { uint32_t pid, id; char text[160]; } names[16];
	size_t nn = 0;
	gtt_record rec;
	while (gtt_reader_next(r, &rec) > 0) {
		if (rec.tag == GTT_REC_STRING && nn < 16) {
			s->n_string++;
			if (rec.u.string.id < REC_COUNTER_ID_BASE)
				s->ids_ok = 0;
			names[nn].pid = rec.u.string.pid;
			names[nn].id = rec.u.string.id;
			snprintf(names[nn].text, sizeof(names[nn].text), "%s", rec.u.string.text);
			nn++;
		} else if (rec.tag == GTT_REC_COUNTER) {
			s->n_counter++;
			const char *nm = "?";
			for (size_t i = 0; i < nn; i++)
				if (names[i].pid == rec.u.counter.pid && names[i].id == rec.u.counter.name_id)
					nm = names[i].text;
			if (!strcmp(nm, "thr.value"))
				s->n_thr++;
			else if (!strcmp(nm, "child.value") && rec.u.counter.pid == child)
				s->n_child++;
			else if (!strcmp(nm, "queue.ready")) {
				s->n_queue++;
				s->last_queue = rec.u.counter.value;
			} else if (!strcmp(nm, "queue.ready@watermark")) {
				s->n_wm++;
				s->wm_value = rec.u.counter.value;
			}
		} else if (rec.tag == GTT_REC_HEALTH && rec.u.health.kind == GTT_HEALTH_NOTE &&
		           strstr(rec.u.health.text, "malformed")) {
			s->n_note++;
		}
	}
	gtt_reader_close(r);
}

static void test_merge(void)
{
	int err = 0;
	rec_counters *c = rec_counters_create(&err);
	th_check(c != NULL, "the counters directory is made (%d)", err);
	if (!c)
		return;
	setenv("GT_COUNTERS_DIR", rec_counters_dir(c), 1);

	char tpath[] = "/tmp/test_counters.XXXXXX";
	int fd = mkstemp(tpath);
	gtt_writer *w = gtt_writer_fdopen(fd, 0, &err);
	th_check(w != NULL, "trace writer opened");
	if (!w)
		return;

	gt_counter_watermark("queue.ready", 9);
	for (int i = 0; i < 10; i++)
		gt_counter("queue.ready", i);
	pthread_t th[4];
	for (int k = 0; k < 4; k++)
		pthread_create(&th[k], NULL, emit_thread, (void *)(intptr_t)k);
	int mid = rec_counters_merge(c, w); /* concurrent with writers: only whole lines count */
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < 7; i++)
			gt_counter("child.value", i);
		_exit(0);
	}
	waitpid(child, NULL, 0);

	/* hostile content in a process's file: bad lines, an over-long line, a half line at the end */
	char bpath[4200];
	snprintf(bpath, sizeof(bpath), "%s/counters.%d", rec_counters_dir(c), 424242);
	FILE *f = fopen(bpath, "w");
	fprintf(f, "c 1 ok.value 1\nc x y z\n");
	for (int i = 0; i < 1000; i++)
		fputc('a', f);
	fprintf(f, "\nc 2 ok.value 2\nc 3 ok.val");
	fclose(f);

	int last = rec_counters_merge(c, w);
	int fin = rec_counters_finish(c, w);
	th_check(mid >= 0 && last >= 0 && fin >= 0, "merges succeed (%d, %d, %d)", mid, last, fin);
	gtt_writer_close(w);

	seen s;
	scan(tpath, &s, (uint32_t)child);
	th_check(s.n_thr == 2000, "every line written by 4 threads arrives once (%" PRIu64 " of 2000)", s.n_thr);
	th_check(s.n_child == 7, "a forked child's counters arrive under its own pid (%" PRIu64 ")", s.n_child);
	th_check(s.n_queue == 10 && s.last_queue == 9, "queue.ready values in order (%" PRIu64 ", last %g)",
	         s.n_queue, s.last_queue);
	th_check(s.n_wm == 1 && s.wm_value == 9, "the watermark is counter queue.ready@watermark (%g)", s.wm_value);
	th_check(s.ids_ok, "counter name ids are in the counters' own range");
	th_check(s.n_note == 1, "the file with malformed lines gets one note (%" PRIu64 ")", s.n_note);
	th_check(s.n_counter == 2000 + 7 + 10 + 1 + 2, "no malformed line became a record (%" PRIu64 ")", s.n_counter);
	unlink(tpath);
}

int main(void)
{
	test_parse();
	test_merge();
	return th_report();
}
