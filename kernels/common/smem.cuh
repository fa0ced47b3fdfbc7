// Swizzled shared-memory tiles. A tile is ROWS x COLS elements with COLS contiguous, stored as
// 16-byte chunks; chunk (row, c) is placed so that any 8 rows read at one chunk column (ldmatrix,
// plain or .trans) and any 8 consecutive chunks written (cp.async) hit 8 distinct bank groups.
//   rows of >= 128 bytes: chunk c of row r goes to c ^ (r % 8) within its 128-byte group;
//   narrower rows:        the tile is read as 128-byte lines of 8 chunks; chunk L goes to L ^ (line % 8).
#pragma once
#include "common/types.cuh"

namespace tp {

template <int CPR>  // 16-byte chunks per row
__device__ __forceinline__ int swizzle_chunk(int row, int chunk) {
  if (CPR >= 8) return row * CPR + (chunk ^ (row & 7));
  const int l = row * CPR + chunk;
  return l ^ ((l >> 3) & 7);
}

// Byte offset of element (row, col) in a swizzled ROWS x COLS tile of E-byte elements.
template <int COLS, int E>
__device__ __forceinline__ int tile_offset(int row, int col) {
  const int b = col * E;
  return swizzle_chunk<COLS * E / 16>(row, b >> 4) * 16 + (b & 15);
}

}  // namespace tp
