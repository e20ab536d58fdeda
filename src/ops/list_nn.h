/* Op rows of the nn family (see registry.h for the row format). */
