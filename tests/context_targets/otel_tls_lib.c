/* otel_tls_lib — otel_thread_ctx_v1 in a library that otel_tls dlopens;
 * built twice: global-dynamic (-mtls-dialect=gnu: __tls_get_addr, dynamic
 * TLS) and TLSDESC (-mtls-dialect=gnu2, OTEP 4947's recommendation). */
#include "otel_tls_var.h"

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

__attribute__((visibility("default"))) void **otel_tls_slot(void)
{
        return &otel_thread_ctx_v1;
}
