// A small, safe expression language for config-space filters and `--filter` (no interpreter embedded).
//
//   expr   := or ;  or := and ('||' and)* ;  and := not ('&&' not)* ;  not := '!' not | cmp
//   cmp    := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum | 'in' '(' expr (',' expr)* ')')?
//   sum    := prod (('+'|'-') prod)* ;  prod := unary (('*'|'/'|'%') unary)*
//   unary  := '-' unary | atom ;  atom := INT | STRING | IDENT | IDENT '(' args ')' | '(' expr ')'
//   functions: min(a,b) max(a,b) abs(a) log2(a) (floor, a > 0) is_pow2(a) ceil_div(a,b)
//
// Values are 64-bit integers or strings; booleans are integers 0/1 (any non-zero is true).
// INT is a decimal literal in [0, 2^63-1]; STRING is "..." without escapes; IDENT is
// [A-Za-z_][A-Za-z0-9_]* and names a variable resolved through Lookup at eval time (`in` is reserved).
// Arithmetic follows C++ (/ and % truncate toward zero); ceil_div rounds toward +infinity.
// Comparisons do not chain (`a < b < c` is a parse error); && and || short-circuit; `in` stops at
// the first match. Integer overflow, / 0 and % 0 are errors, never UB; strings only compare with
// strings, and only with == != in (any other mix is a type error).
//
// Bare enum names: an operand of ==, != or `in` that is a bare identifier unknown to Lookup is taken
// as a string literal of its own name when the other side of that comparison is a string, so
// `skmode == parallel` means `skmode == "parallel"`. A name Lookup knows always wins, and an unknown
// identifier anywhere else (or compared with an integer, or with another unknown name) is an error.
// Consequently variables() also lists such enum names: they cannot be told apart before eval.
//
// Errors: parse errors throw ParseError(token, "filter '<text>': <problem> at column <c>[, got <token>]")
// (column 1-based, token "" at end of input; nesting of (), calls, '!' and '-' is limited to 200 levels);
// eval errors throw Error(parse_error, "<problem> in filter '<text>'"), e.g. "unknown variable 'foo' in
// filter 'foo > 1'", "division by zero: 128 / 0 in filter 'tile_m / zero'".
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tilepick::expr {

using Value = std::variant<std::int64_t, std::string>;

// Returns the value of a variable, or nullopt when the name is unknown (an error at eval time).
using Lookup = std::function<std::optional<Value>(std::string_view name)>;

struct Node;  // AST, private to expr.cpp

class Expr {
 public:
  // Throws ParseError naming the offending token and its column.
  static Expr parse(std::string_view text);
  // Throws Error(parse_error) naming the unknown variable, a type mismatch, overflow or / 0.
  Value eval(const Lookup& lookup) const;
  bool test(const Lookup& lookup) const;  // eval, then non-zero integer -> true (string -> error)
  const std::string& text() const { return text_; }
  // Identifiers used as variables (for early checking against the known names).
  std::vector<std::string> variables() const;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace tilepick::expr
