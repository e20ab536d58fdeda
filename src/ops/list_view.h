/* Op rows of the view family (see registry.h for the row format). */
