/* frame_label.c — see frame_label.h. */
#include "render/frame_label.h"

#include <stdio.h>

#include "render/profile_stacks.h"

static void sanitize(char *text)
{
        for (; *text; text++) {
                if (*text == ';')
                        *text = ':';
                else if ((unsigned char)*text < 0x20)
                        *text = ' ';
        }
}

void frame_label__format(const struct ps_frame *frame, char *out, size_t size)
{
        if (frame->python && frame->line > 0)
                snprintf(out, size, "%s (%s:%lld)", frame->function, frame->file,
                         (long long)frame->line);
        else if (frame->python)
                snprintf(out, size, "%s (%s)", frame->function, frame->file);
        else
                snprintf(out, size, "%s", frame->function);
        sanitize(out);
}
