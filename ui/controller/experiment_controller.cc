// The interface's moc output lives with this file (ExperimentController has signals).
#include "ui/controller/experiment_controller.h"
