/* output_target.h — what an --output path names, decided before anything
 * is written to it, so that writing a profile never destroys what the
 * path points at:
 *
 *   "-"                      standard output, written through;
 *   a character or block device, a FIFO (also through a symlink such as
 *   /dev/stdout)             written through, never replaced;
 *   a regular file, or nothing yet
 *                            replaced atomically (profile_file.c); a
 *                            symlink is followed to its final target
 *                            (also a dangling one) and that name is
 *                            replaced in its own directory: the link
 *                            itself is never touched;
 *   anything else (a directory, a socket, a name under /proc or /sys, a
 *   missing or unwritable directory)
 *                            refused with a one-line reason. */
#pragma once

#include <limits.h>
#include <stddef.h>

enum output_kind {
        OUTPUT_KIND_REPLACE, /* write a temp file next to `path`, rename over it */
        OUTPUT_KIND_THROUGH, /* open `path` and write into it */
        OUTPUT_KIND_STDOUT,  /* write to file descriptor 1 */
};

struct output_target {
        enum output_kind kind;
        char path[PATH_MAX]; /* REPLACE: absolute, links resolved; THROUGH: as given */
};

/* Decides what `path` names.  0, or -errno with a one-line reason (without
 * the path) in `why`. */
int output_target__resolve(const char *path, struct output_target *target, char *why,
                           size_t why_size);

/* output_target__resolve, then proves the write can happen: a temp file
 * is created and removed in the directory of a REPLACE target; a THROUGH
 * target must be writable, standard output open for writing.  For the
 * start of a run, before any target process is touched.  0 or -errno with
 * `why` set. */
int output_target__check(const char *path, char *why, size_t why_size);

/* Creates an empty file of a unique name ending in `suffix` in $TMPDIR
 * (when it is an absolute, writable directory), else /tmp, and puts its
 * name in `path`: where a profile goes when its --output cannot be
 * written at the end.  Never reuses an existing name.  0 or -errno. */
int output_target__fallback(const char *suffix, char *path, size_t path_size);

/* "<dir>/.<name>.XXXXXX" next to `path` (a mkostemp template), malloc'd;
 * NULL with errno set. */
char *output_target__temp_name(const char *path);
