// arbrt — the arbrun user-thread runtime: public C++ API.
//
// A process starts the runtime once (start()), then creates user threads that run on a few kernel
// threads ("carriers"), one per core. Any kernel thread (a user thread or not) may create, join,
// signal and synchronise with user threads; blocking calls from a non-user thread wait on a futex.
#pragma once

#include "arbrt/errors.h"
#include "arbrt/parking_lot.h"
#include "arbrt/sync.h"
#include "arbrt/thread.h"
#include "arbrt/time.h"
