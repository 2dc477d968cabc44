"""nki.typing: the annotations NKI kernels use for their parameters
(nt.tensor[shape, dtype], nt.mutable_tensor). They document; nkigraph
takes shapes and dtypes from the arguments."""


class _Annotation:
    def __init__(self, name, args=()):
        self.name = name
        self.args = args

    def __getitem__(self, args):
        return _Annotation(self.name, args)

    def __repr__(self):
        return f"nt.{self.name}[{self.args}]" if self.args else \
            f"nt.{self.name}"


tensor = _Annotation("tensor")
mutable_tensor = _Annotation("mutable_tensor")
scalar = _Annotation("scalar")
