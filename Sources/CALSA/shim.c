#include "CALSA.h"

int calsa_stream_capture(void) { return SND_PCM_STREAM_CAPTURE; }
int calsa_format_s16_le(void) { return SND_PCM_FORMAT_S16_LE; }
int calsa_access_rw_interleaved(void) { return SND_PCM_ACCESS_RW_INTERLEAVED; }
