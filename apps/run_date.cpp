#include "run_date.h"

#include <cstdlib>
#include <ctime>

#include "ptq/calibration.h"

namespace ptq::apps {

Expected<std::string> run_date() {
  if (const char* env = std::getenv("SOURCE_DATE_EPOCH"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (*end != '\0' || v < 0) return usage_error("SOURCE_DATE_EPOCH '{}' is not a Unix time", env);
    return calibration::iso8601_utc(v);
  }
  return calibration::iso8601_utc(static_cast<int64_t>(std::time(nullptr)));
}

}  // namespace ptq::apps
