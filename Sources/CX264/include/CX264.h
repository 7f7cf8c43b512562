#ifndef CX264_H
#define CX264_H
// x264.h needs <stdint.h> first; Swift cannot see x264_encoder_open (a macro that
// expands to x264_encoder_open_<BUILD>), so it is wrapped here.
#include <stdint.h>
#include <x264.h>

x264_t *cx264_encoder_open(x264_param_t *param);
/// X264_BUILD as a value (the library's ABI number, e.g. 164).
int cx264_build(void);
#endif
