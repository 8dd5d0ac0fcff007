/* test_context_writer.c — the C writer's OTEP 4719 payload, decoded by
 * our reader (protobuf-c from proto/process_context.proto, so a wrong
 * field number or wire type fails here): service.name, the OTEP 4947
 * schema version and an empty key map; no service.name without one; a
 * buffer too small gives 0, never a cut payload. */
#include <string.h>

#include "check.h"
#include "context/process_context.h"
#include "process_context_writer.h"

static void decode(const char *service, size_t want_attrs)
{
        uint8_t buf[4096];
        struct process_context context;
        size_t n = process_context_writer__encode(buf, sizeof(buf), service);

        CHECK(n > 0);
        process_context__init(&context, 1);
        CHECK(process_context__decode(&context, buf, n) == 0);
        CHECK(context.n_attrs == want_attrs);
        if (want_attrs) {
                CHECK(strcmp(context.attrs[0].key, "service.name") == 0);
                CHECK(context.attrs[0].str && strcmp(context.attrs[0].str, service) == 0);
        }
        CHECK(context.schema_version &&
              strcmp(context.schema_version, PROCESS_CONTEXT_WRITER_SCHEMA) == 0);
        CHECK(context.n_keys == 0);
        CHECK(process_context__tls_schema_ok(&context));
        process_context__clear(&context);
}

int main(void)
{
        uint8_t small[40];
        char long_name[3000];

        decode("checkout", 1);
        decode(NULL, 0);
        decode("", 0);
        CHECK(process_context_writer__encode(small, sizeof(small), "checkout") == 0);
        memset(long_name, 'x', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        /* capped at 1024 bytes, not refused */
        uint8_t buf[4096];
        CHECK(process_context_writer__encode(buf, sizeof(buf), long_name) > 1024);
        return 0;
}
