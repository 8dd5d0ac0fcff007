/* gzip.c — gzip compression of an encoded profile.
 *
 * pprof files are conventionally gzipped (*.pb.gz), and both pprof and
 * Splunk's ingestion accept either form; compressing shrinks a typical
 * profile by 5-10x, which matters since profiles are written every few
 * seconds.  zlib writes the gzip header and trailer itself when
 * windowBits is 15 + 16.
 *
 * zlib counts bytes in uInt (32 bits), so input and output are fed in
 * slices of at most UINT_MAX bytes; the output buffer starts at
 * deflateBound(), which is enough for one pass, but grows rather than
 * trusting that bound, so the loop cannot stall. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

#include "util/gzip.h"
#include "util/array.h"
#include "util/cleanup.h"

#define GZIP_LEVEL       6
#define GZIP_WINDOW_BITS (15 + 16)
#define GZIP_MEM_LEVEL   8

DEFINE_TRIVIAL_CLEANUP_FUNC(z_stream *, deflateEnd, deflate_endp)

static int gzip__errno(int z)
{
        return z == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
}

static unsigned gzip__slice(size_t remaining)
{
        return remaining < UINT_MAX ? (unsigned)remaining : UINT_MAX;
}

/* Doubles the output buffer (array__reserve grows geometrically). */
static int gzip__grow(uint8_t **buffer, size_t *capacity)
{
        return ARRAY_RESERVE(*buffer, *capacity, *capacity + 1);
}

/* Runs deflate until the whole input is consumed and Z_STREAM_END seen. */
static int gzip__run(z_stream *stream, const uint8_t *in, size_t in_len, uint8_t **buffer,
                     size_t *capacity, size_t *produced)
{
        size_t consumed = 0;
        int z, r;

        for (;;) {
                size_t in_slice = gzip__slice(in_len - consumed);
                size_t out_slice;

                if (*produced == *capacity && (r = gzip__grow(buffer, capacity)) < 0)
                        return r;
                out_slice = gzip__slice(*capacity - *produced);
                stream->next_in = (Bytef *)(in ? in + consumed : NULL);
                stream->avail_in = (uInt)in_slice;
                stream->next_out = *buffer + *produced;
                stream->avail_out = (uInt)out_slice;
                z = deflate(stream, consumed + in_slice == in_len ? Z_FINISH : Z_NO_FLUSH);
                consumed += in_slice - stream->avail_in;
                *produced += out_slice - stream->avail_out;
                if (z == Z_STREAM_END)
                        return 0;
                if (z != Z_OK && z != Z_BUF_ERROR)
                        return gzip__errno(z);
        }
}

int gzip__compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len)
{
        z_stream storage = {0};
        _cleanup_(deflate_endp) z_stream *stream = NULL;
        _cleanup_free_ uint8_t *buffer = NULL;
        uint8_t *shrunk;
        size_t capacity, produced = 0;
        int z, r;

        if (!out || !out_len || (!in && in_len))
                return -EINVAL;
        z = deflateInit2(&storage, GZIP_LEVEL, Z_DEFLATED, GZIP_WINDOW_BITS, GZIP_MEM_LEVEL,
                         Z_DEFAULT_STRATEGY);
        if (z != Z_OK)
                return gzip__errno(z);
        stream = &storage;
        capacity = deflateBound(stream, in_len);
        if (capacity < in_len) /* uLong wrapped */
                capacity = in_len;
        buffer = malloc(capacity);
        if (!buffer)
                return -ENOMEM;
        r = gzip__run(stream, in, in_len, &buffer, &capacity, &produced);
        if (r < 0)
                return r;
        /* deflateBound() assumes incompressible input; give back the rest. */
        shrunk = realloc(buffer, produced ? produced : 1);
        if (shrunk)
                buffer = shrunk;
        *out = take_ptr(buffer);
        *out_len = produced;
        return 0;
}
