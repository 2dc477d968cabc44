"""nki.compiler: the compiler directives NKI kernels carry. nkigraph
traces what the kernel calls, so each is accepted and changes nothing."""


def skip_middle_end_transformations(fn):
    """Accepted: nkigraph records the kernel's instructions as written."""
    return fn


def enable_stack_allocator(fn=None, **kwargs):
    """Accepted: nkigraph places tiles itself (freed with their last
    reference)."""
    return fn if fn is not None else (lambda f: f)


def force_auto_alloc(fn=None, **kwargs):
    return fn if fn is not None else (lambda f: f)


class _Space:
    """nki.compiler.sbuf / psum: their allocation directives give the
    plain buffer (nkigraph places tiles itself)."""

    def __init__(self, space):
        self.space = space

    def _buffer(self):
        from . import language
        return language.buffer_of(self.space)

    def mod_alloc(self, *args, **kwargs):
        return self._buffer()

    def alloc(self, *args, **kwargs):
        return self._buffer()

    def auto_alloc(self, *args, **kwargs):
        return self._buffer()


sbuf = _Space("sbuf")
psum = _Space("psum")
