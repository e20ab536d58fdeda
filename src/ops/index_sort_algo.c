/* The orderings torch's cpu sort and topk produce.
 *
 * torch sorts (value, index) pairs with the C++ standard library
 * (std::sort, std::stable_sort, std::nth_element, std::partial_sort of
 * libstdc++).  Equal values leave their indices in an order that only the
 * algorithm decides, and torch's results (and so its indices) depend on
 * it; to give the same indices, these functions follow the same steps:
 * introsort (median-of-three quicksort above 16 elements, heapsort past
 * the depth limit, a final insertion sort), introselect and heap
 * selection.  Written from the algorithms' descriptions. */
#include "ops/index_sort.h"

#include <string.h>

enum { SORT_THRESHOLD = 16 };

#define LESS(a, b) (cmp->less(a, b))

static inline void swap_elems(ix_sort_elem *a, ix_sort_elem *b)
{
    ix_sort_elem t = *a;
    *a = *b;
    *b = t;
}

static int64_t floor_log2(int64_t n)
{
    int64_t k = 0;
    while (n > 1) n >>= 1, k++;
    return k;
}

/* ----------------------------------------------------------------- heaps */

static void push_heap(ix_sort_elem *first, int64_t hole, int64_t top, ix_sort_elem value, const ix_sort_cmp *cmp)
{
    int64_t parent = (hole - 1) / 2;
    while (hole > top && LESS(&first[parent], &value)) {
        first[hole] = first[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    first[hole] = value;
}

static void adjust_heap(ix_sort_elem *first, int64_t hole, int64_t len, ix_sort_elem value, const ix_sort_cmp *cmp)
{
    int64_t top = hole, child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (LESS(&first[child], &first[child - 1])) child--;
        first[hole] = first[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        first[hole] = first[child - 1];
        hole = child - 1;
    }
    push_heap(first, hole, top, value, cmp);
}

static void make_heap(ix_sort_elem *first, int64_t len, const ix_sort_cmp *cmp)
{
    if (len < 2) return;
    for (int64_t parent = (len - 2) / 2;; parent--) {
        adjust_heap(first, parent, len, first[parent], cmp);
        if (parent == 0) return;
    }
}

/* moves the top of heap [first, first + len) to *result, whose old value
 * re-enters the heap */
static void pop_heap(ix_sort_elem *first, int64_t len, ix_sort_elem *result, const ix_sort_cmp *cmp)
{
    ix_sort_elem value = *result;
    *result = *first;
    adjust_heap(first, 0, len, value, cmp);
}

static void heap_select(ix_sort_elem *first, int64_t middle, int64_t last, const ix_sort_cmp *cmp)
{
    make_heap(first, middle, cmp);
    for (int64_t i = middle; i < last; i++)
        if (LESS(&first[i], &first[0])) pop_heap(first, middle, &first[i], cmp);
}

static void sort_heap(ix_sort_elem *first, int64_t len, const ix_sort_cmp *cmp)
{
    while (len > 1) {
        len--;
        pop_heap(first, len, &first[len], cmp);
    }
}

/* ------------------------------------------------------------ quicksort */

static void move_median_to_first(ix_sort_elem *result, ix_sort_elem *a, ix_sort_elem *b, ix_sort_elem *c,
                                 const ix_sort_cmp *cmp)
{
    if (LESS(a, b)) {
        if (LESS(b, c)) swap_elems(result, b);
        else if (LESS(a, c)) swap_elems(result, c);
        else swap_elems(result, a);
    } else if (LESS(a, c)) {
        swap_elems(result, a);
    } else if (LESS(b, c)) {
        swap_elems(result, c);
    } else {
        swap_elems(result, b);
    }
}

static ix_sort_elem *unguarded_partition(ix_sort_elem *first, ix_sort_elem *last, const ix_sort_elem *pivot,
                                         const ix_sort_cmp *cmp)
{
    for (;;) {
        while (LESS(first, pivot)) first++;
        last--;
        while (LESS(pivot, last)) last--;
        if (!(first < last)) return first;
        swap_elems(first, last);
        first++;
    }
}

static ix_sort_elem *partition_pivot(ix_sort_elem *first, ix_sort_elem *last, const ix_sort_cmp *cmp)
{
    ix_sort_elem *mid = first + (last - first) / 2;
    move_median_to_first(first, first + 1, mid, last - 1, cmp);
    return unguarded_partition(first + 1, last, first, cmp);
}

static void unguarded_linear_insert(ix_sort_elem *last, const ix_sort_cmp *cmp)
{
    ix_sort_elem value = *last;
    ix_sort_elem *next = last - 1;
    while (LESS(&value, next)) {
        *last = *next;
        last = next;
        next--;
    }
    *last = value;
}

static void insertion_sort(ix_sort_elem *first, ix_sort_elem *last, const ix_sort_cmp *cmp)
{
    if (first == last) return;
    for (ix_sort_elem *i = first + 1; i != last; i++) {
        if (LESS(i, first)) {
            ix_sort_elem value = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof *first);
            *first = value;
        } else {
            unguarded_linear_insert(i, cmp);
        }
    }
}

static void final_insertion_sort(ix_sort_elem *first, ix_sort_elem *last, const ix_sort_cmp *cmp)
{
    if (last - first > SORT_THRESHOLD) {
        insertion_sort(first, first + SORT_THRESHOLD, cmp);
        for (ix_sort_elem *i = first + SORT_THRESHOLD; i != last; i++) unguarded_linear_insert(i, cmp);
    } else {
        insertion_sort(first, last, cmp);
    }
}

static void introsort_loop(ix_sort_elem *first, ix_sort_elem *last, int64_t depth, const ix_sort_cmp *cmp)
{
    while (last - first > SORT_THRESHOLD) {
        if (depth == 0) { /* heapsort the rest: partial_sort(first, last, last) */
            heap_select(first, last - first, last - first, cmp);
            sort_heap(first, last - first, cmp);
            return;
        }
        depth--;
        ix_sort_elem *cut = partition_pivot(first, last, cmp);
        introsort_loop(cut, last, depth, cmp);
        last = cut;
    }
}

void ix_std_sort(ix_sort_elem *first, int64_t n, const ix_sort_cmp *cmp)
{
    if (n < 2) return;
    introsort_loop(first, first + n, 2 * floor_log2(n), cmp);
    final_insertion_sort(first, first + n, cmp);
}

void ix_std_nth_element(ix_sort_elem *first, int64_t nth, int64_t n, const ix_sort_cmp *cmp)
{
    if (n == 0 || nth == n) return;
    ix_sort_elem *lo = first, *hi = first + n, *at = first + nth;
    int64_t depth = 2 * floor_log2(n);
    while (hi - lo > 3) {
        if (depth == 0) {
            heap_select(lo, at - lo + 1, hi - lo, cmp);
            swap_elems(lo, at);
            return;
        }
        depth--;
        ix_sort_elem *cut = partition_pivot(lo, hi, cmp);
        if (cut <= at) lo = cut;
        else hi = cut;
    }
    insertion_sort(lo, hi, cmp);
}

void ix_std_partial_sort(ix_sort_elem *first, int64_t middle, int64_t n, const ix_sort_cmp *cmp)
{
    heap_select(first, middle, n, cmp);
    sort_heap(first, middle, cmp);
}

/* ------------------------------------------------------------ stable sort */

static void merge_sort(ix_sort_elem *a, ix_sort_elem *tmp, int64_t n, const ix_sort_cmp *cmp)
{
    if (n <= SORT_THRESHOLD) { /* insertion sort is stable */
        for (int64_t i = 1; i < n; i++) {
            ix_sort_elem v = a[i];
            int64_t j = i;
            while (j > 0 && LESS(&v, &a[j - 1])) a[j] = a[j - 1], j--;
            a[j] = v;
        }
        return;
    }
    int64_t half = n / 2;
    merge_sort(a, tmp, half, cmp);
    merge_sort(a + half, tmp, n - half, cmp);
    memcpy(tmp, a, (size_t)half * sizeof *a);
    int64_t i = 0, j = half, k = 0;
    while (i < half && j < n) a[k++] = LESS(&a[j], &tmp[i]) ? a[j++] : tmp[i++];
    while (i < half) a[k++] = tmp[i++];
}

void ix_std_stable_sort(ix_sort_elem *first, int64_t n, ix_sort_elem *tmp, const ix_sort_cmp *cmp)
{
    if (n >= 2) merge_sort(first, tmp, n, cmp);
}

/* ------------------------------------------------------------ comparators */

static bool float_asc(const ix_sort_elem *a, const ix_sort_elem *b)
{
    return (a->key.f == a->key.f && b->key.f != b->key.f) || a->key.f < b->key.f;
}
static bool float_desc(const ix_sort_elem *a, const ix_sort_elem *b)
{
    return (a->key.f != a->key.f && b->key.f == b->key.f) || a->key.f > b->key.f;
}
static bool int_asc(const ix_sort_elem *a, const ix_sort_elem *b) { return a->key.i < b->key.i; }
static bool int_desc(const ix_sort_elem *a, const ix_sort_elem *b) { return a->key.i > b->key.i; }

ix_sort_cmp ix_sort_comparator(bool floating, bool descending)
{
    ix_sort_cmp c;
    c.less = floating ? (descending ? float_desc : float_asc) : (descending ? int_desc : int_asc);
    return c;
}
