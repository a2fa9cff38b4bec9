/* test_gpu_merge.c — record/cuda_inject.c: side files with whole, partial and corrupt chunks are
 * merged exactly once; environment for the child; attach-mode control files. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cuda_inject.h"
#include "testhelp.h"

static char tmpdir[] = "/tmp/gt-test-merge.XXXXXX";

/* Encode records the way the agent does: a header-less side file. */
static void write_kernels(const char *path, uint32_t pid, uint32_t first, uint32_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	gtt_writer *w = gtt_writer_fdopen(fd, 1, NULL);
	for (uint32_t i = 0; i < n; i++) {
		gtt_record r = { .tag = GTT_REC_CUDA_KERNEL };
		r.u.kernel.start_ns = 1000 * (first + i);
		r.u.kernel.end_ns = r.u.kernel.start_ns + 500;
		r.u.kernel.pid = pid;
		r.u.kernel.correlation = first + i;
		r.u.kernel.name_id = 1;
		gtt_write(w, &r);
	}
	gtt_writer_close(w);
}

/* Encode one kernel record as raw chunk bytes into buf; returns its length. */
static size_t one_chunk(uint8_t *buf, size_t cap, uint32_t corr)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/chunk.tmp", tmpdir);
	unlink(path);
	write_kernels(path, 7, corr, 1);
	int fd = open(path, O_RDONLY);
	ssize_t n = read(fd, buf, cap);
	close(fd);
	unlink(path);
	return n > 0 ? (size_t)n : 0;
}

static void append_bytes(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND);
	if (write(fd, p, n) != (ssize_t)n)
		perror("write");
	close(fd);
}

typedef struct seen_capture {
	int n;
	uint32_t pid, event;
	char name[64];
} seen_capture;

static void observe_capture(void *ctx, const gtt_record *r)
{
	seen_capture *s = ctx;
	if (r->tag != GTT_REC_CAPTURE)
		return;
	s->n++;
	s->pid = r->u.capture.pid;
	s->event = r->u.capture.event;
	snprintf(s->name, sizeof(s->name), "%s", r->u.capture.name);
}

/* Read a trace back; count kernel records, sum their correlation ids, count notes. */
static void read_back(const char *path, int *n_kernels, uint64_t *corr_sum, int *n_notes)
{
	int err = 0;
	gtt_reader *r = gtt_reader_open(path, &err);
	*n_kernels = 0;
	*corr_sum = 0;
	*n_notes = 0;
	gtt_record rec;
	while (r && gtt_reader_next(r, &rec) == 1) {
		if (rec.tag == GTT_REC_CUDA_KERNEL) {
			(*n_kernels)++;
			*corr_sum += rec.u.kernel.correlation;
		} else if (rec.tag == GTT_REC_HEALTH && rec.u.health.kind == GTT_HEALTH_NOTE) {
			(*n_notes)++;
		}
	}
	gtt_reader_close(r);
}

/* Attach mode: a process without the agent, then a prepared one (the control file says on DIR
 * with the settings and the capture rule, then off). */
static void check_attach(const char *agent)
{
	char err[512] = "";
	int rc;
	rec_cuda *c = rec_cuda_prepare("gt-record", 0, err, sizeof(err));
	/* a process without the agent gives 0 and a note */
	unsetenv("CUDA_INJECTION64_PATH");
	pid_t plain = fork();
	if (plain == 0) {
		execl("/bin/sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	usleep(100000);
	err[0] = 0;
	rc = rec_cuda_attach(c, plain, 1, err, sizeof(err));
	th_check(rc == 0 && strstr(err, "--prepare"), "process without the agent: 0 and a note (%d: %s)", rc, err);

	/* A prepared process (agent injected, CUDA not started): 1, and an "on DIR" control file. */
	pid_t prepared = fork();
	if (prepared == 0) {
		setenv("CUDA_INJECTION64_PATH", agent, 1);
		execl("/bin/sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	usleep(100000);
	setenv("GT_CUPTI_STACKS", "0", 1);    /* gt-record --cuda-stacks=off */
	rec_cuda_capture_nvtx(c, "train_step", err, sizeof(err));
	rc = rec_cuda_attach(c, prepared, 1, err, sizeof(err));
	unsetenv("GT_CUPTI_STACKS");
	th_check(rc == 1, "prepared process: agent present (%d: %s)", rc, err);
	char ctl[512], text[1024] = "";
	snprintf(ctl, sizeof(ctl), "%s/gt-cupti.%d.ctl", tmpdir, (int)prepared);
	int fd = open(ctl, O_RDONLY);
	ssize_t k = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (fd >= 0)
		close(fd);
	text[k > 0 ? k : 0] = 0;
	th_check(strncmp(text, "on /", 4) == 0 && strstr(text, "gt-cuda."), "control file says on DIR (%s)", text);
	th_check(strstr(text, "\nset GT_CUPTI_STACKS=0\n") != NULL, "... and passes the launch-stack setting on (%s)", text);
	th_check(strstr(text, "\nset GT_CUPTI_CAPTURE_NVTX=train_step\n") != NULL, "... and the capture rule");
	rc = rec_cuda_attach(c, prepared, 0, err, sizeof(err));
	fd = open(ctl, O_RDONLY);
	k = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (fd >= 0)
		close(fd);
	text[k > 0 ? k : 0] = 0;
	th_check(rc == 1 && strcmp(text, "off\n") == 0, "switching off writes off (%s)", text);
	rec_cuda_finish(c, NULL);
	th_check(access(ctl, F_OK) != 0, "finish removes the control file");
	kill(plain, SIGKILL);
	kill(prepared, SIGKILL);
	waitpid(plain, NULL, 0);
	waitpid(prepared, NULL, 0);

}

int main(void)
{
	char err[512] = "", agent[256], trace[256], side[512], side2[512];
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	snprintf(agent, sizeof(agent), "%s/libgtcupti.so", tmpdir);
	close(open(agent, O_WRONLY | O_CREAT, 0755));
	setenv("GT_CUPTI_AGENT", agent, 1);
	setenv("GT_CUPTI_CTL_DIR", tmpdir, 1);
	setenv("TMPDIR", tmpdir, 1);
	unsetenv("GT_CUDA");

	/* Missing agent: NULL with a reason. */
	setenv("GT_CUPTI_AGENT", "/nonexistent/libgtcupti.so", 1);
	rec_cuda *none = rec_cuda_prepare("gt-record", 0, err, sizeof(err));
	th_check(!none && strstr(err, "no such file"), "missing agent is reported: %s", err);
	setenv("GT_CUPTI_AGENT", agent, 1);

	rec_cuda *c = rec_cuda_prepare("gt-record", 0, err, sizeof(err));
	th_check(c != NULL, "prepare finds the agent through GT_CUPTI_AGENT (%s)", err);
	if (!c)
		return th_report();

	/* Capture rules: malformed ones are refused with a reason; a good one reaches the child. */
	const char *bad_rules[] = { "@dom", "name@", "x\ny" };
	for (size_t i = 0; i < sizeof(bad_rules) / sizeof(bad_rules[0]); i++) {
		err[0] = 0;
		int crc = rec_cuda_capture_nvtx(c, bad_rules[i], err, sizeof(err));
		th_check(crc == GTT_EINVAL && strstr(err, "nvtx:NAME"), "malformed capture rule %zu refused with a reason", i);
	}
	th_check(rec_cuda_capture_nvtx(c, "train_step@*", err, sizeof(err)) == 0, "capture rule train_step@* taken");

	/* The child's environment names the agent and a side-file directory. */
	rec_cuda_child_env(c);
	th_check(getenv("GT_CUPTI_CAPTURE_NVTX") && strcmp(getenv("GT_CUPTI_CAPTURE_NVTX"), "train_step@*") == 0,
	         "the capture rule is in the child's environment");
	unsetenv("GT_CUPTI_CAPTURE_NVTX");
	const char *inj = getenv("CUDA_INJECTION64_PATH"), *dir = getenv("GT_CUPTI_DIR");
	th_check(inj && strstr(inj, "libgtcupti.so"), "CUDA_INJECTION64_PATH set (%s)", inj ? inj : "-");
	th_check(getenv("NVTX_INJECTION64_PATH") && strcmp(getenv("NVTX_INJECTION64_PATH"), inj) == 0,
	         "NVTX_INJECTION64_PATH is the same library");
	struct stat st;
	th_check(dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "side-file directory exists");
	th_check(!getenv("GT_CUPTI_DORMANT"), "not dormant in launch mode");
	if (!dir)
		return th_report();

	snprintf(trace, sizeof(trace), "%s/out.gtt", tmpdir);
	gtt_writer *w = gtt_writer_open(trace, NULL);

	/* Pid 7: 3 whole chunks then half of a fourth. */
	snprintf(side, sizeof(side), "%s/cupti-7-0.gtt", dir);
	write_kernels(side, 7, 1, 3);
	uint8_t chunk[512];
	size_t clen = one_chunk(chunk, sizeof(chunk), 100);
	th_check(clen > 20, "encoded one chunk (%zu bytes)", clen);
	append_bytes(side, chunk, clen / 2);
	int n = rec_cuda_merge(c, w);
	th_check(n == 3, "first merge takes the 3 whole chunks, not the partial one (got %d)", n);
	n = rec_cuda_merge(c, w);
	th_check(n == 0, "merging again adds nothing (got %d)", n);
	append_bytes(side, chunk + clen / 2, clen - clen / 2);
	n = rec_cuda_merge(c, w);
	th_check(n == 1, "the completed chunk is merged once (got %d)", n);

	/* The observer sees capture records (NVTX capture ranges) as they are merged. */
	seen_capture seen = { 0 };
	rec_cuda_set_observer(c, observe_capture, &seen);
	char side9[512];
	snprintf(side9, sizeof(side9), "%s/cupti-9-0.gtt", dir);
	int fd9 = open(side9, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	gtt_writer *w9 = gtt_writer_fdopen(fd9, 1, NULL);
	gtt_record cap = { .tag = GTT_REC_CAPTURE };
	cap.u.capture = (gtt_capture){ .time_ns = 5000, .pid = 9, .tid = 10, .event = GTT_CAPTURE_START,
	                               .source = GTT_CAPTURE_NVTX, .name = "train_step" };
	gtt_write(w9, &cap);
	gtt_writer_close(w9);
	n = rec_cuda_merge(c, w);
	th_check(n == 1 && seen.n == 1 && seen.pid == 9 && seen.event == GTT_CAPTURE_START &&
	         strcmp(seen.name, "train_step") == 0, "the merge hands the capture record to the observer (%d, %d)", n, seen.n);
	rec_cuda_set_observer(c, NULL, NULL);

	/* Pid 8: a whole chunk with a flipped payload byte between two good ones. */
	snprintf(side2, sizeof(side2), "%s/cupti-8-0.gtt", dir);
	write_kernels(side2, 8, 200, 1);
	size_t blen = one_chunk(chunk, sizeof(chunk), 300);
	chunk[blen - 1] ^= 0x5a;
	append_bytes(side2, chunk, blen);
	write_kernels(side2, 8, 400, 1);
	n = rec_cuda_merge(c, w);
	th_check(n == 1, "merge stops at a bad chunk while it may still be in flight (got %d)", n);
	int total = 0;
	for (int i = 0; i < 4; i++)
		total += rec_cuda_merge(c, w);
	th_check(total == 1, "a chunk that stays bad is skipped; the next one is merged (got %d)", total);

	/* Unfinished tail at the end: dropped with a note. */
	clen = one_chunk(chunk, sizeof(chunk), 500);
	append_bytes(side2, chunk, clen - 3);
	int rc = rec_cuda_finish(c, w);
	th_check(rc == 0, "final merge adds nothing more (got %d)", rc);
	gtt_writer_close(w);
	th_check(stat(dir, &st) != 0, "finish removes the side-file directory");

	int nk = 0, notes = 0;
	uint64_t sum = 0;
	read_back(trace, &nk, &sum, &notes);
	th_check(nk == 6, "trace has 6 kernels (got %d)", nk);
	th_check(sum == 1 + 2 + 3 + 100 + 200 + 400, "exactly the expected kernels, none twice (sum %llu)",
	         (unsigned long long)sum);
	th_check(notes == 1, "one note about the side file with the bad chunk and the cut tail (got %d)", notes);

	check_attach(agent);

	/* Dormant: no side-file directory, the child is told to wait. */
	c = rec_cuda_prepare("gt-record", 1, err, sizeof(err));
	rec_cuda_child_env(c);
	th_check(getenv("GT_CUPTI_DORMANT") && !getenv("GT_CUPTI_DIR"), "dormant env: GT_CUPTI_DORMANT, no dir");
	rec_cuda_finish(c, NULL);

	setenv("GT_CUDA", "0", 1);
	c = rec_cuda_prepare("gt-record", 0, err, sizeof(err));
	th_check(!c && strstr(err, "GT_CUDA=0"), "GT_CUDA=0 turns CUDA tracing off (%s)", err);

	unlink(agent);
	rmdir(tmpdir);
	return th_report();
}
