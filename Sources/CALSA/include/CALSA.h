#ifndef CALSA_H
#define CALSA_H
// alsa-lib's *_alloca helpers are macros Swift cannot import; the API is otherwise
// plain C. The shims below give Swift the few constants it cannot see.
#include <alsa/asoundlib.h>

int calsa_stream_capture(void);
int calsa_format_s16_le(void);
int calsa_access_rw_interleaved(void);
#endif
