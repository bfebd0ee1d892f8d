// The agreement every distributed phase ends with, and the byte records ranks exchange.
#include <cstring>
#include <limits>

#include "ptq/dist.h"

namespace ptq::dist {

Status Communicator::agree(const Status& local, int64_t order) {
  // One reduction finds the winner: (order, rank) packed so that the smaller pair is the
  // smaller number; an ok rank offers the largest.
  const int64_t none = std::numeric_limits<int64_t>::max();
  const int64_t ranks = size();
  int64_t key = local.is_ok() ? none : order * ranks + rank();
  min(std::span<int64_t>(&key, 1));
  if (key == none) return Status::ok();
  Writer w;
  w.i64(static_cast<int64_t>(local.code()));
  w.str(local.message());
  const std::string sent = broadcast(w.bytes(), static_cast<int>(key % ranks));
  failed_together_ = true;
  Reader r(sent);
  Expected<int64_t> code = r.i64();
  Expected<std::string> message = r.str();
  if (!code || !message)
    return runtime_error("rank {} failed (its error could not be read)", key % ranks);
  return Status(static_cast<StatusCode>(*code), *message);
}

void Writer::i64(int64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }

void Writer::f64(double v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }

void Writer::str(const std::string& s) {
  i64(static_cast<int64_t>(s.size()));
  bytes_ += s;
}

Status Reader::take(void* out, size_t n) {
  if (bytes_.size() - pos_ < n) return runtime_error("a record from another rank ends early");
  std::memcpy(out, bytes_.data() + pos_, n);
  pos_ += n;
  return Status::ok();
}

Expected<int64_t> Reader::i64() {
  int64_t v = 0;
  PTQ_RETURN_IF_ERROR(take(&v, sizeof v));
  return v;
}

Expected<double> Reader::f64() {
  double v = 0.0;
  PTQ_RETURN_IF_ERROR(take(&v, sizeof v));
  return v;
}

Expected<std::string> Reader::str() {
  PTQ_ASSIGN_OR_RETURN(int64_t n, i64());
  if (n < 0 || static_cast<uint64_t>(n) > bytes_.size() - pos_) {
    return runtime_error("a record from another rank ends early");
  }
  std::string s = bytes_.substr(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return s;
}

}  // namespace ptq::dist
