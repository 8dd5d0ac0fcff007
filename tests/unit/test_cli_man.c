/* test_cli_man.c — splunk-profd(1) lists exactly the options of the
 * command-line table (cli/cli.c): every option of the table is the tag of
 * an entry of OPTIONS (with its short letter on the same tag line), every
 * tag names an option of the table, and every --name anywhere in the page
 * is one.  argv[1]: the man page. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/cli.h"

#define MAX_NAMES      128
#define NAME_MAX_BYTES 64

struct names {
        size_t n;
        char name[MAX_NAMES][NAME_MAX_BYTES];
};

static void names__add(struct names *names, const char *name, size_t len)
{
        for (size_t i = 0; i < names->n; i++)
                if (strlen(names->name[i]) == len && memcmp(names->name[i], name, len) == 0)
                        return;
        CHECK(names->n < MAX_NAMES && len < NAME_MAX_BYTES);
        memcpy(names->name[names->n], name, len);
        names->name[names->n++][len] = '\0';
}

static bool names__has(const struct names *names, const char *name)
{
        for (size_t i = 0; i < names->n; i++)
                if (strcmp(names->name[i], name) == 0)
                        return true;
        return false;
}

/* The page with roff's escaped hyphen `\-` turned into '-'. */
static char *read_page(const char *path)
{
        FILE *f = fopen(path, "re");
        static char text[1 << 20];
        size_t n, out = 0;

        if (!f) {
                perror(path);
                exit(1);
        }
        n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++) {
                if (text[i] == '\\' && i + 1 < n && text[i + 1] == '-')
                        i++;
                text[out++] = text[i];
        }
        text[out] = '\0';
        return text;
}

/* Every "--name" in [begin, end) into `longs`; with `shorts`, also every
 * "-x" that stands alone (after a space or a quote). */
static void scan(const char *begin, const char *end, struct names *longs, struct names *shorts)
{
        for (const char *p = begin; p < end; p++) {
                if (p[0] == '-' && p + 2 < end && p[1] == '-' && islower((unsigned char)p[2]) &&
                    (p == begin || p[-1] != '-')) {
                        const char *name = p + 2, *q = name;
                        while (q < end && (isalnum((unsigned char)*q) || *q == '-'))
                                q++;
                        while (q[-1] == '-')
                                q--;
                        names__add(longs, name, (size_t)(q - name));
                        p = q - 1;
                } else if (shorts && p[0] == '-' && p + 2 <= end && isalpha((unsigned char)p[1]) &&
                           (p == begin || p[-1] == ' ' || p[-1] == '"') &&
                           (p + 2 == end || !isalnum((unsigned char)p[2]))) {
                        names__add(shorts, p + 1, 1);
                }
        }
}

static const char *line_end(const char *p)
{
        const char *e = strchr(p, '\n');
        return e ? e : p + strlen(p);
}

int main(int argc, char **argv)
{
        struct names tag_longs = {0}, tag_shorts = {0}, page_longs = {0};
        char letter;
        const char *name;
        int failures = 0;

        CHECK(argc == 2);
        char *page = read_page(argv[1]);
        char *options = strstr(page, "\n.SH OPTIONS\n");
        CHECK(options);
        char *options_end = strstr(options + 1, "\n.SH ");
        CHECK(options_end);
        scan(page, page + strlen(page), &page_longs, NULL);

        /* The tag of each entry: the line after ".TP". */
        for (char *tp = strstr(options, "\n.TP\n"); tp && tp < options_end;
             tp = strstr(tp + 1, "\n.TP\n")) {
                const char *tag = tp + 5, *end = line_end(tag);
                struct names line_longs = {0}, line_shorts = {0};
                scan(tag, end, &line_longs, &line_shorts);
                for (size_t i = 0; i < line_longs.n; i++)
                        names__add(&tag_longs, line_longs.name[i], strlen(line_longs.name[i]));
                for (size_t i = 0; i < line_shorts.n; i++) {
                        names__add(&tag_shorts, line_shorts.name[i], 1);
                        /* -x and its --name share a tag line. */
                        bool paired = false;
                        for (size_t k = 0; (name = cli__option_name(k, &letter)); k++)
                                if (letter == line_shorts.name[i][0] &&
                                    names__has(&line_longs, name))
                                        paired = true;
                        if (!paired) {
                                fprintf(stderr,
                                        "man page: -%s is not on the tag line of its option\n",
                                        line_shorts.name[i]);
                                failures++;
                        }
                }
        }

        size_t n_table = 0, n_letters = 0;
        for (size_t k = 0; (name = cli__option_name(k, &letter)); k++) {
                n_table++;
                if (!names__has(&tag_longs, name)) {
                        fprintf(stderr, "man page: OPTIONS has no entry for --%s\n", name);
                        failures++;
                }
                if (letter) {
                        char s[2] = {letter, '\0'};
                        n_letters++;
                        if (!names__has(&tag_shorts, s)) {
                                fprintf(stderr, "man page: OPTIONS does not show -%c (--%s)\n",
                                        letter, name);
                                failures++;
                        }
                }
        }
        /* The other way round: nothing in the page that is not in the table. */
        for (size_t i = 0; i < page_longs.n; i++) {
                bool known = false;
                for (size_t k = 0; (name = cli__option_name(k, &letter)); k++)
                        known |= strcmp(name, page_longs.name[i]) == 0;
                if (!known) {
                        fprintf(stderr, "man page: --%s is not an option\n", page_longs.name[i]);
                        failures++;
                }
        }
        if (tag_shorts.n != n_letters) {
                fprintf(stderr, "man page: OPTIONS shows %zu short options, the table has %zu\n",
                        tag_shorts.n, n_letters);
                failures++;
        }
        CHECK(n_table > 20); /* the table really was read */
        CHECK(failures == 0);
        return 0;
}
