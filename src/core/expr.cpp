// Filter expressions: tokenizer -> recursive-descent parser -> AST -> checked evaluator.
#include "tilepick/expr.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <span>
#include <utility>

#include "tilepick/error.hpp"

namespace tilepick::expr {
namespace {

enum class Op { Or, And, Not, Neg, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Mod };
constexpr std::array<std::string_view, 15> kOpNames{
    "||", "&&", "!", "-", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"};

struct Function {
  std::string_view name;
  int arity;
};
constexpr std::array<Function, 6> kFunctions{
    {{"min", 2}, {"max", 2}, {"abs", 1}, {"log2", 1}, {"is_pow2", 1}, {"ceil_div", 2}}};
constexpr int kMaxDepth = 200;

using OpTable = std::span<const std::pair<std::string_view, Op>>;
constexpr std::pair<std::string_view, Op> kOrOps[] = {{"||", Op::Or}}, kAndOps[] = {{"&&", Op::And}},
                                          kSumOps[] = {{"+", Op::Add}, {"-", Op::Sub}},
                                          kProdOps[] = {{"*", Op::Mul}, {"/", Op::Div}, {"%", Op::Mod}},
                                          kCmpOps[] = {{"==", Op::Eq}, {"!=", Op::Ne}, {"<", Op::Lt},
                                                       {"<=", Op::Le}, {">", Op::Gt},  {">=", Op::Ge}};

}  // namespace

struct Node {
  enum Kind { Int, Str, Var, Call, Unary, Chain, Cmp, In } kind;
  std::int64_t ival = 0;  // Int
  std::string name;       // Str: value; Var: variable; Call: function
  int fn = 0;             // Call: index into kFunctions
  std::vector<Op> ops;    // Unary, Cmp: one op; Chain: ops[i] sits between kids[i] and kids[i+1]
  std::vector<std::unique_ptr<const Node>> kids;  // Cmp: lhs, rhs; In: lhs, list...
};

namespace {

using NodeP = std::unique_ptr<const Node>;

std::unique_ptr<Node> make(Node::Kind kind) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  return n;
}

struct Token {
  enum Kind { End, Int, Str, Ident, Punct } kind;
  std::string text;  // source spelling (strings keep their quotes)
  int col;           // 1-based
  std::int64_t ival = 0;
};

class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src) { tokenize(); }

  NodeP parse_all() {
    NodeP n = parse_or();
    const Token& t = peek();
    if (t.kind == Token::End) return n;
    if (is(t, ")")) fail(t, "unbalanced ')'" + at(t));
    fail(t, "expected an operator or end of input" + at(t) + got(t));
  }

 private:
  [[noreturn]] void fail(const Token& t, const std::string& what) const {
    throw ParseError(t.text, "filter '" + std::string(src_) + "': " + what);
  }
  static std::string at(const Token& t) { return " at column " + std::to_string(t.col); }
  static std::string got(const Token& t) {
    return t.kind == Token::End ? ", got end of input" : ", got '" + t.text + "'";
  }
  static bool is(const Token& t, std::string_view punct) { return t.kind == Token::Punct && t.text == punct; }
  const Token& peek() const { return toks_[pos_]; }
  const Token& take() { return toks_[pos_++]; }
  void enter(const Token& t) {
    if (++depth_ > kMaxDepth)
      fail(t, "expression nested deeper than " + std::to_string(kMaxDepth) + " levels" + at(t));
  }

  void tokenize() {
    const std::size_t n = src_.size();
    std::size_t i = 0;
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    auto isword = [&](char c) { return digit(c) || c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); };
    for (;;) {
      while (i < n && (src_[i] == ' ' || src_[i] == '\t' || src_[i] == '\n' || src_[i] == '\r')) ++i;
      Token t{Token::End, "", static_cast<int>(i) + 1};
      if (i == n) break;
      const std::size_t start = i;
      const char c = src_[i];
      if (digit(c)) {
        while (i < n && isword(src_[i])) ++i;
        t.kind = Token::Int;
        t.text = src_.substr(start, i - start);
        for (char d : t.text) {
          if (!digit(d)) fail(t, "malformed integer" + at(t) + got(t));
          if (__builtin_mul_overflow(t.ival, 10, &t.ival) || __builtin_add_overflow(t.ival, d - '0', &t.ival))
            fail(t, "integer literal out of 64-bit range" + at(t) + got(t));
        }
      } else if (isword(c)) {
        while (i < n && isword(src_[i])) ++i;
        t.kind = Token::Ident;
        t.text = src_.substr(start, i - start);
      } else if (c == '"') {
        std::size_t close = src_.find('"', i + 1);
        t.kind = Token::Str;
        t.text = src_.substr(start, close == std::string_view::npos ? n - start : close + 1 - start);
        if (close == std::string_view::npos) fail(t, "unterminated string literal" + at(t) + got(t));
        i = close + 1;
      } else {
        t.kind = Token::Punct;
        static constexpr std::string_view two[] = {"||", "&&", "==", "!=", "<=", ">="};
        for (std::string_view p : two)
          if (src_.substr(i, 2) == p) t.text = p;
        if (t.text.empty() && std::string_view("!<>+-*/%(),").find(c) != std::string_view::npos) t.text = c;
        if (t.text.empty()) {
          const auto u = static_cast<unsigned char>(c);
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", u);
          t.text = (u >= 0x20 && u < 0x7f) ? std::string(1, c) : std::string(hex);
          const bool half = c == '=' || c == '|' || c == '&';  // half of '==', '||', '&&'
          const std::string hint = half ? std::string(" (use '") + c + c + "')" : "";
          fail(t, "unexpected character" + hint + at(t) + got(t));
        }
        i += t.text.size();
      }
      toks_.push_back(std::move(t));
    }
    toks_.push_back(Token{Token::End, "", static_cast<int>(n) + 1});
  }

  // Left-associative chain of `next` joined by the operators in `table`; a single operand is returned as is.
  NodeP chain(NodeP (Parser::*next)(), OpTable table) {
    NodeP first = (this->*next)();
    std::unique_ptr<Node> c;
    while (const Op* op = match(table)) {
      take();
      if (!c) {
        c = make(Node::Chain);
        c->kids.push_back(std::move(first));
      }
      c->ops.push_back(*op);
      c->kids.push_back((this->*next)());
    }
    if (c) return c;
    return first;
  }

  const Op* match(OpTable table) const {  // the operator of the next token, if it is in `table`
    for (const auto& [text, op] : table)
      if (is(peek(), text)) return &op;
    return nullptr;
  }
  bool at_in() const { return peek().kind == Token::Ident && peek().text == "in"; }

  NodeP parse_or() {
    enter(peek());
    NodeP n = chain(&Parser::parse_and, kOrOps);
    --depth_;
    return n;
  }
  NodeP parse_and() { return chain(&Parser::parse_not, kAndOps); }
  NodeP parse_not() { return is(peek(), "!") ? unary(Op::Not, &Parser::parse_not) : parse_cmp(); }
  NodeP parse_cmp() {
    NodeP lhs = parse_sum();
    std::unique_ptr<Node> n;
    if (const Op* op = match(kCmpOps)) {
      take();
      n = make(Node::Cmp);
      n->ops = {*op};
      n->kids.push_back(std::move(lhs));
      n->kids.push_back(parse_sum());
    } else if (at_in()) {
      take();
      const Token& open = peek();
      if (!is(open, "(")) fail(open, "expected '(' after 'in'" + at(open) + got(open));
      take();
      n = make(Node::In);
      n->kids.push_back(std::move(lhs));
      list(*n);
      close(open);
    } else {
      return lhs;
    }
    if (match(kCmpOps) || at_in())
      fail(peek(), "comparisons cannot be chained (use '&&')" + at(peek()) + got(peek()));
    return n;
  }
  NodeP parse_sum() { return chain(&Parser::parse_prod, kSumOps); }
  NodeP parse_prod() { return chain(&Parser::parse_unary, kProdOps); }
  NodeP parse_unary() { return is(peek(), "-") ? unary(Op::Neg, &Parser::parse_unary) : parse_atom(); }
  NodeP unary(Op op, NodeP (Parser::*operand)()) {  // '!' or '-' applied to `operand`
    enter(take());
    auto n = make(Node::Unary);
    n->ops = {op};
    n->kids.push_back((this->*operand)());
    --depth_;
    return n;
  }
  void list(Node& n) {  // expr (',' expr)*
    for (n.kids.push_back(parse_or()); is(peek(), ","); n.kids.push_back(parse_or())) take();
  }
  void close(const Token& open) {
    const Token& t = peek();
    if (!is(t, ")"))
      fail(t, "unbalanced '(' at column " + std::to_string(open.col) + ": expected ')'" + at(t) + got(t));
    take();
  }
  NodeP parse_atom() {
    const Token& t = peek();
    if (t.kind == Token::Int || t.kind == Token::Str) {
      take();
      auto n = make(t.kind == Token::Int ? Node::Int : Node::Str);
      n->ival = t.ival;
      if (t.kind == Token::Str) n->name = t.text.substr(1, t.text.size() - 2);
      return n;
    }
    if (is(t, "(")) {
      take();
      NodeP n = parse_or();
      close(t);
      return n;
    }
    if (t.kind != Token::Ident || t.text == "in") fail(t, "expected a value" + at(t) + got(t));
    take();
    if (!is(peek(), "(")) {
      auto n = make(Node::Var);
      n->name = t.text;
      return n;
    }
    auto n = make(Node::Call);
    n->name = t.text;
    n->fn = -1;
    for (std::size_t f = 0; f < kFunctions.size(); ++f)
      if (kFunctions[f].name == t.text) n->fn = static_cast<int>(f);
    if (n->fn < 0)
      fail(t,
           "unknown function '" + t.text + "'" + at(t) + " (known: min, max, abs, log2, is_pow2, ceil_div)");
    const Token& open = take();
    enter(open);
    if (!is(peek(), ")")) list(*n);
    close(open);
    --depth_;
    const int arity = kFunctions[n->fn].arity;
    if (static_cast<int>(n->kids.size()) != arity)
      fail(t, "function '" + t.text + "' takes " + std::to_string(arity) + " argument" +
                  (arity > 1 ? "s" : "") + ", got " + std::to_string(n->kids.size()) + at(t));
    return n;
  }

  std::string_view src_;
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

std::string show(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return "string \"" + std::get<std::string>(v) + "\"";
}

class Evaluator {
 public:
  Evaluator(const std::string& text, const Lookup& lookup) : text_(text), lookup_(lookup) {}

  Value eval(const Node& n) {
    switch (n.kind) {
      case Node::Int: return n.ival;
      case Node::Str: return n.name;
      case Node::Var: {
        if (std::optional<Value> v = soft(n)) return *v;
        fail("unknown variable '" + n.name + "'");
      }
      case Node::Call: return call(n);
      case Node::Unary: {
        std::int64_t a = integer(*n.kids[0], n.ops[0]);
        if (n.ops[0] == Op::Not) return std::int64_t{a == 0};
        std::int64_t r;
        if (__builtin_sub_overflow(std::int64_t{0}, a, &r))
          fail("integer overflow: -(" + std::to_string(a) + ")");
        return r;
      }
      case Node::Chain: {
        if (n.ops[0] == Op::Or || n.ops[0] == Op::And) {  // homogeneous, short-circuit
          const bool is_or = n.ops[0] == Op::Or;
          for (const auto& k : n.kids)
            if ((integer(*k, n.ops[0]) != 0) == is_or) return std::int64_t{is_or};
          return std::int64_t{!is_or};
        }
        std::int64_t acc = integer(*n.kids[0], n.ops[0]);
        for (std::size_t i = 0; i < n.ops.size(); ++i)
          acc = arith(n.ops[i], acc, integer(*n.kids[i + 1], n.ops[i]));
        return acc;
      }
      case Node::Cmp: {
        const Op op = n.ops[0];
        std::optional<Value> a = soft(*n.kids[0]), b = soft(*n.kids[1]);
        if (op == Op::Eq || op == Op::Ne)
          return std::int64_t{equal(*n.kids[0], a, *n.kids[1], b, op) == (op == Op::Eq)};
        const Value va = resolve(a, *n.kids[0], std::nullopt), vb = resolve(b, *n.kids[1], std::nullopt);
        const auto *x = std::get_if<std::int64_t>(&va), *y = std::get_if<std::int64_t>(&vb);
        if (!x || !y)
          fail("type error: operator '" + name(op) + "' needs integers, got " + show(x ? vb : va));
        switch (op) {
          case Op::Lt: return std::int64_t{*x < *y};
          case Op::Le: return std::int64_t{*x <= *y};
          case Op::Gt: return std::int64_t{*x > *y};
          default: return std::int64_t{*x >= *y};
        }
      }
      case Node::In: {
        std::optional<Value> a = soft(*n.kids[0]);
        for (std::size_t i = 1; i < n.kids.size(); ++i) {
          std::optional<Value> b = soft(*n.kids[i]);
          if (equal(*n.kids[0], a, *n.kids[i], b, Op::Eq)) return std::int64_t{1};
        }
        return std::int64_t{0};
      }
    }
    fail("internal error: bad expression node");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(Status::parse_error, what + " in filter '" + text_ + "'");
  }
  static std::string name(Op op) { return std::string(kOpNames[static_cast<int>(op)]); }

  // Evaluates n; nullopt only when n is a bare identifier unknown to the lookup (maybe an enum name).
  std::optional<Value> soft(const Node& n) {
    if (n.kind != Node::Var) return eval(n);
    return lookup_ ? lookup_(n.name) : std::nullopt;
  }
  // An unresolved bare identifier becomes a string only when the other side is a string.
  Value resolve(const std::optional<Value>& v, const Node& n, const std::optional<Value>& other) {
    if (v) return *v;
    if (other && std::holds_alternative<std::string>(*other)) return n.name;
    fail("unknown variable '" + n.name + "'");
  }
  bool equal(const Node& na, const std::optional<Value>& a, const Node& nb, const std::optional<Value>& b,
             Op op) {
    const Value va = resolve(a, na, b), vb = resolve(b, nb, va);
    if (va.index() != vb.index())
      fail("type error: cannot compare " + show(va) + " with " + show(vb) + " using '" + name(op) + "'");
    return va == vb;
  }
  // Evaluates n as an integer operand of an operator or a function (`user` is its name).
  std::int64_t integer(const Node& n, std::string_view user) {
    Value v = eval(n);
    if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
    const std::string who(user);
    fail("type error: " + (who[0] >= 'a' && who[0] <= 'z' ? who + "()" : "operator '" + who + "'") +
         " needs integers, got " + show(v));
  }
  std::int64_t integer(const Node& n, Op op) { return integer(n, kOpNames[static_cast<int>(op)]); }

  std::int64_t arith(Op op, std::int64_t a, std::int64_t b) {
    auto expr = [&] { return std::to_string(a) + " " + name(op) + " " + std::to_string(b); };
    std::int64_t r = 0;
    bool overflow = false;
    switch (op) {
      case Op::Add: overflow = __builtin_add_overflow(a, b, &r); break;
      case Op::Sub: overflow = __builtin_sub_overflow(a, b, &r); break;
      case Op::Mul: overflow = __builtin_mul_overflow(a, b, &r); break;
      case Op::Div:
      case Op::Mod:
        if (b == 0) fail(std::string(op == Op::Div ? "division" : "modulo") + " by zero: " + expr());
        if (b == -1) {  // INT64_MIN / -1 overflows; x % -1 is always 0
          if (op == Op::Mod) return 0;
          overflow = __builtin_sub_overflow(std::int64_t{0}, a, &r);
        } else {
          r = op == Op::Div ? a / b : a % b;
        }
        break;
      default: fail("internal error: bad arithmetic operator");
    }
    if (overflow) fail("integer overflow: " + expr());
    return r;
  }

  std::int64_t call(const Node& n) {
    const bool two = n.kids.size() > 1;
    std::int64_t a = integer(*n.kids[0], n.name), b = two ? integer(*n.kids[1], n.name) : 0, r = 0;
    auto expr = [&] {
      return std::string(kFunctions[n.fn].name) + "(" + std::to_string(a) +
             (two ? ", " + std::to_string(b) : "") + ")";
    };
    switch (n.fn) {
      case 0: return std::min(a, b);
      case 1: return std::max(a, b);
      case 2:
        if (a < 0 && __builtin_sub_overflow(std::int64_t{0}, a, &r)) fail("integer overflow: " + expr());
        return a < 0 ? r : a;
      case 3:
        if (a <= 0) fail("log2() needs a positive argument: " + expr());
        return 63 - __builtin_clzll(static_cast<unsigned long long>(a));
      case 4: return std::int64_t{a > 0 && (a & (a - 1)) == 0};
      default: {  // ceil_div: quotient rounded toward +infinity
        if (b == 0) fail("division by zero: " + expr());
        if (b == -1) {
          if (__builtin_sub_overflow(std::int64_t{0}, a, &r)) fail("integer overflow: " + expr());
          return r;
        }
        const std::int64_t q = a / b, rem = a % b;
        return q + ((rem != 0 && (rem > 0) == (b > 0)) ? 1 : 0);
      }
    }
  }

  const std::string& text_;
  const Lookup& lookup_;
};

void collect(const Node& n, std::vector<std::string>& out) {
  if (n.kind == Node::Var) {
    for (const auto& v : out)
      if (v == n.name) return;
    out.push_back(n.name);
  }
  for (const auto& k : n.kids) collect(*k, out);
}

}  // namespace

Expr Expr::parse(std::string_view text) {
  Expr e;
  e.text_ = std::string(text);
  e.root_ = Parser(e.text_).parse_all();
  return e;
}

Value Expr::eval(const Lookup& lookup) const {
  if (!root_) throw Error(Status::parse_error, "eval of an empty (default-constructed) filter");
  return Evaluator(text_, lookup).eval(*root_);
}

bool Expr::test(const Lookup& lookup) const {
  Value v = eval(lookup);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i != 0;
  throw Error(Status::parse_error,
              "type error: result is " + show(v) + ", not a truth value in filter '" + text_ + "'");
}

std::vector<std::string> Expr::variables() const {
  std::vector<std::string> out;
  if (root_) collect(*root_, out);
  return out;
}

}  // namespace tilepick::expr
