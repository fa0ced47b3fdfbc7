// Filter expression language: grammar, semantics, errors, limits and a randomized cross-check.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tilepick/error.hpp"
#include "tilepick/expr.hpp"

using tilepick::Error;
using tilepick::ParseError;
using tilepick::Status;
using tilepick::expr::Expr;
using tilepick::expr::Lookup;
using tilepick::expr::Value;

namespace {

using Vars = std::map<std::string, Value, std::less<>>;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

Lookup lookup_of(const Vars& vars) {
  return [&vars](std::string_view name) -> std::optional<Value> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

const Vars kVars = {{"tile_m", std::int64_t{128}},
                    {"tile_n", std::int64_t{64}},
                    {"splitk", std::int64_t{1}},
                    {"skmode", std::string("parallel")},
                    {"zero", std::int64_t{0}}};

std::int64_t num(std::string_view text, const Vars& vars = kVars) {
  Value v = Expr::parse(text).eval(lookup_of(vars));
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(v)) << text;
  return std::holds_alternative<std::int64_t>(v) ? std::get<std::int64_t>(v) : -999;
}

bool test(std::string_view text, const Vars& vars = kVars) { return Expr::parse(text).test(lookup_of(vars)); }

// The ParseError thrown by parse(text); fails the test if none is thrown.
ParseError parse_error(std::string_view text) {
  try {
    Expr::parse(text);
  } catch (const ParseError& e) {
    EXPECT_EQ(e.status(), Status::parse_error);
    return e;
  }
  ADD_FAILURE() << "no ParseError for: " << text;
  return ParseError("", "");
}

// The message of the Error thrown by eval (never a ParseError: the text parsed fine).
std::string eval_error(std::string_view text, const Vars& vars = kVars) {
  Expr e = Expr::parse(text);
  try {
    e.eval(lookup_of(vars));
  } catch (const ParseError& err) {
    ADD_FAILURE() << "eval threw a ParseError for: " << text;
    return err.what();
  } catch (const Error& err) {
    EXPECT_EQ(err.status(), Status::parse_error);
    return err.what();
  }
  ADD_FAILURE() << "no Error for: " << text;
  return "";
}

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

TEST(Expr, PrecedenceAndAssociativity) {
  EXPECT_EQ(num("2+3*4"), 14);
  EXPECT_EQ(num("(2+3)*4"), 20);
  EXPECT_EQ(num("10-4-3"), 3);
  EXPECT_EQ(num("100/10/5"), 2);
  EXPECT_EQ(num("2*3%4"), 2);  // (2*3)%4, not 2*(3%4)=6
  EXPECT_EQ(num("7/2"), 3);
  EXPECT_EQ(num("-7/2"), -7 / 2);
  EXPECT_EQ(num("-7%3"), -7 % 3);
  EXPECT_EQ(num("7%-3"), 7 % -3);
  EXPECT_EQ(num("-7%-3"), -7 % -3);
  EXPECT_EQ(num("2*-3"), -6);
  EXPECT_EQ(num("--5"), 5);
  EXPECT_EQ(num("-2*3+1"), -5);
  EXPECT_EQ(num("1 - -1"), 2);
  EXPECT_EQ(num("tile_m / tile_n * splitk"), 2);
  EXPECT_EQ(num("9223372036854775807"), kMax);
  EXPECT_EQ(num("-9223372036854775807 - 1"), kMin);
  EXPECT_EQ(num("  ( 1 )\t+\n2 "), 3);
}

TEST(Expr, ComparisonsAndLogic) {
  EXPECT_EQ(num("1 < 2"), 1);
  EXPECT_EQ(num("2 < 2"), 0);
  EXPECT_EQ(num("2 <= 2"), 1);
  EXPECT_EQ(num("3 > 2"), 1);
  EXPECT_EQ(num("2 >= 3"), 0);
  EXPECT_EQ(num("1 == 1"), 1);
  EXPECT_EQ(num("1 != 1"), 0);
  EXPECT_EQ(num("1 + 1 == 2"), 1);  // arithmetic binds tighter than comparison
  EXPECT_EQ(num("!0"), 1);
  EXPECT_EQ(num("!5"), 0);
  EXPECT_EQ(num("!!7"), 1);
  EXPECT_EQ(num("!2 + 1"), 0);  // '!' applies to the whole comparison operand: !(2+1)
  EXPECT_EQ(num("3 && 4"), 1);  // logic yields 0/1
  EXPECT_EQ(num("1 && 0"), 0);
  EXPECT_EQ(num("0 || 0"), 0);
  EXPECT_EQ(num("0 || 5"), 1);
  EXPECT_EQ(num("1 || 0 && 0"), 1);  // && binds tighter than ||
  EXPECT_EQ(num("0 && 0 || 1"), 1);
  EXPECT_EQ(num("(1 || 0) && 0"), 0);
  EXPECT_TRUE(test("tile_m >= 128 && tile_n < 128 && splitk == 1"));
  EXPECT_FALSE(test("tile_m > 128 || !(tile_n == 64)"));
  EXPECT_TRUE(test("tile_m * tile_n"));
  EXPECT_FALSE(test("zero"));
}

TEST(Expr, ShortCircuit) {
  int calls = 0;
  Lookup counting = [&calls](std::string_view name) -> std::optional<Value> {
    ++calls;
    if (name == "one") return std::int64_t{1};
    return std::nullopt;
  };
  EXPECT_FALSE(Expr::parse("0 && nosuch").test(counting));
  EXPECT_TRUE(Expr::parse("1 || nosuch").test(counting));
  EXPECT_TRUE(Expr::parse("one || 1 / 0").test(counting));
  EXPECT_FALSE(Expr::parse("0 && 1 / 0 && nosuch").test(counting));
  EXPECT_EQ(calls, 1);  // only `one` was looked up
  EXPECT_CONTAINS(eval_error("1 && nosuch"), "unknown variable 'nosuch'");
  EXPECT_CONTAINS(eval_error("0 || nosuch"), "unknown variable 'nosuch'");
}

TEST(Expr, InList) {
  EXPECT_TRUE(test("tile_m in (64, 128, 256)"));
  EXPECT_FALSE(test("tile_m in (64, 256)"));
  EXPECT_TRUE(test("tile_m in (tile_n * 2)"));
  EXPECT_TRUE(test("tile_n + 64 in (1, 2, tile_m)"));
  EXPECT_TRUE(test("!(tile_m in (1, 2)) && tile_n in (64)"));
  EXPECT_TRUE(test("tile_m in (128, nosuch)"));  // stops at the first match
  EXPECT_CONTAINS(eval_error("tile_m in (1, nosuch)"), "unknown variable 'nosuch'");
  EXPECT_CONTAINS(eval_error("tile_m in (1, \"x\")"), "cannot compare");
}

TEST(Expr, Functions) {
  EXPECT_EQ(num("min(3, -2)"), -2);
  EXPECT_EQ(num("max(3, -2)"), 3);
  EXPECT_EQ(num("abs(-5)"), 5);
  EXPECT_EQ(num("abs(5)"), 5);
  EXPECT_EQ(num("log2(1)"), 0);
  EXPECT_EQ(num("log2(1024)"), 10);
  EXPECT_EQ(num("log2(1023)"), 9);
  EXPECT_EQ(num("log2(9223372036854775807)"), 62);
  EXPECT_EQ(num("is_pow2(0)"), 0);
  EXPECT_EQ(num("is_pow2(1)"), 1);
  EXPECT_EQ(num("is_pow2(64)"), 1);
  EXPECT_EQ(num("is_pow2(96)"), 0);
  EXPECT_EQ(num("is_pow2(-8)"), 0);
  EXPECT_EQ(num("is_pow2(-9223372036854775807 - 1)"), 0);
  EXPECT_EQ(num("ceil_div(7, 2)"), 4);
  EXPECT_EQ(num("ceil_div(8, 2)"), 4);
  EXPECT_EQ(num("ceil_div(0, 5)"), 0);
  EXPECT_EQ(num("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(num("ceil_div(7, -2)"), -3);
  EXPECT_EQ(num("ceil_div(-7, -2)"), 4);
  EXPECT_EQ(num("ceil_div(9223372036854775807, 2)"), 4611686018427387904);
  EXPECT_EQ(num("max(min(1, 2), abs(-3)) + ceil_div(tile_m, tile_n)"), 5);
  EXPECT_EQ(num("min (1, 2)"), 1);
  // A function name without '(' is an ordinary variable.
  EXPECT_EQ(num("min + 1", {{"min", std::int64_t{5}}}), 6);
}

TEST(Expr, EnumNames) {
  EXPECT_TRUE(test("skmode == parallel"));
  EXPECT_TRUE(test("skmode == \"parallel\""));
  EXPECT_TRUE(test("parallel == skmode"));
  EXPECT_TRUE(test("skmode != serial"));
  EXPECT_FALSE(test("skmode == serial"));
  EXPECT_TRUE(test("skmode in (serial, parallel)"));
  EXPECT_TRUE(test("skmode in (\"serial\", \"parallel\")"));
  EXPECT_FALSE(test("skmode in (\"serial\", data)"));
  EXPECT_TRUE(test("tile_m == 128 && skmode == parallel"));
  EXPECT_TRUE(test("\"a\" == \"a\" && \"a\" != \"b\""));
  // A name the lookup knows always wins over the enum-name reading.
  Vars shadow = kVars;
  shadow["parallel"] = std::string("serial");
  EXPECT_FALSE(test("skmode == parallel", shadow));
  // The enum-name reading needs a string on the other side of ==, != or in.
  EXPECT_CONTAINS(eval_error("tile_m == parallel"), "unknown variable 'parallel'");
  EXPECT_CONTAINS(eval_error("foo == bar"), "unknown variable 'foo'");
  EXPECT_CONTAINS(eval_error("skmode < parallel"), "unknown variable 'parallel'");
  EXPECT_CONTAINS(eval_error("parallel"), "unknown variable 'parallel'");
  EXPECT_CONTAINS(eval_error("nosuch in (1, 2)"), "unknown variable 'nosuch'");
  Value s = Expr::parse("\"abc\"").eval(lookup_of(kVars));
  EXPECT_EQ(std::get<std::string>(s), "abc");
  EXPECT_EQ(std::get<std::string>(Expr::parse("skmode").eval(lookup_of(kVars))), "parallel");
}

TEST(Expr, UnknownVariableMessage) {
  EXPECT_EQ(eval_error("tile_m > 1 && foo"), "unknown variable 'foo' in filter 'tile_m > 1 && foo'");
  // An empty Lookup knows no names.
  EXPECT_THROW(Expr::parse("x").eval(Lookup{}), Error);
  EXPECT_EQ(std::get<std::int64_t>(Expr::parse("1 + 1").eval(Lookup{})), 2);
}

TEST(Expr, TypeErrors) {
  EXPECT_CONTAINS(eval_error("tile_m == \"128\""), "cannot compare 128 with string \"128\" using '=='");
  EXPECT_CONTAINS(eval_error("skmode != 1"), "cannot compare");
  EXPECT_CONTAINS(eval_error("skmode < \"x\""), "operator '<' needs integers");
  EXPECT_CONTAINS(eval_error("1 >= skmode"), "string \"parallel\"");
  EXPECT_CONTAINS(eval_error("\"a\" + 1"), "operator '+' needs integers, got string \"a\"");
  EXPECT_CONTAINS(eval_error("1 * skmode"), "operator '*'");
  EXPECT_CONTAINS(eval_error("-skmode"), "operator '-'");
  EXPECT_CONTAINS(eval_error("!skmode"), "operator '!'");
  EXPECT_CONTAINS(eval_error("skmode && 1"), "operator '&&'");
  EXPECT_CONTAINS(eval_error("0 || \"x\""), "operator '||'");
  EXPECT_CONTAINS(eval_error("min(skmode, 1)"), "min() needs integers");
  EXPECT_CONTAINS(eval_error("log2(\"x\")"), "log2()");
  std::string m = eval_error("\"a\" + 1");
  EXPECT_CONTAINS(m, "in filter '\"a\" + 1'");
  try {
    Expr::parse("skmode").test(lookup_of(kVars));
    ADD_FAILURE() << "test() of a string did not throw";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "not a truth value");
    EXPECT_CONTAINS(e.what(), "filter 'skmode'");
  }
}

TEST(Expr, OverflowAndDivisionByZero) {
  EXPECT_CONTAINS(eval_error("9223372036854775807 + 1"), "integer overflow: 9223372036854775807 + 1");
  EXPECT_CONTAINS(eval_error("-9223372036854775807 - 2"), "integer overflow");
  EXPECT_CONTAINS(eval_error("4611686018427387904 * 2"), "integer overflow");
  EXPECT_CONTAINS(eval_error("-(-9223372036854775807 - 1)"), "integer overflow");
  EXPECT_CONTAINS(eval_error("(-9223372036854775807 - 1) / -1"), "integer overflow");
  EXPECT_EQ(num("(-9223372036854775807 - 1) % -1"), 0);
  EXPECT_EQ(num("(-9223372036854775807 - 1) / 1"), kMin);
  EXPECT_CONTAINS(eval_error("abs(-9223372036854775807 - 1)"), "integer overflow: abs(");
  EXPECT_CONTAINS(eval_error("ceil_div(-9223372036854775807 - 1, -1)"), "integer overflow: ceil_div(");
  EXPECT_CONTAINS(eval_error("tile_m / zero"), "division by zero: 128 / 0 in filter 'tile_m / zero'");
  EXPECT_CONTAINS(eval_error("tile_m % (tile_n - 64)"), "modulo by zero");
  EXPECT_CONTAINS(eval_error("ceil_div(1, 0)"), "division by zero: ceil_div(1, 0)");
  EXPECT_CONTAINS(eval_error("log2(0)"), "log2() needs a positive argument");
  EXPECT_CONTAINS(eval_error("log2(-4)"), "log2(-4)");
}

struct BadText {
  const char* text;
  const char* token;
  std::vector<const char*> parts;
};

TEST(Expr, ParseErrors) {
  EXPECT_STREQ(parse_error("tile_m >= ").what(),
               "filter 'tile_m >= ': expected a value at column 11, got end of input");
  const BadText cases[] = {
      {"", "", {"expected a value at column 1, got end of input"}},
      {"   ", "", {"at column 4, got end of input"}},
      {"(tile_m + 1", "", {"unbalanced '(' at column 1: expected ')' at column 12, got end of input"}},
      {"min(1, 2", "", {"unbalanced '(' at column 4"}},
      {"((1)", "", {"unbalanced '(' at column 1"}},
      {"tile_m + 1)", ")", {"unbalanced ')' at column 11"}},
      {"foo(1)", "foo", {"unknown function 'foo' at column 1", "known: min, max"}},
      {"1 + Min(1, 2)", "Min", {"unknown function 'Min' at column 5"}},
      {"min(1)", "min", {"function 'min' takes 2 arguments, got 1 at column 1"}},
      {"2 * abs(1, 2)", "abs", {"function 'abs' takes 1 argument, got 2 at column 5"}},
      {"log2()", "log2", {"takes 1 argument, got 0"}},
      {"min(1,)", ")", {"expected a value at column 7, got ')'"}},
      {"skmode == \"para", "\"para", {"unterminated string literal at column 11, got '\"para'"}},
      {"tile_m @ 2", "@", {"unexpected character at column 8, got '@'"}},
      {"tile_m = 2", "=", {"unexpected character (use '==') at column 8, got '='"}},
      {"a | b", "|", {"(use '||') at column 3"}},
      {"a & b", "&", {"(use '&&') at column 3"}},
      {"a\x01", "\\x01", {"unexpected character at column 2, got '\\x01'"}},
      {"tile_m tile_n", "tile_n", {"expected an operator or end of input at column 8, got 'tile_n'"}},
      {"1 < 2 < 3", "<", {"comparisons cannot be chained", "column 7"}},
      {"x == 1 in (1)", "in", {"comparisons cannot be chained", "column 8"}},
      {"99999999999999999999", "99999999999999999999", {"out of 64-bit range at column 1"}},
      {"-9223372036854775808", "9223372036854775808", {"out of 64-bit range at column 2"}},
      {"tile_m % 12ab", "12ab", {"malformed integer at column 10, got '12ab'"}},
      {"x in 1", "1", {"expected '(' after 'in' at column 6"}},
      {"x in ()", ")", {"expected a value at column 7, got ')'"}},
      {"x in (1,)", ")", {"expected a value at column 9, got ')'"}},
      {"1 + in", "in", {"expected a value at column 5, got 'in'"}},
      {"1 +* 2", "*", {"expected a value at column 4, got '*'"}},
      {"!", "", {"expected a value at column 2, got end of input"}},
      {"()", ")", {"expected a value at column 2, got ')'"}},
  };
  for (const BadText& c : cases) {
    SCOPED_TRACE(c.text);
    ParseError e = parse_error(c.text);
    EXPECT_EQ(e.token(), c.token);
    EXPECT_CONTAINS(e.what(), std::string("filter '") + c.text + "': ");
    for (const char* part : c.parts) EXPECT_CONTAINS(e.what(), part);
  }
}

TEST(Expr, DepthLimit) {
  auto nested = [](int n, std::string open, std::string close) {
    std::string s;
    for (int i = 0; i < n; ++i) s += open;
    s += "1";
    for (int i = 0; i < n; ++i) s += close;
    return s;
  };
  EXPECT_EQ(num(nested(150, "(", ")")), 1);
  EXPECT_EQ(num(nested(150, "-", "")), 1);
  EXPECT_EQ(num(nested(60, "abs(", ")")), 1);
  for (const std::string& hostile :
       {nested(100000, "(", ")"), nested(100000, "(", ""), nested(100000, "-", ""), nested(100000, "!", ""),
        nested(100000, "abs(", ")"), nested(100000, "1 in (", ")")}) {
    ParseError e = parse_error(hostile);
    EXPECT_CONTAINS(e.what(), "nested deeper than 200 levels");
  }
  // Long flat chains are not nesting: they parse and evaluate without deep recursion.
  std::string sum = "1", ors = "tile_m == 0";
  for (int i = 1; i < 100000; ++i) sum += "+1";
  for (int i = 1; i < 5000; ++i) ors += " || tile_m == " + std::to_string(i);
  EXPECT_EQ(num(sum), 100000);
  EXPECT_TRUE(test(ors));
}

TEST(Expr, VariablesAndText) {
  const char* text = "b + a * b > min(c, a) && skmode in (parallel, \"serial\") && is_pow2(b)";
  Expr e = Expr::parse(text);
  EXPECT_EQ(e.text(), text);
  EXPECT_EQ(e.variables(), (std::vector<std::string>{"b", "a", "c", "skmode", "parallel"}));
  EXPECT_TRUE(Expr::parse("1 + 2").variables().empty());
  // Copies share the immutable AST and outlive the original.
  Expr copy = Expr::parse("tile_m * 2");
  {
    Expr tmp = Expr::parse("tile_n");
    copy = tmp;
  }
  EXPECT_EQ(std::get<std::int64_t>(copy.eval(lookup_of(kVars))), 64);
}

// ---- randomized cross-check against a direct evaluation in 128-bit arithmetic ----

__extension__ typedef __int128 I128;         // exact for every sum, difference and product of int64s
using Result = std::optional<std::int64_t>;  // nullopt: the evaluation must fail

Result fit(I128 v) {
  if (v < kMin || v > kMax) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

struct Generated {
  std::string text;
  Result value;
};

class RandomExpr {
 public:
  explicit RandomExpr(std::uint64_t seed) : rng_(seed) {}

  Generated gen(int depth) {
    if (depth == 0 || pick(4) == 0) return leaf();
    const char* sp = pick(2) ? " " : "";
    auto bin = [&](const char* op, const Generated& l, const Generated& r, Result v) {
      return Generated{"(" + l.text + sp + op + sp + r.text + ")", v};
    };
    switch (pick(8)) {
      case 0:
      case 1: {  // arithmetic
        static const char* kOps[] = {"+", "-", "*", "/", "%"};
        const int op = pick(5);
        Generated l = gen(depth - 1), r = gen(depth - 1);
        return bin(kOps[op], l, r, (l.value && r.value) ? arith(op, *l.value, *r.value) : std::nullopt);
      }
      case 2: {  // comparison
        static const char* kOps[] = {"==", "!=", "<", "<=", ">", ">="};
        const int op = pick(6);
        Generated l = gen(depth - 1), r = gen(depth - 1);
        Result v;
        if (l.value && r.value) {
          const std::int64_t a = *l.value, b = *r.value;
          const bool t[] = {a == b, a != b, (a < b), a <= b, (a > b), a >= b};
          v = t[op];
        }
        return bin(kOps[op], l, r, v);
      }
      case 3: {  // short-circuit logic: the right side only matters when it is evaluated
        const bool is_or = pick(2);
        Generated l = gen(depth - 1), r = gen(depth - 1);
        Result v;
        if (l.value && (*l.value != 0) == is_or)
          v = is_or;
        else if (l.value && r.value)
          v = *r.value != 0;
        return bin(is_or ? "||" : "&&", l, r, v);
      }
      case 4: {  // unary
        Generated x = gen(depth - 1);
        const bool neg = pick(2);
        Result v = x.value ? (neg ? fit(-static_cast<I128>(*x.value)) : Result(*x.value == 0)) : std::nullopt;
        return {std::string("(") + (neg ? "-" : "!") + x.text + ")", v};
      }
      case 5: {  // one-argument functions
        Generated x = gen(depth - 1);
        Result v;
        const int f = pick(3);
        if (x.value) {
          const std::int64_t a = *x.value;
          if (f == 0) v = fit(a < 0 ? -static_cast<I128>(a) : a);
          if (f == 1 && a > 0) v = 63 - std::countl_zero(static_cast<std::uint64_t>(a));
          if (f == 2) v = a > 0 && std::has_single_bit(static_cast<std::uint64_t>(a));
        }
        static const char* kNames[] = {"abs", "log2", "is_pow2"};
        return {std::string(kNames[f]) + "(" + x.text + ")", v};
      }
      case 6: {  // two-argument functions
        Generated l = gen(depth - 1), r = gen(depth - 1);
        Result v;
        const int f = pick(3);
        if (l.value && r.value) {
          const I128 a = *l.value, b = *r.value;
          if (f == 0) v = fit(std::min(a, b));
          if (f == 1) v = fit(std::max(a, b));
          if (f == 2 && b != 0) v = fit(-floor_div(-a, b));  // ceil(a/b) = -floor(-a/b)
        }
        static const char* kNames[] = {"min", "max", "ceil_div"};
        return {std::string(kNames[f]) + "(" + l.text + "," + sp + r.text + ")", v};
      }
      default: {  // in-list: elements are evaluated until the first match
        Generated x = gen(depth - 1);
        std::string text = "(" + x.text + " in (";
        bool done = !x.value, error = !x.value, found = false;
        const int n = 1 + pick(3);
        for (int i = 0; i < n; ++i) {
          Generated e = gen(depth - 1);
          text += (i ? "," + std::string(sp) : "") + e.text;
          if (done) continue;
          error = !e.value;
          found = !error && *e.value == *x.value;
          done = error || found;
        }
        return {text + "))", error ? Result() : Result(found)};
      }
    }
  }

  Lookup lookup() const { return lookup_of(vars_); }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }

  Generated leaf() {
    static const std::int64_t kBig[] = {kMax, kMin + 1, std::int64_t{1} << 62, std::int64_t{1} << 32,
                                        3037000500};
    switch (pick(6)) {
      case 0: {
        static const char* kNames[] = {"a", "b", "c"};
        const char* name = kNames[pick(3)];
        return {name, std::get<std::int64_t>(vars_.at(name))};
      }
      case 1: {
        const std::int64_t v = kBig[pick(5)] * (pick(2) ? 1 : -1);
        return {v < 0 ? "(-" + std::to_string(-v) + ")" : std::to_string(v), v};
      }
      default: {
        const std::int64_t v = pick(41) - 20;
        return {v < 0 ? "(-" + std::to_string(-v) + ")" : std::to_string(v), v};
      }
    }
  }

  static Result arith(int op, std::int64_t x, std::int64_t y) {
    const I128 a = x, b = y;
    switch (op) {
      case 0: return fit(a + b);
      case 1: return fit(a - b);
      case 2: return fit(a * b);
      case 3: return b == 0 ? std::nullopt : fit(a / b);
      default: return b == 0 ? std::nullopt : fit(a % b);
    }
  }
  static I128 floor_div(I128 a, I128 b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

  std::mt19937_64 rng_;
  Vars vars_ = {{"a", std::int64_t{7}}, {"b", std::int64_t{-3}}, {"c", std::int64_t{1} << 40}};
};

TEST(Expr, RandomizedAgainstDirectEvaluation) {
  RandomExpr gen(20240611);
  const Lookup lookup = gen.lookup();
  int ok = 0, failed = 0;
  for (int i = 0; i < 20000; ++i) {
    Generated g = gen.gen(1 + i % 6);
    SCOPED_TRACE(g.text);
    Expr e = Expr::parse(g.text);
    if (g.value) {
      Value v = e.eval(lookup);
      ASSERT_EQ(std::get<std::int64_t>(v), *g.value);
      ++ok;
    } else {
      ASSERT_THROW(e.eval(lookup), Error);
      ++failed;
    }
  }
  EXPECT_GT(ok, 10000);
  EXPECT_GT(failed, 500);
}

// Garbage in: parse either succeeds or throws ParseError; eval either returns or throws Error.
TEST(Expr, RandomGarbageNeverCrashes) {
  const std::string_view pieces[] = {"(",      ")",  "!",   "-",        "+",  "*", "/",  "%", "<",
                                     ">",      "=",  "==",  "&&",       "||", ",", "\"", " ", "a",
                                     "skmode", "in", "min", "ceil_div", "0",  "7", "@"};
  std::mt19937_64 rng(7);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    for (int n = static_cast<int>(rng() % 12); n > 0; --n) text += pieces[rng() % std::size(pieces)];
    SCOPED_TRACE(text);
    try {
      Expr e = Expr::parse(text);
      ++parsed;
      try {
        e.eval(lookup_of({{"a", std::int64_t{3}}, {"skmode", std::string("x")}}));
      } catch (const ParseError&) {
        ADD_FAILURE() << "eval threw a ParseError";
      } catch (const Error& err) {
        EXPECT_CONTAINS(err.what(), "in filter '" + text + "'");
      }
    } catch (const ParseError& err) {
      EXPECT_CONTAINS(err.what(), "filter '" + text + "': ");
    }
  }
  EXPECT_GT(parsed, 500);
}

}  // namespace
