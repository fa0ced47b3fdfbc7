// Config spaces: the shipped spaces, JSON errors, value expansion, enumeration and extra filters.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/space.hpp"

#include "test_util.hpp"

using namespace tilepick;
using nlohmann::json;

#define EXPECT_HAS(haystack, needle) EXPECT_PRED_FORMAT2(::testing::IsSubstring, needle, haystack)

namespace {

// A small valid gemm space; tests modify a copy.
json base_space() {
  return json{{"name", "t"},
              {"ops", {"gemm"}},
              {"archs", {"sm_80"}},
              {"fields", {{"fam", {"sm80"}}, {"tile_m", {64, 128}}, {"stages", {{"range", {2, 4}}}}}},
              {"filters", {"tile_m * tile_n <= 128 * 128"}}};
}

ConfigSpace parse(const json& j) { return parse_space(j.dump(), "t.json"); }

// The ParseError that parse_space(text) throws; its message must name the file.
ParseError space_error(const std::string& text) {
  try {
    parse_space(text, "t.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const ParseError& e) {
    EXPECT_HAS(e.what(), "t.json");
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ParseError, got: " << e.what();
  }
  return ParseError("<none>", "<none>");
}
ParseError space_error(const json& j) { return space_error(j.dump()); }

std::vector<expr::Expr> filters(std::initializer_list<const char*> texts) {
  std::vector<expr::Expr> out;
  for (auto t : texts) out.push_back(expr::Expr::parse(t));
  return out;
}

}  // namespace

TEST(SpaceDefault, AllLoadAndEnumerateCleanly) {
  const auto& spaces = default_spaces();
  std::vector<std::string> names;
  for (const auto& s : spaces) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv_dw", "conv_sm80", "gemm_sm80", "gemm_sm90", "gemm_sm90_tf32"}));
  for (const auto& s : spaces) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(s.hash.size(), 16u);
    EXPECT_FALSE(s.ops.empty());
    EXPECT_FALSE(s.archs.empty());
    auto a = s.enumerate(), b = s.enumerate();
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, b) << "enumeration must be deterministic";
    EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
    EXPECT_EQ(std::adjacent_find(a.begin(), a.end()), a.end()) << "duplicates";
    for (const auto& c : a) {
      ASSERT_FALSE(config_error(c)) << to_string(c) << ": " << *config_error(c);
      ASSERT_TRUE(passes(c, s.filters)) << to_string(c);
    }
  }
}

TEST(SpaceDefault, EnumeratedValuesComeFromTheAxes) {
  for (const auto& s : default_spaces()) {
    for (const auto& c : s.enumerate())
      for (const auto& axis : s.axes) {
        bool found = false;
        for (const auto& v : axis.values) {
          bool eq = true;
          for (int i = 0; i < (axis.component < 0 ? axis.field->arity : 1); ++i)
            eq = eq && c.*axis.field->slots[axis.component < 0 ? i : axis.component] == v[i];
          found = found || eq;
        }
        ASSERT_TRUE(found) << s.name << ": " << to_string(c);
      }
  }
}

TEST(SpaceDefault, LoadSpaceMatchesDefaults) {
  auto s = load_space(env::data_dir() + "/spaces/gemm_sm80.json");
  EXPECT_EQ(s.name, "gemm_sm80");
  EXPECT_EQ(s.hash, find_space("gemm_sm80").hash);
  EXPECT_EQ(s.enumerate(), find_space("gemm_sm80").enumerate());
  EXPECT_TRUE(s.has_op("gemm"));
  EXPECT_FALSE(s.has_op("conv_fwd"));
  EXPECT_TRUE(s.has_arch("sm_90"));
  EXPECT_FALSE(s.has_arch("sm_70"));
}

TEST(SpaceFind, ByNameAndNotFound) {
  EXPECT_EQ(find_space("conv_dw").name, "conv_dw");
  try {
    find_space("conv_sm100");
    FAIL() << "no throw";
  } catch (const NotFound& e) {
    EXPECT_HAS(e.what(), "conv_sm100");
    EXPECT_HAS(e.what(), "conv_dw, conv_sm80, gemm_sm80");
  }
  EXPECT_THROW(find_space("/nonexistent/space.json"), NotFound);
  EXPECT_THROW(load_spaces("/nonexistent_dir"), NotFound);
}

TEST(SpaceParse, BaseSpaceEnumeratesTheProduct) {
  auto s = parse(base_space());
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.path, "t.json");
  EXPECT_EQ(s.enumerate().size(), 2u * 3u);
  EXPECT_EQ(s.hash, parse(base_space()).hash);
  json j = base_space();
  j["help"] = "changed";
  EXPECT_NE(parse(j).hash, s.hash) << "hash covers the whole JSON";
}

TEST(SpaceParse, InvalidJson) {
  auto e = space_error(std::string("{\"name\": "));
  EXPECT_HAS(e.what(), "invalid JSON");
  EXPECT_HAS(space_error(std::string("[1, 2]")).what(), "must be a JSON object");
}

TEST(SpaceParse, UnknownTopLevelKey) {
  json j = base_space();
  j["colour"] = "red";
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "colour");
  EXPECT_HAS(e.what(), "unknown key 'colour'");
}

TEST(SpaceParse, MissingOrBadRequiredKeys) {
  json j = base_space();
  j.erase("name");
  EXPECT_HAS(space_error(j).what(), "'name'");
  j = base_space();
  j["ops"] = json::array();
  EXPECT_HAS(space_error(j).what(), "'ops' must be a non-empty list");
  j = base_space();
  j.erase("fields");
  EXPECT_HAS(space_error(j).what(), "'fields' must be an object");
}

TEST(SpaceParse, UnknownOpAndArch) {
  json j = base_space();
  j["ops"] = {"gemm", "conv"};
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "conv");
  EXPECT_HAS(e.what(), "unknown value 'conv'");
  j = base_space();
  j["archs"] = {"sm_70"};
  e = space_error(j);
  EXPECT_EQ(e.token(), "sm_70");
  EXPECT_HAS(e.what(), "'archs': unknown value 'sm_70'");
}

TEST(SpaceParse, UnknownField) {
  json j = base_space();
  j["fields"]["tile_q"] = {32};
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "tile_q");
  EXPECT_HAS(e.what(), "unknown field 'tile_q'");
  j = base_space();
  j["fields"]["dw_ppt"] = {1};  // single-component fields are listed by field name (ppt)
  EXPECT_HAS(space_error(j).what(), "'dw_ppt'");
}

TEST(SpaceParse, BadRange) {
  json j = base_space();
  j["fields"]["stages"] = {{"range", {6, 2}}};
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "stages");
  EXPECT_HAS(e.what(), "field 'stages': empty or unreasonable range");
  j["fields"]["stages"] = {{"range", {2}}};
  EXPECT_HAS(space_error(j).what(), "range needs [lo, hi]");
  j["fields"]["stages"] = {{"range", {2, 6, 0}}};
  EXPECT_HAS(space_error(j).what(), "unreasonable range");
  j["fields"]["stages"] = {{"pow2", {0, 4}}};
  EXPECT_HAS(space_error(j).what(), "unreasonable range");
  j["fields"]["stages"] = {{"step", {2, 4}}};
  EXPECT_HAS(space_error(j).what(), "field 'stages': expected a list");
  j["fields"]["stages"] = json::array();
  EXPECT_HAS(space_error(j).what(), "field 'stages': no values");
  j["fields"]["stages"] = {2.5};
  EXPECT_HAS(space_error(j).what(), "values must be integers or strings");
}

TEST(SpaceParse, ValueOutsideDomain) {
  json j = base_space();
  j["fields"]["tile_m"] = {64, 512};
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "tile_m");
  EXPECT_HAS(e.what(), "field 'tile_m'");
  EXPECT_HAS(e.what(), "'512'");
  j = base_space();
  j["fields"]["tile_m"] = {80};
  EXPECT_HAS(space_error(j).what(), "'80'");
  j = base_space();
  j["fields"]["skmode"] = {"serial", "atomic"};
  EXPECT_HAS(space_error(j).what(), "'atomic'");
  j = base_space();
  j["fields"]["warps"] = {"2x2x2"};
  EXPECT_HAS(space_error(j).what(), "field 'warps'");
}

TEST(SpaceParse, BadFilterSyntax) {
  json j = base_space();
  j["filters"] = {"tile_m >"};
  auto e = space_error(j);
  EXPECT_HAS(e.what(), "tile_m >");
  j["filters"] = {"tile_m < 3 < 4"};
  EXPECT_HAS(space_error(j).what(), "tile_m < 3 < 4");
  j["filters"] = "tile_m > 3";
  EXPECT_HAS(space_error(j).what(), "'filters' must be a list");
}

TEST(SpaceParse, FilterWithUnknownVariable) {
  json j = base_space();
  j["filters"] = {"tile_q > 16"};
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "tile_q");
  EXPECT_HAS(e.what(), "unknown variable 'tile_q'");
  EXPECT_HAS(e.what(), "tile_q > 16");
}

TEST(SpaceParse, FilterTypeErrorIsAParseErrorNamingTheFile) {
  json j = base_space();
  j["filters"] = {"tile_m == parallel"};
  auto e = space_error(j);
  EXPECT_HAS(e.what(), "tile_m == parallel");
}

TEST(SpaceParse, FieldNotApplyingToListedFamily) {
  json j = base_space();
  j["fields"] = {{"fam", {"dw"}}, {"tile_m", {64}}};
  j["filters"] = json::array();
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "tile");
  EXPECT_HAS(e.what(), "field 'tile' does not apply to family dw");
  j["fields"] = {{"fam", {"sm80"}}, {"cluster", {"2x1"}}};
  EXPECT_HAS(space_error(j).what(), "field 'cluster' does not apply to family sm80");
  j["fields"] = {{"cpt", {2}}};  // no fam: sm80
  EXPECT_HAS(space_error(j).what(), "field 'cpt' does not apply to family sm80");
}

TEST(SpaceParse, OverlappingFieldAndComponentKeys) {
  json j = base_space();
  j["fields"] = {{"fam", {"sm80"}}, {"warps", {"2x2"}}, {"warps_m", {1}}};
  j["filters"] = json::array();
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "warps_m");
  EXPECT_HAS(e.what(), "overlap");
}

TEST(SpaceParse, SpaceEnumeratingNothing) {
  json j = base_space();
  j["filters"] = {"tile_m > 256"};
  auto e = space_error(j);
  EXPECT_EQ(e.token(), "fields");
  EXPECT_HAS(e.what(), "space 't' enumerates no valid config");
  j = base_space();
  j["fields"]["skmode"] = {"parallel"};  // parallel needs splitk > 1: every config invalid
  EXPECT_HAS(space_error(j).what(), "enumerates no valid config");
}

TEST(SpaceValues, RangePow2AndStepCounts) {
  json j = base_space();
  j["filters"] = json::array();
  j["fields"] = {{"tile_m", {{"pow2", {16, 256}}}}, {"stages", {{"range", {2, 8, 3}}}}, {"splitk", {{"range", {1, 4}}}}};
  auto s = parse(j);
  ASSERT_EQ(s.axes.size(), 3u);
  std::vector<int> tile_m, stages, splitk;
  for (const auto& a : s.axes) {
    auto* dst = a.field->name == "tile" ? &tile_m : a.field->name == "stages" ? &stages : &splitk;
    for (const auto& v : a.values) dst->push_back(v[0]);
  }
  EXPECT_EQ(tile_m, (std::vector<int>{16, 32, 64, 128, 256}));
  EXPECT_EQ(stages, (std::vector<int>{2, 5, 8}));
  EXPECT_EQ(splitk, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(s.enumerate().size(), 5u * 3u * 4u);
  // Axes follow the field table, not JSON order: tile before stages before splitk.
  EXPECT_EQ(s.axes[0].field->name, "tile");
  EXPECT_EQ(s.axes[0].component, 0);
  EXPECT_EQ(s.axes[2].field->name, "splitk");
}

TEST(SpaceValues, InvalidCombinationsAreDropped) {
  json j = base_space();
  j["filters"] = json::array();
  j["fields"] = {{"splitk", {1, 2}}, {"skmode", {"serial", "parallel"}}};
  auto all = parse(j).enumerate();
  EXPECT_EQ(all.size(), 3u) << "skmode=parallel with splitk=1 is not a config";
  for (const auto& c : all) EXPECT_FALSE(c.splitk == 1 && c.splitk_mode == 1);
}

TEST(SpaceValues, ComponentKeysEqualWholeFieldKeys) {
  json a = base_space(), b = base_space();
  a["filters"] = b["filters"] = json::array();
  a["fields"] = {{"tile_m", {64, 128}}, {"tile_n", {64, 256}}, {"tile_k", {32}}, {"warps_m", {2}}, {"warps_n", {4}}};
  b["fields"] = {{"tile", {"64x64x32", "64x256x32", "128x64x32", "128x256x32"}}, {"warps", {"2x4"}}};
  auto ea = parse(a).enumerate(), eb = parse(b).enumerate();
  EXPECT_EQ(ea.size(), 4u);
  EXPECT_EQ(ea, eb);
  for (const auto& c : ea) EXPECT_EQ(c.warps_n, 4);
}

TEST(SpaceEnumerate, ExtraFiltersNarrow) {
  const auto& s = find_space("gemm_sm80");
  auto all = s.enumerate();
  auto some = s.enumerate(filters({"tile_m == 128", "stages <= 3"}));
  ASSERT_FALSE(some.empty());
  EXPECT_LT(some.size(), all.size());
  auto expect = static_cast<std::size_t>(
      std::count_if(all.begin(), all.end(), [](auto& c) { return c.tile_m == 128 && c.stages <= 3; }));
  EXPECT_EQ(some.size(), expect);
  for (const auto& c : some) EXPECT_TRUE(std::binary_search(all.begin(), all.end(), c));
  EXPECT_EQ(s.enumerate(filters({"skmode == parallel"})).size(),
            static_cast<std::size_t>(std::count_if(all.begin(), all.end(), [](auto& c) { return c.splitk_mode == 1; })));
  EXPECT_TRUE(s.enumerate(filters({"tile_m > 1000"})).empty());
}

TEST(SpaceEnumerate, UnknownVariableInExtraFilterThrows) {
  const auto& s = find_space("gemm_sm80");
  try {
    s.enumerate(filters({"tile_q > 16"}));
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::parse_error);
    EXPECT_HAS(e.what(), "tile_q");
    EXPECT_HAS(e.what(), "gemm_sm80");
  }
}

// A filter on a field the config's family does not have does not match it: no hidden default
// (sm80's cluster 1x1, dw_ppt 1) is read as if the family had the field.
TEST(SpaceFilter, AFieldTheFamilyLacksDoesNotMatch) {
  const KernelConfig sm80 = parse_config("fam=sm80 tile=128x128x32 warps=2x2 stages=3");
  const KernelConfig sm90 = parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=3 cluster=2x1");
  const KernelConfig dw = parse_config("fam=dw dwtile=4x8x32 ppt=2 cpt=8");
  for (const char* text : {"cluster_m == 1", "cluster_m >= 1", "!(cluster_m == 2)"}) {
    const std::vector<expr::Expr> f{parse_config_filter(text)};
    EXPECT_FALSE(passes(sm80, f)) << text;
    EXPECT_FALSE(passes(dw, f)) << text;
  }
  EXPECT_TRUE(passes(sm90, {parse_config_filter("cluster_m == 2")}));
  EXPECT_FALSE(passes(sm80, {parse_config_filter("dw_ppt == 1")}));
  EXPECT_TRUE(passes(dw, {parse_config_filter("dw_ppt == 2")}));
  EXPECT_TRUE(passes(sm80, {parse_config_filter("threads == 128 && skmode == serial")}));  // derived, enum names
  EXPECT_FALSE(config_var_applies(sm80, "cluster_n"));
  EXPECT_TRUE(config_var_applies(sm90, "cluster_n"));
  EXPECT_TRUE(config_var_applies(sm80, "warp_tile_m"));
}
