// The date a calibration cache records: SOURCE_DATE_EPOCH when set (reproducible runs), else
// now. Shared by `ptq calibrate` and `ptq quantize --data`.
#pragma once

#include <string>

#include "ptq/status.h"

namespace ptq::apps {

// A usage error when SOURCE_DATE_EPOCH is set but is not a non-negative Unix time.
Expected<std::string> run_date();

}  // namespace ptq::apps
