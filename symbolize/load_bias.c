/* load_bias.c — reconciling an ELF file with how it was mapped.
 *
 * libdwfl wants each module's load bias.  The dynamic loader maps each
 * PT_LOAD segment at (p_vaddr & -page) + bias from file offset
 * (p_offset & -page), so any mapping whose offset equals a segment's aligned
 * offset yields the bias as start - aligned p_vaddr.  ET_EXEC files are not
 * relocated, so their bias must come out as 0.  The file we opened may not
 * be what is mapped (path fallback, hostile container), so the bias is then
 * verified: every executable mapping must be covered by an executable
 * segment at exactly the address and offset the bias predicts.  A file that
 * fails is not reported; its frames stay unsymbolized instead of wrong. */
#include "symbolize/load_bias.h"

#define LOAD_BIAS_MAX_PHDRS 4096

struct segment {
        uint64_t vaddr;  /* page-aligned p_vaddr */
        uint64_t offset; /* page-aligned p_offset */
        uint64_t file_end;
        bool executable;
};

static bool segment__get(Elf *elf, size_t i, uint64_t page_size, struct segment *s)
{
        GElf_Phdr mem, *ph = gelf_getphdr(elf, (int)i, &mem);

        if (!ph || ph->p_type != PT_LOAD || ph->p_filesz == 0)
                return false;
        if (__builtin_add_overflow(ph->p_offset, ph->p_filesz, &s->file_end))
                return false;
        s->vaddr = ph->p_vaddr & ~(page_size - 1);
        s->offset = ph->p_offset & ~(page_size - 1);
        s->executable = ph->p_flags & PF_X;
        return true;
}

/* Does mapping m hold segment s under `bias`? */
static bool segment__maps(const struct segment *s, const struct proc_map *m, uint64_t bias)
{
        if (m->offset < s->offset || m->offset >= s->file_end)
                return false;
        return m->start - bias == s->vaddr + (m->offset - s->offset);
}

static bool load_bias__guess(Elf *elf, size_t phnum, const struct proc_map *maps, size_t n,
                             uint64_t page_size, uint64_t *bias)
{
        for (size_t j = 0; j < n; j++) {
                for (size_t i = 0; i < phnum; i++) {
                        struct segment s;

                        if (segment__get(elf, i, page_size, &s) && s.offset == maps[j].offset) {
                                *bias = maps[j].start - s.vaddr;
                                return true;
                        }
                }
        }
        return false;
}

static bool load_bias__covers(Elf *elf, size_t phnum, const struct proc_map *m, uint64_t page_size,
                              uint64_t bias)
{
        for (size_t i = 0; i < phnum; i++) {
                struct segment s;

                if (segment__get(elf, i, page_size, &s) && s.executable &&
                    segment__maps(&s, m, bias))
                        return true;
        }
        return false;
}

bool load_bias__compute(Elf *elf, const struct proc_map *maps, size_t n, uint64_t page_size,
                        uint64_t *bias)
{
        GElf_Ehdr ehdr_mem, *ehdr = gelf_getehdr(elf, &ehdr_mem);
        size_t phnum, n_exec = 0;

        if (!ehdr || (ehdr->e_type != ET_EXEC && ehdr->e_type != ET_DYN))
                return false;
        if (elf_getphdrnum(elf, &phnum) != 0 || phnum == 0 || phnum > LOAD_BIAS_MAX_PHDRS)
                return false;
        if (!load_bias__guess(elf, phnum, maps, n, page_size, bias))
                return false;
        if (ehdr->e_type == ET_EXEC && *bias != 0)
                return false;
        for (size_t j = 0; j < n; j++) {
                if (!maps[j].executable)
                        continue;
                if (!load_bias__covers(elf, phnum, &maps[j], page_size, *bias))
                        return false;
                n_exec++;
        }
        return n_exec > 0;
}
