// NonMaxSuppression (opsets 10, 11): per batch and class, boxes taken greedily by descending
// score (equal scores: the smaller box index first), each kept unless its IoU with a box already
// kept exceeds iou_threshold. Boxes and IoU are float arithmetic as in ONNX Runtime, so the
// same boxes win at a threshold's edge. The output is [selected, 3] int64 rows
// (batch, class, box), batches then classes in order, each class in selection order.
#include <algorithm>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

struct Corners {
  float x_min, y_min, x_max, y_max;
};

// [y1, x1, y2, x2] (either diagonal) or, with center_point_box, [x_center, y_center, w, h].
template <typename T>
Corners corners(const T* b, bool center) {
  if (center) {
    const auto xc = static_cast<float>(b[0]), yc = static_cast<float>(b[1]);
    const float hw = static_cast<float>(b[2]) / 2, hh = static_cast<float>(b[3]) / 2;
    return {xc - hw, yc - hh, xc + hw, yc + hh};
  }
  const auto y1 = static_cast<float>(b[0]), x1 = static_cast<float>(b[1]);
  const auto y2 = static_cast<float>(b[2]), x2 = static_cast<float>(b[3]);
  return {std::min(x1, x2), std::min(y1, y2), std::max(x1, x2), std::max(y1, y2)};
}

bool overlaps_more_than(const Corners& a, const Corners& b, float threshold) {
  const float ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
  const float iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
  if (ix_max <= ix_min || iy_max <= iy_min) return false;
  const float inter = (ix_max - ix_min) * (iy_max - iy_min);
  const float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const float uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

struct Limits {
  int64_t max_per_class = 0;
  float iou = 0;
  bool has_score_threshold = false;
  float score = 0;
};

// The box indices kept for one batch and class.
template <typename T>
std::vector<int64_t> select_class(const T* boxes, const T* scores, int64_t n, bool center,
                                  const Limits& lim) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n; ++i) {
    if (!lim.has_score_threshold || static_cast<float>(scores[i]) > lim.score) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [scores](int64_t a, int64_t b) {
    return static_cast<float>(scores[a]) > static_cast<float>(scores[b]);
  });
  std::vector<int64_t> kept;
  std::vector<Corners> kept_boxes;
  for (int64_t i : order) {
    if (static_cast<int64_t>(kept.size()) >= lim.max_per_class) break;
    const Corners c = corners(boxes + i * 4, center);
    const bool suppressed = std::any_of(kept_boxes.begin(), kept_boxes.end(), [&](const auto& k) {
      return overlaps_more_than(k, c, lim.iou);
    });
    if (suppressed) continue;
    kept.push_back(i);
    kept_boxes.push_back(c);
  }
  return kept;
}

Expected<Limits> read_limits(const ir::Node& node, Inputs in) {
  Limits lim;
  auto scalar = [&](size_t i, const char* what) -> Expected<const ir::Tensor*> {
    const ir::Tensor* t = input_or_null(in, i);
    if (t != nullptr && t->size() != 1) {
      return node_error(node, "{} must hold one value, has shape {}", what,
                        ir::shape_str(t->shape()));
    }
    return t;
  };
  PTQ_ASSIGN_OR_RETURN(const ir::Tensor* max_out, scalar(2, "max_output_boxes_per_class"));
  PTQ_ASSIGN_OR_RETURN(const ir::Tensor* iou, scalar(3, "iou_threshold"));
  PTQ_ASSIGN_OR_RETURN(const ir::Tensor* score, scalar(4, "score_threshold"));
  if (max_out != nullptr) lim.max_per_class = std::max<int64_t>(max_out->as_int64(0), 0);
  if (iou != nullptr) lim.iou = static_cast<float>(iou->as_double(0));
  if (!(lim.iou >= 0 && lim.iou <= 1)) {
    return node_error(node, "iou_threshold {} is outside [0, 1]", lim.iou);
  }
  if (score != nullptr) {
    lim.has_score_threshold = true;
    lim.score = static_cast<float>(score->as_double(0));
  }
  return lim;
}

Status check_shapes(const ir::Node& node, const ir::Tensor& boxes, const ir::Tensor& scores) {
  const bool ok = boxes.rank() == 3 && boxes.dim(2) == 4 && scores.rank() == 3 &&
                  scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1);
  if (ok) return Status::ok();
  return node_error(node, "boxes {} and scores {} do not match [batch, boxes, 4] and "
                    "[batch, classes, boxes]",
                    ir::shape_str(boxes.shape()), ir::shape_str(scores.shape()));
}

template <typename T>
std::vector<std::vector<int64_t>> select_all(const ir::Tensor& boxes, const ir::Tensor& scores,
                                             bool center, const Limits& lim, int threads) {
  const int64_t classes = scores.dim(1), n = boxes.dim(1);
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(scores.dim(0) * classes));
  parallel_tasks(threads, static_cast<int64_t>(kept.size()), [&](int64_t bc) {
    const T* b = boxes.data<T>() + bc / classes * n * 4;
    const T* s = scores.data<T>() + bc * n;
    kept[static_cast<size_t>(bc)] = select_class(b, s, n, center, lim);
  });
  return kept;
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_non_max_suppression(const KernelContext& ctx) {
  const int64_t center = ctx.node.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) {
    return node_error(ctx.node, "center_point_box must be 0 or 1, not {}", center);
  }
  auto run = [node = ctx.node, threads = ctx.threads, center = center == 1](
                 Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& boxes = *in[0];
    const ir::Tensor& scores = *in[1];
    PTQ_RETURN_IF_ERROR(check_shapes(node, boxes, scores));
    PTQ_ASSIGN_OR_RETURN(const Limits lim, read_limits(node, in));
    if (boxes.dtype() != scores.dtype()) {
      return node_error(node, "boxes are {} but scores {}", ir::dtype_name(boxes.dtype()),
                        ir::dtype_name(scores.dtype()));
    }
    std::vector<std::vector<int64_t>> kept;
    const bool ok = dispatch_float(boxes.dtype(), [&](auto tag) {
      kept = select_all<typename decltype(tag)::type>(boxes, scores, center, lim, threads);
    });
    if (!ok) return unsupported_dtype(node, boxes.dtype());
    int64_t total = 0;
    for (const auto& k : kept) total += static_cast<int64_t>(k.size());
    out[0] = alloc.allocate(ir::DType::kInt64, {total, 3});
    int64_t* dst = out[0].data<int64_t>();
    const int64_t classes = scores.dim(1);
    for (size_t bc = 0; bc < kept.size(); ++bc) {
      for (int64_t box : kept[bc]) {
        *dst++ = static_cast<int64_t>(bc) / classes;
        *dst++ = static_cast<int64_t>(bc) % classes;
        *dst++ = box;
      }
    }
    return Status::ok();
  };
  return make_kernel(run);
}

}  // namespace ptq::runtime::cpu
