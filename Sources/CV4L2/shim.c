#include "CV4L2.h"
#include <libv4l2.h>
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
