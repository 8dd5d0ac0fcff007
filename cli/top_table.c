/* top_table.c — see top_table.h.
 *
 * Entries are keyed by (thread, state, function, file) in an index_map, so
 * a thread filter or the idle toggle is applied when drawing, not when
 * counting, and changes take effect on the next frame with full history.
 * Function strings are copied: Python names belong to the target's caches
 * and native ones to the symbolizer, which both outlive a snapshot but not
 * necessarily the target. */
#include "cli/top_table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/target.h"
#include "engine/sample_sink.h"
#include "cli/stack_frames.h"
#include "pprof/sample_recorder.h"
#include "util/hashtab.h"
#include "util/array.h"

struct entry_key {
        const struct top_table *table;
        const char *function, *file;
        pid_t tid;
        bool blocked;
};

struct row_key {
        const struct top_row *rows;
        const char *function, *file;
};

int top_table__init(struct top_table *table)
{
        memset(table, 0, sizeof(*table));
        return -pthread_mutex_init(&table->lock, NULL);
}

static void free_entries(struct top_table *table)
{
        for (size_t i = 0; i < table->n_entries; i++) {
                free(table->entries[i].function);
                free(table->entries[i].file);
        }
        free(table->entries);
        index_map__free(&table->map);
        free(table->threads);
        table->entries = NULL;
        table->threads = NULL;
        table->n_entries = table->entries_capacity = 0;
        table->n_threads = table->threads_capacity = 0;
        memset(&table->map, 0, sizeof(table->map));
}

void top_table__release(struct top_table *table)
{
        free_entries(table);
        pthread_mutex_destroy(&table->lock);
}

void top_table__lock(struct top_table *table)
{
        pthread_mutex_lock(&table->lock);
}

void top_table__unlock(struct top_table *table)
{
        pthread_mutex_unlock(&table->lock);
}

static uint64_t entry_hash(const char *function, const char *file, pid_t tid, bool blocked)
{
        uint64_t h = hash__bytes((uint64_t)tid * 2 + blocked, function, strlen(function));

        return hash__bytes(h, file, strlen(file));
}

static bool entry_equal(const void *context, uint32_t index)
{
        const struct entry_key *key = context;
        const struct top_entry *e = &key->table->entries[index];

        return e->tid == key->tid && e->blocked == key->blocked &&
               strcmp(e->function, key->function) == 0 && strcmp(e->file, key->file) == 0;
}

static struct top_entry *find_entry(struct top_table *table, const struct entry_key *key,
                                    bool python)
{
        uint64_t hash = entry_hash(key->function, key->file, key->tid, key->blocked);
        uint32_t index = index_map__find(&table->map, hash, entry_equal, key);
        struct top_entry *e;

        if (index != INDEX_MAP_NONE)
                return &table->entries[index];
        if (ARRAY_RESERVE(table->entries, table->entries_capacity, table->n_entries + 1) < 0)
                return NULL;
        e = &table->entries[table->n_entries];
        *e = (struct top_entry){.function = strdup(key->function),
                                .file = strdup(key->file),
                                .python = python,
                                .tid = key->tid,
                                .blocked = key->blocked,
                                .hash = hash};
        if (!e->function || !e->file ||
            index_map__insert(&table->map, hash, (uint32_t)table->n_entries) < 0) {
                free(e->function);
                free(e->file);
                return NULL;
        }
        table->n_entries++;
        return e;
}

static struct top_thread *find_thread(struct top_table *table, const struct sample_record *record)
{
        struct top_thread *t;

        for (size_t i = 0; i < table->n_threads; i++)
                if (table->threads[i].tid == record->tid && table->threads[i].pid == record->pid) {
                        snprintf(table->threads[i].name, sizeof(t->name), "%s",
                                 record->thread_name);
                        return &table->threads[i];
                }
        if (ARRAY_RESERVE(table->threads, table->threads_capacity, table->n_threads + 1) < 0)
                return NULL;
        t = &table->threads[table->n_threads++];
        *t = (struct top_thread){.pid = record->pid, .tid = record->tid};
        snprintf(t->name, sizeof(t->name), "%s", record->thread_name);
        return t;
}

struct count_walk {
        struct top_table *table;
        struct entry_key key;
        bool leaf;
};

static bool count_frame(void *arg, const struct stack_frame *frame)
{
        struct count_walk *walk = arg;
        struct top_entry *e;

        walk->key.function = frame->function;
        walk->key.file = frame->file;
        e = find_entry(walk->table, &walk->key, frame->python);
        if (!e) {
                walk->table->out_of_memory = true;
                return false;
        }
        if (walk->leaf) {
                e->window.self++;
                e->all.self++;
                walk->leaf = false;
        }
        if (e->stamp != walk->table->stamp) {
                e->stamp = walk->table->stamp;
                e->window.total++;
                e->all.total++;
        }
        return true;
}

void top_table__on_sample(void *arg, const struct sample_event *event)
{
        struct top_table *table = arg;
        const struct sample_record *record = event->record;
        /* Idle: not on a CPU.  A runnable sample that carries CPU was on one
         * at the tick (engine/sampler.c, takes_cpu): on a VM whose interrupts
         * take 60-140 us, that is most samples of a busy thread. */
        bool blocked = strcmp(record->thread_state, "running") != 0 && record->cpu_ns <= 0;
        struct count_walk walk = {
            .table = table,
            .key = {.table = table, .tid = record->tid, .blocked = blocked},
            .leaf = true,
        };
        struct top_thread *thread;

        top_table__lock(table);
        table->stamp++;
        thread = find_thread(table, record);
        if (thread) {
                uint64_t *counts = blocked ? thread->blocked : thread->running;
                counts[0]++;
                counts[1]++;
                stack_frames__walk(event, count_frame, &walk);
        }
        top_table__unlock(table);
}

static bool row_equal(const void *context, uint32_t index)
{
        const struct row_key *key = context;

        return strcmp(key->rows[index].function, key->function) == 0 &&
               strcmp(key->rows[index].file, key->file) == 0;
}

static bool filter_accepts(const struct top_filter *filter, pid_t tid, bool blocked)
{
        return (filter->tid == 0 || filter->tid == tid) && (filter->include_idle || !blocked);
}

/* Adds one entry to its row (by function and file). */
static bool add_to_row(struct top_row **rows, size_t *n, size_t *capacity, struct index_map *map,
                       const struct top_entry *e)
{
        uint64_t hash =
            hash__bytes(hash__bytes(7, e->function, strlen(e->function)), e->file, strlen(e->file));
        struct row_key key = {.rows = *rows, .function = e->function, .file = e->file};
        uint32_t index = *n ? index_map__find(map, hash, row_equal, &key) : INDEX_MAP_NONE;

        if (index == INDEX_MAP_NONE) {
                if (ARRAY_RESERVE(*rows, *capacity, *n + 1) < 0 ||
                    index_map__insert(map, hash, (uint32_t)*n) < 0)
                        return false;
                index = (uint32_t)(*n)++;
                (*rows)[index] =
                    (struct top_row){.function = e->function, .file = e->file, .python = e->python};
        }
        (*rows)[index].window.self += e->window.self;
        (*rows)[index].window.total += e->window.total;
        (*rows)[index].all.self += e->all.self;
        (*rows)[index].all.total += e->all.total;
        return true;
}

struct top_row *top_table__rows(const struct top_table *table, const struct top_filter *filter,
                                size_t *n, uint64_t samples[2])
{
        struct top_row *rows = NULL;
        size_t capacity = 0;
        struct index_map map = {0};
        bool ok = true;

        *n = 0;
        samples[0] = samples[1] = 0;
        for (size_t i = 0; i < table->n_threads; i++) {
                const struct top_thread *t = &table->threads[i];
                for (int w = 0; w < 2; w++) {
                        if (filter_accepts(filter, t->tid, false))
                                samples[w] += t->running[w];
                        if (filter_accepts(filter, t->tid, true))
                                samples[w] += t->blocked[w];
                }
        }
        for (size_t i = 0; ok && i < table->n_entries; i++)
                if (filter_accepts(filter, table->entries[i].tid, table->entries[i].blocked))
                        ok = add_to_row(&rows, n, &capacity, &map, &table->entries[i]);
        index_map__free(&map);
        if (!ok) {
                free(rows);
                *n = 0;
                return NULL;
        }
        return rows;
}

void top_table__next_window(struct top_table *table)
{
        for (size_t i = 0; i < table->n_entries; i++)
                table->entries[i].window = (struct top_counts){0};
        for (size_t i = 0; i < table->n_threads; i++)
                table->threads[i].running[0] = table->threads[i].blocked[0] = 0;
}

void top_table__reset(struct top_table *table)
{
        free_entries(table);
}
