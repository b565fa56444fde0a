// The SystemProbe of the machine arbrun runs on (the tests use fakes instead).
#pragma once

#include <memory>

#include "doctor_checks.h"

namespace arbrun {

std::unique_ptr<SystemProbe> makeSystemProbe();

}  // namespace arbrun
