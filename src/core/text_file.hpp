// Reading a whole text file that may be gzip-compressed (models, pair lists).
#pragma once

#include <string>

namespace tilepick {

// The contents of `path`, inflated when it is gzip (zlib reads plain files as they are). Throws
// NotFound "cannot open <what> '<path>'" when it cannot be opened, Error(io_error) on a corrupt stream.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace tilepick
