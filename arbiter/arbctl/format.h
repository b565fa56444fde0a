// Renders an arbiter status reply as JSON or as a table (arbctl status / watch).
#pragma once

#include <string>

#include "arbproto/messages.h"

namespace arbctl {

// {"processes":[{"pid":..,"command":..,"priority":..,"requested":[..],"granted":[..],...}],
//  "managed":[..]}; "priority" is the highest level (0 = highest) with a request, -1 for none.
std::string toJson(const arbproto::StatusReply& status);
std::string toTable(const arbproto::StatusReply& status);
int bestPriority(const arbproto::ProcessStatus& process);

}  // namespace arbctl
