// Shared by the compute shaders: grid-stride loops (dispatches cap the group count, so every
// elementwise shader walks its whole range) and strided index maps over up to 6 dims.
#define GRID_STRIDE(i, n) \
  for (uint i = gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// The flat index of element `i` (row-major over dims[0..rank)) in a tensor with `strides`.
#define STRIDED_INDEX(result, i, rank, dims, strides) \
  {                                                   \
    uint rem_ = (i);                                  \
    int off_ = 0;                                     \
    for (int d_ = int(rank) - 1; d_ >= 0; --d_) {     \
      uint q_ = rem_ / dims[d_];                      \
      off_ += int(rem_ - q_ * dims[d_]) * int(strides[d_]); \
      rem_ = q_;                                      \
    }                                                 \
    result = off_;                                    \
  }
