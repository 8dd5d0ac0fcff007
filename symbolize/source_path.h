/* source_path.h — source file names as users expect to read them. */
#pragma once

#include "util/string_pool.h"

/* Interns `file` made absolute against `comp_dir` (when file is relative
 * and comp_dir absolute) and lexically normalized ("a/./b/../c" -> "a/c").
 * Returns "" for NULL and never NULL. */
const char *source_path__intern(struct string_pool *strings, const char *comp_dir,
                                const char *file);
