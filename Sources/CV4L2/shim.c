#include "CV4L2.h"
#include <libv4l2.h>
#include <libv4lconvert.h>
#include <string.h>
#include <fcntl.h>

int cv4l2_open(const char *path, int flags) { return v4l2_open(path, flags); }
int cv4l2_close(int fd) { return v4l2_close(fd); }
int cv4l2_ioctl(int fd, unsigned long request, void *arg) { return v4l2_ioctl(fd, request, arg); }
void *cv4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset) {
    return v4l2_mmap(start, length, prot, flags, fd, offset);
}
int cv4l2_munmap(void *start, size_t length) { return v4l2_munmap(start, length); }

unsigned long cv4l2_vidioc_querycap(void) { return VIDIOC_QUERYCAP; }
unsigned long cv4l2_vidioc_enum_fmt(void) { return VIDIOC_ENUM_FMT; }
unsigned long cv4l2_vidioc_enum_framesizes(void) { return VIDIOC_ENUM_FRAMESIZES; }
unsigned long cv4l2_vidioc_enum_frameintervals(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }
unsigned long cv4l2_vidioc_g_fmt(void) { return VIDIOC_G_FMT; }
unsigned long cv4l2_vidioc_s_fmt(void) { return VIDIOC_S_FMT; }
unsigned long cv4l2_vidioc_g_parm(void) { return VIDIOC_G_PARM; }
unsigned long cv4l2_vidioc_s_parm(void) { return VIDIOC_S_PARM; }
unsigned long cv4l2_vidioc_reqbufs(void) { return VIDIOC_REQBUFS; }
unsigned long cv4l2_vidioc_querybuf(void) { return VIDIOC_QUERYBUF; }
unsigned long cv4l2_vidioc_qbuf(void) { return VIDIOC_QBUF; }
unsigned long cv4l2_vidioc_dqbuf(void) { return VIDIOC_DQBUF; }
unsigned long cv4l2_vidioc_streamon(void) { return VIDIOC_STREAMON; }
unsigned long cv4l2_vidioc_streamoff(void) { return VIDIOC_STREAMOFF; }
uint32_t cv4l2_pix_fmt_yuv420(void) { return V4L2_PIX_FMT_YUV420; }
uint32_t cv4l2_pix_fmt_yuyv(void) { return V4L2_PIX_FMT_YUYV; }
uint32_t cv4l2_pix_fmt_mjpeg(void) { return V4L2_PIX_FMT_MJPEG; }

void *cv4l2_converter_create(int fd) { return v4lconvert_create(fd); }
void cv4l2_converter_destroy(void *converter) { v4lconvert_destroy(converter); }

int cv4l2_convert_to_yu12(void *converter, uint32_t source_fourcc, uint32_t width, uint32_t height,
                          uint32_t bytes_per_line, uint32_t size_image,
                          const unsigned char *source, int source_size, unsigned char *destination, int destination_size) {
    struct v4l2_format from, to;
    memset(&from, 0, sizeof from);
    from.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    from.fmt.pix.width = width;
    from.fmt.pix.height = height;
    from.fmt.pix.pixelformat = source_fourcc;
    from.fmt.pix.field = V4L2_FIELD_NONE;
    from.fmt.pix.bytesperline = bytes_per_line;
    from.fmt.pix.sizeimage = size_image;
    to = from;
    to.fmt.pix.pixelformat = V4L2_PIX_FMT_YUV420;
    to.fmt.pix.bytesperline = width;
    to.fmt.pix.sizeimage = width * height * 3 / 2;
    // libv4lconvert takes a non-const source pointer but only reads it.
    return v4lconvert_convert(converter, &from, &to, (unsigned char *)source, source_size, destination, destination_size);
}

const char *cv4l2_converter_error(void *converter) { return v4lconvert_get_error_message(converter); }
