"""A thin ctypes view of libmtk's io API, for tests that compare what mtk
reads with what torch holds, byte for byte."""
import ctypes as C

MAX_DIMS = 16


class Tensor(C.Structure):
    _fields_ = [("ctx", C.c_void_p), ("dtype", C.c_int), ("ndim", C.c_int32),
                ("shape", C.c_int64 * MAX_DIMS), ("stride", C.c_int64 * MAX_DIMS),
                ("storage_offset", C.c_int64), ("device", C.c_int32), ("flags", C.c_uint32),
                ("storage", C.c_void_p)]


class MtkError(Exception):
    pass


class Mtk:
    def __init__(self, path):
        lib = self.lib = C.CDLL(path)
        sigs = {
            "mtk_ctx_new": ([], C.c_void_p),
            "mtk_ctx_free": ([C.c_void_p], None),
            "mtk_ctx_message": ([C.c_void_p], C.c_char_p),
            "mtk_ctx_clear_error": ([C.c_void_p], None),
            "mtk_dtype_from_name": ([C.c_char_p], C.c_int),
            "mtk_st_open": ([C.c_void_p, C.c_char_p], C.c_void_p),
            "mtk_st_close": ([C.c_void_p], None),
            "mtk_st_view": ([C.c_void_p, C.c_void_p, C.c_char_p], C.POINTER(Tensor)),
            "mtk_st_load": ([C.c_void_p, C.c_void_p, C.c_char_p, C.c_int], C.POINTER(Tensor)),
            "mtk_st_load_slice": ([C.c_void_p, C.c_void_p, C.c_char_p, C.c_int32, C.c_int64, C.c_int64, C.c_int],
                                  C.POINTER(Tensor)),
            "mtk_tensor_data": ([C.POINTER(Tensor)], C.c_void_p),
            "mtk_tensor_nbytes": ([C.POINTER(Tensor)], C.c_size_t),
            "mtk_storage_kind_of": ([C.c_void_p], C.c_int),
        }
        for name, (args, res) in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res

    def dtype(self, name):
        """mtk's dtype number for a torch dtype name; -1 (keep) for None."""
        return -1 if name is None else self.lib.mtk_dtype_from_name(name.encode())

    def open(self, path):
        return File(self, path)


class File:
    """An opened safetensors file and its own context."""

    def __init__(self, mtk, path):
        self.mtk, self.lib = mtk, mtk.lib
        self.ctx = self.lib.mtk_ctx_new()
        self.file = self.lib.mtk_st_open(self.ctx, str(path).encode())
        if not self.file:
            message = self.lib.mtk_ctx_message(self.ctx).decode()
            self.lib.mtk_ctx_free(self.ctx)
            raise MtkError(message)

    def close(self):
        self.lib.mtk_st_close(self.file)
        self.lib.mtk_ctx_free(self.ctx)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _result(self, t):
        if not t:
            message = self.lib.mtk_ctx_message(self.ctx).decode()
            self.lib.mtk_ctx_clear_error(self.ctx)  # the error is sticky
            raise MtkError(message)
        data = self.lib.mtk_tensor_data(t)
        nbytes = self.lib.mtk_tensor_nbytes(t)
        shape = tuple(t.contents.shape[: t.contents.ndim])
        kind = self.lib.mtk_storage_kind_of(t.contents.storage)
        return shape, (C.string_at(data, nbytes) if nbytes else b""), kind

    def view(self, name):
        """(shape, bytes, storage kind) of the zero-copy view."""
        return self._result(self.lib.mtk_st_view(self.ctx, self.file, name.encode()))

    def load(self, name, dtype=None):
        return self._result(self.lib.mtk_st_load(self.ctx, self.file, name.encode(), self.mtk.dtype(dtype)))

    def load_slice(self, name, dim, start, stop, dtype=None):
        return self._result(self.lib.mtk_st_load_slice(self.ctx, self.file, name.encode(), dim, start, stop,
                                                       self.mtk.dtype(dtype)))
