/* Op rows of the conv family (see registry.h for the row format). */
