/* hashtab.c — the one hash table behind every symbolizer cache.
 *
 * The caches (interned strings, file identities, interned mappings and the
 * (file, address) -> lines cache) all need "find by key, else insert", and
 * some need "drop everything" for eviction.  A chained table with the node
 * embedded in the entry covers all of them with a single allocation per
 * entry.  The table doubles when the load factor reaches 1, so chains stay
 * short.  Callers hash with util/hash.h, whose finished hashes let the low
 * bits pick the bucket. */
#include "util/hashtab.h"

#include <errno.h>
#include <stdlib.h>

#define HASHTAB_MIN_BUCKETS 64

struct hash_node *hashtab__find(const struct hashtab *tab, uint64_t hash, hash_eq_fn eq,
                                const void *key)
{
        if (tab->n_buckets == 0)
                return NULL;
        for (struct hash_node *n = tab->buckets[hash & (tab->n_buckets - 1)]; n; n = n->next)
                if (n->hash == hash && eq(n, key))
                        return n;
        return NULL;
}

static int hashtab__grow(struct hashtab *tab)
{
        size_t n_buckets = tab->n_buckets ? tab->n_buckets * 2 : HASHTAB_MIN_BUCKETS;
        struct hash_node **buckets = calloc(n_buckets, sizeof(*buckets));

        if (!buckets)
                return -ENOMEM;
        for (size_t i = 0; i < tab->n_buckets; i++) {
                struct hash_node *n = tab->buckets[i];

                while (n) {
                        struct hash_node *next = n->next;
                        size_t b = n->hash & (n_buckets - 1);

                        n->next = buckets[b];
                        buckets[b] = n;
                        n = next;
                }
        }
        free(tab->buckets);
        tab->buckets = buckets;
        tab->n_buckets = n_buckets;
        return 0;
}

int hashtab__insert(struct hashtab *tab, struct hash_node *node, uint64_t hash)
{
        size_t b;

        if (tab->n_nodes >= tab->n_buckets) {
                int r = hashtab__grow(tab);

                /* An overfull table still works, only slower. */
                if (r < 0 && tab->n_buckets == 0)
                        return r;
        }
        b = hash & (tab->n_buckets - 1);
        node->hash = hash;
        node->next = tab->buckets[b];
        tab->buckets[b] = node;
        tab->n_nodes++;
        return 0;
}

void hashtab__remove(struct hashtab *tab, struct hash_node *node)
{
        struct hash_node **link = &tab->buckets[node->hash & (tab->n_buckets - 1)];

        while (*link && *link != node)
                link = &(*link)->next;
        if (*link) {
                *link = node->next;
                tab->n_nodes--;
        }
}

/* C has no portable conversion between function and object pointers:
 * the plain destructor travels inside a struct. */
struct plain_free {
        hash_free_fn free_node;
};

static void call_free(struct hash_node *node, void *arg)
{
        ((const struct plain_free *)arg)->free_node(node);
}

void hashtab__clear(struct hashtab *tab, hash_free_fn free_node)
{
        struct plain_free plain = {free_node};

        hashtab__clear_arg(tab, call_free, &plain);
}

void hashtab__clear_arg(struct hashtab *tab, hash_free_arg_fn free_node, void *arg)
{
        for (size_t i = 0; i < tab->n_buckets; i++) {
                struct hash_node *n = tab->buckets[i];

                while (n) {
                        struct hash_node *next = n->next;

                        free_node(n, arg);
                        n = next;
                }
        }
        free(tab->buckets);
        tab->buckets = NULL;
        tab->n_buckets = 0;
        tab->n_nodes = 0;
}
