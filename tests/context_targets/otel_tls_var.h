/* otel_tls_var.h — the test writers' access to otel_thread_ctx_v1, which
 * lives in the executable or in a library (otel_tls_lib.c). */
#pragma once

void **otel_tls_slot(void);
