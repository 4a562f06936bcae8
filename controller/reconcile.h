/* reconcile.h - the controller's public API moved to controller.h; this name stays for main.c. */
#ifndef PK_RECONCILE_H
#define PK_RECONCILE_H

#include "controller.h"

#endif
