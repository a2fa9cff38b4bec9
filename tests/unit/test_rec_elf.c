/* test_rec_elf.c — record/elf.c against this very executable: build-id, symbols, load bias. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf.h"
#include "testhelp.h"

int test_rec_elf_marker(void);
int test_rec_elf_marker(void) { return 42; }

/* Start of the mapping of file offset 0 of our own executable, from /proc/self/maps. */
static uint64_t self_base(void)
{
	char exe[4096], line[8192];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint64_t base = 0;
	FILE *f;

	if (n <= 0)
		return 0;
	exe[n] = 0;
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char path[4096] = "";
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &lo, &hi, &off, path) >= 3 &&
		    off == 0 && strcmp(path, exe) == 0) {
			base = lo;
			break;
		}
	}
	fclose(f);
	return base;
}

int main(void)
{
	uint8_t id[64], id2[64];
	uint64_t value = 0, size = 0;
	size_t n, len = 0;
	rec_elf *e = rec_elf_open("/proc/self/exe");
	char tmp[] = "/tmp/gt-elf-XXXXXX";
	int fd;

	th_check(e != NULL, "open our own executable");
	if (!e)
		return th_report();
	n = rec_elf_build_id(e, id, sizeof(id));
	th_check(n == 20, "build-id is a 20-byte sha1 (got %zu)", n);
	th_check(rec_elf_build_id_of("/proc/self/exe", id2, sizeof(id2)) == n && memcmp(id, id2, n) == 0,
	         "rec_elf_build_id_of agrees");
	th_check(rec_elf_build_id(e, id2, 4) == 4 && memcmp(id, id2, 4) == 0, "short buffer gets a prefix");
	th_check(rec_elf_symbol(e, "test_rec_elf_marker", &value, &size) == 0, "finds a function symbol");
	th_check(size > 0, "symbol has a size (%" PRIu64 ")", size);
	th_check(value - rec_elf_first_load_vaddr(e) + self_base() == (uint64_t)(uintptr_t)&test_rec_elf_marker,
	         "link-time value maps to the runtime address");
	th_check(rec_elf_symbol(e, "no_such_symbol_here", &value, &size) == -ENOENT, "absent symbol gives -ENOENT");
	th_check(rec_elf_symbol(e, "malloc", &value, &size) == -ENOENT, "undefined (imported) symbol is absent");
	th_check(rec_elf_data(e, &len) != NULL && len > 1000, "whole file is mapped");
	rec_elf_close(e);
	rec_elf_close(NULL);

	fd = mkstemp(tmp);
	if (fd >= 0) {
		static const char text[] = "this is a text file, long enough to hold an ELF header if it were one\n";
		th_check(write(fd, text, sizeof(text) - 1) == sizeof(text) - 1, "write a text file");
		errno = 0;
		th_check(rec_elf_open(tmp) == NULL && errno == ENOEXEC, "a text file is ENOEXEC");
		close(fd);
		unlink(tmp);
		strcpy(tmp, "/tmp/gt-elf-XXXXXX");
	}
	th_check(rec_elf_open("/nonexistent/file") == NULL && errno == ENOENT, "a missing file is ENOENT");
	th_check(rec_elf_build_id_of("/nonexistent/file", id, sizeof(id)) == 0, "build-id of a missing file is 0");

	/* Every prefix of our executable must open or fail cleanly, never crash. */
	fd = mkstemp(tmp);
	if (fd >= 0) {
		rec_elf *self = rec_elf_open("/proc/self/exe");
		const uint8_t *data = rec_elf_data(self, &len);
		size_t cut, ok = 0;
		for (cut = 0; self && cut < len && cut < 70000; cut += 97) {
			rec_elf *t;
			if (ftruncate(fd, 0) < 0 || pwrite(fd, data, cut, 0) != (ssize_t)cut)
				break;
			t = rec_elf_open(tmp);
			if (t) {
				rec_elf_build_id(t, id2, sizeof(id2));
				rec_elf_symbol(t, "main", &value, &size);
				rec_elf_close(t);
			}
			ok++;
		}
		th_check(ok > 100, "truncated copies open or fail without crashing (%zu tried)", ok);
		rec_elf_close(self);
		close(fd);
		unlink(tmp);
	}
	return th_report();
}
