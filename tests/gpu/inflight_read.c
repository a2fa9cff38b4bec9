/* inflight_read.c — reads the CUDA agent's in-flight API table of another process exactly as
 * record/gtcupti_inflight.h says a reader should (the agent's mapping in /proc/PID/maps, the
 * symbol's value from the file's .dynsym, two process_vm_readv reads, the seqlock check), and
 * prints it: the reference reader for gt-record --dump, and the check of the agent's side.
 * Usage: inflight_read PID. Prints "table pid=P flags=F clock_res_ns=R unslotted=U" then one
 * "slot tid=T cbid=C domain=D correlation=N depth=K n_calls=M name=NAME in_flight_ms=X" line per
 * owned slot (cbid=0: not in a call; name and time then omitted), "changing tid=T" for a slot
 * written during both reads. Exit 0, 1 when the process has no agent, 2 on error. */
#define _GNU_SOURCE /* process_vm_readv */
#include <elf.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "gtcupti_inflight.h"

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* The agent's file and load address: the mapping of file offset 0 of a path ending in
 * /libgtcupti.so. */
static int find_agent(pid_t pid, char *path, size_t cap, uint64_t *base)
{
	char maps[64], line[4096];
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(maps, "re");
	int found = 0;
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long start, off;
		char p[4096] = "";
		if (sscanf(line, "%llx-%*llx %*s %llx %*s %*s %4095[^\n]", &start, &off, p) < 2)
			continue;
		size_t l = strlen(p);
		if (off == 0 && l >= 14 && strcmp(p + l - 14, "/libgtcupti.so") == 0) {
			snprintf(path, cap, "%s", p);
			*base = start;
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : 1;
}

/* st_value of name in the file's .dynsym, minus the lowest PT_LOAD address. */
static int dynsym_offset(const char *path, const char *name, uint64_t *value)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	uint8_t *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	size_t size = (size_t)st.st_size;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > size)
		goto out;
	uint64_t lowest = UINT64_MAX;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(m + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lowest)
			lowest = ph[i].p_vaddr & ~(uint64_t)0xfff;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(m + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *strs = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > size || strs->sh_offset + strs->sh_size > size)
			goto out;
		const Elf64_Sym *sym = (const Elf64_Sym *)(m + sh[i].sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++)
			if (sym[k].st_name < strs->sh_size &&
			    strncmp((const char *)m + strs->sh_offset + sym[k].st_name, name, strs->sh_size - sym[k].st_name) == 0 &&
			    sym[k].st_shndx != SHN_UNDEF) {
				*value = sym[k].st_value - (lowest == UINT64_MAX ? 0 : lowest);
				rc = 0;
				goto out;
			}
	}
out:
	munmap(m, size);
	return rc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static struct gtcupti_inflight a, b;
	char path[4096];
	uint64_t base = 0, off = 0;
	if (argc != 2) {
		fprintf(stderr, "usage: inflight_read PID\n");
		return 64;
	}
	pid_t pid = (pid_t)atoi(argv[1]);
	int rc = find_agent(pid, path, sizeof(path), &base);
	if (rc) {
		fprintf(stderr, "inflight_read: %s\n", rc > 0 ? "no CUDA agent in the process" : "cannot read its maps");
		return rc > 0 ? 1 : 2;
	}
	if (dynsym_offset(path, GTCUPTI_INFLIGHT_SYMBOL, &off) < 0) {
		fprintf(stderr, "inflight_read: %s has no %s\n", path, GTCUPTI_INFLIGHT_SYMBOL);
		return 2;
	}
	uint64_t addr = base + off;
	if (read_mem(pid, addr, &a, sizeof(a)) < 0 || read_mem(pid, addr, &b, sizeof(b)) < 0) {
		perror("inflight_read: process_vm_readv");
		return 2;
	}
	uint64_t now = now_ns();
	if (memcmp(a.magic, GTCUPTI_INFLIGHT_MAGIC, 8) != 0 || a.version != GTCUPTI_INFLIGHT_VERSION ||
	    a.slot_size != sizeof(a.slot[0]) || a.header_size != offsetof(struct gtcupti_inflight, slot) ||
	    a.n_slots > GTCUPTI_INFLIGHT_SLOTS) {
		fprintf(stderr, "inflight_read: not a version %d table\n", GTCUPTI_INFLIGHT_VERSION);
		return 2;
	}
	printf("table pid=%u flags=%u clock_res_ns=%llu unslotted=%u\n", a.pid, a.flags,
	       (unsigned long long)a.clock_res_ns, a.n_unslotted);
	for (uint32_t i = 0; i < a.n_slots; i++) {
		const struct gtcupti_inflight_slot *s = &b.slot[i];
		if (!a.slot[i].tid && !s->tid)
			continue;
		if ((a.slot[i].seq & 1) || a.slot[i].seq != s->seq) {
			printf("changing tid=%u\n", s->tid);
			continue;
		}
		printf("slot tid=%u cbid=%u domain=%u correlation=%u depth=%u n_calls=%llu", s->tid, s->cbid, s->domain,
		       s->correlation, s->depth, (unsigned long long)s->n_calls);
		if (s->cbid) {
			char name[128] = "?";
			/* at most to the end of the name's page: the next one may not be mapped */
			size_t len = 4096 - (s->name_addr & 4095);
			if (len > sizeof(name) - 1)
				len = sizeof(name) - 1;
			if (s->name_addr && read_mem(pid, s->name_addr, name, len) == 0)
				name[len] = 0;
			double ms = now > s->start_ns ? (double)(now - s->start_ns) / 1e6 : 0;
			printf(" name=%s in_flight_ms=%.1f", name, ms);
		}
		printf("\n");
	}
	return 0;
}
