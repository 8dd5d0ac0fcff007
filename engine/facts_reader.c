/* facts_reader.c — see facts_reader.h. */
#include "engine/facts_reader.h"

#include <stdlib.h>
#include <string.h>

#include "util/array.h"

#define FACTS_LOOK_TIMEOUT_NS (2000ull * 1000 * 1000)
#define FACTS_LOOKS_MAX       4096

static struct facts_look *find(const struct facts_reader *reader, pid_t pid)
{
        for (size_t i = 0; i < reader->n_looks; i++)
                if (reader->looks[i].pid == pid)
                        return &reader->looks[i];
        return NULL;
}

static void forget(struct facts_reader *reader, struct facts_look *look)
{
        free(look->environ);
        *look = reader->looks[--reader->n_looks];
}

static struct facts_look *new_look(struct facts_reader *reader, pid_t pid)
{
        struct facts_look *look = find(reader, pid);

        if (look) {
                free(look->environ); /* superseded: its replies are dropped */
                *look = (struct facts_look){.pid = pid};
                return look;
        }
        if (reader->n_looks >= FACTS_LOOKS_MAX ||
            ARRAY_RESERVE(reader->looks, reader->looks_capacity, reader->n_looks + 1) < 0)
                return NULL;
        look = &reader->looks[reader->n_looks++];
        *look = (struct facts_look){.pid = pid};
        return look;
}

bool facts_reader__ask(struct facts_reader *reader, pid_t pid, int previous, uint64_t now_ns)
{
        struct facts_look *look;

        if (!reader->tried) {
                reader->tried = true;
                (void)maps_reader__start(&reader->worker);
        }
        if (!reader->worker.running || !(look = new_look(reader, pid)))
                return false;
        look->previous = previous;
        look->serial = ++reader->serial;
        look->asked_ns = now_ns;
        if (!maps_reader__ask_for(&reader->worker, pid, look->serial, MAPS_READER_ENVIRON) ||
            !maps_reader__ask_for(&reader->worker, pid, look->serial, MAPS_READER_MAPS)) {
                forget(reader, look); /* a reply that comes is dropped */
                return false;
        }
        return true;
}

bool facts_reader__asked(const struct facts_reader *reader, pid_t pid)
{
        return find(reader, pid) != NULL;
}

static void expire(struct facts_reader *reader, uint64_t now_ns)
{
        for (size_t i = 0; i < reader->n_looks;)
                if (now_ns - reader->looks[i].asked_ns >= FACTS_LOOK_TIMEOUT_NS)
                        forget(reader, &reader->looks[i]);
                else
                        i++;
}

/* `reply` completes its look into `answer` (true), or fills in its
 * environment, or is dropped (superseded, forgotten). */
static bool on_reply(struct facts_reader *reader, struct maps_reply *reply,
                     struct facts_answer *answer)
{
        struct facts_look *look = find(reader, reply->pid);

        if (!look || look->serial != reply->serial ||
            look->environ_in == (reply->what == MAPS_READER_ENVIRON)) {
                free(reply->text);
                return false;
        }
        if (reply->what == MAPS_READER_ENVIRON) {
                look->environ = reply->text;
                look->environ_len = reply->len;
                look->environ_error = reply->error;
                look->environ_in = true;
                return false;
        }
        *answer = (struct facts_answer){
            .pid = look->pid,
            .previous = look->previous,
            .asked_ns = look->asked_ns,
            .environ = look->environ,
            .environ_len = look->environ_len,
            .environ_error = look->environ_error,
            .maps = reply->text,
            .maps_len = reply->len,
            .maps_error = reply->error,
        };
        look->environ = NULL;
        forget(reader, look);
        return true;
}

bool facts_reader__take(struct facts_reader *reader, struct facts_answer *answer, uint64_t now_ns)
{
        struct maps_reply reply;

        while (maps_reader__take(&reader->worker, &reply))
                if (on_reply(reader, &reply, answer))
                        return true;
        expire(reader, now_ns);
        return false;
}

void facts_answer__release(struct facts_answer *answer)
{
        free(answer->environ);
        free(answer->maps);
        answer->environ = answer->maps = NULL;
}

void facts_reader__release(struct facts_reader *reader)
{
        maps_reader__stop(&reader->worker);
        while (reader->n_looks > 0)
                forget(reader, &reader->looks[0]);
        free(reader->looks);
        *reader = (struct facts_reader)FACTS_READER_INIT;
}
