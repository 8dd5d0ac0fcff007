/* otlp_resource.h — the OTLP Resource of one target process, built the way
 * the target's own OpenTelemetry SDK would build it, from the outside:
 * its /proc/PID/environ (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), exe,
 * cmdline and cgroup, plus the host name and splunk-profd's identity.
 *
 * A resource is immutable once built and reference-counted, so queued
 * records of a target that has since exited can still point at it from
 * the exporter thread. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context/process_context.h"
#include "proto/otlp_resource.pb-c.h"

#define OTLP_RESOURCE_MAX_ATTRS 80

struct otlp_runtime {
        bool python;      /* a CPython target */
        char version[32]; /* e.g. "3.11" or "3.11.7"; "" when unknown */
};

struct otlp_attr {
        char *key;
        char *str; /* NULL: an int attribute */
        int64_t num;
};

struct otlp_resource {
        int refs; /* atomic */
        pid_t pid;
        size_t n_attrs;
        struct otlp_attr attrs[OTLP_RESOURCE_MAX_ATTRS];
        /* The protobuf view of attrs, built once, read by the exporter. */
        Opentelemetry__Proto__Resource__V1__Resource message;
        Opentelemetry__Proto__Common__V1__KeyValue kv[OTLP_RESOURCE_MAX_ATTRS];
        Opentelemetry__Proto__Common__V1__KeyValue *kv_ptrs[OTLP_RESOURCE_MAX_ATTRS];
        Opentelemetry__Proto__Common__V1__AnyValue values[OTLP_RESOURCE_MAX_ATTRS];
};

/* Cheap CPython detection: the executable is python[3[.N]] or a
 * libpython3.N is mapped; fills the major.minor version it names. */
bool otlp_runtime__detect(pid_t pid, struct otlp_runtime *runtime);

/* Builds the resource of process `pid`; `runtime` NULL means detect.
 * NULL when out of memory (a vanished process still gets a resource with
 * what could be read). */
struct otlp_resource *otlp_resource__new(pid_t pid, const struct otlp_runtime *runtime);
/* The same, with the resource attributes the target's SDK published in
 * its OTEP 4719 process context (may be NULL) ahead of the environment. */
struct otlp_resource *otlp_resource__new_with_context(pid_t pid, const struct otlp_runtime *runtime,
                                                      const struct process_context *context);
struct otlp_resource *otlp_resource__ref(struct otlp_resource *resource);
void otlp_resource__unref(struct otlp_resource *resource);

/* The string value of `key`, or NULL (ints: NULL). */
const char *otlp_resource__get(const struct otlp_resource *resource, const char *key);
