#ifndef NKIGRAPH_INTERP_STRIDED_COPY_H_
#define NKIGRAPH_INTERP_STRIDED_COPY_H_

// Copying elements between strided places in memory, by element size:
// the interpreter's raw reads and writes of operands that are not
// contiguous.

#include <cstdint>
#include <cstring>

namespace nkigraph::interp {

// Copies `count` elements of `esize` bytes from src (every src_stride
// bytes) to dst (every dst_stride bytes): fixed-size moves, not a memcpy
// call per element.
template <typename T>
inline void CopyStridedAs(uint8_t* dst, int64_t dst_stride, const uint8_t* src,
                          int64_t src_stride, int64_t count) {
  for (int64_t k = 0; k < count; ++k) {
    T v;
    std::memcpy(&v, src + k * src_stride, sizeof(T));
    std::memcpy(dst + k * dst_stride, &v, sizeof(T));
  }
}

inline void CopyStrided(uint8_t* dst, int64_t dst_stride, const uint8_t* src,
                        int64_t src_stride, int64_t count, int64_t esize) {
  switch (esize) {
    case 4:
      return CopyStridedAs<uint32_t>(dst, dst_stride, src, src_stride, count);
    case 2:
      return CopyStridedAs<uint16_t>(dst, dst_stride, src, src_stride, count);
    case 1:
      return CopyStridedAs<uint8_t>(dst, dst_stride, src, src_stride, count);
    default:
      for (int64_t k = 0; k < count; ++k) {
        std::memcpy(dst + k * dst_stride, src + k * src_stride, esize);
      }
  }
}

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_STRIDED_COPY_H_
