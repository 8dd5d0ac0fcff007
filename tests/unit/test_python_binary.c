/* test_python_binary.c — unit tests for python/py_binary.c: processes of
 * one CPython binary share one py_binary, read from its file once; a copy
 * of the file (same build-id) shares it too; another binary gets its own;
 * and a binary is freed with the last process running it.  PY_VERSION
 * strings parse to their PY_VERSION_HEX.
 *
 * Real interpreters: the host's /usr/bin/python3.11 and, when
 * scripts/setup-pythons.sh has made it, the 3.13 chroot of the test
 * suite's cache (else that part is skipped, with a line saying so). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "python/py_binary.h"
#include "python/py_frame.h"
#include "python/py_process.h"
#include "symbolize/symbolizer.h"
#include "util/log.h"
#include "tests/unit/check.h"

#define HOST_PYTHON   "/usr/bin/python3.11"
#define CHROOT_313    "/var/cache/splunk-profd/pythons/3.13-trixie/root"
#define IDLE_SCRIPT   "import time; print('ready', flush=True); time.sleep(600)"
#define MAX_TARGETS   8
#define COPY_TEMPLATE "/tmp/profd-test-pybin-XXXXXX"

struct child {
        pid_t pid;
        struct address_space *space;
        struct py_process *py;
};

/* Starts argv with PYTHONHOME=home (NULL: unset) and returns once it has
 * printed "ready", i.e. its interpreter runs. */
static pid_t start_python(char *const argv[], const char *home)
{
        int pipefd[2];
        char line[16] = "";
        pid_t pid;
        FILE *out;

        CHECK(pipe(pipefd) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed CHECK exits the parent */
                dup2(pipefd[1], STDOUT_FILENO);
                close(pipefd[0]);
                close(pipefd[1]);
                if (home)
                        setenv("PYTHONHOME", home, 1);
                execv(argv[0], argv);
                _exit(127);
        }
        close(pipefd[1]);
        out = fdopen(pipefd[0], "r");
        CHECK(out);
        CHECK(fgets(line, sizeof(line), out) && strcmp(line, "ready\n") == 0);
        fclose(out);
        return pid;
}

static void attach(struct child *t, pid_t pid, struct symbolizer *s, struct py_binaries *binaries,
                   struct py_walk_scratch *scratch)
{
        t->pid = pid;
        t->space = address_space__new(s, pid);
        CHECK(t->space);
        t->py = py_process__new(pid, t->space, binaries, scratch);
        CHECK(t->py);
}

static void release(struct child *t)
{
        py_process__free(t->py);
        address_space__free(t->space);
        kill(t->pid, SIGKILL);
        CHECK(waitpid(t->pid, NULL, 0) == t->pid);
        *t = (struct child){0};
}

static void copy_file(const char *from, const char *to)
{
        char buffer[65536];
        int in = open(from, O_RDONLY | O_CLOEXEC);
        int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
        ssize_t n;

        CHECK(in >= 0 && out >= 0);
        while ((n = read(in, buffer, sizeof(buffer))) > 0)
                CHECK(write(out, buffer, (size_t)n) == n);
        CHECK(n == 0);
        close(in);
        close(out);
}

/* PY_VERSION strings as 3.9 and 3.10 binaries hold them, and look-alikes. */
static void check_parse_version(void)
{
        static const struct {
                const char *text;
                uint32_t hex;
        } cases[] = {
            {"3.9.2", 0x030902f0},
            {"3.10.12", 0x030a0cf0},
            {"3.10.0rc2", 0x030a00c2},
            {"3.9.0a4", 0x030900a4},
            {"3.9.0b1", 0x030900b1},
            {"3.9.2+", 0x030902f0},
            {"3.2.0", 0x030200f0},
            {"3.9", 0},
            {"3.9.", 0},
            {"3.9.2 (main)", 0},
            {"3.9.2r1", 0},
            {"3.100.1", 0},
            {"13.0.0", 0},
            {"3.9.2x", 0},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                uint32_t hex = py_binary__parse_version(cases[i].text, strlen(cases[i].text));
                if (hex != cases[i].hex)
                        fprintf(stderr, "%s: 0x%08x, want 0x%08x\n", cases[i].text, hex,
                                cases[i].hex);
                CHECK(hex == cases[i].hex);
        }
}

int main(void)
{
        char *host[] = {HOST_PYTHON, "-c", IDLE_SCRIPT, NULL};
        char *chroot313[] = {"/usr/sbin/chroot", CHROOT_313, "python3", "-c", IDLE_SCRIPT, NULL};
        char dir[] = COPY_TEMPLATE, copy[sizeof(dir) + 16];
        struct symbolizer *s = symbolizer__new();
        struct py_binaries binaries;
        struct py_walk_scratch scratch;
        struct child t[MAX_TARGETS] = {0};
        const struct py_binary *b311;
        struct stat st;

        CHECK(s);
        check_parse_version();
        if (getenv("TEST_DEBUG"))
                log_set_level(LOG_LEVEL_DEBUG);
        if (access(HOST_PYTHON, X_OK) != 0) {
                fprintf(stderr, "python_binary: skipped: no %s\n", HOST_PYTHON);
                return 77;
        }
        py_binaries__init(&binaries);
        CHECK(py_walk_scratch__init(&scratch) == 0);

        /* Two processes of one binary: one read, one shared binary. */
        attach(&t[0], start_python(host, NULL), s, &binaries, &scratch);
        attach(&t[1], start_python(host, NULL), s, &binaries, &scratch);
        b311 = py_process__binary(t[0].py);
        CHECK(binaries.parsed == 1);
        CHECK(binaries.tab.n_nodes == 1);
        CHECK(py_process__binary(t[1].py) == b311);
        CHECK(b311->users == 2 && b311->minor == 11 && b311->runtime != 0);
        CHECK(b311->n_eval >= 1); /* _PyEval_EvalFrameDefault, from .dynsym */

        /* A copy of the file: another inode, the same build-id. */
        CHECK(mkdtemp(dir));
        snprintf(copy, sizeof(copy), "%s/python3.11", dir);
        copy_file(HOST_PYTHON, copy);
        char *copied[] = {copy, "-c", IDLE_SCRIPT, NULL};
        attach(&t[2], start_python(copied, "/usr"), s, &binaries, &scratch);
        CHECK(py_process__binary(t[2].py) == b311);
        CHECK(binaries.parsed == 1 && b311->users == 3);
        unlink(copy);
        rmdir(dir);

        /* No registry: read again, kept private. */
        attach(&t[3], start_python(host, NULL), s, NULL, &scratch);
        CHECK(py_process__binary(t[3].py) != b311);
        CHECK(!py_process__binary(t[3].py)->owner);
        CHECK(binaries.parsed == 1 && binaries.tab.n_nodes == 1);
        release(&t[3]);

        /* Another binary: its own. */
        if (stat(CHROOT_313 "/usr/bin/python3", &st) == 0) {
                attach(&t[4], start_python(chroot313, NULL), s, &binaries, &scratch);
                CHECK(py_process__binary(t[4].py) != b311);
                CHECK(py_process__binary(t[4].py)->minor == 13);
                CHECK(binaries.parsed == 2 && binaries.tab.n_nodes == 2);
        } else {
                fprintf(stderr, "python_binary: 3.13 part skipped: no %s\n", CHROOT_313);
        }

        /* Freed with the last process of each binary. */
        release(&t[0]);
        release(&t[1]);
        CHECK(b311->users == 1 && binaries.tab.n_nodes == (t[4].py ? 2 : 1));
        release(&t[2]);
        CHECK(binaries.tab.n_nodes == (t[4].py ? 1 : 0));
        if (t[4].py)
                release(&t[4]);
        CHECK(binaries.tab.n_nodes == 0);

        /* A new process after that reads the binary again. */
        attach(&t[0], start_python(host, NULL), s, &binaries, &scratch);
        CHECK(binaries.parsed == (stat(CHROOT_313 "/usr/bin/python3", &st) == 0 ? 3u : 2u));
        release(&t[0]);

        py_binaries__clear(&binaries);
        py_walk_scratch__release(&scratch);
        symbolizer__free(s);
        fprintf(stderr, "python_binary: ok\n");
        return 0;
}
