#include "CX264.h"

x264_t *cx264_encoder_open(x264_param_t *param) { return x264_encoder_open(param); }
int cx264_build(void) { return X264_BUILD; }
