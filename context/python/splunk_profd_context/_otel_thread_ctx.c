/* _otel_thread_ctx.c — the OTEP 4947 thread-context symbol for the Python
 * package (splunk_profd_context/_thread_record.py loads it with ctypes).
 *
 * Pure Python cannot define an ELF TLS symbol, so this shared object does:
 * otel_thread_ctx_v1, exported in .dynsym, and one record per thread for it
 * to point to.  It is not a Python extension (no Python.h, no PyInit): one
 * build serves every interpreter, free-threaded ones included, and ctypes
 * is the only caller.  Built TLSDESC (-mtls-dialect=gnu2, the dialect the
 * OTEP names) where the compiler has it.
 *
 * The writes themselves are done from Python, through memoryviews over the
 * addresses splunk_profd_otel_thread_addresses() returns (a ctypes call
 * costs more than the whole write): the thread's own pointer and its two
 * records.  Two, so that a new span is written into the one the pointer
 * does not name and published with one pointer store (one store less
 * than clearing the pointer first, per attach and detach).  Each thread
 * calls it once, on its first span. */
#include <stdint.h>

/* OTEP 4947 Thread-Local Context Record without attribute data: trace_id
 * @0, span_id @16, valid @24, trace_flags @25, attrs_data_size @26. */
struct otel_thread_record {
        uint8_t trace_id[16];
        uint8_t span_id[8];
        uint8_t valid;
        uint8_t trace_flags;
        uint16_t attrs_data_size;
} __attribute__((packed, aligned(8)));

_Static_assert(sizeof(struct otel_thread_record) == 32, "28-byte record, 8-aligned");

__attribute__((visibility("default"))) __thread struct otel_thread_record *otel_thread_ctx_v1;
static __thread struct otel_thread_record records[2];

/* The calling thread's &otel_thread_ctx_v1 (out[0]) and its two records
 * (out[1], out[2]); all live as long as the thread. */
__attribute__((visibility("default"))) void splunk_profd_otel_thread_addresses(uintptr_t out[3])
{
        out[0] = (uintptr_t)&otel_thread_ctx_v1;
        out[1] = (uintptr_t)&records[0];
        out[2] = (uintptr_t)&records[1];
}
