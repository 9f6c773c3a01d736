#include "controller/scheduler/ncpus_expr.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tlbfleet::scheduler {
namespace {

// Recursive descent over
//   expr := term (('+' | '-') term)*
//   term := unary (('*' | '/') unary)*
//   unary := '-' unary | '(' expr ')' | integer | "ncpus"
// Without an ncpus value it checks the syntax only (arithmetic errors are left for the host).
class Parser {
 public:
  Parser(std::string_view text, std::optional<int64_t> ncpus) : text_(text), ncpus_(ncpus) {}

  absl::StatusOr<int64_t> Parse() {
    SkipSpace();
    if (pos_ == text_.size()) return Error("empty expression");
    absl::StatusOr<int64_t> v = Expr(0);
    if (!v.ok()) return v;
    SkipSpace();
    if (pos_ != text_.size()) return Error(absl::StrCat("unexpected \"", Rest(), "\""));
    return v;
  }
  bool uses_ncpus() const { return uses_ncpus_; }

 private:
  static constexpr int kMaxDepth = 64;

  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " at column ", pos_ + 1, " of \"", std::string(text_), "\""));
  }
  std::string Rest() const { return std::string(text_.substr(pos_, 10)); }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  absl::StatusOr<int64_t> Apply(char op, int64_t a, int64_t b) {
    int64_t out = 0;
    if (!ncpus_.has_value()) return 0;  // syntax check only
    bool overflow = false;
    switch (op) {
      case '+':
        overflow = __builtin_add_overflow(a, b, &out);
        break;
      case '-':
        overflow = __builtin_sub_overflow(a, b, &out);
        break;
      case '*':
        overflow = __builtin_mul_overflow(a, b, &out);
        break;
      default:
        if (b == 0) return Error("division by zero");
        if (a == INT64_MIN && b == -1) {
          overflow = true;
        } else {
          out = a / b;
        }
    }
    if (overflow) return Error("integer overflow");
    return out;
  }

  absl::StatusOr<int64_t> Expr(int depth) {
    absl::StatusOr<int64_t> left = Term(depth);
    if (!left.ok()) return left;
    for (;;) {
      char op = Eat('+') ? '+' : Eat('-') ? '-' : 0;
      if (op == 0) return left;
      absl::StatusOr<int64_t> right = Term(depth);
      if (!right.ok()) return right;
      left = Apply(op, *left, *right);
      if (!left.ok()) return left;
    }
  }

  absl::StatusOr<int64_t> Term(int depth) {
    absl::StatusOr<int64_t> left = Unary(depth);
    if (!left.ok()) return left;
    for (;;) {
      char op = Eat('*') ? '*' : Eat('/') ? '/' : 0;
      if (op == 0) return left;
      absl::StatusOr<int64_t> right = Unary(depth);
      if (!right.ok()) return right;
      left = Apply(op, *left, *right);
      if (!left.ok()) return left;
    }
  }

  absl::StatusOr<int64_t> Unary(int depth) {
    if (depth > kMaxDepth) return Error("expression nested too deeply");
    if (Eat('-')) {
      absl::StatusOr<int64_t> v = Unary(depth + 1);
      if (!v.ok()) return v;
      return Apply('-', 0, *v);
    }
    if (Eat('(')) {
      absl::StatusOr<int64_t> v = Expr(depth + 1);
      if (!v.ok()) return v;
      if (!Eat(')')) return Error("missing \")\"");
      return v;
    }
    SkipSpace();
    if (pos_ == text_.size()) return Error("expected a number or ncpus");
    const char c = text_[pos_];
    if (c >= '0' && c <= '9') {
      int64_t v = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_] - '0', &v)) {
          return Error("number too large");
        }
        ++pos_;
      }
      return v;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$') {
      const size_t start = pos_;
      while (pos_ < text_.size() && ((text_[pos_] >= 'a' && text_[pos_] <= 'z') ||
                                     (text_[pos_] >= 'A' && text_[pos_] <= 'Z') ||
                                     (text_[pos_] >= '0' && text_[pos_] <= '9') ||
                                     text_[pos_] == '_' || text_[pos_] == '$')) {
        ++pos_;
      }
      const std::string_view name = text_.substr(start, pos_ - start);
      if (name != "ncpus") {
        pos_ = start;
        return Error(
            absl::StrCat("unknown identifier \"", std::string(name), "\" (only ncpus is allowed)"));
      }
      uses_ncpus_ = true;
      return ncpus_.value_or(0);
    }
    return Error(absl::StrCat("unexpected \"", Rest(), "\""));
  }

  std::string_view text_;
  std::optional<int64_t> ncpus_;
  size_t pos_ = 0;
  bool uses_ncpus_ = false;
};

}  // namespace

absl::StatusOr<NcpusExpr> ParseNcpusExpr(std::string_view text) {
  Parser syntax(text, std::nullopt);
  absl::StatusOr<int64_t> checked = syntax.Parse();
  if (!checked.ok()) return checked.status();
  NcpusExpr out;
  out.uses_ncpus = syntax.uses_ncpus();
  if (!out.uses_ncpus) {
    // A constant: fold it now, so that "4*8" is checked like 32 at submit time.
    absl::StatusOr<int64_t> value = EvaluateNcpusExpr(text, 0);
    if (!value.ok()) return value.status();
    out.constant = *value;
  }
  return out;
}

absl::StatusOr<int64_t> EvaluateNcpusExpr(std::string_view text, int64_t ncpus) {
  Parser parser(text, ncpus);
  return parser.Parse();
}

}  // namespace tlbfleet::scheduler
