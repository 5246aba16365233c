"""How deep a JSON body nests is counted from its text as the parser would count it: arrays and objects, never
the brackets inside strings (escaped quotes included), so a body within the limit is never refused for its text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.service.middleware import json_depth

values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(alphabet='[]{}"\\ab', max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\', max_size=4), inner, max_size=3)
    ),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(value=values)
def test_depth_counts_arrays_and_objects_only(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False).encode()
    assert json_depth(text) == _depth(value)


def test_a_deep_body_and_a_string_of_brackets() -> None:
    assert json_depth(b"[" * 5000 + b"]" * 5000) == 5000
    assert json_depth(json.dumps({"id": "[" * 5000 + '\\"{'}).encode()) == 1
    assert json_depth(b"") == 0 and json_depth(b"not json [") == 1
