// tilepick gbdt (hidden): evaluate a LightGBM text model on CSV rows, for parity tests and debugging.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "tilepick/gbdt.hpp"

namespace tilepick::cli {
namespace {

struct GbdtArgs {
  std::string model, data, out, form = "auto";
};

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  for (char ch : line) {
    if (ch == ',') out.emplace_back();
    else if (ch != '\r' && ch != '"') out.back() += ch;
  }
  return out;
}

// Empty cells, "nan" and "NaN" are missing values.
double cell(const std::string& s, const std::string& path, int line) {
  if (s.empty() || s == "nan" || s == "NaN") return std::nan("");
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    throw ParseError(s, path + ":" + std::to_string(line) + ": '" + s + "' is not a number");
  return v;
}

void predict(const GbdtArgs& a) {
  const GbdtModel model = GbdtModel::load(a.model);
  std::ifstream in(a.data);
  if (!in) throw NotFound("cannot open data '" + a.data + "'");
  std::string line;
  if (!std::getline(in, line)) throw ParseError("", a.data + ": empty file (expected a header of feature names)");
  model.check_feature_names(split_csv(line));
  std::vector<double> rows;
  std::size_t n = 0;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    auto cells = split_csv(line);
    if (cells.size() != model.num_features())
      throw ParseError(line, a.data + ":" + std::to_string(number) + ": " + std::to_string(cells.size()) +
                                 " cells, expected " + std::to_string(model.num_features()));
    for (const auto& c : cells) rows.push_back(cell(c, a.data, number));
    ++n;
  }
  std::vector<double> scores(n);
  const GbdtModel::EvalForm form = a.form == "values"  ? GbdtModel::EvalForm::values
                                   : a.form == "ranks" ? GbdtModel::EvalForm::ranks
                                                       : GbdtModel::EvalForm::automatic;
  if (form == GbdtModel::EvalForm::ranks && !model.has_rank_form())
    throw Unsupported("--form ranks: " + a.model +
                      " has no rank form (a categorical or zero-missing split, a column with over 255 thresholds "
                      "or a tree over 255 nodes)");
  model.predict(rows.data(), n, model.num_features(), scores.data(), form);
  std::FILE* f = std::fopen(a.out.c_str(), "w");
  if (!f) throw Error(Status::io_error, "cannot write '" + a.out + "'");
  for (double s : scores) std::fprintf(f, "%.17g\n", s);
  if (std::fclose(f) != 0) throw Error(Status::io_error, "cannot write '" + a.out + "'");
}

void info(const GbdtArgs& a) {
  const GbdtModel model = GbdtModel::load(a.model);
  std::cout << "objective: " << model.objective() << "\ntrees:     " << model.num_trees()
            << "\nfeatures:  " << model.num_features() << "\n";
}

}  // namespace

void add_gbdt_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("gbdt", "LightGBM text-model evaluator (debugging)");
  cmd->group("");  // hidden from --help
  cmd->require_subcommand(1);
  auto args = std::make_shared<GbdtArgs>();
  auto* p = cmd->add_subcommand("predict", "raw scores of CSV rows (header = the model's feature names)");
  p->add_option("--model", args->model, "model .txt or .txt.gz")->required();
  p->add_option("--data", args->data, "CSV with a header row")->required();
  p->add_option("--out", args->out, "one score per line (%.17g)")->required();
  p->add_option("--form", args->form, "evaluation form: auto, values (double compares) or ranks (byte compares)")
      ->check(CLI::IsMember({"auto", "values", "ranks"}))
      ->capture_default_str();
  p->callback([args] { predict(*args); });
  auto* i = cmd->add_subcommand("info", "objective, tree and feature counts of a model");
  i->add_option("--model", args->model, "model .txt or .txt.gz")->required();
  i->callback([args] { info(*args); });
}

}  // namespace tilepick::cli
