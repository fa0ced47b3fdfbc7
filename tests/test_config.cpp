// Kernel configs: canonical string round trip, hashing, JSON, malformed strings, golden names.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tilepick/config.hpp"
#include "tilepick/error.hpp"
#include "tilepick/space.hpp"

#include "test_util.hpp"

using namespace tilepick;

#define EXPECT_HAS(haystack, needle) EXPECT_PRED_FORMAT2(::testing::IsSubstring, needle, haystack)

namespace {

// The ParseError that parse_config(text) throws (fails the test when it does not throw).
ParseError parse_error_of(const std::string& text) {
  try {
    KernelConfig c = parse_config(text);
    ADD_FAILURE() << "'" << text << "' parsed as '" << to_string(c) << "', expected a ParseError";
  } catch (const ParseError& e) {
    return e;
  }
  return ParseError("<none>", "<no error>");
}

// The field's integer domain (powers of two, or any integer); 0 (auto) is left out.
std::vector<int> domain_values(const FieldDesc& f) {
  std::vector<int> v;
  for (int x = std::max(f.min, 1); x <= f.max; ++x)
    if (in_domain(f, x)) v.push_back(x);
  return v;
}

// A random valid config: random family, random domain value for every field that applies.
KernelConfig random_config(std::mt19937& rng) {
  KernelConfig c;
  c.family = static_cast<int>(rng() % 3);
  for (const auto& f : config_fields()) {
    if (f.name == "fam" || !applies(f, c.fam())) continue;
    if (f.name == "align" && rng() % 3 == 0) continue;  // keep auto
    for (int i = 0; i < f.arity; ++i) {
      if (f.kind == FieldKind::enumeration) {
        c.*f.slots[i] = static_cast<int>(rng() % f.enum_names.size());
      } else {
        auto vals = domain_values(f);
        c.*f.slots[i] = vals[rng() % vals.size()];
      }
    }
  }
  if (c.splitk == 1) c.splitk_mode = 0;  // parallel needs splitk > 1
  return c;
}

KernelConfig make(std::initializer_list<std::pair<int KernelConfig::*, int>> sets) {
  KernelConfig c;
  for (auto [m, v] : sets) c.*m = v;
  return c;
}

// Hand-picked configs of the golden file, built field by field (not parsed).
std::vector<KernelConfig> golden_configs() {
  using K = KernelConfig;
  return {
      KernelConfig{},  // sm80 defaults, align=auto
      make({{&K::tile_m, 256}, {&K::tile_k, 64}, {&K::warps_m, 4}, {&K::stages, 4}, {&K::splitk, 4},
            {&K::splitk_mode, 1}, {&K::raster, 1}, {&K::swizzle, 8}, {&K::align_a, 8}, {&K::align_b, 8},
            {&K::align_c, 4}, {&K::epi, 1}}),
      make({{&K::family, 1}, {&K::tile_n, 256}, {&K::tile_k, 64}, {&K::stages, 4}, {&K::cluster_m, 2}, {&K::epi, 1}}),
      make({{&K::family, 1}, {&K::tile_m, 64}, {&K::tile_k, 128}, {&K::warps_m, 1}, {&K::warps_n, 4}, {&K::stages, 6},
            {&K::splitk, 16}, {&K::cluster_n, 4}, {&K::align_a, 16}, {&K::align_b, 16}, {&K::align_c, 8}}),
      make({{&K::family, 2}}),  // dw defaults
      make({{&K::family, 2}, {&K::splitk, 8}, {&K::dw_tile_h, 1}, {&K::dw_tile_w, 32}, {&K::dw_tile_c, 64},
            {&K::dw_ppt, 4}, {&K::dw_cpt, 8}}),
  };
}

}  // namespace

TEST(ConfigRoundTrip, EveryDefaultSpaceConfig) {
  std::size_t n = 0;
  for (const auto& s : default_spaces()) {
    std::set<std::string> hashes;
    auto configs = s.enumerate();
    for (const auto& c : configs) {
      std::string text = to_string(c);
      KernelConfig back = parse_config(text);
      ASSERT_EQ(back, c) << text;
      ASSERT_EQ(to_string(back), text);
      ASSERT_EQ(to_string(c), text) << "to_string must be stable";
      std::string h = config_hash(c);
      ASSERT_EQ(h.size(), 16u);
      ASSERT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
      ASSERT_EQ(config_hash(back), h);
      hashes.insert(h);
      ++n;
    }
    EXPECT_EQ(hashes.size(), configs.size()) << "hash collision within space " << s.name;
  }
  EXPECT_GT(n, 1000u);
}

TEST(ConfigRoundTrip, RandomConfigs) {
  std::mt19937 rng(12345);
  std::set<int> families;
  for (int i = 0; i < 5000; ++i) {
    KernelConfig c = random_config(rng);
    ASSERT_FALSE(config_error(c)) << *config_error(c);
    std::string text = to_string(c);
    ASSERT_EQ(parse_config(text), c) << text;
    ASSERT_EQ(config_from_json(to_json(c)), c) << to_json(c).dump();
    families.insert(c.family);
  }
  EXPECT_EQ(families.size(), 3u);
}

TEST(ConfigRoundTrip, FieldOrderAndWhitespaceDoNotMatter) {
  KernelConfig a = parse_config("fam=sm80 tile=64x128x32 stages=4");
  KernelConfig b = parse_config("  stages=4\ttile=64x128x32   fam=sm80 ");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.tile_m, 64);
  EXPECT_EQ(a.stages, 4);
  EXPECT_EQ(a.warps_m, KernelConfig{}.warps_m) << "missing fields take their defaults";
  EXPECT_EQ(to_string(a), "fam=sm80 tile=64x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 "
                          "align=auto epi=direct");
  EXPECT_EQ(parse_config("align=0x0x0"), parse_config("align=auto"));
  EXPECT_EQ(to_string(parse_config("fam=dw")), "fam=dw splitk=1 dwtile=4x8x32 ppt=1 cpt=2");
}

TEST(ConfigHash, EqualForEqualDifferentOtherwise) {
  KernelConfig a = parse_config("fam=sm80 stages=4"), b = parse_config("stages=4 fam=sm80");
  EXPECT_EQ(config_hash(a), config_hash(b));
  b.stages = 5;
  EXPECT_NE(config_hash(a), config_hash(b));
  // The hash is FNV-1a 64 of the canonical string.
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : to_string(a)) h = (h ^ ch) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  EXPECT_EQ(config_hash(a), buf);
}

TEST(ConfigParse, UnknownField) {
  auto e = parse_error_of("fam=sm80 tiles=128x128x32");
  EXPECT_EQ(e.token(), "tiles=128x128x32");
  EXPECT_HAS(e.what(), "unknown field 'tiles'");
  EXPECT_HAS(e.what(), "fam, tile, warps");  // lists the known fields
}

TEST(ConfigParse, ValueOutsideDomain) {
  auto e = parse_error_of("fam=sm80 tile=512x128x32");
  EXPECT_EQ(e.token(), "tile=512x128x32");
  EXPECT_HAS(e.what(), "'512' is not a valid tile");
  EXPECT_HAS(e.what(), "[16, 256]");
  e = parse_error_of("fam=sm80 stages=17");
  EXPECT_EQ(e.token(), "stages=17");
  EXPECT_HAS(e.what(), "'17'");
  e = parse_error_of("fam=sm80 skmode=atomic");
  EXPECT_HAS(e.what(), "serial|parallel");
  e = parse_error_of("fam=sm70");
  EXPECT_EQ(e.token(), "fam=sm70");
  EXPECT_HAS(e.what(), "sm80|sm90|dw");
  e = parse_error_of("fam=sm80 stages=four");
  EXPECT_HAS(e.what(), "'four'");
  e = parse_error_of("fam=sm80 stages=-1");
  EXPECT_HAS(e.what(), "'-1'");
}

TEST(ConfigParse, NonPowerOfTwo) {
  auto e = parse_error_of("fam=sm80 tile=80x128x32");
  EXPECT_EQ(e.token(), "tile=80x128x32");
  EXPECT_HAS(e.what(), "'80'");
  EXPECT_HAS(e.what(), "powers of two");
  e = parse_error_of("fam=dw cpt=3");
  EXPECT_EQ(e.token(), "cpt=3");
  EXPECT_HAS(e.what(), "powers of two");
  EXPECT_NO_THROW(parse_config("fam=sm80 stages=5")) << "stages need not be a power of two";
}

TEST(ConfigParse, WrongArity) {
  auto e = parse_error_of("tile=128x128");
  EXPECT_EQ(e.token(), "tile=128x128");
  EXPECT_HAS(e.what(), "tile needs 3 value(s)");
  e = parse_error_of("fam=sm80 warps=2x2x2");
  EXPECT_HAS(e.what(), "warps needs 2 value(s)");
  e = parse_error_of("fam=sm80 tile=128x128x");
  EXPECT_HAS(e.what(), "''");
}

TEST(ConfigParse, FieldGivenTwice) {
  auto e = parse_error_of("fam=sm80 stages=4 stages=5");
  EXPECT_EQ(e.token(), "stages=5");
  EXPECT_HAS(e.what(), "given twice");
  e = parse_error_of("fam=sm80 fam=sm80");
  EXPECT_HAS(e.what(), "given twice");
}

TEST(ConfigParse, FieldNotApplyingToFamily) {
  auto e = parse_error_of("fam=sm80 cluster=2x1");
  EXPECT_EQ(e.token(), "cluster=2x1");
  EXPECT_HAS(e.what(), "field 'cluster' does not apply to family sm80");
  e = parse_error_of("fam=dw tile=128x128x32");
  EXPECT_EQ(e.token(), "tile=128x128x32");
  EXPECT_HAS(e.what(), "does not apply to family dw");
  e = parse_error_of("fam=sm90 dwtile=4x8x32");
  EXPECT_HAS(e.what(), "field 'dwtile' does not apply to family sm90");
  e = parse_error_of("cpt=4");  // no fam: sm80
  EXPECT_HAS(e.what(), "does not apply to family sm80");
  // The family is read first, wherever it stands.
  EXPECT_EQ(parse_config("cluster=2x1 fam=sm90").cluster_m, 2);
}

TEST(ConfigParse, MissingEqualsAndEmpty) {
  auto e = parse_error_of("fam=sm80 stages");
  EXPECT_EQ(e.token(), "stages");
  EXPECT_HAS(e.what(), "expected name=value");
  e = parse_error_of("");
  EXPECT_EQ(e.token(), "");
  EXPECT_HAS(e.what(), "empty config string");
  EXPECT_HAS(parse_error_of(" \t\n").what(), "empty config string");
  EXPECT_HAS(parse_error_of("=4").what(), "unknown field ''");
}

TEST(ConfigParse, AlignPartlyAuto) {
  auto e = parse_error_of("fam=sm80 align=8x0x8");
  EXPECT_HAS(e.what(), "auto applies to all three or none");
  EXPECT_HAS(parse_error_of("fam=sm80 align=auto8").what(), "align needs 3 value(s)");
  EXPECT_HAS(parse_error_of("fam=sm80 align=12x8x8").what(), "'12'");
  KernelConfig c = parse_config("fam=sm80 align=8x4x2");
  EXPECT_EQ(c.align_a, 8);
  EXPECT_EQ(c.align_c, 2);
}

TEST(ConfigParse, ParallelSplitKNeedsSplitK) {
  auto e = parse_error_of("fam=sm80 skmode=parallel");
  EXPECT_HAS(e.what(), "skmode=parallel needs splitk > 1");
  EXPECT_NO_THROW(parse_config("fam=sm80 splitk=2 skmode=parallel"));
}

TEST(ConfigValidate, CodeBuiltConfigs) {
  KernelConfig c;
  EXPECT_FALSE(config_error(c));
  c.tile_m = 80;
  ASSERT_TRUE(config_error(c));
  EXPECT_HAS(*config_error(c), "tile_m=80");
  EXPECT_THROW(validate(c), ParseError);
  c = KernelConfig{};
  c.family = 2;
  c.tile_m = 64;  // not a dw field: must stay at its default
  EXPECT_HAS(config_error(c).value_or(""), "'tile' does not apply to family dw");
  c = KernelConfig{};
  c.family = 4;  // one past fam=grp
  EXPECT_HAS(config_error(c).value_or(""), "family index 4");
}

TEST(ConfigValidate, OutOfRangeEnumIsReportedSafely) {
  KernelConfig c;
  c.raster = 5;
  try {
    validate(c);
    FAIL() << "no throw";
  } catch (const ParseError& e) {
    EXPECT_HAS(e.what(), "raster=5");
    EXPECT_EQ(std::string(e.token()).find("raster=sm"), std::string::npos) << e.token();
  }
  c = KernelConfig{};
  c.epi = -3;
  EXPECT_THROW(validate(c), ParseError);
}

TEST(ConfigVars, EveryComponentAndDerived) {
  KernelConfig c = parse_config("fam=sm80 tile=128x64x32 warps=4x1 skmode=serial");
  for (const auto& f : config_fields())
    for (int i = 0; i < f.arity; ++i) EXPECT_TRUE(config_var(c, f.vars[i])) << f.vars[i];
  EXPECT_EQ(std::get<std::int64_t>(*config_var(c, "tile_n")), 64);
  EXPECT_EQ(std::get<std::string>(*config_var(c, "skmode")), "serial");
  EXPECT_EQ(std::get<std::int64_t>(*config_var(c, "threads")), 128);
  EXPECT_EQ(std::get<std::int64_t>(*config_var(c, "warps")), 4);
  EXPECT_EQ(std::get<std::int64_t>(*config_var(c, "warp_tile_m")), 32);
  EXPECT_EQ(std::get<std::int64_t>(*config_var(c, "warp_tile_n")), 64);
  EXPECT_FALSE(config_var(c, "nope"));
  KernelConfig d = parse_config("fam=dw dwtile=2x16x32 ppt=2 cpt=4");
  EXPECT_EQ(threads_per_block(d), (2 * 16 / 2) * (32 / 4));
}

TEST(ConfigVars, ThreadsCoverTheDepthwiseFamily) {
  KernelConfig d = parse_config("fam=dw dwtile=2x16x32 ppt=2 cpt=4");
  ASSERT_TRUE(config_var(d, "threads"));
  EXPECT_EQ(std::get<std::int64_t>(*config_var(d, "threads")), 128);
  EXPECT_FALSE(config_var(d, "dw_threads"));
}

TEST(ConfigJson, ShapeAndRoundTrip) {
  KernelConfig c = parse_config("fam=sm90 tile=128x256x64 cluster=2x1 align=8x8x4 epi=smem");
  nlohmann::json j = to_json(c);
  EXPECT_EQ(j["fam"], "sm90");
  EXPECT_EQ(j["tile"], nlohmann::json::array({128, 256, 64}));
  EXPECT_EQ(j["cluster"], nlohmann::json::array({2, 1}));
  EXPECT_EQ(j["align"], nlohmann::json::array({8, 8, 4}));
  EXPECT_EQ(j["stages"], 3);
  EXPECT_EQ(j["epi"], "smem");
  EXPECT_FALSE(j.contains("dwtile"));
  EXPECT_EQ(config_from_json(j), c);
  EXPECT_EQ(to_json(KernelConfig{})["align"], "auto");
  KernelConfig d = parse_config("fam=dw dwtile=1x32x64 cpt=8");
  nlohmann::json jd = to_json(d);
  EXPECT_FALSE(jd.contains("tile"));
  EXPECT_FALSE(jd.contains("align"));
  EXPECT_EQ(config_from_json(jd), d);
  // Round trip through JSON text too.
  EXPECT_EQ(config_from_json(nlohmann::json::parse(j.dump())), c);
}

TEST(ConfigJson, Errors) {
  EXPECT_THROW(config_from_json(nlohmann::json::array({1, 2})), ParseError);
  try {
    config_from_json(nlohmann::json{{"fam", "sm80"}, {"tile", {128, 128}}});
    FAIL() << "no throw";
  } catch (const ParseError& e) {
    EXPECT_HAS(e.what(), "tile needs 3 value(s)");
  }
  EXPECT_THROW(config_from_json(nlohmann::json{{"fam", "sm80"}, {"stages", 4.5}}), ParseError);
  EXPECT_THROW(config_from_json(nlohmann::json{{"fam", "sm80"}, {"tile", {128, 128, "32"}}}), ParseError);
}

TEST(ConfigJson, ValueCannotInjectFields) {
  EXPECT_THROW(config_from_json(nlohmann::json{{"fam", "sm80 stages=5"}}), ParseError);
}

TEST(ConfigGolden, CanonicalNamesAndHashes) {
  std::ifstream in(std::string(TILEPICK_TEST_GOLDEN_DIR) + "/config_names.txt");
  ASSERT_TRUE(in) << "missing golden file config_names.txt";
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  auto configs = golden_configs();
  ASSERT_EQ(lines.size(), configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    EXPECT_EQ(config_hash(configs[i]) + " " + to_string(configs[i]), lines[i]) << "golden line " << i + 1;
    EXPECT_EQ(parse_config(lines[i].substr(17)), configs[i]) << lines[i];
  }
}
