/* pydiscover.c — finds CPython in a target: which mapping has _PyRuntime, the version, the
 * struct layout to read it with. */
#include "pydiscover.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf.h"
#include "procfs.h"

typedef struct mapping {
	uint64_t start, end, off;
	char path[PATH_MAX];
} mapping;

/* Parse "3.12" out of a name like libpython3.12.so.1.0 or python3.12; 0 when none. */
static int minor_from_name(const char *path)
{
	const char *b = strrchr(path, '/'), *s;

	b = b ? b + 1 : path;
	s = strstr(b, "python3.");
	if (!s || !isdigit((unsigned char)s[8]))
		return 0;
	return atoi(s + 8);
}

static int looks_like_python(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return strncmp(b, "libpython", 9) == 0 || strncmp(b, "python", 6) == 0;
}

typedef struct maps_ctx {
	mapping *out;
	int n, cap;
	const char *exe;
} maps_ctx;

/* Keep the executable's and libpython's mappings, one per file, at the lowest start of
 * the mapping of file offset 0. */
static int keep_map(void *ctx, const rec_procfs_map *m)
{
	maps_ctx *c = ctx;
	int i;

	if (m->path[0] != '/' || c->n >= c->cap)
		return 0;
	if (strcmp(m->path, c->exe) != 0 && !(strstr(m->path, "/libpython3.") && strstr(m->path, ".so")))
		return 0;
	for (i = 0; i < c->n; i++) {
		if (strcmp(c->out[i].path, m->path) == 0) {
			if (m->offset == 0 && (c->out[i].off != 0 || m->start < c->out[i].start)) {
				c->out[i].start = m->start;
				c->out[i].off = 0;
			}
			return 0;
		}
	}
	c->out[c->n].start = m->start;
	c->out[c->n].end = m->end;
	c->out[c->n].off = m->offset;
	snprintf(c->out[c->n].path, sizeof(c->out[c->n].path), "%s", m->path);
	c->n++;
	return 0;
}

/* The interpreter candidates among pid's mappings; their count, or -errno. */
static int read_maps(pid_t pid, mapping *out, int cap, char *exe, size_t exe_len)
{
	maps_ctx c = { out, 0, cap, exe };
	int rc;

	rec_procfs_exe(pid, exe, exe_len);
	rc = rec_procfs_maps(pid, keep_map, &c);
	return rc < 0 ? rc : c.n;
}

/* Open the file behind a target mapping: through /proc/pid/root first (containers). */
static rec_elf *open_target_elf(pid_t pid, const char *path)
{
	char fn[PATH_MAX + 32];
	rec_elf *e;

	rec_procfs_root_path(pid, path, fn, sizeof(fn));
	e = rec_elf_open(fn);
	return e ? e : rec_elf_open(path);
}

/* The layout and version of the CPython in mapping mp, whose _PyRuntime is at py->runtime;
 * hex from Py_Version (0 unknown). 1 found, 0 not yet (unreadable for now), or final. */
static int identify(pid_t pid, rec_procmem *m, rec_pyinterp *py, const mapping *mp, const char *exe,
                    uint32_t hex, char *reason, size_t len)
{
	uint8_t dbg[REC_PY_DEBUG_OFFSETS_LEN];
	char err[200];

	if (rec_procmem_read(m, py->runtime, dbg, sizeof(dbg)) < 0) {
		if (rec_procmem_gone(m)) {
			snprintf(reason, len, "no CPython interpreter found in pid %d before it exited", (int)pid);
			return -ESRCH;
		}
		return 0;
	}
	if (!hex && !rec_pyoff_has_debug(dbg, sizeof(dbg), &hex)) {
		int minor = minor_from_name(mp->path);
		if (!minor)
			minor = minor_from_name(exe);
		if (minor)
			hex = 0x03000000u | (uint32_t)minor << 16;
	}
	if (!hex) {
		snprintf(reason, len, "cannot tell the CPython version of %s: no Python stacks", mp->path);
		return -ENOTSUP;
	}
	if ((hex >> 24) == 3 && ((hex >> 16) & 0xff) >= 10 && ((hex >> 16) & 0xff) <= 12) {
		py->off = *rec_pyoff_table((int)((hex >> 16) & 0xff));
	} else if (rec_pyoff_has_debug(dbg, sizeof(dbg), NULL)) {
		/* 3.13: the layout comes from the target itself */
		if (rec_pyoff_from_debug(dbg, sizeof(dbg), &py->off, err, sizeof(err)) < 0) {
			snprintf(reason, len, "%s: CPU samples only (%s)", err, mp->path);
			return -ENOTSUP;
		}
	} else {
		snprintf(reason, len, "CPython %u.%u is not supported (3.10 to 3.13 are): CPU samples only (%s)",
		         hex >> 24, (hex >> 16) & 0xff, mp->path);
		return -ENOTSUP;
	}
	if ((hex & 0xffff) == 0)
		snprintf(py->version, sizeof(py->version), "%u.%u", hex >> 24, (hex >> 16) & 0xff);
	else
		snprintf(py->version, sizeof(py->version), "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff, (hex >> 8) & 0xff);
	snprintf(py->path, sizeof(py->path), "%s", mp->path);
	return 1;
}

int rec_pydisc_name_verdict(const char *cmdline, char *reason, size_t len)
{
	char prog[PATH_MAX];
	size_t n = strcspn(cmdline ? cmdline : "", " ");
	int minor;

	if (!n || n >= sizeof(prog))
		return 0;
	memcpy(prog, cmdline, n);
	prog[n] = '\0';
	minor = minor_from_name(prog);
	if (!minor || (minor >= 10 && minor <= 13))
		return 0;
	snprintf(reason, len, "CPython 3.%d is not supported (3.10 to 3.13 are): CPU samples only (%s, gone before "
	         "its interpreter was seen)", minor, prog);
	return 1;
}

/* The candidates' paths, starts and offsets, hashed (FNV-1a). */
static uint64_t maps_sig(const mapping *maps, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < n; i++) {
		const uint64_t v[2] = { maps[i].start, maps[i].off };
		const unsigned char *p = (const unsigned char *)v;
		for (size_t k = 0; k < sizeof(v); k++)
			h = (h ^ p[k]) * 0x100000001b3ull;
		for (p = (const unsigned char *)maps[i].path; *p; p++)
			h = (h ^ *p) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull;
	}
	return h;
}

int rec_pydisc_find(pid_t pid, rec_procmem *m, rec_pyinterp *py, char *reason, size_t len)
{
	mapping maps[16];
	char exe[PATH_MAX];
	int n, i, libpy_first, stripped_at = -1;

	n = read_maps(pid, maps, 16, exe, sizeof(exe));
	if (n < 0) {
		if (py->tentative[0])
			snprintf(reason, len, "%s", py->tentative);
		else
			snprintf(reason, len, "no CPython interpreter found in pid %d before it exited", (int)pid);
		return -ESRCH;
	}
	/* a process that is not Python is looked at all the recording long (it may load libpython
	 * later): while its candidates stay the same, opening and searching them again finds
	 * nothing new (a non-Python target paid ~300 file opens and ELF parses per 5 s) */
	uint64_t sig = maps_sig(maps, n);
	if (py->have_nothing_sig && py->nothing_sig == sig) {
		py->same_looks++;
		return 0;
	}
	py->same_looks = 0;
	/* a libpython mapping wins over the executable (pyenv's --enable-shared builds) */
	for (libpy_first = 1; libpy_first >= 0; libpy_first--) {
		for (i = 0; i < n; i++) {
			int is_lib = strstr(maps[i].path, "/libpython3.") != NULL;
			uint64_t val, base, pyver = 0, cty;
			rec_elf *e;

			if (is_lib != libpy_first || maps[i].off != 0)
				continue;
			e = open_target_elf(pid, maps[i].path);
			if (!e)
				continue;
			if (rec_elf_symbol(e, "_PyRuntime", &val, NULL) < 0) {
				if (looks_like_python(maps[i].path))
					stripped_at = i;
				rec_elf_close(e);
				continue;
			}
			base = maps[i].start - rec_elf_first_load_vaddr(e);
			py->runtime = base + val;
			py->code_type = rec_elf_symbol(e, "PyCode_Type", &cty, NULL) == 0 ? base + cty : 0;
			py->dict_type = rec_elf_symbol(e, "PyDict_Type", &cty, NULL) == 0 ? base + cty : 0;
			if (rec_elf_symbol(e, "Py_Version", &val, NULL) < 0 || rec_procmem_read(m, base + val, &pyver, 4) < 0)
				pyver = 0;
			rec_elf_close(e);
			return identify(pid, m, py, &maps[i], exe, (uint32_t)pyver, reason, len);
		}
	}
	if (stripped_at >= 0) {
		/* An --enable-shared build's executable has no _PyRuntime, and a short-lived one can exit
		 * before this poll sees its libpython mapped: a version the name rules out is then the
		 * true reason, not stripping. */
		int minor = minor_from_name(maps[stripped_at].path);

		if (minor && (minor < 10 || minor > 13))
			snprintf(py->tentative, sizeof(py->tentative),
			         "CPython 3.%d is not supported (3.10 to 3.13 are): CPU samples only (%s)", minor,
			         maps[stripped_at].path);
		else
			snprintf(py->tentative, sizeof(py->tentative),
			         "%s has no _PyRuntime symbol (stripped interpreter?): CPU samples only",
			         maps[stripped_at].path);
	}
	py->nothing_sig = sig;
	py->have_nothing_sig = 1;
	return 0;
}

int rec_pydisc_ready(rec_procmem *m, const rec_pyinterp *py)
{
	uint64_t interp = 0, ts = 0;

	if (rec_procmem_read(m, py->runtime + (uint64_t)py->off.rt_interp_head, &interp, 8) < 0)
		return rec_procmem_gone(m) ? -ESRCH : 0;
	if (!interp || rec_procmem_read(m, interp + (uint64_t)py->off.is_threads_head, &ts, 8) < 0)
		return rec_procmem_gone(m) ? -ESRCH : 0;
	return ts != 0;
}

