/* Op rows of the index family (see registry.h for the row format). */
