/* Op rows of the convert family (see registry.h for the row format). */
