/* The view family (views and shape ops): shapes, strides, storage offsets,
 * view-or-copy and errors as torch 2.13 reports them (geometry from
 * device='meta', view-ness from cpu), and cpu data through views and
 * copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/mtk.h"

/* ---------------------------------------------------------------- helpers */

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define NDIM(...) ((int32_t)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))

/* argument values for the case table */
#define IV(n) { .kind = MTK_VALUE_INT, .as.i = (n) }
#define NONE { .kind = MTK_VALUE_NONE, .as.i = 0 }
#define SV(text) { .kind = MTK_VALUE_STRING, .as.s = (text) }
#define INTS(...)                                                                                    \
    { .kind = MTK_VALUE_LIST,                                                                        \
      .as.list = { .items = (mtk_value[]){ __VA_ARGS__ },                                            \
                   .count = (int32_t)(sizeof((mtk_value[]){ __VA_ARGS__ }) / sizeof(mtk_value)) } }
#define INTS0 { .kind = MTK_VALUE_LIST, .as.list = { .items = NULL, .count = 0 } }
#define OTHER(...) INTS(__VA_ARGS__) /* *_as ops: a tensor of this shape */

/* One call x.op(args) on an input of the given geometry, and what torch
 * returns: the output geometry and whether it shares x's storage, or the
 * words of its error. */
typedef struct view_case {
    const char *what; /* the torch expression */
    const char *op;
    int32_t ndim;
    int64_t shape[4], stride[4], offset;
    int32_t nargs;
    mtk_value args[4];
    int32_t out_ndim;
    int64_t out_shape[4], out_stride[4], out_offset;
    bool is_view;
    const char *error;
} view_case;

static const view_case cases[] = {
    { "x.view(4, 6)", "view", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(4), IV(6)) },
      .out_ndim = 2, .out_shape = { 4, 6 }, .out_stride = { 6, 1 }, .out_offset = 0, .is_view = true },
    { "x.view(-1, 2)", "view", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(-1), IV(2)) },
      .out_ndim = 2, .out_shape = { 12, 2 }, .out_stride = { 2, 1 }, .out_offset = 0, .is_view = true },
    { "x.view(2, 5)", "view", 3, { 2, 3, 2 }, { 6, 2, 1 }, 0, 1, { INTS(IV(2), IV(5)) },
      .error = "shape '[2, 5]' is invalid for input of size 12" },
    { "x.view(-1, -1)", "view", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(-1), IV(-1)) },
      .error = "only one dimension can be inferred" },
    { "x.view(-2, 12)", "view", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(-2), IV(12)) },
      .error = "invalid shape dimension -2 at index 0 of shape [-2, 12]" },
    { "x.view(0, -1) of 0 elements", "view", 2, { 0, 3 }, { 3, 1 }, 0, 1, { INTS(IV(0), IV(-1)) },
      .error = "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension size -1 can be any value and is ambiguous" },
    { "x.t().view(6)", "view", 2, { 3, 2 }, { 1, 3 }, 0, 1, { INTS(IV(6)) },
      .error = "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead." },
    { "x.t().view(3, 2, 1)", "view", 2, { 3, 2 }, { 1, 3 }, 0, 1, { INTS(IV(3), IV(2), IV(1)) },
      .out_ndim = 3, .out_shape = { 3, 2, 1 }, .out_stride = { 1, 3, 3 }, .out_offset = 0, .is_view = true },
    { "x.transpose(0, 1).view(3, 8) merges dims 1, 2", "view", 3, { 3, 2, 4 }, { 4, 12, 1 }, 0, 1, { INTS(IV(3), IV(8)) },
      .error = "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead." },
    { "x[:, ::2].view(2, 2, 2) keeps the step", "view", 3, { 2, 4, 2 }, { 16, 4, 1 }, 5, 1, { INTS(IV(2), IV(2), IV(2), IV(2)) },
      .out_ndim = 4, .out_shape = { 2, 2, 2, 2 }, .out_stride = { 16, 8, 4, 1 }, .out_offset = 5, .is_view = true },
    { "size-1 dims with odd strides view freely", "view", 3, { 1, 3, 1 }, { 7, 1, 100 }, 2, 1, { INTS(IV(3)) },
      .out_ndim = 1, .out_shape = { 3 }, .out_stride = { 1 }, .out_offset = 2, .is_view = true },
    { "0-dim x.view(1, 1)", "view", 0, { 0 }, { 0 }, 3, 1, { INTS(IV(1), IV(1)) },
      .out_ndim = 2, .out_shape = { 1, 1 }, .out_stride = { 1, 1 }, .out_offset = 3, .is_view = true },
    { "0-dim x.view(-1)", "view", 0, { 0 }, { 0 }, 0, 1, { INTS(IV(-1)) },
      .out_ndim = 1, .out_shape = { 1 }, .out_stride = { 1 }, .out_offset = 0, .is_view = true },
    { "empty x.view(2, 0, 5) takes resize strides", "view", 2, { 0, 10 }, { 1, 0 }, 0, 1, { INTS(IV(2), IV(0), IV(5)) },
      .out_ndim = 3, .out_shape = { 2, 0, 5 }, .out_stride = { 5, 5, 1 }, .out_offset = 0, .is_view = true },
    { "empty x.view(same shape) keeps strides", "view", 2, { 0, 10 }, { 1, 3 }, 0, 1, { INTS(IV(0), IV(10)) },
      .out_ndim = 2, .out_shape = { 0, 10 }, .out_stride = { 1, 3 }, .out_offset = 0, .is_view = true },
    { "expanded x.view(6)", "view", 2, { 2, 3 }, { 0, 1 }, 0, 1, { INTS(IV(6)) },
      .error = "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead." },
    { "expanded x.view(3, 2)", "view", 2, { 2, 3 }, { 0, 1 }, 0, 1, { INTS(IV(3), IV(2)) },
      .error = "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead." },
    { "contiguous x.reshape(6, 4) views", "reshape", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(6), IV(4)) },
      .out_ndim = 2, .out_shape = { 6, 4 }, .out_stride = { 4, 1 }, .out_offset = 0, .is_view = true },
    { "x.t().reshape(6) copies", "reshape", 2, { 3, 2 }, { 1, 3 }, 0, 1, { INTS(IV(6)) },
      .out_ndim = 1, .out_shape = { 6 }, .out_stride = { 1 }, .out_offset = 0, .is_view = false },
    { "x.t().reshape(3, 1, 2) views", "reshape", 2, { 3, 2 }, { 1, 3 }, 0, 1, { INTS(IV(3), IV(1), IV(2)) },
      .out_ndim = 3, .out_shape = { 3, 1, 2 }, .out_stride = { 1, 6, 3 }, .out_offset = 0, .is_view = true },
    { "x.reshape(5, -1) of 24", "reshape", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(5), IV(-1)) },
      .error = "shape '[5, -1]' is invalid for input of size 24" },
    { "expanded x.reshape(6) copies", "reshape", 2, { 2, 3 }, { 0, 1 }, 0, 1, { INTS(IV(6)) },
      .out_ndim = 1, .out_shape = { 6 }, .out_stride = { 1 }, .out_offset = 0, .is_view = false },
    { "0-dim x.reshape(())", "reshape", 0, { 0 }, { 0 }, 1, 1, { INTS0 },
      .out_ndim = 0, .out_shape = { 0 }, .out_stride = { 0 }, .out_offset = 1, .is_view = true },
    { "x.flatten()", "flatten", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 0, { NONE },
      .out_ndim = 1, .out_shape = { 24 }, .out_stride = { 1 }, .out_offset = 0, .is_view = true },
    { "x.permute(2, 0, 1).flatten(1) views", "flatten", 3, { 4, 2, 3 }, { 1, 12, 4 }, 0, 1, { IV(1) },
      .out_ndim = 2, .out_shape = { 4, 6 }, .out_stride = { 1, 4 }, .out_offset = 0, .is_view = true },
    { "x.permute(2, 0, 1).flatten() copies", "flatten", 3, { 4, 2, 3 }, { 1, 12, 4 }, 0, 0, { NONE },
      .out_ndim = 1, .out_shape = { 24 }, .out_stride = { 1 }, .out_offset = 0, .is_view = false },
    { "x.flatten(1, 1) is x", "flatten", 3, { 2, 3, 4 }, { 1, 2, 6 }, 0, 2, { IV(1), IV(1) },
      .out_ndim = 3, .out_shape = { 2, 3, 4 }, .out_stride = { 1, 2, 6 }, .out_offset = 0, .is_view = true },
    { "0-dim x.flatten() gives (1,)", "flatten", 0, { 0 }, { 0 }, 2, 0, { NONE },
      .out_ndim = 1, .out_shape = { 1 }, .out_stride = { 1 }, .out_offset = 2, .is_view = true },
    { "x.flatten(2, 1)", "flatten", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { IV(2), IV(1) },
      .error = "flatten() has invalid args: start_dim cannot come after end_dim" },
    { "x.flatten(0, 3)", "flatten", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { IV(0), IV(3) },
      .error = "Dimension out of range (expected to be in range of [-3, 2], but got 3)" },
    { "x.unflatten(1, (2, -1))", "unflatten", 3, { 2, 6, 4 }, { 24, 4, 1 }, 0, 2, { IV(1), INTS(IV(2), IV(-1)) },
      .out_ndim = 4, .out_shape = { 2, 2, 3, 4 }, .out_stride = { 24, 12, 4, 1 }, .out_offset = 0, .is_view = true },
    { "x.t().unflatten(0, (2, 2))", "unflatten", 2, { 4, 3 }, { 1, 4 }, 0, 2, { IV(0), INTS(IV(2), IV(2)) },
      .out_ndim = 3, .out_shape = { 2, 2, 3 }, .out_stride = { 2, 1, 4 }, .out_offset = 0, .is_view = true },
    { "x.unflatten(1, (2, 2))", "unflatten", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { IV(1), INTS(IV(2), IV(2)) },
      .error = "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input tensor" },
    { "x.unflatten(1, ())", "unflatten", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { IV(1), INTS0 },
      .error = "unflatten: sizes must be non-empty" },
    { "contiguous x.contiguous() is x", "contiguous", 2, { 2, 3 }, { 3, 1 }, 4, 0, { NONE },
      .out_ndim = 2, .out_shape = { 2, 3 }, .out_stride = { 3, 1 }, .out_offset = 4, .is_view = true },
    { "x.t().contiguous() copies", "contiguous", 2, { 3, 2 }, { 1, 3 }, 0, 0, { NONE },
      .out_ndim = 2, .out_shape = { 3, 2 }, .out_stride = { 2, 1 }, .out_offset = 0, .is_view = false },
    { "size-1 dims are contiguous whatever their stride", "contiguous", 3, { 2, 1, 3 }, { 3, 100, 1 }, 1, 0, { NONE },
      .out_ndim = 3, .out_shape = { 2, 1, 3 }, .out_stride = { 3, 100, 1 }, .out_offset = 1, .is_view = true },
    { "channels_last copy", "contiguous", 4, { 2, 3, 4, 5 }, { 60, 20, 5, 1 }, 0, 1, { SV("channels_last") },
      .out_ndim = 4, .out_shape = { 2, 3, 4, 5 }, .out_stride = { 60, 1, 15, 3 }, .out_offset = 0, .is_view = false },
    { "channels_last x stays", "contiguous", 4, { 2, 3, 4, 5 }, { 60, 1, 15, 3 }, 0, 1, { SV("channels_last") },
      .out_ndim = 4, .out_shape = { 2, 3, 4, 5 }, .out_stride = { 60, 1, 15, 3 }, .out_offset = 0, .is_view = true },
    { "empty channels_last copy", "contiguous", 4, { 0, 3, 4, 5 }, { 60, 20, 5, 1 }, 0, 1, { SV("channels_last") },
      .out_ndim = 4, .out_shape = { 0, 3, 4, 5 }, .out_stride = { 60, 1, 15, 3 }, .out_offset = 0, .is_view = false },
    { "channels_last of 3-d", "contiguous", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { SV("channels_last") },
      .error = "required rank 4 tensor to use channels_last format" },
    { "x.expand(2, 3, 4) of (3, 1)", "expand", 2, { 3, 1 }, { 1, 1 }, 0, 1, { INTS(IV(2), IV(3), IV(4)) },
      .out_ndim = 3, .out_shape = { 2, 3, 4 }, .out_stride = { 0, 1, 0 }, .out_offset = 0, .is_view = true },
    { "x.expand(1, 3) of (3,) keeps a stride", "expand", 1, { 3 }, { 1 }, 0, 1, { INTS(IV(1), IV(3)) },
      .out_ndim = 2, .out_shape = { 1, 3 }, .out_stride = { 3, 1 }, .out_offset = 0, .is_view = true },
    { "x.expand(2, 1, 3) of (3,)", "expand", 1, { 3 }, { 1 }, 0, 1, { INTS(IV(2), IV(1), IV(3)) },
      .out_ndim = 3, .out_shape = { 2, 1, 3 }, .out_stride = { 0, 3, 1 }, .out_offset = 0, .is_view = true },
    { "x.expand(-1, 4) of (3, 1)", "expand", 2, { 3, 1 }, { 1, 1 }, 2, 1, { INTS(IV(-1), IV(4)) },
      .out_ndim = 2, .out_shape = { 3, 4 }, .out_stride = { 1, 0 }, .out_offset = 2, .is_view = true },
    { "x.expand(0, 3) of (1, 3)", "expand", 2, { 1, 3 }, { 3, 1 }, 0, 1, { INTS(IV(0), IV(3)) },
      .out_ndim = 2, .out_shape = { 0, 3 }, .out_stride = { 0, 1 }, .out_offset = 0, .is_view = true },
    { "0-dim x.expand(2, 3)", "expand", 0, { 0 }, { 0 }, 0, 1, { INTS(IV(2), IV(3)) },
      .out_ndim = 2, .out_shape = { 2, 3 }, .out_stride = { 0, 0 }, .out_offset = 0, .is_view = true },
    { "x.expand(3, 4) of (2, 3, 4)", "expand", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(3), IV(4)) },
      .error = "FloatType{[2, 3, 4]}, size=[3, 4]): the number of sizes provided (2) must be greater or equal to the number of dimensions in the tensor (3)" },
    { "x.expand(2, 5, 4) of (2, 3, 4)", "expand", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(2), IV(5), IV(4)) },
      .error = "The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 5, 4].  Tensor sizes: [2, 3, 4]" },
    { "x.expand(-1, 2, 3, 4)", "expand", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(-1), IV(2), IV(3), IV(4)) },
      .error = "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0" },
    { "x.expand_as(y)", "expand_as", 2, { 3, 1 }, { 1, 1 }, 0, 1, { OTHER(IV(2), IV(3), IV(4)) },
      .out_ndim = 3, .out_shape = { 2, 3, 4 }, .out_stride = { 0, 1, 0 }, .out_offset = 0, .is_view = true },
    { "x.transpose(0, 2)", "transpose", 3, { 2, 3, 4 }, { 12, 4, 1 }, 1, 2, { IV(0), IV(2) },
      .out_ndim = 3, .out_shape = { 4, 3, 2 }, .out_stride = { 1, 4, 12 }, .out_offset = 1, .is_view = true },
    { "x.transpose(-1, 0)", "transpose", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { IV(-1), IV(0) },
      .out_ndim = 3, .out_shape = { 4, 3, 2 }, .out_stride = { 1, 4, 12 }, .out_offset = 0, .is_view = true },
    { "x.transpose(0, 3)", "transpose", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { IV(0), IV(3) },
      .error = "Dimension out of range (expected to be in range of [-3, 2], but got 3)" },
    { "0-dim x.transpose(0, -1)", "transpose", 0, { 0 }, { 0 }, 0, 2, { IV(0), IV(-1) },
      .out_ndim = 0, .out_shape = { 0 }, .out_stride = { 0 }, .out_offset = 0, .is_view = true },
    { "x.swapaxes(0, 1)", "swapaxes", 2, { 2, 3 }, { 3, 1 }, 0, 2, { IV(0), IV(1) },
      .out_ndim = 2, .out_shape = { 3, 2 }, .out_stride = { 1, 3 }, .out_offset = 0, .is_view = true },
    { "x.t() of 2-d", "t", 2, { 2, 3 }, { 3, 1 }, 0, 0, { NONE },
      .out_ndim = 2, .out_shape = { 3, 2 }, .out_stride = { 1, 3 }, .out_offset = 0, .is_view = true },
    { "x.t() of 1-d", "t", 1, { 3 }, { 2 }, 1, 0, { NONE },
      .out_ndim = 1, .out_shape = { 3 }, .out_stride = { 2 }, .out_offset = 1, .is_view = true },
    { "x.t() of 3-d", "t", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 0, { NONE },
      .error = "t() expects a tensor with <= 2 dimensions, but self is 3D" },
    { "x.permute(2, 0, 1)", "permute", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(2), IV(0), IV(1)) },
      .out_ndim = 3, .out_shape = { 4, 2, 3 }, .out_stride = { 1, 12, 4 }, .out_offset = 0, .is_view = true },
    { "x.permute(-1, 0, 1)", "permute", 3, { 2, 3, 4 }, { 1, 2, 6 }, 0, 1, { INTS(IV(-1), IV(0), IV(1)) },
      .out_ndim = 3, .out_shape = { 4, 2, 3 }, .out_stride = { 6, 1, 2 }, .out_offset = 0, .is_view = true },
    { "x.permute(0, 1)", "permute", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(0), IV(1)) },
      .error = "permute(): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 2" },
    { "x.permute(0, 1, 1)", "permute", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 1, { INTS(IV(0), IV(1), IV(1)) },
      .error = "permute(): duplicate dims are not allowed." },
    { "x.movedim(0, -1)", "movedim", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { IV(0), IV(-1) },
      .out_ndim = 3, .out_shape = { 3, 4, 2 }, .out_stride = { 4, 1, 12 }, .out_offset = 0, .is_view = true },
    { "x.movedim((0, 1), (2, 0))", "movedim", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { INTS(IV(0), IV(1)), INTS(IV(2), IV(0)) },
      .out_ndim = 3, .out_shape = { 3, 4, 2 }, .out_stride = { 4, 1, 12 }, .out_offset = 0, .is_view = true },
    { "x.movedim((0, 1), (0,))", "movedim", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { INTS(IV(0), IV(1)), INTS(IV(0)) },
      .error = "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same number of dims as destination ([0] dims)" },
    { "x.movedim((0, 0), (1, 2))", "movedim", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { INTS(IV(0), IV(0)), INTS(IV(1), IV(2)) },
      .error = "movedim: repeated dim in `source` ([0, 0])" },
    { "x.squeeze()", "squeeze", 4, { 1, 3, 1, 2 }, { 6, 2, 2, 1 }, 0, 0, { NONE },
      .out_ndim = 2, .out_shape = { 3, 2 }, .out_stride = { 2, 1 }, .out_offset = 0, .is_view = true },
    { "x.squeeze(1) keeps a non-1 dim", "squeeze", 3, { 1, 3, 1 }, { 3, 1, 1 }, 0, 1, { IV(1) },
      .out_ndim = 3, .out_shape = { 1, 3, 1 }, .out_stride = { 3, 1, 1 }, .out_offset = 0, .is_view = true },
    { "x.squeeze((0, 2))", "squeeze", 3, { 1, 3, 1 }, { 3, 1, 1 }, 0, 1, { INTS(IV(0), IV(2)) },
      .out_ndim = 1, .out_shape = { 3 }, .out_stride = { 1 }, .out_offset = 0, .is_view = true },
    { "x.squeeze((0, 0))", "squeeze", 3, { 1, 3, 1 }, { 3, 1, 1 }, 0, 1, { INTS(IV(0), IV(0)) },
      .error = "dim 0 appears multiple times in the list of dims" },
    { "0-dim x.squeeze(0)", "squeeze", 0, { 0 }, { 0 }, 0, 1, { IV(0) },
      .out_ndim = 0, .out_shape = { 0 }, .out_stride = { 0 }, .out_offset = 0, .is_view = true },
    { "x.unsqueeze(1)", "unsqueeze", 2, { 2, 3 }, { 3, 1 }, 0, 1, { IV(1) },
      .out_ndim = 3, .out_shape = { 2, 1, 3 }, .out_stride = { 3, 3, 1 }, .out_offset = 0, .is_view = true },
    { "x.unsqueeze(-1)", "unsqueeze", 2, { 2, 3 }, { 1, 2 }, 0, 1, { IV(-1) },
      .out_ndim = 3, .out_shape = { 2, 3, 1 }, .out_stride = { 1, 2, 1 }, .out_offset = 0, .is_view = true },
    { "x.unsqueeze(0) of a transposed x", "unsqueeze", 2, { 2, 3 }, { 1, 2 }, 0, 1, { IV(0) },
      .out_ndim = 3, .out_shape = { 1, 2, 3 }, .out_stride = { 2, 1, 2 }, .out_offset = 0, .is_view = true },
    { "0-dim x.unsqueeze(0)", "unsqueeze", 0, { 0 }, { 0 }, 0, 1, { IV(0) },
      .out_ndim = 1, .out_shape = { 1 }, .out_stride = { 1 }, .out_offset = 0, .is_view = true },
    { "x.unsqueeze(3)", "unsqueeze", 2, { 2, 3 }, { 3, 1 }, 0, 1, { IV(3) },
      .error = "Dimension out of range (expected to be in range of [-3, 2], but got 3)" },
    { "x.narrow(1, -2, 2)", "narrow", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 3, { IV(1), IV(-2), IV(2) },
      .out_ndim = 3, .out_shape = { 2, 2, 4 }, .out_stride = { 12, 4, 1 }, .out_offset = 4, .is_view = true },
    { "x.narrow(1, 2, 2)", "narrow", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 3, { IV(1), IV(2), IV(2) },
      .error = "start (2) + length (2) exceeds dimension size (3)." },
    { "x.narrow(0, 3, 1)", "narrow", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 3, { IV(0), IV(3), IV(1) },
      .error = "start out of range (expected to be in range of [-2, 2], but got 3)" },
    { "x.narrow(1, 0, -1)", "narrow", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 3, { IV(1), IV(0), IV(-1) },
      .error = "narrow(): length must be non-negative." },
    { "0-dim x.narrow(0, 0, 1)", "narrow", 0, { 0 }, { 0 }, 0, 3, { IV(0), IV(0), IV(1) },
      .error = "narrow() cannot be applied to a 0-dim tensor." },
    { "x.select(1, -1)", "select", 3, { 2, 3, 4 }, { 12, 4, 1 }, 1, 2, { IV(1), IV(-1) },
      .out_ndim = 2, .out_shape = { 2, 4 }, .out_stride = { 12, 1 }, .out_offset = 9, .is_view = true },
    { "x.select(1, 3)", "select", 3, { 2, 3, 4 }, { 12, 4, 1 }, 0, 2, { IV(1), IV(3) },
      .error = "select(): index 3 out of range for tensor of size [2, 3, 4] at dimension 1" },
    { "0-dim x.select(0, 0)", "select", 0, { 0 }, { 0 }, 0, 2, { IV(0), IV(0) },
      .error = "select() cannot be applied to a 0-dim tensor." },
    { "x[:, 1::2]", "slice", 2, { 2, 5 }, { 5, 1 }, 0, 4, { IV(1), IV(1), NONE, IV(2) },
      .out_ndim = 2, .out_shape = { 2, 2 }, .out_stride = { 5, 2 }, .out_offset = 1, .is_view = true },
    { "x[-10:2] clamps", "slice", 2, { 5, 2 }, { 2, 1 }, 0, 4, { IV(0), IV(-10), IV(2), IV(1) },
      .out_ndim = 2, .out_shape = { 2, 2 }, .out_stride = { 2, 1 }, .out_offset = 0, .is_view = true },
    { "x[4:2] is empty", "slice", 2, { 5, 2 }, { 2, 1 }, 0, 4, { IV(0), IV(4), IV(2), IV(1) },
      .out_ndim = 2, .out_shape = { 0, 2 }, .out_stride = { 2, 1 }, .out_offset = 8, .is_view = true },
    { "x[..., ::3] of a transposed x", "slice", 2, { 4, 7 }, { 1, 4 }, 3, 4, { IV(-1), NONE, NONE, IV(3) },
      .out_ndim = 2, .out_shape = { 4, 3 }, .out_stride = { 1, 12 }, .out_offset = 3, .is_view = true },
    { "x[::0]", "slice", 2, { 5, 2 }, { 2, 1 }, 0, 4, { IV(0), NONE, NONE, IV(0) },
      .error = "slice step must be positive" },
    { "x.repeat(2, 1, 3)", "repeat", 2, { 3, 1 }, { 1, 1 }, 0, 1, { INTS(IV(2), IV(1), IV(3)) },
      .out_ndim = 3, .out_shape = { 2, 3, 3 }, .out_stride = { 9, 3, 1 }, .out_offset = 0, .is_view = false },
    { "x.t().repeat(2, 2)", "repeat", 2, { 3, 2 }, { 1, 3 }, 0, 1, { INTS(IV(2), IV(2)) },
      .out_ndim = 2, .out_shape = { 6, 4 }, .out_stride = { 4, 1 }, .out_offset = 0, .is_view = false },
    { "0-dim x.repeat(())", "repeat", 0, { 0 }, { 0 }, 0, 1, { INTS0 },
      .out_ndim = 0, .out_shape = { 0 }, .out_stride = { 0 }, .out_offset = 0, .is_view = false },
    { "x.repeat(2)", "repeat", 2, { 2, 3 }, { 3, 1 }, 0, 1, { INTS(IV(2)) },
      .error = "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor" },
    { "x.repeat(2, -1)", "repeat", 2, { 2, 3 }, { 3, 1 }, 0, 1, { INTS(IV(2), IV(-1)) },
      .error = "Repeats cannot be negative, found -1 at index 1" },
    { "x.view_as(y)", "view_as", 2, { 2, 6 }, { 6, 1 }, 0, 1, { OTHER(IV(3), IV(4)) },
      .out_ndim = 2, .out_shape = { 3, 4 }, .out_stride = { 4, 1 }, .out_offset = 0, .is_view = true },
    { "x.t().reshape_as(y) copies", "reshape_as", 2, { 3, 2 }, { 1, 3 }, 0, 1, { OTHER(IV(6)) },
      .out_ndim = 1, .out_shape = { 6 }, .out_stride = { 1 }, .out_offset = 0, .is_view = false },
};

/* An input of the case's geometry: meta (no data) or cpu over `buf`. */
static mtk_tensor *case_input(mtk_ctx *ctx, const view_case *c, mtk_device device, float *buf)
{
    mtk_tensor *x;
    if (device == MTK_DEVICE_META) {
        x = mtk_tensor_new(ctx, MTK_FLOAT32, c->shape, c->ndim, c->stride, MTK_DEVICE_META);
    } else {
        int64_t one = 256; /* every case's extent fits in 256 elements */
        x = mtk_tensor_from_data(ctx, MTK_FLOAT32, &one, 1, NULL, buf);
        if (!x) return NULL;
        x->ndim = c->ndim;
        memcpy(x->shape, c->shape, sizeof c->shape);
        memcpy(x->stride, c->stride, sizeof c->stride);
    }
    if (x) x->storage_offset = c->offset;
    return x;
}

/* Runs one case through the op table by name and checks it. */
static void check_case(const view_case *c, mtk_device device)
{
    mtk_ctx *ctx = mtk_ctx_new();
    float buf[256] = { 0 };
    mtk_tensor *x = case_input(ctx, c, device, buf);
    assert_non_null(x);
    mtk_value args[5] = { mtk_value_tensor(x) };
    for (int32_t i = 0; i < c->nargs; i++) args[i + 1] = c->args[i];
    if (strstr(c->op, "_as")) { /* view_as(other): a tensor of the listed shape */
        int64_t shape[4];
        int32_t n = c->args[0].as.list.count;
        for (int32_t i = 0; i < n; i++) shape[i] = c->args[0].as.list.items[i].as.i;
        args[1] = mtk_value_tensor(mtk_tensor_new(ctx, MTK_FLOAT32, shape, n, NULL, device));
    }
    mtk_value result;
    bool ok = mtk_op_call_by_name(ctx, c->op, args, c->nargs + 1, NULL, NULL, 0, &result);
    if (c->error) {
        if (ok) fail_msg("%s: succeeded, torch says '%s'", c->what, c->error);
        if (!strstr(mtk_ctx_message(ctx), c->error))
            fail_msg("%s: message '%s' lacks '%s'", c->what, mtk_ctx_message(ctx), c->error);
    } else {
        if (!ok) fail_msg("%s: %s", c->what, mtk_ctx_message(ctx));
        const mtk_tensor *out = result.as.tensor;
        if (out->ndim != c->out_ndim) fail_msg("%s: ndim %d, want %d", c->what, (int)out->ndim, (int)c->out_ndim);
        for (int32_t i = 0; i < c->out_ndim; i++)
            if (out->shape[i] != c->out_shape[i] || out->stride[i] != c->out_stride[i])
                fail_msg("%s: dim %d is size %lld stride %lld, want %lld stride %lld", c->what, (int)i,
                         (long long)out->shape[i], (long long)out->stride[i], (long long)c->out_shape[i],
                         (long long)c->out_stride[i]);
        if (c->is_view && out->storage_offset != c->out_offset)
            fail_msg("%s: storage offset %lld, want %lld", c->what, (long long)out->storage_offset,
                     (long long)c->out_offset);
        if (device == MTK_DEVICE_CPU && (out->storage == x->storage) != c->is_view)
            fail_msg("%s: %s, torch %s", c->what, c->is_view ? "copied" : "viewed", c->is_view ? "views" : "copies");
    }
    mtk_ctx_free(ctx);
}

/* ---------------------------------------------------------- the table */

static void views_match_torch_on_meta(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], MTK_DEVICE_META);
}

static void views_share_storage_exactly_when_torch_does(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], MTK_DEVICE_CPU);
}

/* ----------------------------------------------------------- list views */

typedef struct piece {
    int64_t shape[3], stride[3], offset;
} piece;

static void assert_pieces(mtk_ctx *ctx, const char *op, mtk_value *args, int32_t nargs, int32_t n,
                          const piece *want)
{
    mtk_value result;
    if (!mtk_op_call_by_name(ctx, op, args, nargs, NULL, NULL, 0, &result)) fail_msg("%s: %s", op, mtk_ctx_message(ctx));
    assert_int_equal(result.kind, MTK_VALUE_TUPLE);
    assert_int_equal(result.as.list.count, n);
    for (int32_t i = 0; i < n; i++) {
        const mtk_tensor *t = result.as.list.items[i].as.tensor;
        for (int32_t d = 0; d < t->ndim; d++) {
            assert_int_equal(t->shape[d], want[i].shape[d]);
            assert_int_equal(t->stride[d], want[i].stride[d]);
        }
        assert_int_equal(t->storage_offset, want[i].offset);
    }
}

static void split_chunk_unbind_return_lists_of_views(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2, 3, 4), 3, NULL, MTK_DEVICE_META);
    mtk_tensor *five = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(5, 2), 2, NULL, MTK_DEVICE_META);
    mtk_tensor *empty = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(0, 2), 2, NULL, MTK_DEVICE_META);

    /* x.split(2, 1) */
    mtk_value a1[] = { mtk_value_tensor(x), mtk_value_int(2), mtk_value_int(1) };
    assert_pieces(ctx, "split", a1, 3, 2, (const piece[]){ { { 2, 2, 4 }, { 12, 4, 1 }, 0 }, { { 2, 1, 4 }, { 12, 4, 1 }, 8 } });
    /* x.split([1, 2], 1) */
    mtk_value a2[] = { mtk_value_tensor(x), mtk_value_int_list(ctx, SHAPE(1, 2), 2), mtk_value_int(1) };
    assert_pieces(ctx, "split", a2, 3, 2, (const piece[]){ { { 2, 1, 4 }, { 12, 4, 1 }, 0 }, { { 2, 2, 4 }, { 12, 4, 1 }, 4 } });
    /* x.split(5, 1): one piece when split_size exceeds the size */
    mtk_value a3[] = { mtk_value_tensor(x), mtk_value_int(5), mtk_value_int(1) };
    assert_pieces(ctx, "split", a3, 3, 1, (const piece[]){ { { 2, 3, 4 }, { 12, 4, 1 }, 0 } });
    /* five.chunk(3): pieces of 2, 2, 1 */
    mtk_value a4[] = { mtk_value_tensor(five), mtk_value_int(3) };
    assert_pieces(ctx, "chunk", a4, 2, 3,
                  (const piece[]){ { { 2, 2 }, { 2, 1 }, 0 }, { { 2, 2 }, { 2, 1 }, 4 }, { { 1, 2 }, { 2, 1 }, 8 } });
    /* six.chunk(4) gives 3 pieces; empty.chunk(4) keeps 4 empty ones */
    mtk_tensor *six = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(6, 2), 2, NULL, MTK_DEVICE_META);
    mtk_value a5[] = { mtk_value_tensor(six), mtk_value_int(4) };
    assert_pieces(ctx, "chunk", a5, 2, 3,
                  (const piece[]){ { { 2, 2 }, { 2, 1 }, 0 }, { { 2, 2 }, { 2, 1 }, 4 }, { { 2, 2 }, { 2, 1 }, 8 } });
    mtk_value a6[] = { mtk_value_tensor(empty), mtk_value_int(4) };
    piece e = { { 0, 2 }, { 2, 1 }, 0 };
    assert_pieces(ctx, "chunk", a6, 2, 4, (const piece[]){ e, e, e, e });
    /* x.unbind(1) */
    mtk_value a7[] = { mtk_value_tensor(x), mtk_value_int(1) };
    assert_pieces(ctx, "unbind", a7, 2, 3,
                  (const piece[]){ { { 2, 4 }, { 12, 1 }, 0 }, { { 2, 4 }, { 12, 1 }, 4 }, { { 2, 4 }, { 12, 1 }, 8 } });

    /* the typed API gives the same pieces */
    mtk_tensor *out[4];
    assert_int_equal(mtk_chunk(ctx, five, 3, 0, out, 4), 3);
    assert_int_equal(out[2]->storage_offset, 8);
    assert_int_equal(mtk_unbind(ctx, x, -1, out, 2), 4); /* count beyond cap */
    assert_int_equal(out[1]->storage_offset, 1);
    mtk_ctx_free(ctx);
}

static void list_views_fail_like_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2, 3, 4), 3, NULL, MTK_DEVICE_META);
    mtk_tensor *scalar = mtk_tensor_new(ctx, MTK_FLOAT32, NULL, 0, NULL, MTK_DEVICE_META);
    mtk_tensor *out[4];
    static const struct { const char *what, *message; } want[] = {
        { "x.split(0)", "split_size can only be 0 if dimension size is 0, but got dimension size of 2" },
        { "x.split(-1)", "split expects split_size be non-negative, but got split_size=-1" },
        { "x.split([1, 1], 1)", "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at "
                                "dimension 1), but got split_sizes=[1, 1]" },
        { "x.chunk(0)", "chunk expects `chunks` to be greater than 0, got: 0" },
        { "scalar.chunk(1)", "chunk expects at least a 1-dimensional tensor" },
        { "scalar.unbind(-1)", "Dimension specified as 0 but tensor has no dimensions" },
        { "x.unbind(3)", "Dimension out of range (expected to be in range of [-3, 2], but got 3)" },
    };
    /* one call at a time: the sticky error keeps only the first */
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        mtk_ctx_clear_error(ctx);
        int32_t n = 0;
        switch (i) {
        case 0: n = mtk_split(ctx, x, 0, 0, out, 4); break;
        case 1: n = mtk_split(ctx, x, -1, 0, out, 4); break;
        case 2: n = mtk_split_sizes(ctx, x, SHAPE(1, 1), 2, 1, out, 4); break;
        case 3: n = mtk_chunk(ctx, x, 0, 0, out, 4); break;
        case 4: n = mtk_chunk(ctx, scalar, 1, 0, out, 4); break;
        case 5: n = mtk_unbind(ctx, scalar, -1, out, 4); break;
        default: n = mtk_unbind(ctx, x, 3, out, 4); break;
        }
        assert_int_equal(n, -1);
        if (!strstr(mtk_ctx_message(ctx), want[i].message))
            fail_msg("%s: message '%s' lacks '%s'", want[i].what, mtk_ctx_message(ctx), want[i].message);
    }
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------ cpu data */

/* A cpu float32 tensor holding 0, 1, 2, ... in row-major order. */
static mtk_tensor *iota(mtk_ctx *ctx, const int64_t *shape, int32_t ndim)
{
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, ndim, NULL, MTK_DEVICE_CPU);
    assert_non_null(t);
    assert_true(mtk_tensor_alloc_storage(t));
    float *data = mtk_tensor_data(t);
    for (int64_t i = 0; i < mtk_tensor_numel(t); i++) data[i] = (float)i;
    return t;
}

/* t's elements in row-major order equal want[]. */
static void assert_values(const mtk_tensor *t, const float *want, int64_t n)
{
    assert_int_equal(mtk_tensor_numel(t), n);
    int64_t index[MTK_MAX_DIMS] = { 0 };
    const float *data = mtk_tensor_data(t);
    for (int64_t k = 0; k < n; k++) {
        int64_t offset = 0;
        for (int32_t d = 0; d < t->ndim; d++) offset += index[d] * t->stride[d];
        if (data[offset] != want[k]) fail_msg("element %lld: got %g, want %g", (long long)k, data[offset], want[k]);
        for (int32_t d = t->ndim - 1; d >= 0 && ++index[d] == t->shape[d]; d--) index[d] = 0;
    }
}

static void as_strided_views_any_geometry_inside_the_storage(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = iota(ctx, SHAPE(2, 3), 2);
    mtk_tensor *t = mtk_as_strided(ctx, x, SHAPE(3, 2), SHAPE(1, 3), 2, MTK_AS_STRIDED_OWN_OFFSET);
    assert_non_null(t);
    assert_ptr_equal(t->storage, x->storage);
    assert_values(t, (const float[]){ 0, 3, 1, 4, 2, 5 }, 6); /* torch: x.as_strided((3, 2), (1, 3)) */
    mtk_tensor *windows = mtk_as_strided(ctx, x, SHAPE(2, 2), SHAPE(1, 1), 2, 3);
    assert_values(windows, (const float[]){ 3, 4, 4, 5 }, 4);
    /* torch's errors, in its order */
    assert_null(mtk_as_strided(ctx, x, SHAPE(3, 2), SHAPE(1, 3), 2, 1));
    assert_string_equal(mtk_ctx_message(ctx),
                        "as_strided: setStorage: sizes [3, 2], strides [1, 3], storage offset 1, and itemsize 4 "
                        "requiring a storage size of 28 are out of bounds for storage of size 24");
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_as_strided(ctx, x, SHAPE(2), SHAPE(-1), 1, -1));
    assert_non_null(strstr(mtk_ctx_message(ctx), "Negative strides are not supported at the moment, got strides: [-1]"));
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_as_strided(ctx, x, SHAPE(2), SHAPE(1), 1, -1));
    assert_non_null(strstr(mtk_ctx_message(ctx), "invalid storage offset -1"));
    mtk_ctx_clear_error(ctx);
    /* meta: no storage to stay inside; the input's offset by default */
    mtk_tensor *m = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(6), 1, NULL, MTK_DEVICE_META);
    m->storage_offset = 2;
    mtk_tensor *far = mtk_as_strided(ctx, m, SHAPE(3, 3), SHAPE(1, 3), 2, MTK_AS_STRIDED_OWN_OFFSET);
    assert_non_null(far);
    assert_int_equal(far->storage_offset, 2);
    mtk_ctx_free(ctx);
}

static void reshape_of_a_transpose_copies_in_torch_order(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = iota(ctx, SHAPE(2, 3), 2);
    mtk_tensor *xt = mtk_t(ctx, x);
    mtk_tensor *flat = mtk_reshape(ctx, xt, SHAPE(6), 1);
    assert_non_null(flat);
    assert_ptr_not_equal(flat->storage, x->storage);
    assert_values(flat, (const float[]){ 0, 3, 1, 4, 2, 5 }, 6); /* torch: x.t().reshape(6) */
    mtk_tensor *same = mtk_flatten(ctx, x, 0, -1);               /* contiguous: a view */
    assert_ptr_equal(same->storage, x->storage);
    mtk_ctx_free(ctx);
}

static void contiguous_copies_into_the_asked_layout(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = iota(ctx, SHAPE(1, 2, 3, 4), 4);
    assert_ptr_equal(mtk_contiguous(ctx, x)->storage, x->storage);
    mtk_tensor *cl = mtk_contiguous_format(ctx, x, MTK_MEMORY_FORMAT_CHANNELS_LAST);
    assert_non_null(cl);
    assert_ptr_not_equal(cl->storage, x->storage);
    int64_t want_stride[] = { 24, 1, 8, 2 };
    for (int32_t d = 0; d < 4; d++) assert_int_equal(cl->stride[d], want_stride[d]);
    /* torch: the channels_last copy's storage */
    const float want_storage[] = { 0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23 };
    assert_memory_equal(mtk_tensor_data(cl), want_storage, sizeof want_storage);
    assert_values(cl, (const float[]){ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23 }, 24);
    mtk_ctx_free(ctx);
}

static void views_read_the_right_elements(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *z = iota(ctx, SHAPE(2, 3, 4), 3);
    /* z[:, 1::2, ::3] */
    mtk_tensor *s = mtk_slice(ctx, mtk_slice(ctx, z, 1, 1, INT64_MAX, 2), 2, 0, INT64_MAX, 3);
    assert_non_null(s);
    assert_int_equal(s->storage_offset, 4);
    assert_values(s, (const float[]){ 4, 7, 16, 19 }, 4);
    /* z.select(2, -1) */
    assert_values(mtk_select(ctx, z, 2, -1), (const float[]){ 3, 7, 11, 15, 19, 23 }, 6);
    /* z.narrow(1, -1, 1).squeeze(1) */
    assert_values(mtk_squeeze_dim(ctx, mtk_narrow(ctx, z, 1, -1, 1), 1), (const float[]){ 8, 9, 10, 11, 20, 21, 22, 23 }, 8);
    mtk_ctx_free(ctx);
}

static void repeat_tiles_like_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = iota(ctx, SHAPE(3, 1), 2);
    mtk_tensor *r = mtk_repeat(ctx, x, SHAPE(2, 1, 3), 3); /* torch: (2, 3, 3) */
    assert_non_null(r);
    assert_int_equal(r->ndim, 3);
    assert_values(r, (const float[]){ 0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 0, 0, 1, 1, 1, 2, 2, 2 }, 18);
    mtk_tensor *xt = mtk_t(ctx, iota(ctx, SHAPE(2, 3), 2)); /* (3, 2), strides (1, 3) */
    mtk_tensor *r2 = mtk_repeat(ctx, xt, SHAPE(2, 2), 2);
    assert_values(r2,
                  (const float[]){ 0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5, 0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5 }, 24);
    /* 9 dims: too many to pair up in one strided copy */
    int64_t shape9[9] = { 1, 1, 1, 1, 1, 1, 1, 2, 2 }, reps9[9] = { 1, 1, 1, 1, 1, 1, 1, 2, 1 };
    mtk_tensor *r9 = mtk_repeat(ctx, iota(ctx, shape9, 9), reps9, 9);
    assert_values(r9, (const float[]){ 0, 1, 2, 3, 0, 1, 2, 3 }, 8);
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------- calling by name */

static void view_gathers_trailing_ints_and_reads_keywords(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2, 3, 4), 3, NULL, MTK_DEVICE_META);
    mtk_value result;
    /* x.view(4, -1) */
    mtk_value a[] = { mtk_value_tensor(x), mtk_value_int(4), mtk_value_int(-1) };
    assert_true(mtk_op_call_by_name(ctx, "view", a, 3, NULL, NULL, 0, &result));
    assert_int_equal(result.as.tensor->shape[1], 6);
    /* torch.ops.aten.slice(x, dim=2, step=3) */
    const char *names[] = { "dim", "step" };
    mtk_value kw[] = { mtk_value_int(2), mtk_value_int(3) };
    assert_true(mtk_op_call_by_name(ctx, "slice", a, 1, names, kw, 2, &result));
    assert_int_equal(result.as.tensor->shape[2], 2);
    assert_int_equal(result.as.tensor->stride[2], 3);
    /* x.movedim(0, 2) by name and x.squeeze() */
    mtk_value m[] = { mtk_value_tensor(x), mtk_value_int(0), mtk_value_int(2) };
    assert_true(mtk_op_call_by_name(ctx, "moveaxis", m, 3, NULL, NULL, 0, &result));
    assert_int_equal(result.as.tensor->stride[2], 12);
    mtk_ctx_free(ctx);
}

static void expand_errors_name_the_tensor_type_and_sizes(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2, 3, 4), 3, NULL, MTK_DEVICE_META);
    assert_null(mtk_expand(ctx, x, SHAPE(3, 4), 2));
    assert_string_equal(mtk_ctx_message(ctx),
                        "expand: expand(MetaFloatType{[2, 3, 4]}, size=[3, 4]): the number of sizes provided (2) "
                        "must be greater or equal to the number of dimensions in the tensor (3)");
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_expand(ctx, x, SHAPE(2, 5, 4), 3));
    assert_string_equal(mtk_ctx_message(ctx),
                        "expand: The expanded size of the tensor (5) must match the existing size (3) at "
                        "non-singleton dimension 1.  Target sizes: [2, 5, 4].  Tensor sizes: [2, 3, 4]");
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    mtk_ctx_free(ctx);
}

/* torch: x = zeros(2, 3, requires_grad=True); x.t(), x.t().reshape(6) and
 * x.repeat(2, 1) all require grad */
static void outputs_of_a_tensor_that_requires_grad_require_it(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2, 3), 2, NULL, MTK_DEVICE_META);
    x->flags |= MTK_TENSOR_REQUIRES_GRAD;
    mtk_tensor *xt = mtk_t(ctx, x);
    assert_true(xt->flags & MTK_TENSOR_REQUIRES_GRAD);
    assert_true(mtk_reshape(ctx, xt, SHAPE(6), 1)->flags & MTK_TENSOR_REQUIRES_GRAD);
    assert_true(mtk_repeat(ctx, x, SHAPE(2, 1), 2)->flags & MTK_TENSOR_REQUIRES_GRAD);
    mtk_tensor *pieces[2];
    assert_int_equal(mtk_unbind(ctx, x, 0, pieces, 2), 2);
    assert_true(pieces[1]->flags & MTK_TENSOR_REQUIRES_GRAD);
    mtk_ctx_free(ctx);
}

static void null_inputs_pass_through_without_a_new_error(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *out[2];
    assert_null(mtk_view(ctx, NULL, SHAPE(1), 1));
    assert_null(mtk_transpose(ctx, NULL, 0, 1));
    assert_null(mtk_select(ctx, NULL, 0, 0));
    assert_null(mtk_repeat(ctx, NULL, SHAPE(1), 1));
    assert_null(mtk_contiguous(ctx, NULL));
    assert_int_equal(mtk_split(ctx, NULL, 1, 0, out, 2), -1);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(views_match_torch_on_meta),
        cmocka_unit_test(as_strided_views_any_geometry_inside_the_storage),
        cmocka_unit_test(views_share_storage_exactly_when_torch_does),
        cmocka_unit_test(split_chunk_unbind_return_lists_of_views),
        cmocka_unit_test(list_views_fail_like_torch),
        cmocka_unit_test(reshape_of_a_transpose_copies_in_torch_order),
        cmocka_unit_test(contiguous_copies_into_the_asked_layout),
        cmocka_unit_test(views_read_the_right_elements),
        cmocka_unit_test(repeat_tiles_like_torch),
        cmocka_unit_test(view_gathers_trailing_ints_and_reads_keywords),
        cmocka_unit_test(expand_errors_name_the_tensor_type_and_sizes),
        cmocka_unit_test(outputs_of_a_tensor_that_requires_grad_require_it),
        cmocka_unit_test(null_inputs_pass_through_without_a_new_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
