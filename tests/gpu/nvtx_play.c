/* nvtx_play.c — NVTX capture ranges and counters without a GPU: a C program using NVTX's own
 * header-only client (nvtx3, which loads NVTX_INJECTION64_PATH = the agent, which hands NVTX to
 * the stand-in libcupti of tests/gpu/fake_cupti.c), plays kernel launches inside and outside NVTX
 * ranges named "train_step" and emits counters as NVTX markers with payloads. Writes what a
 * correct recording must show to EXPECT (lines, read by tests/gpu/check_capture.py):
 *   pid PID
 *   ranges RULE N            capture ranges the agent must see under each rule
 *   kernel NAME CORR CLASS   CLASS: out (outside every range), in (inside a default-domain range),
 *                             dom (inside a range of domain "other"), late (launched inside, runs
 *                             after the range closed), early (launched before, runs inside)
 *   sync CORR CLASS          a cudaStreamSynchronize
 *   counter NAME VALUE       a marker with a payload
 *   plain NAME               a marker without one (no counter)
 * usage: nvtx_play EXPECT [--attach-wait SECONDS]
 * Build: gcc -std=gnu11 -I$CUDA_HOME/include nvtx_play.c -ldl -pthread */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#include <nvtx3/nvToolsExt.h>

typedef uint32_t (*call_fn)(int, uint32_t, const char *, uintptr_t, const char *, int64_t, uint32_t);
typedef void (*delay_fn)(uint64_t);

static call_fn call;
static delay_fn kernel_delay;
static FILE *out;
static pthread_barrier_t bar;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* cudaLaunchKernel of kernel `name` (host function fn), noted with its class */
static void launch(const char *name, uintptr_t fn, const char *cls, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t corr = call(2, 211, "cudaLaunchKernel_v7000", fn, name, 0, 0);
		fprintf(out, "kernel %s %u %s\n", name, corr, cls);
	}
}

static void counter_mark(nvtxDomainHandle_t dom, const char *name, int type, double v, const char *expect_name)
{
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = name;
	a.payloadType = type;
	switch (type) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: a.payload.ullValue = (uint64_t)v; break;
	case NVTX_PAYLOAD_TYPE_INT64: a.payload.llValue = (int64_t)v; break;
	case NVTX_PAYLOAD_TYPE_DOUBLE: a.payload.dValue = v; break;
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: a.payload.uiValue = (uint32_t)v; break;
	case NVTX_PAYLOAD_TYPE_INT32: a.payload.iValue = (int32_t)v; break;
	case NVTX_PAYLOAD_TYPE_FLOAT: a.payload.fValue = (float)v; break;
	default: break;
	}
	if (dom)
		nvtxDomainMarkEx(dom, &a);
	else
		nvtxMarkEx(&a);
	if (type)
		fprintf(out, "counter %s %.17g\n", expect_name, v);
	else
		fprintf(out, "plain %s\n", expect_name);
}

static void counters(void)
{
	counter_mark(NULL, "c.u64", NVTX_PAYLOAD_TYPE_UNSIGNED_INT64, 7, "c.u64");
	counter_mark(NULL, "c.i64", NVTX_PAYLOAD_TYPE_INT64, -5, "c.i64");
	counter_mark(NULL, "c.dbl", NVTX_PAYLOAD_TYPE_DOUBLE, 2.5, "c.dbl");
	counter_mark(NULL, "c.u32", NVTX_PAYLOAD_TYPE_UNSIGNED_INT32, 4000000000.0, "c.u32");
	counter_mark(NULL, "c.i32", NVTX_PAYLOAD_TYPE_INT32, -7, "c.i32");
	counter_mark(NULL, "c.flt", NVTX_PAYLOAD_TYPE_FLOAT, 1.25, "c.flt");
	counter_mark(NULL, "just.a.marker", 0, 0, "just.a.marker");
	nvtxDomainHandle_t pipe = nvtxDomainCreateA("pipe");
	counter_mark(pipe, "queue.ready", NVTX_PAYLOAD_TYPE_INT64, 9, "pipe/queue.ready");
	/* a registered string as the message, the way the nvtx Python package sends them */
	nvtxStringHandle_t reg = nvtxDomainRegisterStringA(pipe, "reg.counter");
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = reg;
	a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
	a.payload.llValue = 11;
	nvtxDomainMarkEx(pipe, &a);
	fprintf(out, "counter pipe/reg.counter 11\n");
	/* a wide-character message */
	a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
	a.message.unicode = L"wide.counter";
	a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
	a.payload.iValue = 3;
	nvtxMarkEx(&a);
	fprintf(out, "counter wide.counter 3\n");
}

/* Range 2: thread B starts "train_step" (start/end, not push/pop), the main thread launches while
 * it is open, B ends it. */
static void *thread_b(void *arg)
{
	(void)arg;
	nvtxRangeId_t id = nvtxRangeStartA("train_step");
	launch("k_in_b", 0xB0, "in", 4);
	pthread_barrier_wait(&bar);    /* the main thread launches now */
	pthread_barrier_wait(&bar);
	nvtxRangeEnd(id);
	return NULL;
}

int main(int argc, char **argv)
{
	double attach_wait = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: nvtx_play EXPECT [--attach-wait SECONDS]\n");
		return 64;
	}
	if (argc == 4 && strcmp(argv[2], "--attach-wait") == 0)
		attach_wait = atof(argv[3]);
	void *fake = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
	const char *agent_path = getenv("CUDA_INJECTION64_PATH");
	void *agent = fake && agent_path ? dlopen(agent_path, RTLD_NOW) : NULL;
	int (*init)(void) = agent ? (int (*)(void))dlsym(agent, "InitializeInjection") : NULL;
	call = fake ? (call_fn)dlsym(fake, "fake_cupti_call") : NULL;
	kernel_delay = fake ? (delay_fn)dlsym(fake, "fake_cupti_set_kernel_delay") : NULL;
	if (!init || !call || !kernel_delay || init() != 1) {
		fprintf(stderr, "nvtx_play: cannot load the agent and the stand-in libcupti: %s\n", dlerror());
		return 2;
	}
	if (attach_wait > 0) {
		/* started dormant: wait for gt-record -p to switch the agent on (control file) */
		char ctl[512];
		const char *dir = getenv("GT_CUPTI_CTL_DIR");
		snprintf(ctl, sizeof(ctl), "%s/gt-cupti.%d.ctl", dir && *dir ? dir : "/tmp", (int)getpid());
		for (int i = 0; i < (int)(attach_wait * 20); i++) {
			FILE *f = fopen(ctl, "r");
			char line[16] = "";
			if (f) {
				if (!fgets(line, sizeof(line), f))
					line[0] = 0;
				fclose(f);
			}
			if (strncmp(line, "on ", 3) == 0)
				break;
			sleep_ms(50);
		}
		sleep_ms(600);    /* the agent polls every 200 ms */
	}
	if (!(out = fopen(argv[1], "w")))
		return 2;
	fprintf(out, "pid %d\nranges none 0\nranges train_step 3\nranges train_step@other 1\nranges train_step@* 4\n",
	        (int)getpid());
	counters();
	launch("k_before", 0xA0, "out", 3);

	/* range 1: push/pop, with a nested range, a sync, and a kernel that runs after the pop */
	nvtxRangePushA("train_step");
	launch("k_in", 0xA1, "in", 5);
	nvtxRangePushA("inner");
	fprintf(out, "sync %u in\n", call(2, 131, "cudaStreamSynchronize_v3020", 0, NULL, 1000000, 0));
	nvtxRangePop();
	kernel_delay(50000000);
	launch("k_late", 0xA2, "late", 1);
	kernel_delay(0);
	nvtxRangePop();
	launch("k_between", 0xA3, "out", 3);
	sleep_ms(70);    /* k_late "runs" now, while no range is open */

	/* range 2: start/end on another thread; the main thread's launches meanwhile are inside */
	pthread_t b;
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&b, NULL, thread_b, NULL);
	pthread_barrier_wait(&bar);
	launch("k_in_main2", 0xA4, "in", 2);
	pthread_barrier_wait(&bar);
	pthread_join(b, NULL);
	launch("k_between", 0xA3, "out", 1);

	/* range 3: the same name in another domain */
	nvtxDomainHandle_t other = nvtxDomainCreateA("other");
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "train_step";
	nvtxDomainRangePushEx(other, &a);
	launch("k_dom", 0xA5, "dom", 2);
	nvtxDomainRangePop(other);

	/* range 4: a kernel launched before it runs inside it */
	kernel_delay(30000000);
	launch("k_early", 0xA6, "early", 1);
	kernel_delay(0);
	nvtxRangePushEx(&a);    /* "train_step" through the attributes, default domain */
	sleep_ms(60);
	launch("k_in4", 0xA7, "in", 1);
	nvtxRangePop();
	launch("k_after", 0xA8, "out", 3);
	sleep_ms(60);    /* the late kernels have "run" */
	fclose(out);
	return 0;
}
