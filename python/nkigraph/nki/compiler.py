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
