/* replay.h — main() for a unit test that replays files through a libFuzzer target, so every
 * input a fuzzer once crashed on stays a test (tests/unit/test_fuzz_*.c). Include it after the
 * target's source with REPLAY_DIRS (space-separated, relative to the repository root) and
 * REPLAY_SUFFIX defined. Each file runs in a child process: a crash, abort or sanitizer report
 * is a FAIL line naming the file, and the other files still run. Under `make check-asan` the
 * sanitizers make memory errors visible that a plain build may survive. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/testhelp.h"

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	if (!f || fstat(fileno(f), &st) != 0)
		return -1;
	uint8_t *data = malloc((size_t)st.st_size + 1);
	size_t n = data ? fread(data, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	if (!data || n != (size_t)st.st_size)
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		LLVMFuzzerTestOneInput(data, n);
		_exit(0);
	}
	free(data);
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static int replay_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	const char *root = getenv("GT_ROOT") ? getenv("GT_ROOT") : ".";
	char dirs[] = REPLAY_DIRS, *save = NULL;
	size_t sfx = strlen(REPLAY_SUFFIX);
	int n_files = 0;
	for (char *d = strtok_r(dirs, " ", &save); d; d = strtok_r(NULL, " ", &save)) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", root, d);
		DIR *dir = opendir(path);
		if (!dir)
			continue;
		char *names[1024];
		size_t k = 0;
		for (struct dirent *e; (e = readdir(dir)) && k < 1024;) {
			size_t len = strlen(e->d_name);
			if (len > sfx && strcmp(e->d_name + len - sfx, REPLAY_SUFFIX) == 0)
				names[k++] = strdup(e->d_name);
		}
		closedir(dir);
		qsort(names, k, sizeof(names[0]), replay_cmp);
		for (size_t i = 0; i < k; i++) {
			snprintf(path, sizeof(path), "%s/%s/%s", root, d, names[i]);
			int st = replay_file(path);
			th_check(st == 0, "%s/%s replays through the fuzz target (%s %d)", d, names[i],
			         st < 0 ? "unreadable" : WIFSIGNALED(st) ? "signal" : "exit",
			         st < 0 ? 0 : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			free(names[i]);
			n_files++;
		}
	}
	if (n_files == 0)
		printf("SKIP: no %s files in %s\n", REPLAY_SUFFIX, REPLAY_DIRS);
	return th_report();
}
