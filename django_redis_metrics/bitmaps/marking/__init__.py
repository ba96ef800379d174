"""The write path of a bitmap, in one place: ``plan.py`` builds a mark's ``bitmap_mark.lua``
call without I/O (its keys and arguments, whether the script's fast path may be offered, marks
joining one call on a batch), ``steps.py`` turns marks into steps (ids mapped first where the
script cannot, the follow-up of each reply), and ``fast.py`` sends a steady single mark as a
bare transaction. User ids become offsets in ``../ids.py``, shared with the reads."""
