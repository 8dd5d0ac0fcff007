/* hashtab.h — intrusive chained hash table shared by the symbolizer caches.
 *
 * Entries embed a struct hash_node; the table never allocates entries, only
 * its bucket array, so each cache decides how its entries are laid out and
 * freed.  Hashes (util/hash.h) are seeded per table owner to make
 * collisions from attacker-chosen names (symbols, paths) harder to
 * arrange. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hash.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct hash_node {
        struct hash_node *next;
        uint64_t hash;
};

struct hashtab {
        struct hash_node **buckets;
        size_t n_buckets; /* a power of two, 0 before the first insert */
        size_t n_nodes;
};

typedef bool (*hash_eq_fn)(const struct hash_node *node, const void *key);
typedef void (*hash_free_fn)(struct hash_node *node);
typedef void (*hash_free_arg_fn)(struct hash_node *node, void *arg);

struct hash_node *hashtab__find(const struct hashtab *tab, uint64_t hash, hash_eq_fn eq,
                                const void *key);
/* Returns 0 or -ENOMEM (the node is then not linked). */
int hashtab__insert(struct hashtab *tab, struct hash_node *node, uint64_t hash);
/* Unlinks `node`, which must be in the table. */
void hashtab__remove(struct hashtab *tab, struct hash_node *node);
/* Frees every node with free_node and leaves an empty, reusable table. */
void hashtab__clear(struct hashtab *tab, hash_free_fn free_node);
/* The same, with `arg` passed to every free_node call. */
void hashtab__clear_arg(struct hashtab *tab, hash_free_arg_fn free_node, void *arg);
