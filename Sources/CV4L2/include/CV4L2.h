#ifndef CV4L2_H
#define CV4L2_H
// libv4l2's v4l2_open/v4l2_ioctl are variadic and VIDIOC_* / V4L2_PIX_FMT_* are
// function-like macros: Swift sees neither, so they are exposed as shims.
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/videodev2.h>

int cv4l2_open(const char *path, int flags);
int cv4l2_close(int fd);
int cv4l2_ioctl(int fd, unsigned long request, void *arg);
void *cv4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset);
int cv4l2_munmap(void *start, size_t length);

unsigned long cv4l2_vidioc_querycap(void);
unsigned long cv4l2_vidioc_enum_fmt(void);
unsigned long cv4l2_vidioc_enum_framesizes(void);
unsigned long cv4l2_vidioc_enum_frameintervals(void);
unsigned long cv4l2_vidioc_g_fmt(void);
unsigned long cv4l2_vidioc_s_fmt(void);
unsigned long cv4l2_vidioc_g_parm(void);
unsigned long cv4l2_vidioc_s_parm(void);
unsigned long cv4l2_vidioc_reqbufs(void);
unsigned long cv4l2_vidioc_querybuf(void);
unsigned long cv4l2_vidioc_qbuf(void);
unsigned long cv4l2_vidioc_dqbuf(void);
unsigned long cv4l2_vidioc_streamon(void);
unsigned long cv4l2_vidioc_streamoff(void);
uint32_t cv4l2_pix_fmt_yuv420(void);
uint32_t cv4l2_pix_fmt_yuyv(void);
uint32_t cv4l2_pix_fmt_mjpeg(void);

// libv4lconvert, used directly when a camera is captured in a chosen native format
// (`format=YUYV`) and converted to I420 here rather than inside libv4l2.
void *cv4l2_converter_create(int fd);
void cv4l2_converter_destroy(void *converter);
/// Converts one frame to YU12 (I420) of the same size; returns the bytes written or -1.
int cv4l2_convert_to_yu12(void *converter, uint32_t source_fourcc, uint32_t width, uint32_t height,
                          uint32_t bytes_per_line, uint32_t size_image,
                          const unsigned char *source, int source_size, unsigned char *destination, int destination_size);
const char *cv4l2_converter_error(void *converter);
#endif
