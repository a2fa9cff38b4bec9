/* test_import_perf.c — perf script text to folded stacks: header/frame parsing, name tidying,
 * annotations, event filtering, bad lines, input split at any byte. */
#include <stdlib.h>
#include <string.h>

#include "import_perf.h"
#include "testhelp.h"

/* Import text with options; return the folded output as one malloc'd string. */
static char *fold_text(const char *text, const ana_perf_opts *o, ana_perf_stats *st, size_t piece)
{
	ana_perf_import *pi = ana_perf_import_create(o);
	char *res = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&res, &len);
	size_t n = strlen(text);
	if (!piece)
		piece = n ? n : 1;
	for (size_t off = 0; off < n; off += piece)
		ana_perf_import_feed(pi, text + off, n - off < piece ? n - off : piece);
	ana_perf_import_finish(pi);
	ana_perf_import_write(pi, f);
	fclose(f);
	if (st)
		ana_perf_import_stats(pi, st);
	ana_perf_import_destroy(pi);
	return res;
}

static int same(const char *got, const char *want, const char *what)
{
	int ok = strcmp(got, want) == 0;
	if (!ok)
		printf("# %s:\n# got:\n%s# want:\n%s", what, got, want);
	return ok;
}

static const char basic[] =
	"# cmdline : /usr/bin/perf record -g ./prog\n"
	"prog 10086 [001]   659.848441:    1001001 cpu-clock:ppp: \n"
	"\t           702df __sin_fma+0x1f (/usr/lib/x86_64-linux-gnu/libm.so.6)\n"
	"\t            11f2 mid+0x12 (/tmp/exp/prog)\n"
	"\t            1088 main+0x28 (/tmp/exp/prog)\n"
	"\n"
	"prog 10086 [001]   659.849441:    1001001 cpu-clock:ppp: \n"
	"\tffffffff8103ce3b native_safe_halt+0x1b ([kernel.kallsyms])\n"
	"\t            11f2 mid+0x12 (/tmp/exp/prog)\n"
	"\t            1088 main+0x28 (/tmp/exp/prog)\n"
	"\n"
	"prog 10086 [001]   659.850441:    1001001 cpu-clock:ppp: \n"
	"\t           702df __sin_fma+0x3c (/usr/lib/x86_64-linux-gnu/libm.so.6)\n"
	"\t            11f2 mid+0x12 (/tmp/exp/prog)\n"
	"\t            1088 main+0x28 (/tmp/exp/prog)\n"
	"\n"
	"V8 WorkerThread 24636/25607 [000] 94564.109216: 100 cpu-clock:ppp:\n"
	"\t            4a2e [unknown] (/usr/lib/libfoo.so.1)\n"
	"\t            4a2f [unknown] ([unknown])\n"
	"\n";

static void test_basic(void)
{
	ana_perf_opts o;
	ana_perf_stats st;
	ana_perf_opts_init(&o);
	char *r = fold_text(basic, &o, &st, 0);
	th_check(same(r, "V8_WorkerThread;[unknown];[libfoo.so.1] 100\n"
	                 "prog;main;mid;__sin_fma 2002002\n"
	                 "prog;main;mid;native_safe_halt 1001001\n", "basic"),
	         "default: comm root, offsets stripped, periods summed, [unknown] named by module");
	th_check(st.samples == 4 && st.bad_lines == 0 && strcmp(st.event, "cpu-clock:ppp") == 0,
	         "stats: 4 samples, event cpu-clock:ppp, no bad lines (got %llu, %llu, %s)",
	         (unsigned long long)st.samples, (unsigned long long)st.bad_lines, st.event);
	free(r);

	o.tid = 1;
	o.kernel = 1;
	o.addrs = 1;
	r = fold_text(basic, &o, NULL, 0);
	th_check(same(r, "V8_WorkerThread-24636/25607;[unknown <4a2f>];[libfoo.so.1 <4a2e>] 100\n"
	                 "prog-?/10086;main;mid;__sin_fma 2002002\n"
	                 "prog-?/10086;main;mid;native_safe_halt_[k] 1001001\n", "tid kernel addrs"),
	         "--tid --kernel --addrs: PID '?' when perf printed only a TID, _[k], raw addresses");
	free(r);

	/* Splitting the input at every possible size must not change anything. */
	ana_perf_opts_init(&o);
	char *whole = fold_text(basic, &o, NULL, 0);
	int all_same = 1;
	for (size_t piece = 1; piece < 64; piece++) {
		char *p = fold_text(basic, &o, NULL, piece);
		all_same &= strcmp(p, whole) == 0;
		free(p);
	}
	th_check(all_same, "input fed in pieces of 1..63 bytes folds the same");
	free(whole);
}

static void test_names(void)
{
	static const char text[] =
		"java 24636/25607 [000] 4794564.109216: 1 cycles:\n"
		"\t7f722d142778 Ljava/io/PrintStream;::print (/tmp/perf-19982.map)\n"
		"\t7f722d142779 Lorg/moz/MemberBox;.<init>(Ljava/lang/reflect/Method;)V (/tmp/perf-19982.map)\n"
		"\t8c3453 tcp_sendmsg (/lib/modules/6.1/build/vmlinux)\n"
		"\n"
		"go 7 1.0: 3 cycles:\n"
		"\t4a2b net/http.(*Client).Do+0x10 (/usr/bin/goprog)\n"
		"\t4a2c (anonymous namespace)::skipped(int) (/usr/bin/x)\n"
		"\t4a2d a;b\"c'd (/usr/bin/x)\n"
		"\t4a30 outer->inner->leaf+0x5 (/usr/bin/x)\n"
		"\t4a31 f->-> (/usr/bin/x)\n"
		"\t4a32 (prog) (/usr/bin/x)\n"
		"\t4a33 std::vector<int>::push_back(int const&) (/usr/bin/x)\n"
		"\t4a34 ns::(anonymous namespace)::g(int) (/usr/bin/x)\n"
		"\n";
	ana_perf_opts o;
	ana_perf_opts_init(&o);
	o.jit = 1;
	o.kernel = 1;
	char *r = fold_text(text, &o, NULL, 0);
	th_check(same(r, "go;ns::(anonymous namespace)::g;std::vector<int>::push_back;f;outer;inner_[i];leaf_[i];"
	                 "a:bcd;net/http.(*Client).Do 3\n"
	                 "java;tcp_sendmsg_[k];org/moz/MemberBox:.<init>_[j];java/io/PrintStream:::print_[j] 1\n",
	              "names"),
	         "tidying: arguments cut (not Go methods, not anonymous namespaces), ';' to ':', quotes "
	         "dropped, Java 'L' dropped, inline chains _[i], vmlinux _[k], perf map _[j]");
	free(r);
}

static void test_events_and_bad_lines(void)
{
	static const char text[] =
		"prog 1 1.0: 5 cycles:\n"
		"\t1 a (/x)\n"
		"\n"
		"prog 1 1.1: 7 instructions:\n"
		"\t1 b (/x)\n"
		"\n"
		"this is not perf script\n"
		"prog 1 1.2: cycles:\n"
		"\t1 c (/x)\n"
		"\n"
		"p 2 [000] 1.3: 4 cycles:\n"
		"\t1 d (/x)";   /* one-letter command, no blank line at the end */
	ana_perf_opts o;
	ana_perf_stats st;
	ana_perf_opts_init(&o);
	char *r = fold_text(text, &o, &st, 0);
	th_check(same(r, "p;d 4\nprog;a 5\nprog;c 1\n", "events"),
	         "first event (cycles) kept, a header without a period counts 1, last sample kept at EOF");
	th_check(st.filtered == 1 && strcmp(st.other_event, "instructions") == 0,
	         "one sample of another event skipped and named (%llu, %s)", (unsigned long long)st.filtered,
	         st.other_event);
	th_check(st.bad_lines == 1 && st.first_bad_line == 7, "the bad line is reported as line 7 (%llu at %llu)",
	         (unsigned long long)st.bad_lines, (unsigned long long)st.first_bad_line);
	free(r);

	o.event_filter = "instructions";
	r = fold_text(text, &o, &st, 0);
	th_check(same(r, "prog;b 7\n", "event filter"), "--event-filter instructions keeps only that event");
	free(r);

	r = fold_text("", &o, &st, 0);
	th_check(r[0] == 0 && st.samples == 0, "empty input: no stacks, no samples");
	free(r);
}

static void test_lookup(void)
{
	ana_perf_opts o;
	ana_perf_opts_init(&o);
	ana_perf_import *pi = ana_perf_import_create(&o);
	ana_perf_import_feed(pi, basic, strlen(basic));
	ana_perf_import_finish(pi);
	uint64_t count = 0;
	th_check(ana_perf_import_nstacks(pi) == 3, "three distinct stacks");
	const char *s = ana_perf_import_stack(pi, 1, &count);
	th_check(s && strcmp(s, "prog;main;mid;__sin_fma") == 0 && count == 2002002,
	         "stack 1 in sorted order with its summed period");
	th_check(ana_perf_import_stack(pi, 3, NULL) == NULL, "out of range gives NULL");
	ana_perf_import_destroy(pi);
	ana_perf_import_destroy(NULL);
}

int main(void)
{
	test_basic();
	test_names();
	test_events_and_bad_lines();
	test_lookup();
	return th_report();
}
