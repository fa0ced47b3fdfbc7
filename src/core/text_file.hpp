// Reading a whole text file that may be gzip-compressed (models, pair lists).
#pragma once

#include <cstddef>
#include <string>

namespace tilepick {

// The contents of `path`, inflated when it is gzip (zlib reads plain files as they are). Throws
// NotFound "cannot open <what> '<path>'" when it cannot be opened, Error(io_error) on a corrupt stream
// or past `max_bytes` of text (a wrong path such as /dev/zero must not eat the memory; the largest
// shipped model is 9 MB).
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{256} << 20;
std::string read_text_file(const std::string& path, const std::string& what, std::size_t max_bytes = kMaxTextFileBytes);

}  // namespace tilepick
