/* config_file.c — see config_file.h.  The file is read as untrusted text:
 * only a regular file is read (opened with O_NONBLOCK and checked with
 * fstat, so /dev/zero or a FIFO nobody writes cannot hang the start or a
 * SIGHUP re-read on the main thread), the file and each line are capped
 * (a longer one is an error, never silently split), a NUL or other
 * control byte is an error naming the line (a NUL would silently cut the
 * value short, and a control byte echoed into the error would break its
 * one line), keys must be [A-Z0-9_]+, and at most CONFIG_FILE_MAX_ENTRIES
 * entries are kept. */
#include "cli/config_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

#define LINE_MAX_BYTES 4096
/* An EnvironmentFile is a few KiB; anything near this is not one. */
#define FILE_MAX_BYTES (1024 * 1024)

static char *trim(char *text)
{
        char *end;

        while (isspace((unsigned char)*text))
                text++;
        end = text + strlen(text);
        while (end > text && isspace((unsigned char)end[-1]))
                *--end = '\0';
        return text;
}

static bool valid_key(const char *key)
{
        if (!*key)
                return false;
        for (const char *c = key; *c; c++)
                if (!isupper((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '_')
                        return false;
        return true;
}

static char *unquote(char *value)
{
        size_t n = strlen(value);

        if (n >= 2 && (value[0] == '"' || value[0] == '\'') && value[n - 1] == value[0]) {
                value[n - 1] = '\0';
                return value + 1;
        }
        return value;
}

static int add_entry(struct config_file *file, const char *key, const char *value)
{
        for (size_t i = 0; i < file->n; i++) {
                if (strcmp(file->keys[i], key) == 0) { /* the last one wins */
                        char *copy = strdup(value);
                        if (!copy)
                                return -ENOMEM;
                        free(file->values[i]);
                        file->values[i] = copy;
                        return 0;
                }
        }
        if (file->n == CONFIG_FILE_MAX_ENTRIES)
                return -E2BIG;
        file->keys[file->n] = strdup(key);
        file->values[file->n] = strdup(value);
        file->from_file[file->n] = false;
        if (!file->keys[file->n] || !file->values[file->n]) {
                free(file->keys[file->n]);
                free(file->values[file->n]);
                return -ENOMEM;
        }
        file->n++;
        return 0;
}

static int parse_line(struct config_file *file, char *line, char *error, size_t error_size,
                      const char *path, int number)
{
        char *text = trim(line), *equals;

        if (!*text || *text == '#' || *text == ';')
                return 0;
        equals = strchr(text, '=');
        if (!equals) {
                snprintf(error, error_size, "%s:%d: not KEY=VALUE", path, number);
                return -EINVAL;
        }
        *equals = '\0';
        char *key = trim(text), *value = unquote(trim(equals + 1));
        if (!valid_key(key)) {
                snprintf(error, error_size, "%s:%d: bad key '%.64s'", path, number, key);
                return -EINVAL;
        }
        int r = add_entry(file, key, value);
        if (r < 0)
                snprintf(error, error_size, "%s:%d: %s", path, number, strerror(-r));
        return r;
}

static const char *file_type_name(mode_t mode)
{
        if (S_ISDIR(mode))
                return "a directory";
        if (S_ISFIFO(mode))
                return "a FIFO";
        if (S_ISCHR(mode))
                return "a character device";
        if (S_ISBLK(mode))
                return "a block device";
        if (S_ISSOCK(mode))
                return "a socket";
        return "not a plain file";
}

/* The whole file, NUL-terminated, in *text (malloc'd); only a regular
 * file of at most FILE_MAX_BYTES.  0 or -errno with `error` set. */
static int slurp(const char *path, char **text, size_t *len, char *error, size_t error_size)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        _cleanup_free_ char *buffer = NULL;
        struct stat st;
        size_t n = 0;

        if (fd < 0 || fstat(fd, &st) < 0) {
                int r = -errno;
                snprintf(error, error_size, "--config %s: %s", path, strerror(-r));
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                snprintf(error, error_size, "--config %s: %s, not a regular file", path,
                         file_type_name(st.st_mode));
                return -EINVAL;
        }
        buffer = malloc(FILE_MAX_BYTES + 1);
        if (!buffer) {
                snprintf(error, error_size, "--config %s: out of memory", path);
                return -ENOMEM;
        }
        /* One byte past the cap tells "too large" from "exactly full"; the
         * size from fstat is not trusted (the file may grow meanwhile). */
        while (n <= FILE_MAX_BYTES) {
                ssize_t got = read(fd, buffer + n, FILE_MAX_BYTES + 1 - n);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0) {
                        int r = -errno;
                        snprintf(error, error_size, "--config %s: %s", path, strerror(-r));
                        return r;
                }
                if (got == 0)
                        break;
                n += (size_t)got;
        }
        if (n > FILE_MAX_BYTES) {
                snprintf(error, error_size, "--config %s: larger than %d KiB", path,
                         FILE_MAX_BYTES / 1024);
                return -EFBIG;
        }
        buffer[n] = '\0';
        *text = take_ptr(buffer);
        *len = n;
        return 0;
}

/* A line's bytes must be text: no NUL, no control byte but tab. */
static int check_line(const char *line, size_t len, const char *path, int number, char *error,
                      size_t error_size)
{
        if (len >= LINE_MAX_BYTES) {
                snprintf(error, error_size, "%s:%d: line longer than %d bytes", path, number,
                         LINE_MAX_BYTES - 1);
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)line[i];
                if (c == 0) {
                        snprintf(error, error_size, "%s:%d: NUL byte", path, number);
                        return -EINVAL;
                }
                if ((c < 0x20 && c != '\t') || c == 0x7f) {
                        snprintf(error, error_size, "%s:%d: control byte 0x%02x%s", path, number, c,
                                 c == '\r' ? " (DOS line ends? use Unix ones)" : "");
                        return -EINVAL;
                }
        }
        return 0;
}

int config_file__read(const char *path, struct config_file *file, char *error, size_t error_size)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int number = 0, r;

        memset(file, 0, sizeof(*file));
        r = slurp(path, &text, &len, error, error_size);
        if (r < 0)
                return r;
        for (char *line = text; line < text + len;) {
                char *newline = memchr(line, '\n', (size_t)(text + len - line));
                char *end = newline ? newline : text + len;

                number++;
                r = check_line(line, (size_t)(end - line), path, number, error, error_size);
                if (r >= 0) {
                        *end = '\0';
                        r = parse_line(file, line, error, error_size, path, number);
                }
                if (r < 0) {
                        config_file__release(file);
                        return r;
                }
                line = end + 1;
        }
        return 0;
}

const char *config_file__get(const struct config_file *file, const char *key)
{
        for (size_t i = 0; file && i < file->n; i++)
                if (strcmp(file->keys[i], key) == 0)
                        return file->values[i];
        return NULL;
}

void config_file__merge_into_environment(struct config_file *file)
{
        for (size_t i = 0; i < file->n; i++) {
                if (getenv(file->keys[i]))
                        continue;
                file->from_file[i] = setenv(file->keys[i], file->values[i], 0) == 0;
        }
}

void config_file__release(struct config_file *file)
{
        for (size_t i = 0; i < file->n; i++) {
                free(file->keys[i]);
                free(file->values[i]);
        }
        file->n = 0;
}

static bool came_from_file(const struct config_file *file, const char *name)
{
        for (size_t i = 0; file && i < file->n; i++)
                if (strcmp(file->keys[i], name) == 0)
                        return file->from_file[i];
        return false;
}

const char *config_source__get(const struct config_source *source, const char *name)
{
        const char *env = getenv(name);

        if (!source || !source->current)
                return env;
        if (env && !came_from_file(source->startup, name))
                return env;
        return config_file__get(source->current, name);
}
