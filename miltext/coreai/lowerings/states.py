"""States (read_state, write_state, coreml_update_state): a state input is a graph argument of
type `!coreai.handle<tensor<...>>`; reads and writes are `read_handle`/`write_handle`, kept in
program order by a chain of tokens, one chain per handle (rooted in `create_token`). The graph
returns each chain's last token, one per handle argument in their order: that is how the
writes are kept (an unreturned write may be dropped)."""
from __future__ import annotations

from ..errors import PortError
from ..table import lowers
from .common import name_of

TOKEN = "!coreai.token"


class Handle:
    """A state argument: its SSA name, its tensor (a CValue of the stored type), the chain's
    last token (None before the first access)."""
    __slots__ = ("ssa", "value", "token")

    def __init__(self, ssa: str, value):
        self.ssa, self.value, self.token = ssa, value, None

    @property
    def type(self) -> str:
        return f"!coreai.handle<{self.value.type}>"


def state_argument(low, var) -> str:
    """The graph argument of state input `var`, registered as a handle of `low`."""
    from ..mlir import CValue
    t = var.type.wrapped
    if not t.is_static:
        raise PortError(f"state %{var.name} has the flexible shape {t.shape}; Core AI ports need "
                        "static shapes")
    ssa = low.fresh(var.name)
    handle = Handle(ssa, CValue(ssa, t.dtype, t.shape))
    low.handles[var.name] = handle
    return f'{ssa}: {handle.type} {{coreai.name = "{var.name}"}}'


def final_tokens(low) -> list:
    """The last token of each handle's chain, in argument order (a token made for a state that
    was never touched)."""
    return [_token(low, h) for h in low.handles.values()]


def _token(low, handle) -> str:
    if handle.token is None:
        handle.token = low.fresh("token")
        low.lines.append(f'{low.indent}{handle.token} = "coreai.create_token"() : () -> {TOKEN}')
    return handle.token


def _handle(low, op, key: str):
    b = low.binding(op, key)
    found = low.handles.get(b) if isinstance(b, str) else None
    if found is None:
        raise PortError(f"{op.type}: its {key} is not a state input of the function", op)
    return found


def _read(low, handle, hint: str):
    value, token = low.fresh(hint), low.fresh("token")
    low.lines.append(f'{low.indent}{value}, {token} = "coreai.read_handle"({handle.ssa}, {_token(low, handle)}) : '
                     f'({handle.type}, {TOKEN}) -> ({handle.value.type}, {TOKEN})')
    handle.token = token
    from ..mlir import CValue
    return CValue(value, handle.value.dtype, handle.value.shape)


def _write(low, handle, data) -> None:
    if data.type != handle.value.type:
        raise PortError(f"a write of {data.type} to a state of {handle.value.type}")
    token = low.fresh("token")
    low.lines.append(f'{low.indent}{token} = "coreai.write_handle"({handle.ssa}, {data.ssa}, {_token(low, handle)}) : '
                     f'({handle.type}, {data.type}, {TOKEN}) -> {TOKEN}')
    handle.token = token


@lowers("read_state")
def read_state(low, op):
    low.bind(op, _read(low, _handle(low, op, "input"), name_of(op)))


@lowers("write_state")
def write_state(low, op):
    _write(low, _handle(low, op, "input"), low.tensor(op, "data"))


@lowers("coreml_update_state")
def coreml_update_state(low, op):
    """Write the value, and give it (what a read after the write would give)."""
    value = low.tensor(op, "value")
    _write(low, _handle(low, op, "state"), value)
    low.bind(op, value)
