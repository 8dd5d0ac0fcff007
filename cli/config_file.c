/* config_file.c — see config_file.h.  The file is read as untrusted text:
 * lines are capped, keys must be [A-Z0-9_]+, and at most
 * CONFIG_FILE_MAX_ENTRIES entries are kept. */
#include "cli/config_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"

#define LINE_MAX_BYTES 4096

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

int config_file__read(const char *path, struct config_file *file, char *error, size_t error_size)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[LINE_MAX_BYTES];
        int number = 0, r;

        memset(file, 0, sizeof(*file));
        if (!f) {
                r = -errno;
                snprintf(error, error_size, "--config %s: %s", path, strerror(-r));
                return r;
        }
        while (fgets(line, sizeof(line), f)) {
                number++;
                r = parse_line(file, line, error, error_size, path, number);
                if (r < 0) {
                        config_file__release(file);
                        return r;
                }
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
