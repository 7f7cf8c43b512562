#ifndef COPUS_H
#define COPUS_H
// opus_encoder_ctl / opus_decoder_ctl are variadic and their requests are macros:
// Swift can import neither, so each request we use gets a typed shim.
#include <opus/opus.h>

int copus_set_bitrate(OpusEncoder *enc, opus_int32 bitrate);
int copus_get_bitrate(OpusEncoder *enc, opus_int32 *bitrate);
int copus_set_complexity(OpusEncoder *enc, opus_int32 complexity);
int copus_set_vbr(OpusEncoder *enc, opus_int32 vbr);
int copus_set_signal(OpusEncoder *enc, opus_int32 signal);
int copus_get_lookahead(OpusEncoder *enc, opus_int32 *lookahead);
int copus_encoder_reset(OpusEncoder *enc);

/// OPUS_APPLICATION_* and OPUS_SIGNAL_* constants as values.
int copus_application_voip(void);
int copus_application_audio(void);
int copus_application_restricted_lowdelay(void);
int copus_signal_music(void);
int copus_signal_voice(void);
int copus_auto(void);
#endif
