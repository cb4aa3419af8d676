// zero's public API in one include: a model as units of parameters (module.h, spec.h), the
// engine that shards, reduces, steps and gathers them (engine.h, settings.h), the communicators
// it runs over (comm_factory.h, thread_world.h), and the errors it throws (error.h).
// docs/library.md shows a whole program; examples/mlp/ is one.
#pragma once

#include "zero/backend_facts.h"
#include "zero/comm_factory.h"
#include "zero/communicator.h"
#include "zero/dtype.h"
#include "zero/engine.h"
#include "zero/error.h"
#include "zero/ledger.h"
#include "zero/module.h"
#include "zero/settings.h"
#include "zero/spec.h"
#include "zero/thread_world.h"
