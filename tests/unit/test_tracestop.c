/* test_tracestop.c — why --dump's ptrace was refused (record/tracestop.c rec_ts_explain): every
 * branch of the one-line explanation from hand-made facts, Yama's scopes included (this machine
 * has no Yama, so the CLI tests cannot reach them), and the order in which causes are named; plus
 * rec_ts_why_refused on this very process against what procfs says. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "tracestop.h"

static const char *say(const rec_ts_facts *f)
{
	static char buf[512];
	rec_ts_explain(f, buf, sizeof(buf));
	return buf;
}

int main(void)
{
	rec_ts_facts base = { .pid = 4242, .tid = 4243, .self = 100, .tracer = 0, .yama_scope = -1, .have_cap = 0,
	                      .is_ancestor = 0, .target_uid = 1000, .uid = 1000 };
	rec_ts_facts f;
	const char *s;

	f = base;
	f.tracer = 77;
	snprintf(f.tracer_comm, sizeof(f.tracer_comm), "gdb");
	s = say(&f);
	th_check(strstr(s, "thread 4243 of process 4242 is already traced by process 77 (gdb)") &&
	         strstr(s, "detach the debugger"), "another tracer named first: %s", s);
	f.yama_scope = 3;
	th_check(strstr(say(&f), "already traced") != NULL, "another tracer outranks Yama's scope");
	f = base;
	f.tracer = 100; /* ourselves: not another tracer */
	th_check(strstr(say(&f), "already traced") == NULL, "our own tracing is not 'another tracer'");

	f = base;
	f.yama_scope = 3;
	f.have_cap = 1;
	s = say(&f);
	th_check(strstr(s, "kernel.yama.ptrace_scope = 3, until reboot") != NULL, "scope 3: disabled even with the capability: %s", s);
	f = base;
	f.yama_scope = 2;
	s = say(&f);
	th_check(strstr(s, "ptrace_scope = 2") && strstr(s, "CAP_SYS_PTRACE"), "scope 2 without the capability: %s", s);
	f.have_cap = 1;
	th_check(strstr(say(&f), "ptrace_scope") == NULL, "scope 2 with the capability: not Yama's fault");
	f = base;
	f.yama_scope = 1;
	s = say(&f);
	th_check(strstr(s, "not our child") && strstr(s, "sysctl kernel.yama.ptrace_scope=0"),
	         "scope 1, not an ancestor: the sysctl fix: %s", s);
	f.is_ancestor = 1;
	th_check(strstr(say(&f), "ptrace_scope") == NULL, "scope 1 from an ancestor: allowed by Yama, next cause");
	f.is_ancestor = 0;
	f.have_cap = 1;
	th_check(strstr(say(&f), "ptrace_scope") == NULL, "scope 1 with the capability: allowed by Yama");

	f = base;
	f.target_uid = 0;
	s = say(&f);
	th_check(strstr(s, "process 4242 belongs to uid 0: run gt-record as that user or as root") != NULL,
	         "another user's process: %s", s);
	f = base;
	f.uid = 0;
	f.target_uid = 0;
	s = say(&f);
	th_check(strstr(s, "this root has no CAP_SYS_PTRACE") && strstr(s, "--cap-add=SYS_PTRACE"),
	         "root without the capability (a container): %s", s);
	f = base;
	f.have_cap = 1;
	s = say(&f);
	th_check(strstr(s, "not dumpable, or a seccomp/LSM policy") != NULL, "nothing known: the remaining causes: %s", s);
	f = base;
	f.target_uid = -1;
	th_check(strstr(say(&f), "belongs to uid") == NULL, "an unknown owner is not named");

	/* every explanation is one line and fits a small buffer without overflow */
	char small[16];
	f = base;
	f.yama_scope = 1;
	rec_ts_explain(&f, small, sizeof(small));
	th_check(strlen(small) == sizeof(small) - 1, "a small buffer is filled and terminated");
	int one_line = 1;
	for (int sc = -1; sc <= 3; sc++)
		for (int cap = 0; cap <= 1; cap++) {
			f = base;
			f.yama_scope = sc;
			f.have_cap = cap;
			if (strchr(say(&f), '\n'))
				one_line = 0;
		}
	th_check(one_line, "every explanation is one line");

	/* the real thing on ourselves: no tracer, and the sentence is one of the above */
	char real[512];
	rec_ts_why_refused(getpid(), getpid(), real, sizeof(real));
	th_check(real[0] && !strstr(real, "already traced") && !strchr(real, '\n'),
	         "rec_ts_why_refused on this process: %s", real);
	th_check(rec_ts_tracer_of(getpid(), getpid()) == 0, "this process has no tracer");
	return th_report();
}
