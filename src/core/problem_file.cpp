// Problem files: one problem per line, '#' comments, optional leading `name:` tag.
#include <fstream>
#include <sstream>

#include "tilepick/error.hpp"
#include "tilepick/problem.hpp"

namespace tilepick {

std::vector<NamedProblem> parse_problem_list(std::string_view text, const std::string& source) {
  std::vector<NamedProblem> out;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    NamedProblem np{"", GemmProblem{}, line_no};
    auto ws = line.find_first_of(" \t");
    if (ws != std::string_view::npos && ws > 1 && line[ws - 1] == ':') {
      np.name = std::string(line.substr(0, ws - 1));
      line = line.substr(ws + 1);
    }
    try {
      np.problem = parse_problem(line);
    } catch (const Error& e) {
      std::string where = source + ":" + std::to_string(line_no) + ": ";
      if (auto* pe = dynamic_cast<const ParseError*>(&e)) throw ParseError(pe->token(), where + e.what());
      throw Error(e.status(), where + e.what());
    }
    out.push_back(std::move(np));
  }
  return out;
}

std::vector<NamedProblem> load_problem_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound("cannot open problem file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_problem_list(ss.str(), path);
}

}  // namespace tilepick

#include <nlohmann/json.hpp>

namespace tilepick {

std::string to_json_text(const Problem& p) {
  nlohmann::json j;
  j["problem"] = to_string(p);
  j["op"] = op_name(p);
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    j.update({{"m", g->m}, {"n", g->n}, {"k", g->k}, {"batch", g->batch}, {"layout", g->layout_string()},
              {"a", to_string(g->a)}, {"b", to_string(g->b)}, {"c", to_string(g->c)}, {"acc", to_string(g->acc)},
              {"alpha", g->alpha}, {"beta", g->beta}, {"bias", g->epilogue.bias},
              {"act", to_string(g->epilogue.act)}, {"scale", g->scale == GemmScale::block ? "block" : "tensor"},
              {"flops", g->flops()}, {"min_bytes", g->min_bytes()}});
  } else {
    const auto& c = std::get<ConvProblem>(p);
    auto v = c.gemm();
    j.update({{"dir", to_string(c.dir)}, {"ndim", c.ndim}, {"mb", c.n}, {"g", c.g}, {"ic", c.c}, {"oc", c.k},
              {"in", c.in}, {"filter", c.filter}, {"stride", c.stride}, {"pad", c.pad}, {"dilation", c.dilation},
              {"out", c.out()}, {"x", to_string(c.x)}, {"w", to_string(c.w)}, {"y", to_string(c.y)},
              {"bias", c.epilogue.bias}, {"act", to_string(c.epilogue.act)}, {"depthwise", c.depthwise()},
              {"gemm", {v.m, v.n, v.k, v.batch}}, {"flops", c.flops()}, {"min_bytes", c.min_bytes()}});
  }
  return j.dump();
}

}  // namespace tilepick
