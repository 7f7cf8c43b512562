#include "COpus.h"

int copus_set_bitrate(OpusEncoder *enc, opus_int32 v) { return opus_encoder_ctl(enc, OPUS_SET_BITRATE(v)); }
int copus_get_bitrate(OpusEncoder *enc, opus_int32 *v) { return opus_encoder_ctl(enc, OPUS_GET_BITRATE(v)); }
int copus_set_complexity(OpusEncoder *enc, opus_int32 v) { return opus_encoder_ctl(enc, OPUS_SET_COMPLEXITY(v)); }
int copus_set_vbr(OpusEncoder *enc, opus_int32 v) { return opus_encoder_ctl(enc, OPUS_SET_VBR(v)); }
int copus_set_signal(OpusEncoder *enc, opus_int32 v) { return opus_encoder_ctl(enc, OPUS_SET_SIGNAL(v)); }
int copus_get_lookahead(OpusEncoder *enc, opus_int32 *v) { return opus_encoder_ctl(enc, OPUS_GET_LOOKAHEAD(v)); }
int copus_encoder_reset(OpusEncoder *enc) { return opus_encoder_ctl(enc, OPUS_RESET_STATE); }

int copus_application_voip(void) { return OPUS_APPLICATION_VOIP; }
int copus_application_audio(void) { return OPUS_APPLICATION_AUDIO; }
int copus_application_restricted_lowdelay(void) { return OPUS_APPLICATION_RESTRICTED_LOWDELAY; }
int copus_signal_music(void) { return OPUS_SIGNAL_MUSIC; }
int copus_signal_voice(void) { return OPUS_SIGNAL_VOICE; }
int copus_auto(void) { return OPUS_AUTO; }
