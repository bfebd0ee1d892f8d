// Einsum equations: parsing and laying the labels over input shapes (numpy's rules: an
// implicit output is the ellipsis dims, then the letters used once, in alphabetical order).
#include <algorithm>
#include <string>

#include "einsum.h"
#include "kernel_util.h"

namespace ptq::runtime::cpu::einsum {

namespace {

int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

char letter_of(int id) {
  return id < 26 ? static_cast<char>('A' + id) : static_cast<char>('a' + (id - 26));
}

std::string label_name(int id) {
  return id < kLetters ? std::string(1, letter_of(id)) : fmt::format("...[{}]", id - kLetters);
}

Expected<std::vector<int>> parse_term(const ir::Node& node, std::string_view term) {
  std::vector<int> labels;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.substr(i, 3) == "...") {
      if (std::count(labels.begin(), labels.end(), kEllipsis) > 0) {
        return node_error(node, "term '{}' of the equation has two ellipses", term);
      }
      labels.push_back(kEllipsis);
      i += 2;
      continue;
    }
    const int id = letter_id(term[i]);
    if (id < 0) return node_error(node, "equation term '{}' has '{}': not a letter", term, term[i]);
    labels.push_back(id);
  }
  return labels;
}

size_t letters_in(const std::vector<int>& term) {
  return static_cast<size_t>(std::count_if(term.begin(), term.end(), [](int l) { return l >= 0; }));
}

// The labels of each axis of a term over a shape of `rank` dims, with `ellipsis` the widest
// ellipsis of all operands.
std::vector<int> axis_labels(const std::vector<int>& term, size_t rank, size_t ellipsis) {
  const size_t own = rank - letters_in(term);  // dims this term's ellipsis stands for
  std::vector<int> axes;
  for (int l : term) {
    if (l != kEllipsis) {
      axes.push_back(l);
      continue;
    }
    for (size_t k = 0; k < own; ++k) {
      axes.push_back(kLetters + static_cast<int>(ellipsis - own + k));
    }
  }
  return axes;
}

std::vector<int> implicit_output(const std::vector<std::vector<int>>& axes, size_t ellipsis) {
  std::vector<int> out;
  for (size_t k = 0; k < ellipsis; ++k) out.push_back(kLetters + static_cast<int>(k));
  std::vector<int> uses(kLetters, 0);
  for (const auto& a : axes) {
    for (int l : a) {
      if (l < kLetters) ++uses[static_cast<size_t>(l)];
    }
  }
  for (int l = 0; l < kLetters; ++l) {
    if (uses[static_cast<size_t>(l)] == 1) out.push_back(l);
  }
  return out;
}

}  // namespace

Expected<Equation> parse(const ir::Node& node, std::string_view text) {
  std::string s;
  for (char c : text) {
    if (c != ' ') s += c;
  }
  Equation eq;
  const size_t arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  if (arrow != std::string::npos) {
    eq.explicit_output = true;
    PTQ_ASSIGN_OR_RETURN(eq.output, parse_term(node, std::string_view(s).substr(arrow + 2)));
    std::vector<int> seen;
    for (int l : eq.output) {
      if (std::count(seen.begin(), seen.end(), l) > 0) {
        return node_error(node, "output of equation '{}' repeats a label", text);
      }
      seen.push_back(l);
    }
  }
  size_t begin = 0;
  while (true) {
    const size_t comma = lhs.find(',', begin);
    const std::string_view term = std::string_view(lhs).substr(begin, comma - begin);
    PTQ_ASSIGN_OR_RETURN(std::vector<int> labels, parse_term(node, term));
    eq.terms.push_back(std::move(labels));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return eq;
}

Expected<Layout> resolve(const ir::Node& node, const Equation& eq,
                         std::span<const ir::Shape> shapes) {
  if (shapes.size() != eq.terms.size()) {
    return node_error(node, "equation has {} terms for {} inputs", eq.terms.size(), shapes.size());
  }
  size_t ellipsis = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::vector<int>& term = eq.terms[i];
    const size_t letters = letters_in(term);
    const bool has_ellipsis = letters != term.size();
    if (shapes[i].size() < letters || (!has_ellipsis && shapes[i].size() != letters)) {
      return node_error(node, "input {} {} does not have the {} dims its term names", i,
                        ir::shape_str(shapes[i]), letters);
    }
    ellipsis = std::max(ellipsis, shapes[i].size() - letters);
  }
  Layout l;
  l.extent.assign(kLetters + ellipsis, 0);
  std::vector<int> first_op(l.extent.size(), -1);  // the operand that fixed a label's extent
  for (size_t i = 0; i < shapes.size(); ++i) {
    l.axes.push_back(axis_labels(eq.terms[i], shapes[i].size(), ellipsis));
    for (size_t d = 0; d < shapes[i].size(); ++d) {
      const auto label = static_cast<size_t>(l.axes[i][d]);
      const int64_t dim = shapes[i][d];
      int64_t& e = l.extent[label];
      if (first_op[label] < 0 || (e == 1 && dim != 1)) {
        first_op[label] = static_cast<int>(i);
        e = dim;
      } else if (dim != e && dim != 1) {
        const auto j = static_cast<size_t>(first_op[label]);
        return node_error(node, "label '{}' is {} in input {} {} but {} in input {} {}",
                          label_name(static_cast<int>(label)), e, j, ir::shape_str(shapes[j]),
                          dim, i, ir::shape_str(shapes[i]));
      }
    }
  }
  if (eq.explicit_output) {
    l.output = axis_labels(eq.output, letters_in(eq.output) + ellipsis, ellipsis);
    for (int label : l.output) {
      if (first_op[static_cast<size_t>(label)] < 0) {
        return node_error(node, "output label '{}' is in no input", label_name(label));
      }
    }
  } else {
    l.output = implicit_output(l.axes, ellipsis);
  }
  for (int label : l.output) l.output_shape.push_back(l.extent[static_cast<size_t>(label)]);
  for (const auto& axes : l.axes) {
    for (int label : axes) {
      const bool listed = std::count(l.output.begin(), l.output.end(), label) > 0 ||
                          std::count(l.summed.begin(), l.summed.end(), label) > 0;
      if (!listed) l.summed.push_back(label);
    }
  }
  return l;
}

std::vector<int64_t> label_strides(const Layout& layout, size_t op, const ir::Shape& shape) {
  std::vector<int64_t> s(layout.extent.size(), 0);
  const std::vector<int64_t> own = strides_of(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    const auto label = static_cast<size_t>(layout.axes[op][d]);
    if (shape[d] != 1 || layout.extent[label] == 1) s[label] += own[d];
  }
  return s;
}

}  // namespace ptq::runtime::cpu::einsum
