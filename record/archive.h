/* archive.h — the recorder's table of executable mappings per process, which of them samples
 * hit (and the addresses in them), and the symbol archive written at the end: each hit binary,
 * deduplicated by build-id, trimmed to its symbol tables and the unwind entries of the functions
 * the samples went through (archive_elf.c), embedded as GTT_REC_ARCHIVE pieces (which the 1.1
 * writer compresses with the definitions). */
#ifndef REC_ARCHIVE_H
#define REC_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"

typedef struct rec_archive rec_archive;

/* Largest ARCHIVE record payload we write: small enough for one packed block (a record over
 * GTT_PACKED_MAX_RAW - block size would be stored uncompressed), large enough for zstd to find
 * the repeats in a big string table. */
#define REC_ARCHIVE_PIECE_BYTES (4u << 20)

/* An empty table. NULL on ENOMEM. */
rec_archive *rec_archive_create(void);
void rec_archive_destroy(rec_archive *a);
/* Note a mapping (from MMAP2 or /proc); it replaces any overlapped mapping of the same pid. */
void rec_archive_add(rec_archive *a, const gtt_mapping *m);
/* A process forked: it starts with a copy of parent's mappings. Writes a MAPPING record per
 * copied mapping to w (so the trace lists the child's own mappings) when w is not NULL. */
void rec_archive_fork(rec_archive *a, uint32_t parent, uint32_t child, uint64_t time_ns, gtt_writer *w);
/* A process exec'd: forget its mappings (MMAP2 records for the new image follow). */
void rec_archive_exec(rec_archive *a, uint32_t pid);
/* Mark the mappings a sample touches: its user callchain, and for DWARF samples the IP and
 * every stack word that points into an executable mapping (a superset of the return
 * addresses the unwinder will need). */
void rec_archive_hit_sample(rec_archive *a, const gtt_sample *s);

/* Mark the binaries and addresses of user frames ips[0..n) of pid taken outside a sample (a
 * stack taken at a CUDA API call): the archive keeps only the symbols and unwind entries of the
 * addresses marked, so every native address the trace holds must come through here or
 * rec_archive_hit_sample. */
void rec_archive_hit_ips(rec_archive *a, uint32_t pid, const uint64_t *ips, uint32_t n);

/* How much of a DWARF stack copy of pid is worth keeping: up to the highest word that points
 * into one of pid's executable mappings (the outermost return address; what lies above it,
 * such as the environment strings above main's frames, no unwinder reads) plus slack_bytes.
 * Returns len when pid has no known mappings. */
uint32_t rec_archive_stack_extent(rec_archive *a, uint32_t pid, const uint8_t *stack, uint32_t len,
                                  uint32_t slack_bytes);

typedef struct rec_archive_stats {
	uint32_t n_mappings;     /* distinct mappings noted */
	uint32_t n_hit;          /* binaries hit (distinct build-ids) */
	uint32_t n_embedded;     /* binaries embedded */
	uint32_t n_skipped;      /* hit but not embedded (no build-id, unreadable, build-id changed) */
	uint64_t bytes;          /* archive bytes written (sum of the embedded objects) */
	uint64_t dwarf_bytes;    /* of which DWARF of inlined frames and lines */
	uint32_t n_dwarf_left;   /* binaries whose DWARF was over the budget and left out */
	uint64_t n_fde, n_fde_kept; /* unwind entries of the embedded binaries, and those kept */
	uint64_t original_bytes; /* size of those files before trimming */
} rec_archive_stats;

/* Write the archive: for every hit binary with a build-id, the trimmed ELF (symbol tables and
 * their strings, .eh_frame cut to the entries of the functions samples hit and its rebuilt
 * .eh_frame_hdr, .debug_frame, notes, debug links, section and program headers, and the DWARF
 * of inlined frames and lines within the DWARF budget; every other section becomes NOBITS) in
 * pieces of at most REC_ARCHIVE_PIECE_BYTES. The file is looked up through
 * /proc/PID/map_files, /proc/PID/root and the path, and used only when its build-id matches.
 * Skipped binaries get a GTT_HEALTH_NOTE record saying why. Returns 0 or a GTT_E* write error. */
int rec_archive_write(rec_archive *a, gtt_writer *w, rec_archive_stats *st);
/* Statistics so far (n_mappings, n_hit). */
void rec_archive_get_stats(const rec_archive *a, rec_archive_stats *st);

/* How to trim: the DWARF budget, and the addresses the recording used (file offsets, sorted;
 * NULL keeps every unwind entry). */
typedef struct rec_trim_opts {
	uint64_t dwarf_max;      /* keep the DWARF of inlined frames and lines up to this many bytes */
	const uint64_t *hits;
	size_t n_hits;
} rec_trim_opts;
typedef struct rec_trim_info {
	uint64_t dwarf_bytes;    /* the file's DWARF of inlined frames and lines, kept or not */
	uint32_t n_fde;          /* unwind entries (FDEs) in .eh_frame, when it was filtered */
	uint32_t n_fde_kept;
	int cfi_whole;           /* .eh_frame kept whole: no addresses, or a form the filter leaves be */
	uint64_t n_syms, n_syms_kept; /* symbols in the tables that were cut, and those kept */
} rec_trim_info;
/* Trim an ELF image (rec_archive_write says to what). With hits, .eh_frame keeps only the
 * entries of the functions holding those addresses (for each, the entry with the greatest start
 * at or below it, and at or below it minus one), and .eh_frame_hdr is rebuilt for them; the
 * symbol tables keep the symbols an address lookup (libdwfl's rule) can return for them. Returns a malloc'ed image and its length in *out_len, or NULL when the
 * input is not a well-formed ELF64 with section headers (the caller then embeds the whole file).
 * info may be NULL. */
uint8_t *rec_archive_trim(const uint8_t *data, size_t len, const rec_trim_opts *o, size_t *out_len,
                          rec_trim_info *info);
/* Trim an ELF image to what symbolization and unwinding need (see rec_archive_write), without
 * DWARF. Returns a malloc'ed image and its length in *out_len, or NULL when the input is not a
 * well-formed ELF64 with section headers (the caller then embeds the whole file). */
uint8_t *rec_archive_trim_elf(const uint8_t *data, size_t len, size_t *out_len);
/* The same, keeping the DWARF of inlined frames and source lines (.debug_info, _abbrev, _str,
 * _line, _ranges, ...) when it takes at most dwarf_max bytes; *dwarf_bytes (when not NULL) gets
 * its size, kept or not. */
uint8_t *rec_archive_trim_elf_dwarf(const uint8_t *data, size_t len, uint64_t dwarf_max, size_t *out_len,
                                    uint64_t *dwarf_bytes);

/* DWARF budget of the archive: a binary's inlined-frame and line DWARF is embedded while it
 * takes at most REC_ARCHIVE_DWARF_ONE bytes and the archive's DWARF at most
 * REC_ARCHIVE_DWARF_TOTAL; else it is left out with a note (a debug file at analysis gives it). */
#define REC_ARCHIVE_DWARF_ONE (4u << 20)
#define REC_ARCHIVE_DWARF_TOTAL (16u << 20)

#endif
