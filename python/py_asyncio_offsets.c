/* py_asyncio_offsets.c — the layout of _asyncio's tasks.
 *
 * Why: a sample of a thread running an asyncio task is labelled with the
 * task's name, which lives in the C Task object (TaskObj.task_name), and
 * on 3.14+ the running task is a field of the thread state.  Neither is in
 * _Py_DebugOffsets; 3.14 describes them in the _asyncio module's own
 * _Py_AsyncioModuleDebugOffsets (section .AsyncioDebug, 13 words: the task
 * object's size, name, awaited_by, is_task, awaited_by_is_set, coro, node;
 * the interpreter state's size and tasks head; the thread state's size,
 * running loop, running task and tasks head).
 *
 * How: older versions use the layout their minor's entry gives
 * (python/py_minors.c, measured on their builds); 3.14+ finds the
 * section in the mapped files named _asyncio* or libpython*, or the
 * executable, computes the file's load bias from its mappings and reads
 * the words from memory.  Every value is checked for plausibility. */
#include "python/py_asyncio_offsets.h"

#include <errno.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "attach/remote_memory.h"
#include "symbolize/load_bias.h"
#include "symbolize/proc_maps.h"
#include "symbolize/target_file.h"
#include "util/cleanup.h"

#define SECTION_NAME    ".AsyncioDebug"
#define SECTION_WORDS   13
#define TASK_SIZE_MAX   1024
#define THREAD_SIZE_MAX (64u << 10)

bool py_asyncio_offsets__measured(const struct py_asyncio_layout *layout,
                                  struct py_asyncio_offsets *out)
{
        if (!layout->task_size)
                return false;
        /* TaskObj: the name follows the coroutine in every version. */
        *out = (struct py_asyncio_offsets){.task_size = layout->task_size,
                                           .task_name = layout->task_name,
                                           .task_coro = layout->task_name - 8,
                                           .task_context = layout->task_name + 8};
        return true;
}

/* The target address of the section in the file of maps[first..first+n),
 * or 0. */
static uint64_t section_address(pid_t pid, const struct proc_map *maps, size_t n)
{
        _cleanup_close_ int fd = target_file__open_mapping(pid, &maps[0]);
        _cleanup_(elf_endp) Elf *elf = NULL;
        Elf_Scn *scn = NULL;
        size_t strndx;
        uint64_t bias;

        elf_version(EV_CURRENT);
        if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) || elf_kind(elf) != ELF_K_ELF ||
            elf_getshdrstrndx(elf, &strndx) != 0)
                return 0;
        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr;
                const char *name;
                if (!gelf_getshdr(scn, &shdr) || !(name = elf_strptr(elf, strndx, shdr.sh_name)) ||
                    strcmp(name, SECTION_NAME) != 0)
                        continue;
                if (shdr.sh_size < SECTION_WORDS * 8 || shdr.sh_addr == 0 ||
                    !load_bias__compute(elf, maps, n, (uint64_t)sysconf(_SC_PAGESIZE), &bias))
                        return 0;
                return shdr.sh_addr + bias;
        }
        return 0;
}

static bool candidate(const char *path)
{
        const char *base = strrchr(path, '/');

        base = base ? base + 1 : path;
        return strncmp(base, "_asyncio", 8) == 0 || strncmp(base, "libpython3", 10) == 0 ||
               strncmp(base, "python3", 7) == 0;
}

static int parse(const uint64_t *w, struct py_asyncio_offsets *out)
{
        /* w[0..6] task object, w[7..8] interpreter state, w[9..12] thread state */
        if (w[0] < 64 || w[0] > TASK_SIZE_MAX || w[1] + 8 > w[0] || w[5] + 8 > w[0] ||
            w[1] + 16 > w[0] || (w[1] & 7) || (w[5] & 7) || w[9] < 64 || w[9] > THREAD_SIZE_MAX ||
            w[10] + 8 > w[9] || w[11] + 8 > w[9] || (w[10] & 7) || (w[11] & 7) ||
            w[6] + 16 > w[0] || (w[6] & 7) || w[7] > (16u << 20) || w[8] + 16 > w[7] ||
            (w[8] & 7) || w[12] + 16 > w[9] || (w[12] & 7))
                return -EINVAL;
        *out = (struct py_asyncio_offsets){.task_size = w[0],
                                           .task_name = w[1],
                                           .task_coro = w[5],
                                           .task_context = w[1] + 8,
                                           .thread_size = w[9],
                                           .thread_loop = w[10],
                                           .thread_task = w[11],
                                           .task_node = w[6],
                                           .interp_tasks_head = w[8],
                                           .thread_tasks_head = w[12],
                                           .from_debug = true};
        return 0;
}

int py_asyncio_offsets__from_debug(pid_t pid, struct py_asyncio_offsets *out)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(proc_maps__clearp) struct proc_maps maps = {0};
        size_t len;
        int r;

        if ((r = proc_maps__read(pid, &text, &len)) < 0 ||
            (r = proc_maps__parse(text, len, &maps)) < 0)
                return r;
        for (size_t i = 0; i < maps.n;) {
                size_t n = 1;
                while (i + n < maps.n && strcmp(maps.maps[i + n].path, maps.maps[i].path) == 0)
                        n++;
                if (maps.maps[i].path[0] == '/' && candidate(maps.maps[i].path)) {
                        uint64_t words[SECTION_WORDS], at = section_address(pid, &maps.maps[i], n);
                        if (at && remote_memory__read(pid, at, words, sizeof(words)) ==
                                      (ssize_t)sizeof(words))
                                return parse(words, out);
                }
                i += n;
        }
        return -ENOENT;
}
