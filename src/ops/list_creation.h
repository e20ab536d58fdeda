/* Op rows of the creation family (see registry.h for the row format). */
