/* test_context_reader.c — the pure parts of the span-context reader:
 * header validation, slot decoding and /proc starttime parsing, first on
 * hand-made cases, then on a few hundred thousand random and mutated
 * buffers (the reader must never accept garbage it cannot bound, nor read
 * outside the bytes it was given: run it under ASan to see). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context_format.h"
#include "context/context_reader.h"
#include "tests/unit/check.h"

#define PID     4242
#define NS_PID  7
#define TID     4250
#define START   123456
#define MAPPING (CONTEXT_HEADER_SIZE + 16 * CONTEXT_SLOT_SIZE)

static struct context_header good_header(void)
{
        struct context_header h = {.version = CONTEXT_VERSION,
                                   .header_size = CONTEXT_HEADER_SIZE,
                                   .slot_size = CONTEXT_SLOT_SIZE,
                                   .slot_count = 16,
                                   .owner_pid = PID};

        memcpy(h.magic, CONTEXT_MAGIC, 8);
        return h;
}

static struct context_slot good_slot(void)
{
        struct context_slot s = {.seq = 4, .tid = TID, .start_time = START, .valid = CONTEXT_VALID};

        s.trace_id[15] = 0x01; /* leading zero bytes must stay */
        s.span_id[7] = 0xab;
        return s;
}

static const char *check(const struct context_header *h)
{
        return context_header__check(h, sizeof(*h), MAPPING, PID, NS_PID);
}

static void test_header(void)
{
        struct context_header h = good_header();

        CHECK(check(&h) == NULL);
        h.owner_pid = NS_PID; /* the target's pid inside its container */
        CHECK(check(&h) == NULL);
        h.owner_pid = PID + 1; /* a parent's segment inherited over fork */
        CHECK(check(&h) != NULL);
        h = good_header();
        h.magic[0] = 'X';
        CHECK(check(&h) != NULL);
        h = good_header();
        h.version = 2;
        CHECK(check(&h) != NULL);
        h = good_header();
        h.slot_count = 17; /* one beyond the mapping */
        CHECK(check(&h) != NULL);
        h.slot_count = 0;
        CHECK(check(&h) != NULL);
        h.slot_count = UINT32_MAX;
        CHECK(check(&h) != NULL);
        h = good_header();
        h.slot_size = 32;
        CHECK(check(&h) != NULL);
        CHECK(context_header__check(&h, 10, MAPPING, PID, NS_PID) != NULL);
}

static enum context_state decode(const struct context_slot *s, struct context_span *span)
{
        return context_slot__decode((const uint8_t *)s, sizeof(*s), TID, START, span);
}

static void test_slot(void)
{
        struct context_slot s = good_slot();
        struct context_span span;

        CHECK(decode(&s, &span) == CONTEXT_SPAN);
        CHECK(strcmp(span.trace_id, "00000000000000000000000000000001") == 0);
        CHECK(strcmp(span.span_id, "00000000000000ab") == 0);
        CHECK(!span.internal);
        s.seq = 5; /* torn */
        CHECK(decode(&s, &span) == CONTEXT_UNKNOWN);
        s = good_slot();
        s.start_time = START + 1; /* a dead thread's slot, tid recycled */
        CHECK(decode(&s, &span) == CONTEXT_UNKNOWN);
        s = good_slot();
        s.tid = TID + 1;
        CHECK(decode(&s, &span) == CONTEXT_UNKNOWN);
        s = good_slot();
        s.valid = 0;
        s.flags = CONTEXT_FLAG_INTERNAL;
        CHECK(decode(&s, &span) == CONTEXT_NONE && span.internal);
        s = good_slot();
        memset(s.span_id, 0, sizeof(s.span_id));
        CHECK(decode(&s, &span) == CONTEXT_NONE);
        s = good_slot();
        CHECK(context_slot__decode((const uint8_t *)&s, sizeof(s) - 1, TID, START, &span) ==
              CONTEXT_UNKNOWN);
        CHECK(context_slot__decode((const uint8_t *)&s, sizeof(s), TID, 0, &span) ==
              CONTEXT_UNKNOWN);
}

static void test_start_time(void)
{
        const char *line = "4250 (a) b) c) S 1 4250 4250 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 "
                           "3 0 987654 1000 10";

        CHECK(context_stat__start_time(line) == 987654);
        CHECK(context_stat__start_time("garbage") == 0);
        CHECK(context_stat__start_time("1 (x) S 1 2") == 0);
        CHECK(context_stat__start_time("") == 0);
}

static void test_probe(void)
{
        struct context_slot window[CONTEXT_PROBE_SLOTS] = {0};

        window[3] = good_slot();
        window[1] = good_slot();
        window[1].start_time = START + 1; /* a dead thread's slot, recycled tid */
        window[5] = good_slot();
        window[5].tid = TID + 1;
        CHECK(context_probe__find((const uint8_t *)window, sizeof(window), TID, START) == 3);
        CHECK(context_probe__find((const uint8_t *)window, sizeof(window), TID, 0) == -1);
        CHECK(context_probe__find((const uint8_t *)window, sizeof(window), TID + 2, START) == -1);
        /* A window cut short at the array's end, and bytes of a partial slot. */
        CHECK(context_probe__find((const uint8_t *)window, 3 * CONTEXT_SLOT_SIZE, TID, START) ==
              -1);
        CHECK(context_probe__find((const uint8_t *)window, 4 * CONTEXT_SLOT_SIZE - 1, TID, START) ==
              -1);
        CHECK(context_probe__find((const uint8_t *)window, 0, TID, START) == -1);
        CHECK(context_home_slot(TID, 16) == TID % 16 && context_home_slot(TID, 0) == 0);
}

static void test_random(void)
{
        uint8_t buffer[CONTEXT_HEADER_SIZE + CONTEXT_SLOT_SIZE];
        struct context_span span;
        unsigned accepted = 0;

        srand(5);
        for (int round = 0; round < 300000; round++) {
                struct context_header h = good_header();
                struct context_slot s = good_slot();
                memcpy(buffer, &h, sizeof(h));
                memcpy(buffer + sizeof(h), &s, sizeof(s));
                if (round % 2) {
                        for (size_t i = 0; i < sizeof(buffer); i++)
                                buffer[i] = (uint8_t)rand();
                } else {
                        for (int flips = 1 + rand() % 4; flips > 0; flips--)
                                buffer[rand() % sizeof(buffer)] ^= (uint8_t)(1 + rand() % 255);
                }
                size_t len = (size_t)rand() % (sizeof(buffer) + 1);
                accepted += context_header__check(
                                buffer, len < CONTEXT_HEADER_SIZE ? len : CONTEXT_HEADER_SIZE,
                                MAPPING, PID, NS_PID) == NULL;
                if (context_slot__decode(buffer + CONTEXT_HEADER_SIZE, CONTEXT_SLOT_SIZE, TID,
                                         START, &span) == CONTEXT_SPAN)
                        CHECK(strlen(span.trace_id) == 32 && strlen(span.span_id) == 16);
                /* Random bytes must not pass: 8 bytes of magic. */
                if (round % 2)
                        CHECK(context_header__check(buffer, CONTEXT_HEADER_SIZE, MAPPING, PID,
                                                    NS_PID) != NULL);
        }
        CHECK(accepted > 0); /* flips outside the checked fields keep it valid */
}

int main(void)
{
        test_header();
        test_slot();
        test_probe();
        test_start_time();
        test_random();
        printf("context reader: ok\n");
        return 0;
}
