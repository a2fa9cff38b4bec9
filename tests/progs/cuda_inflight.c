// build: -iquote record
/* cuda_inflight.c — a target for the CUDA part of gt-record --dump without a GPU: loads the
 * stand-in agent (a copy of fake_gtcupti named libgtcupti.so) and fills its in-flight table the
 * way the agent does: one thread "inside" cudaStreamSynchronize for 2.5 s (blocked in
 * fake_sync_wait), one with a slot but no call in flight, one whose slot is being written (odd
 * seq). With "plain" as the second argument the object is only loaded (as if it were libcuda
 * without the agent). Writes "ROLE TID" lines to READY_FILE, then waits until killed.
 * usage: cuda_inflight LIB READY_FILE [plain] */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gtcupti_inflight.h"

static struct gtcupti_inflight *tab;
static volatile pid_t tids[3];
static const char api_name[] = "cudaStreamSynchronize_v3020";
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void fake_sync_wait(void)
{
	pthread_mutex_lock(&mu);
	for (;;)
		pthread_cond_wait(&never, &mu);
}

static void *worker(void *arg)
{
	int i = (int)(long)arg;
	struct gtcupti_inflight_slot *s;

	tids[i] = (pid_t)syscall(SYS_gettid);
	if (tab) {
		s = &tab->slot[i];
		s->seq = 1;
		s->tid = (uint32_t)tids[i];
		s->domain = 1;
		s->n_calls = 7;
		if (i == 0) {
			s->cbid = 131;
			s->correlation = 42;
			s->depth = 1;
			s->start_ns = now_ns() - 2500000000ull;
			s->name_addr = (uint64_t)(uintptr_t)api_name;
		} else if (i == 2) {
			s->cbid = 131;
			s->start_ns = now_ns();
			s->name_addr = (uint64_t)(uintptr_t)api_name;
		}
		s->seq = i == 2 ? 3 : 2; /* slot 2 stays "being written" */
	}
	fake_sync_wait();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	char tmp[4096];
	void *h;
	FILE *f;
	long i;

	if (argc < 3)
		return 64;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	if (argc < 4) {
		tab = dlsym(h, GTCUPTI_INFLIGHT_SYMBOL);
		memcpy(tab->magic, GTCUPTI_INFLIGHT_MAGIC, 8);
		tab->version = GTCUPTI_INFLIGHT_VERSION;
		tab->n_slots = GTCUPTI_INFLIGHT_SLOTS;
		tab->slot_size = sizeof(tab->slot[0]);
		tab->header_size = 64;
		tab->pid = (uint32_t)getpid();
		tab->clock_res_ns = 4000000;
		tab->flags = GTCUPTI_INFLIGHT_ACTIVE;
	}
	for (i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	while (!tids[0] || !tids[1] || !tids[2])
		usleep(1000);
	usleep(100000);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	if (!(f = fopen(tmp, "w")))
		return 1;
	fprintf(f, "sync %d\nidle %d\nwriting %d\n", (int)tids[0], (int)tids[1], (int)tids[2]);
	fclose(f);
	rename(tmp, argv[2]);
	pthread_join(t[0], NULL);
	return 0;
}
