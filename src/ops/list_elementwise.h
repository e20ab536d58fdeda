/* Op rows of the elementwise family (see registry.h for the row format). */
