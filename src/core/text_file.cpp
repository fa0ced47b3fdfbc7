#include "core/text_file.hpp"

#include <zlib.h>

#include "tilepick/error.hpp"

namespace tilepick {

std::string read_text_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw NotFound("cannot open " + what + " '" + path + "'");
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      gzclose(f);
      throw Error(Status::io_error, "cannot read " + what + " '" + path + "': more than " +
                                        std::to_string(max_bytes >> 20) + " MiB of text (not a " + what + "?)");
    }
  }
  int err = 0;
  const std::string why = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) throw Error(Status::io_error, "cannot read " + what + " '" + path + "': " + why);
  return text;
}

}  // namespace tilepick
