/* Inside the index family: the sorting algorithms of index_sort_algo.c,
 * which order (key, index) pairs exactly as torch's cpu kernels do. */
#ifndef MTK_OPS_INDEX_SORT_H
#define MTK_OPS_INDEX_SORT_H

#include <stdbool.h>
#include <stdint.h>

/* One element being sorted: its key (as double for floating dtypes, as
 * int64 for the others) and its position along the sorted dim. */
typedef struct ix_sort_elem {
    union {
        double f;
        int64_t i;
    } key;
    int64_t index;
} ix_sort_elem;

/* A strict weak order on keys. */
typedef struct ix_sort_cmp {
    bool (*less)(const ix_sort_elem *a, const ix_sort_elem *b);
} ix_sort_cmp;

/* torch's comparators: ascending puts NaN last, descending first. */
ix_sort_cmp ix_sort_comparator(bool floating, bool descending);

/* libstdc++'s std::sort (introsort): the order equal keys end up in is
 * the one torch's unstable sort gives. */
void ix_std_sort(ix_sort_elem *first, int64_t n, const ix_sort_cmp *cmp);

/* A stable sort (equal keys keep their order); tmp holds n / 2 + 1
 * elements of scratch. */
void ix_std_stable_sort(ix_sort_elem *first, int64_t n, ix_sort_elem *tmp, const ix_sort_cmp *cmp);

/* libstdc++'s std::nth_element(first, first + nth, first + n) and
 * std::partial_sort(first, first + middle, first + n). */
void ix_std_nth_element(ix_sort_elem *first, int64_t nth, int64_t n, const ix_sort_cmp *cmp);
void ix_std_partial_sort(ix_sort_elem *first, int64_t middle, int64_t n, const ix_sort_cmp *cmp);

#endif
