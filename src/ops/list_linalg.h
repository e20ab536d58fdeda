/* Op rows of the linalg family (see registry.h for the row format). */
