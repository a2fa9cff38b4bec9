/* fuzz_elf.c — libFuzzer target: the recorder's ELF reader (record/elf.c) over arbitrary bytes.
 * The input becomes a file (a memfd, opened by path as the recorder opens binaries); build-id,
 * symbol lookups, load bias and the raw view must stay inside the file and never crash.
 * Seeds: ELF in build/fuzz/obj /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/bin/true
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	rec_elf *e = rec_elf_open(path);
	if (!e)
		return 0;
	uint8_t id[80];
	size_t n = rec_elf_build_id(e, id, 20);
	if (n > 20)
		abort(); /* wrote past the caller's cap */
	for (size_t i = 0; i < n; i++)
		sink += id[i];
	static const char *const names[] = { "main", "_PyRuntime", "PyCode_Type", "_start", "", "x" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uint64_t value = 0, sz = 0;
		if (rec_elf_symbol(e, names[i], &value, &sz) == 0)
			sink += value + sz;
	}
	sink += rec_elf_first_load_vaddr(e);
	size_t len = 0;
	const uint8_t *p = rec_elf_data(e, &len);
	if (len != size || (len && !p))
		abort();
	if (len)
		sink += p[len - 1];
	rec_elf_close(e);
	return 0;
}
