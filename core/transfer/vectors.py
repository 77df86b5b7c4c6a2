"""An archive's vectors, taken only with ``--trust-vectors``, and even then copied, never used in place.

A Lance dataset is more than rows: its manifest can register other base paths (another folder, an
object store) its files are read from, and it carries indexes and older versions. So the archive's
table must keep every file inside its own folder (no base path, no data file outside it) and hold this
table's columns; its current rows are then written into a new table, as an export copies them (the
cold store checks, when it opens it, that its embedder is this home's).
"""

from __future__ import annotations

from pathlib import Path

from core.errors import CorruptionError
from core.memory.recall import COLUMNS, TABLE

_COLUMNS = [*COLUMNS, "vector"]


def copy_vectors(archived: Path, lancedb_dir: Path) -> str:
    """Copy the rows of the archive's table at ``archived`` into a new table under ``lancedb_dir``; return
    "" when done, else why the vectors cannot be used (then nothing was written).

    Raises:
        CorruptionError: the table reads files outside its folder, or cannot be read.
    """
    import lance
    import pyarrow as pa

    try:
        dataset = lance.dataset(archived)
        if dataset.base_paths():
            raise CorruptionError("the archive's vectors name storage outside the archive (a Lance base "
                                  "path): refused; import without --trust-vectors to embed every memory here")
        for fragment in dataset.get_fragments():
            overlays = [overlay.data_file for overlay in getattr(fragment.metadata, "overlays", None) or ()]
            for data_file in [*fragment.metadata.files, *overlays]:
                path = str(data_file.path)
                if "/" in path or "\\" in path or path.startswith(".") or data_file.base_id is not None:
                    raise CorruptionError("the archive's vectors name a file outside their folder "
                                          f"({path[:200]!r}): refused; import without --trust-vectors to "
                                          "embed every memory here")
        schema = dataset.schema
        if schema.names != _COLUMNS:
            return "the archive's vectors are not in this version's table layout"
        reader = pa.RecordBatchReader.from_batches(schema, dataset.to_batches(columns=_COLUMNS))
        lancedb_dir.mkdir(parents=True, exist_ok=True)
        lance.write_dataset(reader, lancedb_dir / f"{TABLE}.lance", schema=schema, mode="create")
    except (OSError, ValueError, RuntimeError, pa.ArrowException) as exc:
        raise CorruptionError(f"the archive's vectors cannot be read ({exc}): import without --trust-vectors "
                              "to embed every memory here") from exc
    return ""
