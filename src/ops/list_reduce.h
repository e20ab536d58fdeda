/* Op rows of the reduce family (see registry.h for the row format). */
