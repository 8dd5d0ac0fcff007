/* backoff.c — doubling waits between attempts, capped (backoff.h). */
#include "util/backoff.h"

#include <limits.h>

uint64_t backoff_policy__wait_ns(const struct backoff_policy *policy, unsigned int tries)
{
        uint64_t wait = policy->first_ns;

        /* Doubling stops at the cap: no shift can overflow however many
         * tries a long run makes. */
        for (unsigned int i = 1; i < tries && wait > 0 && wait < policy->max_ns; i++)
                wait = wait > policy->max_ns / 2 ? policy->max_ns : wait * 2;
        return wait < policy->max_ns ? wait : policy->max_ns;
}

bool backoff_policy__due(const struct backoff_policy *policy, unsigned int tries, uint64_t last_ns,
                         uint64_t now_ns)
{
        if (tries == 0)
                return true;
        if (policy->retries && tries > policy->retries)
                return false;
        return now_ns - last_ns >= backoff_policy__wait_ns(policy, tries);
}

bool backoff__attempt(struct backoff *backoff, const struct backoff_policy *policy, uint64_t now_ns)
{
        if (!backoff_policy__due(policy, backoff->tries, backoff->last_ns, now_ns))
                return false;
        if (backoff->tries < UINT_MAX)
                backoff->tries++;
        backoff->last_ns = now_ns;
        return true;
}
