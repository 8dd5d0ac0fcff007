/* backoff.h — when to look again for something a target does not have
 * yet (a module not imported, a thread not registered): at once, then
 * after first_ns, twice that, and so on, never more than max_ns apart;
 * after `retries` looks again (0: no limit), not at all.
 *
 * Why one object: the asyncio, task-span and thread-name readers each
 * wrote this arithmetic, with the same doubling and cap written three
 * ways. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The schedule; built by the caller, usually a static const. */
struct backoff_policy {
        uint64_t first_ns; /* wait after the first attempt; > 0 */
        uint64_t max_ns;   /* longest wait; >= first_ns */
        unsigned int retries;
};

/* The attempts made so far; zeroed: none. */
struct backoff {
        unsigned int tries;
        uint64_t last_ns; /* CLOCK_MONOTONIC of the last one */
};

/* The wait after the tries-th attempt (tries >= 1): first_ns doubled
 * tries - 1 times, at most max_ns. */
uint64_t backoff_policy__wait_ns(const struct backoff_policy *policy, unsigned int tries);

/* Whether an attempt is due at now_ns after `tries` of them, the last at
 * last_ns: the first always is, one beyond `retries` never. */
bool backoff_policy__due(const struct backoff_policy *policy, unsigned int tries, uint64_t last_ns,
                         uint64_t now_ns);

/* Whether an attempt is due at now_ns; if so it is counted, as made then. */
bool backoff__attempt(struct backoff *backoff, const struct backoff_policy *policy,
                      uint64_t now_ns);
