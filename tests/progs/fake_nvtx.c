// build: -O1 -fno-omit-frame-pointer -fno-inline
/* fake_nvtx.c — stands in for a CUDA program whose agent reports NVTX capture ranges: it
 * writes capture records (format tag 32, pid = its own, source nvtx) into a side file in
 * $GT_CUPTI_DIR as the CUDA agent would, and spins in inside_range() between a start and a stop
 * and in outside_range() elsewhere. Usage: fake_nvtx NAME [RANGES] [INSIDE_S] [OUTSIDE_S]
 * (defaults: 2 ranges of 1.5 s, 1.5 s apart, 0.8 s before the first and after the last). It
 * prints each edge's CLOCK_MONOTONIC time ("start T", "stop T") on stdout. Without
 * $GT_CUPTI_DIR it only spins (and says so on stderr). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static int side_fd = -1;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void spin_for(double secs, unsigned long salt)
{
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
	unsigned long x = sink + salt;
	while (now_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) void inside_range(double secs) { spin_for(secs, 1); }
__attribute__((noinline)) void outside_range(double secs) { spin_for(secs, 2); }

/* CRC-32C (Castagnoli), bit by bit: the trace's chunk checksum */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One capture chunk: u64 time, u32 pid, u32 tid, u32 event, u32 source (2 nvtx), str name. */
static void edge(uint32_t event, const char *name)
{
	uint8_t c[12 + 28 + 256];
	uint32_t n = (uint32_t)strlen(name), len = 28 + n;
	uint64_t t = now_ns();
	if (side_fd < 0 || n > 256)
		return;
	le32(c, 32);
	le32(c + 4, len);
	le32(c + 12, (uint32_t)t);
	le32(c + 16, (uint32_t)(t >> 32));
	le32(c + 20, (uint32_t)getpid());
	le32(c + 24, (uint32_t)syscall(SYS_gettid));
	le32(c + 28, event);
	le32(c + 32, 2);
	le32(c + 36, n);
	memcpy(c + 40, name, n);
	le32(c + 8, crc32c(crc32c(0, c, 8), c + 12, len));
	if (write(side_fd, c, 12 + len) != (ssize_t)(12 + len))
		perror("fake_nvtx: write");
	printf("%s %llu\n", event == 1 ? "start" : "stop", (unsigned long long)t);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "step", *dir = getenv("GT_CUPTI_DIR");
	int ranges = argc > 2 ? atoi(argv[2]) : 2;
	double inside = argc > 3 ? atof(argv[3]) : 1.5, outside = argc > 4 ? atof(argv[4]) : 1.5;
	char path[4096];

	if (dir && *dir) {
		snprintf(path, sizeof(path), "%s/cupti-%d-0.gtt", dir, (int)getpid());
		side_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (side_fd < 0)
			perror(path);
	} else {
		fprintf(stderr, "fake_nvtx: no GT_CUPTI_DIR: no capture records\n");
	}
	outside_range(0.8);
	for (int i = 0; i < ranges; i++) {
		edge(1, name);
		inside_range(inside);
		edge(2, name);
		outside_range(i + 1 < ranges ? outside : 0.8);
	}
	if (side_fd >= 0) {
		close(side_fd);
		snprintf(path, sizeof(path), "%s/cupti-%d-0.done", dir, (int)getpid());
		close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	}
	return 0;
}
