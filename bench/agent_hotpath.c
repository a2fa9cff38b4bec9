/* agent_hotpath.c — what the CUDA agent costs the threads that launch kernels, without a GPU:
 * the real libgtcupti.so driven by the stand-in libcupti (tests/gpu/fake_cupti.c), which plays
 * cudaLaunchKernel calls the way CUPTI does (ENTER callback, EXIT callback, an API record and a
 * kernel record in the activity buffer, full buffers handed back on a worker thread).
 *
 * Each mode runs in a fresh child process (the agent reads its settings once); repetitions are
 * interleaved across modes; each run reports the calling thread's wall and CPU time per call,
 * best of 5 loops of --calls calls. The table gives the median and min-max over repetitions,
 * the cost over "bare" (CUPTI collecting, the agent only counting: the reference of a minimal
 * injection library) per call and per activity record (a launch makes two: API + kernel), and
 * the agent's own summary (ns per record translated on its flush thread, stacks taken).
 *
 * usage: agent_hotpath AGENT.so [--calls N] [--reps R] [--depth D] [--modes a,b,...]
 * (LD_LIBRARY_PATH must find the stand-in libcupti.so.13; bench/agent_hotpath.sh builds and runs
 * everything.) Modes: bare, nocb (full, callbacks off), inflight (in-flight table only),
 * default (table + launch stacks at their default sampling), every (a stack at every call),
 * every_deep (a stack at every call, 40 frames deeper), every_libgcc (a stack at every call, with
 * libgcc's walk instead of the cached-rule one), empty (the agent's callbacks enabled for the same
 * calls but returning at once: what the callback dispatch costs, which on a GPU is CUPTI's). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef uint32_t (*call_fn)(int, uint32_t, const char *, uintptr_t, const char *, int64_t, uint32_t);

#define MAX_MODES 10
#define MAX_REPS 64

typedef struct mode {
	const char *name, *env;
	int depth_extra;
} mode;

static const mode all_modes[] = {
	{ "bare", "GT_CUPTI_MODE=bare", 0 },
	{ "nocb", "GT_CUPTI_INFLIGHT=0 GT_CUPTI_STACKS=0", 0 },
	{ "empty", "GT_CUPTI_CALLBACKS=empty", 0 },
	{ "inflight", "GT_CUPTI_STACKS=0", 0 },
	{ "default", "", 0 },
	{ "api_callbacks", "GT_CUPTI_API=callbacks", 0 },
	{ "every", "GT_CUPTI_STACK_FIRST=1000000000 GT_CUPTI_STACK_BUDGET=0 GT_CUPTI_STACK_BUDGET_NS=0", 0 },
	{ "every_deep", "GT_CUPTI_STACK_FIRST=1000000000 GT_CUPTI_STACK_BUDGET=0 GT_CUPTI_STACK_BUDGET_NS=0", 40 },
	{ "every_libgcc", "GT_CUPTI_STACK_FIRST=1000000000 GT_CUPTI_STACK_BUDGET=0 GT_CUPTI_STACK_BUDGET_NS=0 "
	                  "GT_CUPTI_UNWIND=libgcc", 40 },
};

typedef struct result {
	double wall, cpu, enc, stack_us, cb;
} result;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static call_fn g_call;
static volatile uint64_t g_sink;

/* Launch from `depth` frames down, so stacks have a known extra depth. */
static __attribute__((noinline)) void launch_at(int depth, long n, uint32_t *corr)
{
	static const char *const kernels[4] = { "_Z5gemm1Pf", "_Z5gemm2Pf", "_Z4geluPf", "_Z3addPf" };
	if (depth > 0) {
		launch_at(depth - 1, n, corr);
		g_sink++;
		return;
	}
	for (long i = 0; i < n; i++)
		*corr = g_call(2, 211, "cudaLaunchKernel_v7000", 0x1000 + (uintptr_t)(i & 3), kernels[i & 3], 0, 0);
}

/* In the child: load, run, report "wall cpu" per call on fd. */
static int child(const char *agent_path, const mode *m, long calls, int depth, int fd, const char *dir)
{
	char env[512];
	snprintf(env, sizeof(env), "%s", m->env);
	for (char *tok = strtok(env, " "); tok; tok = strtok(NULL, " ")) {
		char *eq = strchr(tok, '=');
		if (eq) {
			*eq = 0;
			setenv(tok, eq + 1, 1);
		}
	}
	setenv("GT_CUPTI_DIR", dir, 1);
	setenv("GT_CUPTI_VERBOSE", "1", 1);
	void *fake = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
	void *agent = fake ? dlopen(agent_path, RTLD_NOW) : NULL;
	int (*init)(void) = agent ? (int (*)(void))dlsym(agent, "InitializeInjection") : NULL;
	g_call = fake ? (call_fn)dlsym(fake, "fake_cupti_call") : NULL;
	if (!init || !g_call || init() != 1) {
		fprintf(stderr, "agent_hotpath: cannot load the agent and the stand-in libcupti: %s\n", dlerror());
		return 2;
	}
	uint32_t corr = 0;
	launch_at(depth + m->depth_extra, calls, &corr);    /* warm: first-K stacks, buffers, caches */
	double best_wall = 1e30, best_cpu = 1e30;
	for (int r = 0; r < 5; r++) {
		uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		launch_at(depth + m->depth_extra, calls, &corr);
		uint64_t w1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		if ((double)(w1 - w0) / calls < best_wall)
			best_wall = (double)(w1 - w0) / calls;
		if ((double)(c1 - c0) / calls < best_cpu)
			best_cpu = (double)(c1 - c0) / calls;
	}
	char line[64];
	int len = snprintf(line, sizeof(line), "%.3f %.3f\n", best_wall, best_cpu);
	if (write(fd, line, (size_t)len) != len)
		return 2;
	return 0;    /* exit: the agent's atexit flushes and prints its summary */
}

/* "key=NUMBER" from the agent's summary line in file path; NAN-like -1 when absent. */
static double summary_value(const char *path, const char *key)
{
	char buf[8192], pat[64];
	FILE *f = fopen(path, "r");
	double v = -1;
	if (!f)
		return v;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	snprintf(pat, sizeof(pat), " %s=", key);
	const char *p = strstr(buf, pat);
	if (p)
		v = atof(p + strlen(pat));
	return v;
}

static int run_one(const char *agent, const mode *m, long calls, int depth, result *out)
{
	char dir[] = "/tmp/gt-hotpath.XXXXXX", errpath[64];
	int fds[2];
	if (!mkdtemp(dir) || pipe(fds) < 0)
		return -1;
	snprintf(errpath, sizeof(errpath), "%s.err", dir);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		if (!freopen(errpath, "w", stderr))
			_exit(2);
		exit(child(agent, m, calls, depth, fds[1], dir));    /* exit: the agent's atexit runs */
	}
	close(fds[1]);
	char line[128] = "";
	ssize_t got = pid > 0 ? read(fds[0], line, sizeof(line) - 1) : -1;
	close(fds[0]);
	int status = 0;
	if (pid > 0)
		waitpid(pid, &status, 0);
	int ok = got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	         sscanf(line, "%lf %lf", &out->wall, &out->cpu) == 2;
	out->enc = summary_value(errpath, "ns_per_record");
	out->stack_us = summary_value(errpath, "stack_us");
	out->cb = summary_value(errpath, "callback_ns");
	if (!ok) {
		FILE *f = fopen(errpath, "r");
		char msg[300] = "";
		if (f) {
			if (!fgets(msg, sizeof(msg), f))
				msg[0] = 0;
			fclose(f);
		}
		fprintf(stderr, "agent_hotpath: mode %s failed (status %d): %s", m->name, status, msg);
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, errpath);
	if (system(cmd) != 0)
		fprintf(stderr, "agent_hotpath: could not remove %s\n", dir);
	return ok ? 0 : -1;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	long calls = 200000;
	int reps = 5, depth = 10;
	const char *modes_arg = "bare,nocb,empty,inflight,default,api_callbacks,every,every_deep,every_libgcc";
	if (argc < 2) {
		fprintf(stderr, "usage: agent_hotpath AGENT.so [--calls N] [--reps R] [--depth D] [--modes LIST]\n");
		return 64;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--calls") == 0)
			calls = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--reps") == 0)
			reps = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--depth") == 0)
			depth = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--modes") == 0)
			modes_arg = argv[i + 1];
	}
	if (calls < 1000 || reps < 1 || reps > MAX_REPS || depth < 0 || depth > 200) {
		fprintf(stderr, "agent_hotpath: --calls >= 1000, --reps 1..%d, --depth 0..200\n", MAX_REPS);
		return 64;
	}
	const mode *modes[MAX_MODES];
	int n_modes = 0;
	char list[256];
	snprintf(list, sizeof(list), "%s", modes_arg);
	for (char *tok = strtok(list, ","); tok && n_modes < MAX_MODES; tok = strtok(NULL, ","))
		for (size_t k = 0; k < sizeof(all_modes) / sizeof(all_modes[0]); k++)
			if (strcmp(tok, all_modes[k].name) == 0)
				modes[n_modes++] = &all_modes[k];
	static result res[MAX_MODES][MAX_REPS];
	int n_ok[MAX_MODES] = { 0 };
	for (int r = 0; r < reps; r++)
		for (int m = 0; m < n_modes; m++)
			if (run_one(argv[1], modes[m], calls, depth, &res[m][n_ok[m]]) == 0)
				n_ok[m]++;
	printf("agent hot path: %ld cudaLaunchKernel calls per loop (2 activity records each), best of 5 loops,\n"
	       "%d interleaved repetitions per mode (median, min-max); app = the launching thread's own time\n\n",
	       calls, reps);
	printf("%-12s %5s %22s %22s %12s %12s %10s %9s %9s\n", "mode", "runs", "wall ns/call", "app CPU ns/call",
	       "app ns/rec", "over bare", "cb ns", "enc ns", "stack us");
	double bare_cpu = -1;
	for (int m = 0; m < n_modes; m++) {
		int n = n_ok[m];
		if (!n) {
			printf("%-12s %5d failed\n", modes[m]->name, 0);
			continue;
		}
		double w[MAX_REPS], c[MAX_REPS], e[MAX_REPS], s[MAX_REPS], cb[MAX_REPS];
		for (int i = 0; i < n; i++) {
			w[i] = res[m][i].wall;
			c[i] = res[m][i].cpu;
			e[i] = res[m][i].enc;
			s[i] = res[m][i].stack_us;
			cb[i] = res[m][i].cb;
		}
		double wm = median(w, n), cm = median(c, n), em = median(e, n), sm = median(s, n), cbm = median(cb, n);
		if (strcmp(modes[m]->name, "bare") == 0)
			bare_cpu = cm;
		char wbuf[40], cbuf[40], over[24] = "";
		snprintf(wbuf, sizeof(wbuf), "%.1f (%.1f-%.1f)", wm, w[0], w[n - 1]);
		snprintf(cbuf, sizeof(cbuf), "%.1f (%.1f-%.1f)", cm, c[0], c[n - 1]);
		if (bare_cpu >= 0 && strcmp(modes[m]->name, "bare") != 0)
			snprintf(over, sizeof(over), "%+.1f/rec", (cm - bare_cpu) / 2);
		printf("%-12s %5d %22s %22s %12.1f %12s %10.1f %9.1f %9.2f\n", modes[m]->name, n, wbuf, cbuf, cm / 2,
		       over, cbm, em, sm);
	}
	printf("\ncb ns: the agent's own timing of its API callbacks (1 in 256, mean); enc ns: translation on its\n"
	       "flush thread per record (not on the launching thread); stack us: time per stack taken\n");
	return 0;
}
